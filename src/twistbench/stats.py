"""Statistics every reported number carries: counts, 95% intervals, paired tests.

- `wilson(k, n)`: Wilson score interval for a proportion (small n, values near 0 or 1).
- `cluster_bootstrap(...)`: percentile interval resampling whole conversations, because items of
  one conversation share personas and history and are not independent. Used for F1, balanced
  accuracy, means and differences of rates.
- `mcnemar(b, c)`: exact two-sided McNemar p-value from the discordant counts of two systems
  on the same items (a binomial test of b against b + c at p = 0.5).
- `Metric`: what a report prints: value with k/n and an interval. A metric over no items has
  value None ("no items"), never 0.

Bootstraps use a fixed seed so that re-scoring a saved run gives identical numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

DEFAULT_SEED = 20260708
DEFAULT_RESAMPLES = 2000
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
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
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
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
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
         seed: int = DEFAULT_SEED) -> Metric:
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
              seed: int = DEFAULT_SEED) -> Metric:
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
                      note: str = "", seed: int = DEFAULT_SEED) -> Metric:
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
                seed: int = DEFAULT_SEED) -> Metric:
    """Mean of per-item values (e.g. detection latency in sessions), cluster-bootstrap CI."""
    return rate(name, {c: (float(sum(v)), len(v)) for c, v in per_cluster.items()}, note=note,
                seed=seed)


def difference_metric(name: str, per_cluster: Mapping[str, tuple[float, int, float, int]],
                      note: str = "", seed: int = DEFAULT_SEED) -> Metric:
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
