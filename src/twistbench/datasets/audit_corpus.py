"""Benchmark QA as TIAP audit queries and back: a Dataset's QA items as an AuditCorpus, an
AuditCorpus (LongMemEval-S, BEAM) as a QA Dataset for `twist run`, and the lineage of a store
that keeps every turn verbatim."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path

from twistbench.datasets.locomo import CATEGORY_NAMES
from twistbench.errors import InputError
from twistbench.model import AuditCorpus, Conversation, Dataset, GoldQuery, LineageRow, QAItem

# LoCoMo's plain token-F1 category: a corpus's own question types have no LoCoMo counterpart
# (multi-hop would split the gold on commas, open-domain cut it at ';', adversarial score a
# refusal phrase), so every question is scored by plain F1 and keeps its type in meta.
PLAIN_F1_CATEGORY = 4


def corpus_from_dataset(dataset: Dataset) -> AuditCorpus:
    """LoCoMo-style QA items of a Dataset as audit queries (cat. 5 / no evidence skipped)."""
    texts = {c.id: {e.id: e.text for e in c.events} for c in dataset.conversations}
    queries: list[GoldQuery] = []
    skipped: list[dict[str, str]] = []
    for qa in dataset.qa:
        if qa.excluded:
            skipped.append({"query_id": qa.id, "conversation": qa.conversation,
                            "reason": f"excluded: {qa.excluded}"})
        elif qa.category == 5:
            skipped.append({"query_id": qa.id, "conversation": qa.conversation,
                            "reason": "category 5 (adversarial, no evidence)"})
        elif not qa.evidence:
            skipped.append({"query_id": qa.id, "conversation": qa.conversation,
                            "reason": "no evidence turns"})
        else:
            conv_texts = texts.get(qa.conversation, {})
            queries.append(GoldQuery(
                query_id=qa.id, conversation=qa.conversation, anchors=list(qa.evidence),
                category=CATEGORY_NAMES.get(qa.category, str(qa.category)),
                question=qa.question, answer=qa.answer or "",
                anchor_texts={a: conv_texts[a] for a in qa.evidence if a in conv_texts}))
    return AuditCorpus(dataset.name, dataset.version, list(dataset.conversations), queries,
                       skipped, {"key_sha256": dataset.key_sha256})


def raw_lineage(conversations: Sequence[Conversation]) -> list[LineageRow]:
    """The lineage of a store that keeps every turn verbatim: memory id = turn id, raw."""
    return [LineageRow(conversation=c.id, memory_id=e.id, sources=[e.id], raw=True,
                       canonical=False, text=e.text) for c in conversations for e in c.events]


def qa_dataset_from_corpus(corpus: AuditCorpus, key_sha256: str) -> Dataset:
    """An audit corpus as a QA Dataset for `twist run`'s LoCoMo QA track: one QAItem per
    query (id, question, answer, evidence = the anchors), scored by LoCoMo's plain token F1
    with evidence recall; the corpus's question type is in meta["question_type"] and is the
    item's reported category. Skipped queries (abstention, no evidence) are not items; their
    number is in meta["skipped"], and a conversation left without a question (a LongMemEval
    haystack of an abstention question) is dropped rather than ingested for nothing.
    key_sha256 names the input file(s)."""
    qa = [QAItem(id=q.query_id, conversation=q.conversation, question=q.question,
                 answer=q.answer, category=PLAIN_F1_CATEGORY, evidence=list(q.anchors),
                 meta={"question_type": q.category})
          for q in corpus.queries]
    meta = {**corpus.meta, "skipped": len(corpus.skipped), "qa_scoring":
            "LoCoMo plain token F1 (category 4 rules) for every question, evidence recall"}
    asked = {q.conversation for q in qa}
    convs = [c for c in corpus.conversations if c.id in asked]
    meta["conversations_without_questions"] = len(corpus.conversations) - len(convs)
    return Dataset(name=corpus.name, version=corpus.version, key_sha256=key_sha256,
                   conversations=convs, qa=qa, meta=meta)


def files_sha256(paths: Iterable[Path], root: Path | None = None) -> str:
    """sha256 of one file, or of several (each file's relative name and sha256, in order),
    so a run over changed input files is refused on resume."""
    paths = list(paths)
    digests = []
    for p in paths:
        h = hashlib.sha256()
        try:
            with open(p, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
        except OSError as exc:
            raise InputError(str(p), f"cannot read: {exc.strerror or exc}") from exc
        digests.append((p.relative_to(root).as_posix() if root else p.name, h.hexdigest()))
    if len(digests) == 1:
        return digests[0][1]
    return hashlib.sha256("\n".join(f"{n} {d}" for n, d in digests).encode()).hexdigest()
