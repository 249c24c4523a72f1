"""Per-query Recall@k, MRR and nDCG@k from hit matrices, and rescoring one run.

Definitions (binary gain; rank r = 1 is the best position; T = T_t(q, S), the eligible ids):
    Recall@k = |hits in the top k| / |T|
    MRR      = 1 / (rank of the first hit), 0 when the top k has no hit
    nDCG@k   = DCG@k / IDCG@k, IDCG summing the discounts of ranks 1 .. min(|T|, k)
Discounts, chosen by name and written into every output:
    "standard"    1 / log2(r + 1) (trec_eval's ndcg_cut, pytrec_eval, ranx)
    "longmemeval" 1 for r = 1, 1 / log2(r) for r >= 2 (LongMemEval src/retrieval/eval_utils.py:
                  dcg = rel[0] + sum(rel[1:] / log2(arange(2, n + 1)))); Recall and MRR unchanged.
A query with |T| = 0 has no score under that target (NaN here): it is reported as targetless,
never scored as zero.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from twistbench.audit.targets import (
    TARGETS,
    CodedGold,
    CodedLineage,
    build_targets,
    code_encoded,
    code_gold,
    code_lineage,
    code_rows,
    hit_matrices,
    read_coded_gold,
    read_coded_lineage,
)
from twistbench.audit.traces import (
    CHUNK_QUERIES,
    EncodedChunk,
    Gold,
    Lineage,
    TraceChunk,
    TraceRun,
    Unusual,
    arrow_available,
    bulk_build,
    iter_encoded_chunks,
    iter_trace_chunks,
    run_name,
    trace_format,
)

METRICS: tuple[str, ...] = ("recall", "mrr", "ndcg")
METRIC_LABELS = {"recall": "Recall@{k}", "mrr": "MRR", "ndcg": "nDCG@{k}"}
VARIANTS: dict[str, str] = {
    "standard": "binary gain, discount 1/log2(rank+1) (trec_eval ndcg_cut)",
    "longmemeval": "binary gain, discount 1 at rank 1 and 1/log2(rank) after "
                   "(LongMemEval eval_utils.dcg)",
}


def discounts(k: int, variant: str = "standard") -> np.ndarray:
    """The k rank discounts of a named nDCG variant."""
    r = np.arange(1, k + 1, dtype=np.float64)
    if variant == "standard":
        return 1.0 / np.log2(r + 1.0)
    if variant == "longmemeval":
        d = np.ones(k, dtype=np.float64)
        d[1:] = 1.0 / np.log2(r[1:])
        return d
    raise ValueError(f"unknown metric variant {variant!r} (expected one of {sorted(VARIANTS)})")


def metric_label(metric: str, k: int) -> str:
    return METRIC_LABELS[metric].format(k=k)


def metrics_from_hits(hits: np.ndarray, n_rel: np.ndarray, k: int,
                      variant: str = "standard") -> dict[str, np.ndarray]:
    """Per-query metrics from a (Q, k) boolean hit matrix and eligible counts; NaN where n_rel=0.

    Also returns "first_hit": the 1-based rank of the first hit (0 when none).
    """
    nhits, first, dcg = hit_summary(hits[:, :k], variant)
    return finish_metrics(nhits, first, dcg, n_rel, k, variant)


def hit_summary(hits: np.ndarray, variant: str = "standard",
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per query the number of hits, the 1-based rank of the first (0 = none) and the DCG.

    The DCG is summed in rank order (a running sum, as trec_eval's loop sums it), so a query's
    value does not depend on the width of the matrix it sits in: a chunk of short traces and
    the whole run give the same bits."""
    q, w = hits.shape
    nhits = hits.sum(axis=1)
    first = np.where(nhits > 0, hits.argmax(axis=1) + 1, 0) if w else np.zeros(q, np.int64)
    if w and q:
        dcg = np.cumsum(np.where(hits, discounts(w, variant), 0.0), axis=1)[:, -1]
    else:
        dcg = np.zeros(q)
    return nhits, first, dcg


def finish_metrics(nhits: np.ndarray, first: np.ndarray, dcg: np.ndarray, n_rel: np.ndarray,
                   k: int, variant: str = "standard") -> dict[str, np.ndarray]:
    """Recall@k, MRR and nDCG@k from hit_summary's columns (hits within the top k); NaN where
    n_rel = 0. The ideal DCG sums the discounts of ranks 1 .. min(n_rel, k)."""
    n_rel = np.asarray(n_rel, dtype=np.int64)
    valid = n_rel > 0
    has = nhits > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        recall = np.where(valid, nhits / np.maximum(n_rel, 1), np.nan)
        mrr = np.where(valid, np.where(has, 1.0 / np.maximum(first, 1), 0.0), np.nan)
        cum = np.concatenate([[0.0], np.cumsum(discounts(k, variant))])
        idcg = cum[np.minimum(n_rel, k)]
        ndcg = np.where(valid, dcg / np.where(idcg > 0, idcg, 1.0), np.nan)
    return {"recall": recall, "mrr": mrr, "ndcg": ndcg, "first_hit": first}


@dataclass
class TraceScores:
    """Per-query scores of one run under the three targets (arrays aligned with `qids`)."""

    name: str
    k: int
    variant: str
    qids: list[str]
    categories: list[str]
    n_rel: dict[str, np.ndarray]  # target -> (Q,)
    scores: dict[str, dict[str, np.ndarray]]  # target -> metric -> (Q,), NaN = targetless
    first_hit: dict[str, np.ndarray]  # target -> (Q,) 1-based rank, 0 = none
    errors: dict[str, str] = field(default_factory=dict)  # gold query -> system error
    missing: list[str] = field(default_factory=list)  # gold queries with no trace line
    extra_traces: int = 0  # trace lines for queries not in gold (ignored)
    duplicates_dropped: int = 0
    unknown_ids: int = 0  # retrieved ids that the run's lineage does not list
    trace_k: int = 0  # the largest k the run's traces declare (0: none declared)
    # per query, the memory code (CodedLineage) at the Canonical first hit, -1 = none: the
    # contested cases' credited memory, without the rankings
    credited: np.ndarray | None = None

    def eligible(self, target: str) -> np.ndarray:
        return self.n_rel[target] > 0

    def covered(self, targets: Sequence[str]) -> np.ndarray:
        """Queries with at least one eligible id under every one of `targets`."""
        m = np.ones(len(self.qids), dtype=bool)
        for t in targets:
            m &= self.n_rel[t] > 0
        return m


def select_queries(run: TraceRun, gold: Gold) -> tuple[list[str], dict[str, str], list[str], int]:
    """Gold queries with an ok trace (gold order), with errors, without a line; extra lines."""
    ok: list[str] = []
    errors: dict[str, str] = {}
    missing: list[str] = []
    for qid in gold.queries:
        if qid in run.traces:
            ok.append(qid)
        elif qid in run.errors:
            errors[qid] = run.errors[qid]
        else:
            missing.append(qid)
    extra = sum(1 for q in run.traces if q not in gold.queries)
    extra += sum(1 for q in run.errors if q not in gold.queries)
    return ok, errors, missing, extra


def rescore(run: TraceRun, lineage: Lineage | CodedLineage, gold: Gold | CodedGold,
            k: int | None = None, variant: str = "standard") -> TraceScores:
    """Rescore one run's saved traces under Raw, Source and Canonical.

    `k` defaults to the run's k (the largest k its traces declare). Queries whose system call
    failed and gold queries without a trace line are listed, not scored.
    """
    discounts(1, variant)  # validates the variant name early
    k = int(k if k is not None else (run.k or 60))
    with bulk_build():  # the coding builds one dict entry per id and query, no cycles
        cl = lineage if isinstance(lineage, CodedLineage) else code_lineage(lineage)
        cg = gold if isinstance(gold, CodedGold) else code_gold(gold, cl)
    ts = list(run.traces.values())
    chunk = TraceChunk([t.query_id for t in ts], [t.ids for t in ts], [t.scores for t in ts],
                       [t.k for t in ts], dict(run.errors), run.duplicates_dropped, run.k)
    return score_chunks([chunk], cl, cg, k, variant, run.name)


def score_files(traces: str | Path, lineage: str | Path | CodedLineage,
                gold: str | Path | CodedGold, k: int | None = None,
                variant: str = "standard", *, fmt: str | None = None, name: str | None = None,
                chunk_queries: int = CHUNK_QUERIES, columnar: bool = True,
                on_chunk: Callable[[Any], None] | None = None) -> TraceScores:
    """Rescore a trace file without holding it: the traces stream by chunks of
    `chunk_queries` queries, each coded, matched and scored, and only the per-query results
    are kept (memory: the coded lineage and gold plus one chunk). The values are those of
    `rescore(read_traces(...), read_lineage(...), read_gold(...))`, whatever the chunk size.
    `lineage` and `gold` may be files or already coded (to score several runs of one store).

    With pyarrow installed (and `columnar`), JSONL and Parquet traces are read by pyarrow on
    one thread into dictionary-encoded columns; anything unusual in the file sends it to the
    orjson reading, which names a defect's line and field exactly as read_traces does.
    on_chunk: called with each chunk before it is scored, and with None before the careful
    reading starts the file (a TrecTee writing the TREC run as the file is read)."""
    discounts(1, variant)
    path = Path(traces)
    name = name or run_name(path)
    with bulk_build():
        cl = lineage if isinstance(lineage, CodedLineage) else \
            read_coded_lineage(lineage, columnar)
        cg = gold if isinstance(gold, CodedGold) else read_coded_gold(gold, cl, columnar)
        if columnar and trace_format(path, fmt) != "trec" and arrow_available():
            try:  # pyarrow's columns: no Python object per retrieved id
                encoded = iter_encoded_chunks(path, fmt, chunk_queries)
                return score_chunks(encoded if on_chunk is None else _tee(encoded, on_chunk),
                                    cl, cg, k, variant, name)
            except Unusual:
                pass  # the careful reading names the defect, or reads what pyarrow would not
        chunks = iter_trace_chunks(path, fmt, chunk_queries, dedupe=False)
        if on_chunk is not None:
            on_chunk(None)  # the file is read from its start again
            chunks = _tee(chunks, on_chunk)
        return score_chunks(chunks, cl, cg, k, variant, name)


_C = TypeVar("_C")


def _tee(chunks: Iterable[_C], on_chunk: Callable[[_C | None], None]) -> Iterator[_C]:
    for ch in chunks:
        on_chunk(ch)
        yield ch


def _no_repeat(ch: EncodedChunk, gi: np.ndarray, inside: np.ndarray, err_rows: np.ndarray,
               seen: np.ndarray, extra_seen: set[str]) -> None:
    """Unusual when a query id of the chunk was read before (the careful reading then names
    the line): a flag per gold query, a set only for the ids outside gold."""
    rows = np.concatenate((gi[inside], err_rows[err_rows >= 0]))
    if seen[rows].any() or np.unique(rows).size != rows.size:
        raise Unusual("a query id twice")
    seen[rows] = True
    others = [q for q, f in zip(ch.qids, inside.tolist()) if not f]
    others += [q for q, r in zip(ch.errors, err_rows.tolist()) if r < 0]
    before = len(extra_seen)
    extra_seen.update(others)
    if len(extra_seen) != before + len(others):
        raise Unusual("a query id twice")


def score_chunks(chunks: Iterable[TraceChunk | EncodedChunk], lineage: CodedLineage,
                 gold: CodedGold,
                 k: int | None, variant: str, name: str) -> TraceScores:
    """Score trace chunks one after the other; per gold query, the hit summary of each target
    is kept, and the metrics are finished once the run's k is known (the largest k its traces
    declare, when `k` is None)."""
    g = gold.n
    has_trace = np.zeros(g, dtype=bool)
    # per gold query, for a million queries a few tens of MB: counts fit 32 bits
    n_rel = {t: np.zeros(g, dtype=np.int32) for t in TARGETS}
    nhits = {t: np.zeros(g, dtype=np.int32) for t in TARGETS}
    first = {t: np.zeros(g, dtype=np.int32) for t in TARGETS}
    dcg = {t: np.zeros(g, dtype=np.float64) for t in TARGETS}
    errors_all: dict[int, str] = {}  # gold index -> error
    extra = dropped = unknown = kmax = 0
    credited = np.full(g, -1, dtype=np.int64)
    seen = np.zeros(g, dtype=bool)  # a query id read twice (checked here for EncodedChunks)
    extra_seen: set[str] = set()
    for ch in chunks:
        kmax = max(kmax, ch.kmax)
        dropped += getattr(ch, "duplicates_dropped", 0)
        err_rows = gold.rows(list(ch.errors)) if ch.errors else np.zeros(0, dtype=np.int64)
        for r, err in zip(err_rows.tolist(), ch.errors.values()):
            if r >= 0:
                errors_all[r] = err
            else:
                extra += 1
        gi = gold.rows(ch.qids)
        inside = gi >= 0
        extra += int(inside.size - inside.sum())
        if isinstance(ch, EncodedChunk):
            _no_repeat(ch, gi, inside, err_rows, seen, extra_seen)
            lengths, ids = ch.lengths, ch.ids
            if not inside.all():
                starts = np.cumsum(lengths) - lengths
                for i in np.flatnonzero(~inside).tolist():  # their repeats count all the same
                    row = ids[starts[i]:starts[i] + lengths[i]]
                    dropped += int(row.size - np.unique(row).size)
                ids = ids[np.repeat(inside, lengths)]
                lengths = lengths[inside]
                qids = [q for q, f in zip(ch.qids, inside.tolist()) if f]
                gi = gi[inside]
            else:
                qids = ch.qids
            if not qids:
                continue
            cq = code_encoded(qids, gi, lengths.copy(), ids, ch.vocab, gold, lineage, k)
        else:
            if not inside.all():
                if not ch.deduped:  # the repeats of queries outside gold are counted all the same
                    dropped += sum(len(ch.ids[i]) - len(set(ch.ids[i]))
                                   for i in np.flatnonzero(~inside).tolist())
                sel = np.flatnonzero(inside).tolist()
                qids = [ch.qids[i] for i in sel]
                id_lists = [ch.ids[i] for i in sel]
                gi = gi[inside]
            else:
                qids, id_lists = ch.qids, ch.ids
            if not qids:
                continue
            cq = code_rows(qids, id_lists, gi, gold, lineage, k, dedupe=not ch.deduped)
        unknown += cq.unknown_ids
        dropped += cq.duplicates_dropped
        ts = build_targets(cq, lineage)
        hits = hit_matrices(cq, ts, lineage)
        has_trace[gi] = True
        for t in TARGETS:
            n_rel[t][gi] = ts.n_rel[t]
            nhits[t][gi], first[t][gi], dcg[t][gi] = hit_summary(hits[t], variant)
        fc = first["can"][gi]
        hit = np.flatnonzero(fc > 0)
        credited[gi[hit]] = cq.ids[hit, fc[hit] - 1]
    kk = int(k if k is not None else (kmax or 60))
    rows = np.flatnonzero(has_trace)
    qids = gold.query_ids(rows)
    scores: dict[str, dict[str, np.ndarray]] = {}
    first_hit: dict[str, np.ndarray] = {}
    for t in TARGETS:
        m = finish_metrics(nhits[t][rows], first[t][rows], dcg[t][rows], n_rel[t][rows], kk,
                           variant)
        first_hit[t] = m.pop("first_hit").astype(np.int64)
        scores[t] = m
    err_rows = np.array(sorted(errors_all), dtype=np.int64)  # gold order
    errors = dict(zip(gold.query_ids(err_rows), map(errors_all.__getitem__, err_rows.tolist())))
    no_line = ~has_trace
    no_line[err_rows] = False
    missing = gold.query_ids(np.flatnonzero(no_line))
    cats = gold.categories_of(rows)
    return TraceScores(name, kk, variant, qids, cats,
                       {t: n_rel[t][rows].astype(np.int64) for t in TARGETS},
                       scores, first_hit, errors, missing, extra, dropped, unknown, kmax,
                       credited[rows])
