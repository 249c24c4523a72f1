"""The statistics of twistbench: counts, 95% intervals, paired tests, rater agreement.

TWIST (tracks):
- `wilson(k, n)`: Wilson score interval for a proportion (small n, values near 0 or 1).
- `cluster_bootstrap(...)`: percentile interval resampling whole conversations, because items of
  one conversation share personas and history and are not independent. Used for F1, balanced
  accuracy, means and differences of rates.
- `mcnemar(b, c)`, `holm(...)`: exact two-sided McNemar p-value from the discordant counts of
  two systems on the same items, and Holm's step-down adjustment.
- `Metric`: what a report prints: value with k/n and an interval. A metric over no items has
  value None ("no items"), never 0.
TIAP (the retrieval audit):
- `paired_bootstrap`, `paired_bootstrap_many`, `two_group_bootstrap`, `mean_gap_bootstrap`:
  percentile intervals resampling queries (TIAP §4: 3,000 paired resamples), as `Interval`.
  `BootstrapBatch` runs many of them together (the audit's dozens): one index draw per
  (query count, seed), each resample's sums as its draw counts times every column at once.
- `fleiss_kappa`, `mean_pairwise_agreement`, `majority`: agreement of contested-credit raters.
Rater agreement (TIAP contested credits, the answer-key annotation of `annotate/`):
- `cohen_kappa` (two raters), `fleiss_kappa` (any fixed number), both from one formula
  `kappa_from_parts(p_o, p_e)`; `cohen_parts` and `fleiss_parts` compute (p_o, p_e) from additive
  counts, so the cluster bootstrap can resample them (`cluster_bootstrap_sums`).

Two seeds, each fixed by its own specification so that re-scoring gives identical numbers:
TWIST_BOOTSTRAP_SEED for the cluster bootstraps of the tracks, TIAP_BOOTSTRAP_SEED (1337, the
seed the TIAP paper states) for the audit's query bootstraps. The generator is numpy's PCG64.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from fractions import Fraction
from itertools import combinations
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from threadpoolctl import threadpool_limits

# TIAP §4: 3,000 paired resamples, percentile CI, seed 1337 (kept where --help can read them)
from twistbench.defaults import TIAP_BOOTSTRAP_SEED, TIAP_RESAMPLES

# TWIST: cluster bootstraps of the track metrics.
TWIST_BOOTSTRAP_SEED = 20260708
TWIST_RESAMPLES = 2000
CONFIDENCE = 0.95
MIN_GROUP = 2  # two-group bootstraps need at least this many observations per group
_BLOCK_ELEMS = 4_000_000  # resample counts per matrix product (32 MB of float64 counts)
# threads for the draws of a BootstrapBatch (the goal machine has 2 cores)
RESAMPLE_THREADS = min(2, os.cpu_count() or 1)
_COUNT_ELEMS = 200_000  # indices drawn per call (bounded memory; the stream is the same)
Z95 = 1.959963984540054

Method = Literal["wilson", "cluster_bootstrap", "none"]


class Metric(BaseModel):
    """One reported number. `value` is None exactly when there were no items (n == 0)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    value: float | None
    k: float = Field(description="numerator: items that count (a sum of scores for means)")
    n: int = Field(ge=0, description="denominator: items the metric is over")
    lo: float | None = None
    hi: float | None = None
    method: Method = "none"
    counts: dict[str, float] = Field(default_factory=dict, description="e.g. tp/fp/fn for F1")
    note: str = ""

    @property
    def empty(self) -> bool:
        return self.value is None

    def fmt(self, digits: int = 3, with_count: bool = True, with_ci: bool = True) -> str:
        """Human form: '0.750 (3/4) [0.301, 0.954]' or 'no items'."""
        if self.value is None:
            return "no items"
        out = f"{self.value:.{digits}f}"
        if with_count:
            out += f" ({_num(self.k)}/{self.n})"
        if with_ci and self.lo is not None and self.hi is not None:
            out += f" [{self.lo:.{digits}f}, {self.hi:.{digits}f}]"
        return out


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"


# ---------------------------------------------------------------------------------------------
# Proportions


def wilson(k: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval (lo, hi) for k successes out of n. Raises on n == 0: an interval
    over no items does not exist (callers report 'no items')."""
    if n <= 0:
        raise ValueError("wilson interval needs n > 0")
    if k < 0 or k > n:
        raise ValueError(f"k={k} outside [0, n={n}]")
    p = k / n
    z2 = z * z
    denom = 1.0 + z2 / n
    center = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return max(0.0, center - half), min(1.0, center + half)


def proportion(name: str, k: int, n: int, note: str = "") -> Metric:
    """k/n with a Wilson interval; value None when n == 0."""
    if n == 0:
        return Metric(name=name, value=None, k=0, n=0, method="wilson", note=note or "no items")
    lo, hi = wilson(k, n)
    return Metric(name=name, value=k / n, k=k, n=n, lo=lo, hi=hi, method="wilson", note=note)


# ---------------------------------------------------------------------------------------------
# Cluster bootstrap


def _resample_indices(n_clusters: int, n_resamples: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_clusters, size=(n_resamples, n_clusters))


def _percentile_interval(values: np.ndarray, level: float) -> tuple[float, float] | None:
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(values, [a, 1.0 - a])
    return float(lo), float(hi)


def cluster_bootstrap(
    groups: Mapping[str, Sequence[Any]],
    statistic: Callable[[list[Any]], float | None],
    n_resamples: int = TWIST_RESAMPLES,
    seed: int = TWIST_BOOTSTRAP_SEED,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile interval of `statistic` over resamples of whole clusters (conversations).

    `groups` maps a cluster id to its items; each resample draws as many clusters as there are,
    with replacement, and pools their items. Resamples where the statistic is undefined (None)
    are dropped. Returns None when there are no clusters or no defined resample. Clusters are
    taken in sorted order, so the result does not depend on dict order.
    """
    keys = sorted(groups)
    if not keys:
        return None
    idx = _resample_indices(len(keys), n_resamples, seed)
    lists = [list(groups[k]) for k in keys]
    vals = np.empty(n_resamples)
    for r in range(n_resamples):
        pooled: list[Any] = []
        for j in idx[r]:
            pooled.extend(lists[j])
        v = statistic(pooled)
        vals[r] = np.nan if v is None else float(v)
    return _percentile_interval(vals, level)


def cluster_bootstrap_sums(
    sums: Mapping[str, Sequence[float]],
    statistic: Callable[[np.ndarray], np.ndarray],
    n_resamples: int = TWIST_RESAMPLES,
    seed: int = TWIST_BOOTSTRAP_SEED,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """Fast cluster bootstrap for statistics of summed counts (ratios, F1, differences).

    `sums` maps a cluster id to a vector of additive sufficient statistics (e.g. [tp, fp, fn]);
    `statistic` gets an array of shape (n_resamples, m) of pooled sums and returns one value per
    row (NaN where undefined). Draws the same resamples as `cluster_bootstrap` with the same
    seed, so both agree for the same statistic.
    """
    keys = sorted(sums)
    if not keys:
        return None
    mat = np.asarray([list(sums[k]) for k in keys], dtype=float)
    idx = _resample_indices(len(keys), n_resamples, seed)
    pooled = mat[idx].sum(axis=1)  # (n_resamples, m)
    with np.errstate(divide="ignore", invalid="ignore"):
        vals = np.asarray(statistic(pooled), dtype=float)
    return _percentile_interval(vals, level)


def _ratio(p: np.ndarray) -> np.ndarray:
    return np.where(p[:, 1] > 0, p[:, 0] / np.where(p[:, 1] > 0, p[:, 1], 1), np.nan)


def rate(name: str, per_cluster: Mapping[str, tuple[float, int]], note: str = "",
         seed: int = TWIST_BOOTSTRAP_SEED) -> Metric:
    """A rate (sum of per-item values / item count) with a cluster-bootstrap interval.

    per_cluster: cluster id -> (sum of item values, item count). Used for means of scores in
    [0, 1] (LoCoMo F1, evidence recall) and for proportions whose items are clustered."""
    k = float(sum(s for s, _ in per_cluster.values()))
    n = int(sum(c for _, c in per_cluster.values()))
    if n == 0:
        return Metric(name=name, value=None, k=0, n=0, method="cluster_bootstrap",
                      note=note or "no items")
    ci = cluster_bootstrap_sums({c: [s, m] for c, (s, m) in per_cluster.items() if m > 0},
                                _ratio, seed=seed)
    lo, hi = ci if ci else (None, None)
    return Metric(name=name, value=k / n, k=k, n=n, lo=lo, hi=hi, method="cluster_bootstrap",
                  note=note)


def f1_from_counts(tp: float, fp: float, fn: float) -> float | None:
    """F1 = 2TP / (2TP + FP + FN); None when there is nothing to score (no gold, no detections)."""
    den = 2 * tp + fp + fn
    return None if den == 0 else 2 * tp / den


def _f1_vec(p: np.ndarray) -> np.ndarray:
    den = 2 * p[:, 0] + p[:, 1] + p[:, 2]
    return np.where(den > 0, 2 * p[:, 0] / np.where(den > 0, den, 1), np.nan)


def f1_metric(name: str, per_cluster: Mapping[str, tuple[int, int, int]], note: str = "",
              seed: int = TWIST_BOOTSTRAP_SEED) -> Metric:
    """Detection F1 from per-conversation (tp, fp, fn), interval by cluster bootstrap.
    k/n are 2TP / (2TP + FP + FN), so that value == k / n; counts holds tp, fp, fn."""
    tp = sum(v[0] for v in per_cluster.values())
    fp = sum(v[1] for v in per_cluster.values())
    fn = sum(v[2] for v in per_cluster.values())
    value = f1_from_counts(tp, fp, fn)
    counts = {"tp": tp, "fp": fp, "fn": fn}
    if value is None:
        return Metric(name=name, value=None, k=0, n=0, method="cluster_bootstrap", counts=counts,
                      note=note or "no gold items and no detections")
    ci = cluster_bootstrap_sums({c: list(v) for c, v in per_cluster.items()}, _f1_vec, seed=seed)
    lo, hi = ci if ci else (None, None)
    return Metric(name=name, value=value, k=2 * tp, n=2 * tp + fp + fn, lo=lo, hi=hi,
                  method="cluster_bootstrap", counts=counts, note=note)


def balanced_accuracy(name: str, per_cluster: Mapping[str, tuple[int, int, int, int]],
                      note: str = "", seed: int = TWIST_BOOTSTRAP_SEED) -> Metric:
    """(TPR + TNR) / 2 from per-conversation (tp, n_pos, tn, n_neg); cluster-bootstrap CI.
    None unless both classes have items. k/n: correct / total; counts hold the four sums."""
    tp = sum(v[0] for v in per_cluster.values())
    npos = sum(v[1] for v in per_cluster.values())
    tn = sum(v[2] for v in per_cluster.values())
    nneg = sum(v[3] for v in per_cluster.values())
    counts = {"tp": tp, "n_pos": npos, "tn": tn, "n_neg": nneg}
    if npos == 0 or nneg == 0:
        return Metric(name=name, value=None, k=tp + tn, n=0, method="cluster_bootstrap",
                      counts=counts, note=note or "needs items of both classes")
    value = (tp / npos + tn / nneg) / 2

    def stat(p: np.ndarray) -> np.ndarray:
        ok = (p[:, 1] > 0) & (p[:, 3] > 0)
        a = p[:, 0] / np.where(p[:, 1] > 0, p[:, 1], 1)
        b = p[:, 2] / np.where(p[:, 3] > 0, p[:, 3], 1)
        return np.where(ok, (a + b) / 2, np.nan)

    ci = cluster_bootstrap_sums({c: list(v) for c, v in per_cluster.items()}, stat, seed=seed)
    lo, hi = ci if ci else (None, None)
    return Metric(name=name, value=value, k=tp + tn, n=npos + nneg, lo=lo, hi=hi,
                  method="cluster_bootstrap", counts=counts, note=note)


def mean_metric(name: str, per_cluster: Mapping[str, Sequence[float]], note: str = "",
                seed: int = TWIST_BOOTSTRAP_SEED) -> Metric:
    """Mean of per-item values (e.g. detection latency in sessions), cluster-bootstrap CI."""
    return rate(name, {c: (float(sum(v)), len(v)) for c, v in per_cluster.items()}, note=note,
                seed=seed)


def difference_metric(name: str, per_cluster: Mapping[str, tuple[float, int, float, int]],
                      note: str = "", seed: int = TWIST_BOOTSTRAP_SEED) -> Metric:
    """Difference of two rates a/na - b/nb over the same clusters (e.g. stale rate before minus
    after resolution), cluster-bootstrap CI. k/n report the first rate's denominator."""
    ka = sum(v[0] for v in per_cluster.values())
    na = sum(v[1] for v in per_cluster.values())
    kb = sum(v[2] for v in per_cluster.values())
    nb = sum(v[3] for v in per_cluster.values())
    counts = {"k_before": ka, "n_before": na, "k_after": kb, "n_after": nb}
    if na == 0 or nb == 0:
        return Metric(name=name, value=None, k=0, n=0, method="cluster_bootstrap", counts=counts,
                      note=note or "no items")

    def stat(p: np.ndarray) -> np.ndarray:
        ok = (p[:, 1] > 0) & (p[:, 3] > 0)
        a = p[:, 0] / np.where(p[:, 1] > 0, p[:, 1], 1)
        b = p[:, 2] / np.where(p[:, 3] > 0, p[:, 3], 1)
        return np.where(ok, a - b, np.nan)

    ci = cluster_bootstrap_sums({c: list(v) for c, v in per_cluster.items()}, stat, seed=seed)
    lo, hi = ci if ci else (None, None)
    return Metric(name=name, value=ka / na - kb / nb, k=ka * nb - kb * na, n=na * nb, lo=lo,
                  hi=hi, method="cluster_bootstrap", counts=counts,
                  note=note or "k/n = (k_before*n_after - k_after*n_before)/(n_before*n_after)")


# ---------------------------------------------------------------------------------------------
# Paired test


def mcnemar(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value: b = items only system 1 got right, c = only system 2.

    Under H0 each discordant item is a fair coin: p = min(1, 2 * P[Bin(b + c, 1/2) <= min(b, c)]).
    Computed with exact integer arithmetic. No discordant items gives p = 1."""
    if b < 0 or c < 0:
        raise ValueError("discordant counts must be >= 0")
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


def holm(pvalues: Mapping[str, float]) -> dict[str, float]:
    """Holm step-down adjusted p-values for a family of tests (monotone, capped at 1)."""
    order = sorted(pvalues, key=lambda key: (pvalues[key], key))
    m = len(order)
    out: dict[str, float] = {}
    running = 0.0
    for rank, key in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[key]))
        out[key] = running
    return out


# ---------------------------------------------------------------------------------------------
# Query bootstraps of the retrieval audit (TIAP §4): queries are resampled with replacement; the
# statistic is a difference of means; the interval is the (alpha/2, 1 - alpha/2) percentile of
# the resampled statistics (numpy's default linear interpolation).


@dataclass(frozen=True)
class Interval:
    """A point estimate with its bootstrap percentile interval and the sample size."""

    estimate: float
    low: float
    high: float
    n: int

    def excludes_zero(self) -> bool:
        return self.n > 0 and (self.low > 0 or self.high < 0)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _nan_interval(n: int = 0) -> Interval:
    return Interval(math.nan, math.nan, math.nan, n)


class BootstrapBatch:
    """Bootstrap means of many value matrices, drawing each resample set once.

    `add(values, seed)` registers an (n, m) matrix; `run()` computes, for each one, the
    (n_resamples, m) means of its columns over row resamples, exactly as a lone bootstrap with
    that seed would: matrices with the same row count n and seed share one draw of indices
    (int32, in blocks of _BLOCK_ELEMS so memory stays bounded; a seed's stream does not depend
    on the block size), and a column registered twice (same values, n and seed) is resampled
    once. A resample's sum of a column is computed as the resample's draw counts per row times
    the column, for all columns in one matrix product: no gather per column, no Python loop per
    resample. An audit asks for dozens of bootstraps over the same queries, so it draws a
    handful of index sets instead of dozens.

    The deferred helpers `paired`, `two_group` and `mean_gap` return a function that gives the
    interval once `run()` has been called; the module-level functions below are those helpers
    on a batch of one.
    """

    def __init__(self, n_resamples: int = TIAP_RESAMPLES) -> None:
        self.n_resamples = n_resamples
        self._columns: dict[tuple[int, int, bytes], int] = {}  # (n, seed, digest) -> slot
        self._slots: list[tuple[int, int, np.ndarray]] = []  # (n, seed, column), unique
        self._jobs: list[list[int]] = []  # per ticket, its columns' slots
        self._dists: list[np.ndarray] | None = None

    def add(self, values: np.ndarray, seed: int) -> int:
        """Register an (n, m) (or (n,)) matrix; returns the ticket for `dist`."""
        values = np.asarray(values, dtype=np.float64)
        if values.ndim == 1:
            values = values[:, None]
        n = values.shape[0]
        slots = []
        for j in range(values.shape[1]):
            col = np.ascontiguousarray(values[:, j])
            key = (n, seed, hashlib.blake2b(col.tobytes(), digest_size=20).digest())
            if key not in self._columns:
                self._columns[key] = len(self._slots)
                self._slots.append((n, seed, col))
            slots.append(self._columns[key])
        self._jobs.append(slots)
        self._dists = None
        return len(self._jobs) - 1

    @property
    def draws(self) -> int:
        """Index draws `run()` makes: one per distinct (n > 0, seed)."""
        return len({(n, seed) for n, seed, _ in self._slots if n})

    @property
    def columns(self) -> int:
        """Distinct columns `run()` resamples."""
        return len(self._slots)

    def run(self) -> None:
        """Resample every registered column: one index draw per (n, seed), shared. The draws
        run on up to RESAMPLE_THREADS threads (each (n, seed) has its own generator and its own
        rows of the result, and numpy's draw, bincount and matrix product leave the GIL), so
        the result does not depend on the thread count."""
        r = self.n_resamples
        groups: dict[tuple[int, int], list[int]] = {}
        for slot, (n, seed, _) in enumerate(self._slots):
            if n:
                groups.setdefault((n, seed), []).append(slot)
        means = np.full((len(self._slots), r), np.nan)
        jobs = [(n, seed, slots) for (n, seed), slots in groups.items()]

        def resample(job: tuple[int, int, list[int]]) -> None:
            n, seed, slots = job
            values = np.column_stack([self._slots[s][2] for s in slots])  # (n, columns)
            rng = np.random.default_rng(seed)
            block = max(1, _BLOCK_ELEMS // n)  # resamples per matrix product
            step = max(1, _COUNT_ELEMS // n)  # resamples drawn per call
            counts = np.empty((min(block, r), n), dtype=np.float64)
            for start in range(0, r, block):
                b = min(block, r - start)
                for row in range(0, b, step):
                    c = min(step, b - row)
                    idx = rng.integers(0, n, size=(c, n),
                                       dtype=np.int32 if n < 2**31 else np.int64)
                    # how often each query is drawn in each resample: the resample's sum of
                    # a column is then counts @ column, every column in one matrix product.
                    # One bincount per resample on intp indices: several times faster than
                    # one over offset indices of several resamples (measured, numpy 2.4)
                    for i, drawn in enumerate(idx.astype(np.intp, copy=False)):
                        counts[row + i] = np.bincount(drawn, minlength=n)
                means[slots, start:start + b] = (counts[:b] @ values).T / n

        threads = min(RESAMPLE_THREADS, len(jobs))
        # BLAS on one thread: its own threads spinning beside ours (and on a shared machine)
        # doubled the CPU time of the audit's bootstraps (10.2 s -> 4.9 s CPU, 100,000 x 60)
        with threadpool_limits(1, user_api="blas"):
            if threads > 1:
                with ThreadPoolExecutor(threads) as pool:
                    list(pool.map(resample, jobs))  # list(): a worker's exception is raised
            else:
                for job in jobs:
                    resample(job)
        self._dists = [np.ascontiguousarray(means[slots].T) for slots in self._jobs]

    def dist(self, ticket: int) -> np.ndarray:
        """(n_resamples, m) resampled column means of the matrix behind `ticket`."""
        if self._dists is None:
            raise RuntimeError("BootstrapBatch.run() has not been called since the last add()")
        return self._dists[ticket]

    def paired(self, diffs: np.ndarray, seed: int = TIAP_BOOTSTRAP_SEED,
               confidence: float = CONFIDENCE) -> Callable[[], list[Interval]]:
        """Deferred `paired_bootstrap_many`."""
        diffs = np.asarray(diffs, dtype=np.float64)
        n, m = diffs.shape[0], diffs.shape[1]
        if n == 0:
            return lambda: [_nan_interval(0) for _ in range(m)]
        ticket = self.add(diffs, seed)

        def get() -> list[Interval]:
            alpha = 1.0 - confidence
            lo, hi = np.percentile(self.dist(ticket), [100 * alpha / 2, 100 * (1 - alpha / 2)],
                                   axis=0)
            means = diffs.mean(axis=0)
            return [Interval(float(means[j]), float(lo[j]), float(hi[j]), n) for j in range(m)]
        return get

    def two_group(self, x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray,
                  seed: int = TIAP_BOOTSTRAP_SEED,
                  confidence: float = CONFIDENCE) -> Callable[[], Interval]:
        """Deferred `two_group_bootstrap`."""
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if x.size < MIN_GROUP or y.size < MIN_GROUP:
            # a group of one resamples to itself: its interval would claim certainty it lacks
            return lambda: _nan_interval(int(x.size + y.size))
        tx, ty = self.add(x, seed), self.add(y, seed + 1)

        def get() -> Interval:
            lo, hi = percentile_ci(self.dist(tx)[:, 0] - self.dist(ty)[:, 0], confidence)
            return Interval(float(x.mean() - y.mean()), lo, hi, int(x.size + y.size))
        return get

    def mean_gap(self, groups: Sequence[tuple[np.ndarray, np.ndarray]],
                 seed: int = TIAP_BOOTSTRAP_SEED,
                 confidence: float = CONFIDENCE) -> Callable[[], Interval]:
        """Deferred `mean_gap_bootstrap`."""
        usable = [(np.asarray(x, float), np.asarray(y, float)) for x, y in groups
                  if len(x) >= MIN_GROUP and len(y) >= MIN_GROUP]
        if not usable:
            return lambda: _nan_interval(0)
        tickets = [(self.add(x, seed + 2 * r), self.add(y, seed + 2 * r + 1))
                   for r, (x, y) in enumerate(usable)]

        def get() -> Interval:
            total = np.zeros(self.n_resamples)
            point = 0.0
            for (tx, ty), (x, y) in zip(tickets, usable):
                total += self.dist(tx)[:, 0] - self.dist(ty)[:, 0]
                point += x.mean() - y.mean()
            total /= len(usable)
            lo, hi = percentile_ci(total, confidence)
            return Interval(point / len(usable), lo, hi, len(usable))
        return get


def _run_one(batch: BootstrapBatch, get: Callable[[], Any]) -> Any:
    batch.run()
    return get()


def bootstrap_mean_matrix(values: np.ndarray, n_resamples: int = TIAP_RESAMPLES,
                          seed: int = TIAP_BOOTSTRAP_SEED) -> np.ndarray:
    """(n_resamples, m) means of the columns of an (n, m) matrix over row resamples.

    All columns share each resample's rows, so statistics derived from different columns
    (several metrics, several targets) stay paired.
    """
    batch = BootstrapBatch(n_resamples)
    ticket = batch.add(values, seed)
    batch.run()
    return batch.dist(ticket)


def percentile_ci(dist: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    alpha = 1.0 - confidence
    lo, hi = np.percentile(dist, [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=0)
    return float(lo), float(hi)


def paired_bootstrap(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray,
                     n_resamples: int = TIAP_RESAMPLES, seed: int = TIAP_BOOTSTRAP_SEED,
                     confidence: float = CONFIDENCE) -> Interval:
    """Δ = mean(a) - mean(b) over paired observations, with a paired percentile bootstrap CI."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired samples differ in shape: {a.shape} vs {b.shape}")
    n = int(a.size)
    if n == 0:
        return _nan_interval(0)
    d = a - b
    dist = bootstrap_mean_matrix(d, n_resamples, seed)[:, 0]
    lo, hi = percentile_ci(dist, confidence)
    return Interval(float(d.mean()), lo, hi, n)


def paired_bootstrap_many(diffs: np.ndarray, n_resamples: int = TIAP_RESAMPLES,
                          seed: int = TIAP_BOOTSTRAP_SEED,
                          confidence: float = CONFIDENCE) -> list[Interval]:
    """Intervals for each column of an (n, m) matrix of paired differences, one shared draw."""
    batch = BootstrapBatch(n_resamples)
    return _run_one(batch, batch.paired(diffs, seed, confidence))


def two_group_bootstrap(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray,
                        n_resamples: int = TIAP_RESAMPLES, seed: int = TIAP_BOOTSTRAP_SEED,
                        confidence: float = CONFIDENCE) -> Interval:
    """mean(x) - mean(y) for two independent groups; each group is resampled on its own.

    Used for the coverage gap (queries with a Canonical target against queries without).
    `n` of the result is len(x) + len(y); NaN when a group has fewer than MIN_GROUP values.
    """
    batch = BootstrapBatch(n_resamples)
    return _run_one(batch, batch.two_group(x, y, seed, confidence))


def mean_gap_bootstrap(groups: Sequence[tuple[np.ndarray, np.ndarray]],
                       n_resamples: int = TIAP_RESAMPLES, seed: int = TIAP_BOOTSTRAP_SEED,
                       confidence: float = CONFIDENCE) -> Interval:
    """Mean over runs of (mean(x_r) - mean(y_r)); each run's groups resampled independently.

    The run-level coverage gap of TIAP §5 ("mean run-level gap with bootstrap 95% CI"). Runs
    with a group smaller than MIN_GROUP are left out; `n` is the number of runs used.
    """
    batch = BootstrapBatch(n_resamples)
    return _run_one(batch, batch.mean_gap(groups, seed, confidence))


# ---------------------------------------------------------------------------------------------
# Agreement


def kappa_from_parts(p_o: np.ndarray | float, p_e: np.ndarray | float) -> np.ndarray:
    """(p_o - p_e) / (1 - p_e), elementwise; NaN where the expected agreement is 1 (every rating
    in one category: kappa is undefined)."""
    p_o = np.asarray(p_o, dtype=np.float64)
    p_e = np.asarray(p_e, dtype=np.float64)
    ok = p_e < 1.0 - 1e-12
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ok, (p_o - p_e) / np.where(ok, 1.0 - p_e, 1.0), np.nan)


def cohen_parts(confusion: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(observed, expected) agreement of two raters from confusion matrices of shape (..., K, K)
    (rows rater 1, columns rater 2). Cohen (1960): p_e = sum_k p1(k) p2(k). NaN where empty."""
    c = np.asarray(confusion, dtype=np.float64)
    n = c.sum(axis=(-2, -1))
    safe = np.where(n > 0, n, np.nan)
    p_o = np.trace(c, axis1=-2, axis2=-1) / safe
    p_e = np.sum(c.sum(axis=-1) * c.sum(axis=-2), axis=-1) / (safe * safe)
    return p_o, p_e


def fleiss_sums(counts: np.ndarray | Sequence[Sequence[int]]) -> np.ndarray:
    """Additive sufficient statistics of Fleiss' kappa for an (items, K) count matrix:
    [sum_i P_i, items, ratings per category (K)]. Sums of several item sets add up, so a cluster
    bootstrap can pool them (`fleiss_parts`). Every item needs the same number n >= 2 of
    ratings."""
    m = np.asarray(counts, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] == 0:
        raise ValueError("counts must be a non-empty (items, categories) matrix")
    per_item = m.sum(axis=1)
    n = per_item[0]
    if n < 2 or not np.all(per_item == n):
        raise ValueError("every item needs the same number (>= 2) of ratings")
    p_i = (np.sum(m * m, axis=1) - n) / (n * (n - 1))
    return np.concatenate([[p_i.sum(), m.shape[0]], m.sum(axis=0)])


def fleiss_parts(sums: np.ndarray, raters: int) -> tuple[np.ndarray, np.ndarray]:
    """(P_bar, P_e) of Fleiss (1971) from `fleiss_sums` vectors, shape (..., 2 + K)."""
    s = np.asarray(sums, dtype=np.float64)
    items = np.where(s[..., 1] > 0, s[..., 1], np.nan)
    p_bar = s[..., 0] / items
    p_j = s[..., 2:] / (items[..., None] * raters)
    return p_bar, np.sum(p_j * p_j, axis=-1)


def fleiss_kappa(counts: np.ndarray | Sequence[Sequence[int]]) -> float:
    """Fleiss' kappa from an (items, categories) matrix of rating counts.

    Every item must have the same number of ratings n >= 2 (Fleiss 1971). Returns NaN when the
    expected agreement is 1 (every rating in one category: kappa is undefined).
    """
    sums = fleiss_sums(counts)
    raters = int(np.asarray(counts).sum(axis=1)[0])
    return float(kappa_from_parts(*fleiss_parts(sums, raters)))


def cohen_kappa(rater_1: Sequence[Hashable], rater_2: Sequence[Hashable],
                categories: Sequence[Hashable] | None = None) -> float:
    """Cohen's kappa of two raters' labels of the same items (same order). NaN when both raters
    used one and the same category throughout (undefined)."""
    if len(rater_1) != len(rater_2) or not rater_1:
        raise ValueError("two non-empty label lists of the same length are needed")
    cats = list(categories) if categories is not None else sorted(set(rater_1) | set(rater_2),
                                                                   key=str)
    return float(kappa_from_parts(*cohen_parts(confusion_matrix(rater_1, rater_2, cats))))


def confusion_matrix(rater_1: Sequence[Hashable], rater_2: Sequence[Hashable],
                     categories: Sequence[Hashable]) -> np.ndarray:
    """(K, K) counts: rows rater 1's label, columns rater 2's."""
    index = {c: j for j, c in enumerate(categories)}
    out = np.zeros((len(categories), len(categories)), dtype=np.int64)
    for a, b in zip(rater_1, rater_2, strict=True):
        out[index[a], index[b]] += 1
    return out


def count_matrix(labels_by_item: Mapping[Hashable, Sequence[str]],
                 categories: Sequence[str]) -> np.ndarray:
    """(items, categories) counts from item -> list of labels (one per rater)."""
    index = {c: j for j, c in enumerate(categories)}
    out = np.zeros((len(labels_by_item), len(categories)), dtype=np.int64)
    for i, labels in enumerate(labels_by_item.values()):
        for lab in labels:
            out[i, index[lab]] += 1
    return out


def mean_pairwise_agreement(labels: Mapping[str, Mapping[Hashable, str]]) -> tuple[float, int]:
    """Mean over rater pairs of the share of commonly labelled items given the same label.

    `labels` is rater -> item -> label. Returns (mean agreement, number of rater pairs with at
    least one common item); NaN when no pair shares an item.
    """
    rates: list[float] = []
    for r1, r2 in combinations(sorted(labels), 2):
        common = set(labels[r1]) & set(labels[r2])
        if not common:
            continue
        same = sum(1 for it in common if labels[r1][it] == labels[r2][it])
        rates.append(same / len(common))
    if not rates:
        return math.nan, 0
    return float(np.mean(rates)), len(rates)


def majority(labels: Sequence[str]) -> str | None:
    """The most frequent label, or None when the top count is tied (no majority)."""
    if not labels:
        return None
    top = Counter(labels).most_common()
    if len(top) > 1 and top[0][1] == top[1][1]:
        return None
    return top[0][0]
