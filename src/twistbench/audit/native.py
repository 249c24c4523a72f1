"""`twist audit native`: the TIAP native run matrix on LoCoMo (TIAP §4).

The native store keeps every raw turn (memory id = turn id, raw) plus the rule-based parser's
facts of that turn (fact-rag's extractor, retrieval/parser.py; memory id = "<turn>#f<i>",
canonical, non-raw), both linked to the source turn. The parser sees only the turns, never the
questions, answers or evidence. Each retriever (lexical BM25, dense MiniLM) searches the whole
store; parser_max_facts 1, 5 and 8 give the density sweep F1 / F5 / F8. Every configuration is
traced at k = 60 with `write_traces`, then all traces are rescored under Raw / Source /
Canonical with the shared-subset bootstrap (3,000 resamples, seed 1337), and the design
recommendation compares F1 / F5 / F8 within each retriever.

Layout of out_dir: runs/<retriever>-F<n>/{traces,lineage,gold}.jsonl + trace_manifest.json,
and audit/ (audit.json, audit.md, per_query.jsonl, contested cases, TREC exports).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twistbench.audit.core import AuditResult, audit_runs
from twistbench.audit.metrics import METRICS
from twistbench.audit.targets import TARGET_LABELS, TARGETS
from twistbench.audit.traces import read_gold, read_lineage, read_traces
from twistbench.audit.tracing import DEFAULT_K, TraceReport, write_traces
from twistbench.contract import BaseSystem, Capabilities
from twistbench.datasets.audit_corpus import corpus_from_dataset
from twistbench.datasets.locomo import locomo_dataset
from twistbench.errors import InputError
from twistbench.model import Event, IngestResult, LineageRecord, ScoredMemory
from twistbench.retrieval import RETRIEVERS, make_retriever, turn_text
from twistbench.retrieval.parser import extract_facts
from twistbench.stats import TIAP_BOOTSTRAP_SEED, TIAP_RESAMPLES

DEFAULT_RETRIEVERS = ("lexical", "dense")
DEFAULT_MAX_FACTS = (1, 5, 8)


class NativeStore(BaseSystem):
    """Raw turns plus parser facts in one retriever, with source-turn lineage (TIAP's native
    store). Implements only reset, ingest, retrieve and lineage."""

    name = "native-store"
    capabilities = Capabilities(retrieve=True, lineage=True)

    def __init__(self, retriever: str = "lexical", max_facts: int = 5) -> None:
        if retriever not in RETRIEVERS:
            raise ValueError(f"retriever must be one of {', '.join(RETRIEVERS)}, not {retriever!r}")
        if max_facts < 1:
            raise ValueError("max_facts must be >= 1")
        self.retriever_name = retriever
        self.max_facts = max_facts
        self.reset("")

    def config(self) -> dict[str, Any]:
        return {"retriever": self.retriever_name, "parser_max_facts": self.max_facts,
                "parser": "rule-based (retrieval/parser.py)",
                "store": "raw turns + parser facts, one index"}

    def reset(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.records: list[LineageRecord] = []
        self.index = make_retriever(self.retriever_name)

    def ingest(self, events: Sequence[Event]) -> IngestResult:
        ids: list[str] = []
        texts: list[str] = []
        for ev in events:
            ids.append(ev.id)
            texts.append(turn_text(ev))
            self.records.append(LineageRecord(memory_id=ev.id, sources=[ev.id], raw=True,
                                              canonical=False, text=texts[-1]))
            for f in extract_facts(ev, self.max_facts):
                ids.append(f.id)
                texts.append(f.text)
                self.records.append(LineageRecord(memory_id=f.id, sources=[f.source], raw=False,
                                                  canonical=True, text=f.text))
        self.index.add(ids, texts)
        return IngestResult()

    def retrieve(self, query: str, k: int) -> list[ScoredMemory]:
        return [ScoredMemory(id=i, score=s) for i, s in self.index.search(query, k)]

    def lineage(self) -> list[LineageRecord]:
        return list(self.records)


@dataclass
class NativeResult:
    out_dir: str
    runs: dict[str, str]  # run name -> run folder
    traces: dict[str, TraceReport]
    audit: AuditResult
    seconds: dict[str, float] = field(default_factory=dict)

    def recommendation_table(self) -> str:
        """The F1/F5/F8 recommendation table (Markdown): best density per retriever, metric
        and target, and whether it changes with the target."""
        lines = ["| retriever | metric | n " + " / ".join(TARGET_LABELS[t] for t in TARGETS)
                 + " | " + " | ".join(f"best under {TARGET_LABELS[t]}" for t in TARGETS)
                 + " | changes |", "|---|---|---|---|---|---|---|"]
        for rec in self.audit.recommendations:
            for m in METRICS:
                n = " / ".join(str(rec["n"][t]) for t in TARGETS)
                lines.append(f"| {rec['group']} | {m} | {n} | " + " | ".join(
                    "n/a (n = 0)" if rec["best"][m][t] is None else rec["best"][m][t]
                    for t in TARGETS) +
                    f" | {'yes' if rec['changes'][m] else 'no'} |")
        return "\n".join(lines)


def native_matrix(locomo_path: str | Path, out_dir: str | Path,
                  retrievers: Sequence[str] = DEFAULT_RETRIEVERS,
                  max_facts: Sequence[int] = DEFAULT_MAX_FACTS, k: int = DEFAULT_K,
                  n_resamples: int = TIAP_RESAMPLES, seed: int = TIAP_BOOTSTRAP_SEED,
                  metric_variant: str = "standard",
                  conversations: Sequence[str] | None = None,
                  timeout_s: float = 600.0) -> NativeResult:
    """Trace the native store on LoCoMo for every retriever × density and audit the traces.

    locomo_path: the user's locomo10.json. out_dir: where runs/ and audit/ go.
    retrievers: "lexical" and/or "dense". max_facts: parser densities (F1, F5, F8 by default).
    conversations: restrict to these LoCoMo conversation ids (default: all ten).
    Returns the trace reports and the AuditResult (groups = one per retriever, comparing its
    densities; pairs = every density pair within a retriever).
    """
    if not retrievers or not max_facts:
        raise InputError("--retriever/--max-facts", "nothing to run",
                         expected="at least one retriever and one density")
    for r in retrievers:  # checked before any trace is written (NativeStore raises ValueError)
        if r not in RETRIEVERS:
            raise InputError("--retriever", f"unknown retriever {r!r}",
                             expected=" or ".join(RETRIEVERS))
    for f in max_facts:
        if isinstance(f, bool) or not isinstance(f, int) or f < 1:
            raise InputError("--max-facts", f"density {f!r}", expected="an integer >= 1")
    dataset = locomo_dataset(locomo_path)
    corpus = corpus_from_dataset(dataset)
    out = Path(out_dir)
    runs: dict[str, str] = {}
    reports: dict[str, TraceReport] = {}
    seconds: dict[str, float] = {}
    groups: dict[str, list[str]] = {}
    for r in retrievers:
        for f in max_facts:
            name = f"{r}-F{f}"
            folder = out / "runs" / name
            t0 = time.perf_counter()
            system = NativeStore(retriever=r, max_facts=int(f))
            reports[name] = write_traces(system, corpus, folder, k=k, timeout_s=timeout_s,
                                         conversations=conversations)
            seconds[name] = round(time.perf_counter() - t0, 2)
            runs[name] = str(folder)
            groups.setdefault(r, []).append(name)
    gold = read_gold(Path(next(iter(runs.values()))) / "gold.jsonl")
    loaded = [(read_traces(Path(p) / "traces.jsonl", name=n), read_lineage(Path(p) /
                                                                          "lineage.jsonl"))
              for n, p in runs.items()]
    t0 = time.perf_counter()
    result = audit_runs(loaded, gold, out / "audit", metric_variant=metric_variant,
                        n_resamples=n_resamples, seed=seed, k=k, groups=groups)
    seconds["audit"] = round(time.perf_counter() - t0, 2)
    return NativeResult(str(out), runs, reports, result, seconds)
