"""Random TIAP inputs for tests: stores of raw turns plus derived facts, gold, traces.

Scores are strictly decreasing within each trace, because pytrec_eval and ranx order ties
differently from the trace order (they sort by score).
"""

from __future__ import annotations

import numpy as np

from twistbench.audit.traces import Gold, GoldQuery, Lineage, LineageRow, Trace, TraceRun


def make_store(rng: np.random.Generator, conv: str, n_turns: int, max_facts: int,
               multi_source: float = 0.2) -> list[LineageRow]:
    rows = []
    for t in range(n_turns):
        tid = f"D{t}"
        if rng.random() < 0.9:  # some turns are not stored raw (a transformed-only store)
            rows.append(LineageRow(conversation=conv, memory_id=f"{conv}/r{t}", sources=[tid],
                                   raw=True, canonical=False, text=f"turn {t} of {conv}"))
        for f in range(int(rng.integers(0, max_facts + 1))):
            srcs = [tid]
            if rng.random() < multi_source:
                srcs.append(f"D{int(rng.integers(0, n_turns))}")
            rows.append(LineageRow(conversation=conv, memory_id=f"{conv}/f{t}.{f}",
                                   sources=srcs, raw=False, canonical=rng.random() < 0.85,
                                   text=f"fact {f} of turn {t}"))
    return rows


def make_inputs(seed: int = 0, n_conv: int = 3, n_turns: int = 40, n_queries: int = 60,
                k: int = 20, max_facts: int = 3, name: str = "run",
                ) -> tuple[TraceRun, Lineage, Gold]:
    rng = np.random.default_rng(seed)
    rows: list[LineageRow] = []
    by_conv: dict[str, list[str]] = {}
    for c in range(n_conv):
        conv = f"c{c}"
        store = make_store(rng, conv, n_turns, max_facts)
        rows += store
        by_conv[conv] = [r.memory_id for r in store]
    queries: dict[str, GoldQuery] = {}
    traces: dict[str, Trace] = {}
    for q in range(n_queries):
        conv = f"c{int(rng.integers(0, n_conv))}"
        n_anchor = int(rng.integers(0, 4))  # 0 anchors: a targetless query
        anchors = [f"D{int(a)}" for a in rng.choice(n_turns, size=n_anchor, replace=False)]
        qid = f"q{q}"
        queries[qid] = GoldQuery(query_id=qid, conversation=conv, anchors=anchors,
                                 category=str(int(rng.integers(1, 5))), question=f"question {q}",
                                 answer=f"answer {q}")
        mem = by_conv[conv]
        n = min(k, len(mem))
        picked = [mem[i] for i in rng.choice(len(mem), size=n, replace=False)]
        if rng.random() < 0.05:
            picked[-1] = "not-in-store"
        scores = np.sort(rng.random(n))[::-1] + np.arange(n)[::-1] * 1e-3  # strictly decreasing
        traces[qid] = Trace(qid, picked, [float(s) for s in scores], k)
    return TraceRun(name, f"{name}.jsonl", k, traces), Lineage("lineage.jsonl", rows), \
        Gold("gold.jsonl", queries)


def python_targets(lineage: Lineage, gold: Gold) -> dict[str, dict[str, set[str]]]:
    """T_raw / T_src / T_can by plain set logic (the independent implementation)."""
    out: dict[str, dict[str, set[str]]] = {"raw": {}, "src": {}, "can": {}}
    for qid, g in gold.queries.items():
        s = set(g.anchors)
        src = {r.memory_id for r in lineage.rows
               if r.conversation == g.conversation and s & set(r.sources)}
        out["src"][qid] = src
        out["raw"][qid] = {r.memory_id for r in lineage.rows if r.memory_id in src and r.raw
                           and r.conversation == g.conversation}
        out["can"][qid] = {r.memory_id for r in lineage.rows if r.memory_id in src
                           and r.canonical and r.conversation == g.conversation}
    return out
