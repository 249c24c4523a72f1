"""Statistics of the audit: paired and two-group bootstrap, Fleiss' kappa, pairwise agreement.

Bootstrap conventions (TIAP §4: 3,000 paired resamples, percentile CI, seed 1337): queries are
resampled with replacement; the statistic is a difference of means; the interval is the
(alpha/2, 1 - alpha/2) percentile of the resampled statistics (numpy's default linear
interpolation). The generator is numpy's PCG64 seeded with `seed`, so the same input and seed
always give the same interval.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

import numpy as np

N_RESAMPLES = 3000
SEED = 1337
CONFIDENCE = 0.95
MIN_GROUP = 2  # two-group bootstraps need at least this many observations per group
_BLOCK_ELEMS = 4_000_000  # indices drawn per block: bounds memory for 100k queries × 3,000


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


def bootstrap_mean_matrix(values: np.ndarray, n_resamples: int = N_RESAMPLES,
                          seed: int = SEED) -> np.ndarray:
    """(n_resamples, m) means of the columns of an (n, m) matrix over row resamples.

    All columns share each resample's rows, so statistics derived from different columns
    (several metrics, several targets) stay paired.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    n, m = values.shape
    out = np.empty((n_resamples, m), dtype=np.float64)
    if n == 0:
        out.fill(np.nan)
        return out
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_ELEMS // max(n, 1))
    for start in range(0, n_resamples, block):
        b = min(block, n_resamples - start)
        idx = rng.integers(0, n, size=(b, n), dtype=np.int32 if n < 2**31 else np.int64)
        for j in range(m):
            out[start:start + b, j] = values[idx, j].mean(axis=1)
    return out


def percentile_ci(dist: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    alpha = 1.0 - confidence
    lo, hi = np.percentile(dist, [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=0)
    return float(lo), float(hi)


def paired_bootstrap(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray,
                     n_resamples: int = N_RESAMPLES, seed: int = SEED,
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


def paired_bootstrap_many(diffs: np.ndarray, n_resamples: int = N_RESAMPLES, seed: int = SEED,
                          confidence: float = CONFIDENCE) -> list[Interval]:
    """Intervals for each column of an (n, m) matrix of paired differences, one shared draw."""
    diffs = np.asarray(diffs, dtype=np.float64)
    n = diffs.shape[0]
    if n == 0:
        return [_nan_interval(0) for _ in range(diffs.shape[1])]
    dist = bootstrap_mean_matrix(diffs, n_resamples, seed)
    alpha = 1.0 - confidence
    lo, hi = np.percentile(dist, [100 * alpha / 2, 100 * (1 - alpha / 2)], axis=0)
    means = diffs.mean(axis=0)
    return [Interval(float(means[j]), float(lo[j]), float(hi[j]), n)
            for j in range(diffs.shape[1])]


def two_group_bootstrap(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray,
                        n_resamples: int = N_RESAMPLES, seed: int = SEED,
                        confidence: float = CONFIDENCE) -> Interval:
    """mean(x) - mean(y) for two independent groups; each group is resampled on its own.

    Used for the coverage gap (queries with a Canonical target against queries without).
    `n` of the result is len(x) + len(y); NaN when a group has fewer than MIN_GROUP values.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.size < MIN_GROUP or y.size < MIN_GROUP:
        # a group of one resamples to itself: its interval would claim certainty it lacks
        return _nan_interval(int(x.size + y.size))
    dx = bootstrap_mean_matrix(x, n_resamples, seed)[:, 0]
    dy = bootstrap_mean_matrix(y, n_resamples, seed + 1)[:, 0]
    lo, hi = percentile_ci(dx - dy, confidence)
    return Interval(float(x.mean() - y.mean()), lo, hi, int(x.size + y.size))


def mean_gap_bootstrap(groups: Sequence[tuple[np.ndarray, np.ndarray]],
                       n_resamples: int = N_RESAMPLES, seed: int = SEED,
                       confidence: float = CONFIDENCE) -> Interval:
    """Mean over runs of (mean(x_r) - mean(y_r)); each run's groups resampled independently.

    The run-level coverage gap of TIAP §5 ("mean run-level gap with bootstrap 95% CI"). Runs
    with a group smaller than MIN_GROUP are left out; `n` is the number of runs used.
    """
    usable = [(np.asarray(x, float), np.asarray(y, float)) for x, y in groups
              if len(x) >= MIN_GROUP and len(y) >= MIN_GROUP]
    if not usable:
        return _nan_interval(0)
    total = np.zeros(n_resamples)
    point = 0.0
    for r, (x, y) in enumerate(usable):
        dx = bootstrap_mean_matrix(x, n_resamples, seed + 2 * r)[:, 0]
        dy = bootstrap_mean_matrix(y, n_resamples, seed + 2 * r + 1)[:, 0]
        total += dx - dy
        point += x.mean() - y.mean()
    total /= len(usable)
    lo, hi = percentile_ci(total, confidence)
    return Interval(point / len(usable), lo, hi, len(usable))


# ---------------------------------------------------------------------------------------------
# Agreement


def fleiss_kappa(counts: np.ndarray | Sequence[Sequence[int]]) -> float:
    """Fleiss' kappa from an (items, categories) matrix of rating counts.

    Every item must have the same number of ratings n >= 2 (Fleiss 1971). Returns NaN when the
    expected agreement is 1 (every rating in one category: kappa is undefined).
    """
    m = np.asarray(counts, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] == 0:
        raise ValueError("counts must be a non-empty (items, categories) matrix")
    per_item = m.sum(axis=1)
    n = per_item[0]
    if n < 2 or not np.all(per_item == n):
        raise ValueError("every item needs the same number (>= 2) of ratings")
    big_n = m.shape[0]
    p_j = m.sum(axis=0) / (big_n * n)
    p_i = (np.sum(m * m, axis=1) - n) / (n * (n - 1))
    p_bar = p_i.mean()
    p_e = float(np.sum(p_j * p_j))
    if p_e >= 1.0:
        return math.nan
    return float((p_bar - p_e) / (1.0 - p_e))


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
