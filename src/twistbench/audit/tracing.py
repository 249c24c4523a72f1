"""`twist trace`: drive a system that implements retrieve and lineage and save what TIAP needs.

Per conversation: reset, ingest every session in order, then `retrieve(question, k)` for each
scored query (query id = the QA item id), then `lineage()` once. Every call goes through the
run guard (timeout + output validation); a failed call is an error line in traces.jsonl, never
a score. If ingest or lineage fails for a conversation, all of its queries are errors (their
store is incomplete or cannot be credited).

Written to out_dir:
  traces.jsonl    one line per query: {"query_id", "k", "results": [{"id", "score"}]} or "error"
  lineage.jsonl   one line per stored memory, with its conversation
  gold.jsonl      query id -> anchors (the QA evidence), category, question, answer, anchor texts
  trace_manifest.json  system, its config, dataset, k, counts, skipped queries with the reason,
                  the embedding model id when the system embedded with the built-in model
Skipped (reported, not traced): LoCoMo category 5 (adversarial: no evidence by design),
questions with no evidence, and items excluded by re-validation.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from twistbench.audit.traces import write_gold_jsonl, write_lineage_jsonl
from twistbench.contract import MemorySystem
from twistbench.datasets.audit_corpus import corpus_from_dataset, raw_lineage
from twistbench.errors import InputError
from twistbench.model import AuditCorpus, Dataset, GoldQuery, LineageRow
from twistbench.records import SystemCallError
from twistbench.retrieval import dense
from twistbench.runs.folder import Redactor
from twistbench.runs.guard import GuardedSystem

DEFAULT_K = 60


@dataclass
class TraceReport:
    out_dir: str
    system: str
    dataset: str
    k: int
    conversations: int = 0
    queries: int = 0
    traced: int = 0
    errors: int = 0
    skipped: int = 0
    stored_memories: int = 0
    seconds: float = 0.0
    error_kinds: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def write_traces(system: MemorySystem, dataset: Dataset | AuditCorpus, out_dir: str | Path,
                 k: int = DEFAULT_K, timeout_s: float = 120.0,
                 conversations: Sequence[str] | None = None,
                 redactor: Redactor | None = None,
                 on_conversation: Callable[[int, int, int, int], None] | None = None,
                 ) -> TraceReport:
    """Trace `system` on `dataset` and write traces, lineage, gold and a manifest to out_dir.

    system: any MemorySystem whose capabilities declare retrieve and lineage (else InputError:
        the audit is N/A for it).
    dataset: a Dataset (its QA items are the queries) or an AuditCorpus from a loader
        (LongMemEval-S, BEAM).
    k: ranked ids per query (default 60, TIAP §4).
    conversations: restrict to these conversation ids (default: all).
    on_conversation: called before the first and after every conversation with (conversations
        done, conversations, queries done, queries) — the CLI's progress bar.
    """
    caps = system.capabilities
    if not (caps.retrieve and caps.lineage):
        missing = [c for c in ("retrieve", "lineage") if not getattr(caps, c)]
        raise InputError("--system", f"{system.name} does not declare {', '.join(missing)}: "
                         "the retrieval audit is N/A for it", field="capabilities",
                         expected="a system with retrieve and lineage")
    if k < 1:
        raise InputError("--k", f"k = {k}", field="k", expected="k >= 1")
    corpus = dataset if isinstance(dataset, AuditCorpus) else corpus_from_dataset(dataset)
    convs = corpus.conversations
    if conversations is not None:
        wanted = set(conversations)
        unknown = wanted - {c.id for c in convs}
        if unknown:
            raise InputError("--conversation", f"unknown conversation(s) {sorted(unknown)}",
                             expected="conversation ids of the dataset")
        convs = [c for c in convs if c.id in wanted]
    conv_ids = {c.id for c in convs}
    skipped = [x for x in corpus.skipped if x.get("conversation", "") in conv_ids
               or conversations is None]
    by_conv: dict[str, list[GoldQuery]] = {}
    for q in corpus.queries:
        by_conv.setdefault(q.conversation, []).append(q)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report = TraceReport(str(out), system.name, f"{corpus.name} {corpus.version}", k)
    report.skipped = len(skipped)
    # Secrets of the system's options (the CLI's -S) and config: scrubbed from error lines too.
    raw_config = _config_of(system)
    secrets = (redactor or Redactor({})).extended(raw_config)
    guarded = GuardedSystem(system, timeout_s, redactor=secrets)
    lineage_rows: list[LineageRow] = []
    gold_rows: list[GoldQuery] = []
    t0 = time.perf_counter()

    def err(exc: SystemCallError) -> str:
        report.error_kinds[exc.kind] = report.error_kinds.get(exc.kind, 0) + 1
        return f"{exc.call}: {exc.kind}: {exc.message}"

    total_queries = sum(len(by_conv.get(c.id, [])) for c in convs)
    if on_conversation is not None:
        on_conversation(0, len(convs), 0, total_queries)
    with open(out / "traces.jsonl", "w", encoding="utf-8") as fh:
        def line(obj: dict[str, Any]) -> None:
            fh.write(json.dumps(obj, ensure_ascii=False, sort_keys=True) + "\n")

        for conv in convs:
            queries = by_conv.get(conv.id, [])
            report.conversations += 1
            report.queries += len(queries)
            gold_rows.extend(queries)
            failed: str | None = None
            try:
                guarded.reset(conv.id)
                for _, events in conv.sessions():
                    guarded.ingest(events)
            except SystemCallError as exc:
                failed = f"conversation not ingested: {err(exc)}"
            lines: list[dict[str, Any]] = []
            for q in queries:
                if failed:
                    lines.append({"query_id": q.query_id, "error": failed})
                    continue
                try:
                    hits = guarded.retrieve(q.question, k)
                    lines.append({"query_id": q.query_id, "k": k,
                                  "results": [{"id": h.id, "score": h.score} for h in hits[:k]]})
                except SystemCallError as exc:
                    lines.append({"query_id": q.query_id, "error": err(exc)})
            if not failed:
                try:
                    recs = guarded.lineage()
                    rows = [LineageRow(conversation=conv.id, **r.model_dump()) for r in recs]
                    ids = [r.memory_id for r in rows]
                    if len(set(ids)) != len(ids):
                        raise SystemCallError("invalid_output", "lineage",
                                              "a memory id is listed twice")
                    lineage_rows.extend(rows)
                    report.stored_memories += len(rows)
                except SystemCallError as exc:
                    msg = f"lineage unavailable: {err(exc)}"
                    lines = [{"query_id": x["query_id"], "error": msg} for x in lines]
            for x in lines:
                line(x)
                if "error" in x:
                    report.errors += 1
                else:
                    report.traced += 1
            if on_conversation is not None:
                on_conversation(report.conversations, len(convs), report.queries, total_queries)
    write_lineage_jsonl(out / "lineage.jsonl", lineage_rows)
    write_gold_jsonl(out / "gold.jsonl", gold_rows)
    report.seconds = round(time.perf_counter() - t0, 3)
    config = secrets.config(raw_config)  # never write a secret option
    manifest = {"report": report.as_dict(), "system_config": config,
                "capabilities": caps.as_dict(), "dataset": {"name": corpus.name,
                                                            "version": corpus.version,
                                                            **corpus.meta},
                "skipped": skipped,
                # the vectors behind a dense system's ranking (None: nothing was embedded)
                "embedding_model": dense.model_id() if dense.used else None}
    (out / "trace_manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True,
                                                        default=str) + "\n", encoding="utf-8")
    return report


def _config_of(system: MemorySystem) -> dict[str, Any]:
    try:
        return dict(system.config()) if callable(getattr(system, "config", None)) else {}
    except Exception:  # noqa: BLE001 - a broken config() must not stop the trace
        return {}


def export_corpus(corpus: AuditCorpus, out_dir: str | Path) -> dict[str, str]:
    """Write gold.jsonl and the raw-turn lineage (lineage.raw.jsonl) of a corpus, so traces
    produced elsewhere over the raw turns (memory id = turn id) can be audited directly."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_gold_jsonl(out / "gold.jsonl", corpus.queries)
    write_lineage_jsonl(out / "lineage.raw.jsonl", raw_lineage(corpus.conversations))
    return {"gold": str(out / "gold.jsonl"), "lineage": str(out / "lineage.raw.jsonl")}
