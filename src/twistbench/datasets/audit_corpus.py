"""Benchmark QA as TIAP audit queries: a Dataset's QA items as an AuditCorpus, and the lineage
of a store that keeps every turn verbatim."""

from __future__ import annotations

from collections.abc import Sequence

from twistbench.datasets.locomo import CATEGORY_NAMES
from twistbench.model import AuditCorpus, Conversation, Dataset, GoldQuery, LineageRow


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
