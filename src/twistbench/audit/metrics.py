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

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from twistbench.audit.targets import (
    TARGETS,
    CodedLineage,
    build_targets,
    code_lineage,
    code_queries,
    hit_matrices,
)
from twistbench.audit.traces import Gold, Lineage, TraceRun, bulk_build

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
    hits = hits[:, :k]
    q = hits.shape[0]
    n_rel = np.asarray(n_rel, dtype=np.int64)
    valid = n_rel > 0
    disc = discounts(k, variant)
    nhits = hits.sum(axis=1)
    has = nhits > 0
    first = np.where(has, hits.argmax(axis=1) + 1, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        recall = np.where(valid, nhits / np.maximum(n_rel, 1), np.nan)
        mrr = np.where(valid, np.where(has, 1.0 / np.maximum(first, 1), 0.0), np.nan)
        cum = np.concatenate([[0.0], np.cumsum(disc)])
        idcg = cum[np.minimum(n_rel, k)]
        dcg = hits.astype(np.float64) @ disc if q else np.zeros(0)
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


def rescore(run: TraceRun, lineage: Lineage | CodedLineage, gold: Gold, k: int | None = None,
            variant: str = "standard") -> TraceScores:
    """Rescore one run's saved traces under Raw, Source and Canonical.

    `k` defaults to the run's k (the largest k its traces declare). Queries whose system call
    failed and gold queries without a trace line are listed, not scored.
    """
    k = int(k if k is not None else (run.k or 60))
    discounts(k, variant)  # validates the variant name early
    with bulk_build():  # the coding builds one dict entry per id and query, no cycles
        cl = lineage if isinstance(lineage, CodedLineage) else code_lineage(lineage)
        qids, errors, missing, extra = select_queries(run, gold)
        cq = code_queries(run, gold, cl, qids, k)
    ts = build_targets(cq, cl)
    hits = hit_matrices(cq, ts, cl)
    scores: dict[str, dict[str, np.ndarray]] = {}
    first: dict[str, np.ndarray] = {}
    for t in TARGETS:
        m = metrics_from_hits(hits[t], ts.n_rel[t], k, variant)
        first[t] = m.pop("first_hit")
        scores[t] = m
    cats = [gold.queries[q].category for q in qids]
    return TraceScores(run.name, k, variant, qids, cats, ts.n_rel, scores, first, errors, missing,
                     extra, run.duplicates_dropped, cq.unknown_ids)
