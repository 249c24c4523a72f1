"""stats.py against scipy and hand-computed values."""

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from twistbench.stats import (
    Metric,
    balanced_accuracy,
    cluster_bootstrap,
    cluster_bootstrap_sums,
    difference_metric,
    f1_from_counts,
    f1_metric,
    holm,
    mcnemar,
    mean_metric,
    proportion,
    rate,
    wilson,
)


@pytest.mark.parametrize("k,n", [(0, 1), (1, 1), (0, 10), (3, 10), (10, 10), (7, 38), (38, 38),
                                 (1, 161), (80, 161), (500, 1000)])
def test_wilson_matches_scipy(k, n):
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    lo, hi = wilson(k, n)
    assert lo == pytest.approx(ci.low, abs=1e-12)
    assert hi == pytest.approx(ci.high, abs=1e-12)


def test_wilson_hand_computed():
    # k=3, n=4, z=1.96: centre (0.75 + 0.4802)/1.9604, half 1.96*sqrt(0.046875+0.0600)/1.9604
    lo, hi = wilson(3, 4, z=1.96)
    centre = (0.75 + 1.96**2 / 8) / (1 + 1.96**2 / 4)
    half = 1.96 * math.sqrt(0.75 * 0.25 / 4 + 1.96**2 / 64) / (1 + 1.96**2 / 4)
    assert (lo, hi) == pytest.approx((centre - half, centre + half))


def test_wilson_refuses_no_items_and_bad_counts():
    with pytest.raises(ValueError):
        wilson(0, 0)
    with pytest.raises(ValueError):
        wilson(5, 4)


def test_proportion_with_no_items_is_none_never_zero():
    m = proportion("x", 0, 0)
    assert m.value is None and m.n == 0 and m.lo is None and m.empty
    assert m.fmt() == "no items"
    m = proportion("x", 0, 5)
    assert m.value == 0.0 and m.n == 5 and m.lo == 0.0 and m.hi > 0


@pytest.mark.parametrize("b,c", [(0, 0), (0, 1), (1, 0), (3, 3), (0, 10), (2, 9), (12, 4),
                                 (30, 41), (100, 130)])
def test_mcnemar_matches_scipy_binomtest(b, c):
    want = 1.0 if b + c == 0 else binomtest(b, b + c, 0.5).pvalue
    assert mcnemar(b, c) == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_mcnemar_hand_computed():
    # b=0, c=5: 2 * (1/2)^5 = 0.0625
    assert mcnemar(0, 5) == pytest.approx(0.0625)
    # b=1, c=4: 2 * (1 + 5) / 32 = 0.375
    assert mcnemar(1, 4) == pytest.approx(0.375)
    assert mcnemar(4, 4) == 1.0


def test_holm_hand_computed():
    adj = holm({"a": 0.01, "b": 0.04, "c": 0.03})
    # sorted: a 0.01*3 = 0.03; c 0.03*2 = 0.06; b max(0.06, 0.04*1) = 0.06
    assert adj == pytest.approx({"a": 0.03, "c": 0.06, "b": 0.06})


def test_f1_from_counts():
    assert f1_from_counts(2, 1, 1) == pytest.approx(4 / 6)
    assert f1_from_counts(0, 0, 3) == 0.0
    assert f1_from_counts(0, 0, 0) is None


def test_f1_metric_counts_and_empty():
    m = f1_metric("f1", {"c1": (2, 1, 0), "c2": (0, 0, 1)})
    # tp 2, fp 1, fn 1 -> 4/6
    assert m.value == pytest.approx(4 / 6) and m.k == 4 and m.n == 6
    assert m.counts == {"tp": 2, "fp": 1, "fn": 1}
    assert m.lo is not None and m.lo <= m.value <= m.hi
    empty = f1_metric("f1", {})
    assert empty.value is None and empty.n == 0


def test_cluster_bootstrap_is_deterministic_and_agrees_with_the_vector_form():
    groups = {"c1": [1, 1, 0], "c2": [0, 0], "c3": [1, 1, 1, 1], "c4": [0, 1]}

    def mean(xs):
        return sum(xs) / len(xs) if xs else None

    a = cluster_bootstrap(groups, mean, n_resamples=500, seed=7)
    b = cluster_bootstrap(groups, mean, n_resamples=500, seed=7)
    assert a == b
    sums = {k: [sum(v), len(v)] for k, v in groups.items()}
    c = cluster_bootstrap_sums(sums, lambda p: p[:, 0] / p[:, 1], n_resamples=500, seed=7)
    assert a == pytest.approx(c)
    point = sum(sum(v) for v in groups.values()) / sum(len(v) for v in groups.values())
    assert a[0] <= point <= a[1]
    assert cluster_bootstrap({}, mean) is None


def test_cluster_bootstrap_degenerate_when_every_cluster_is_alike():
    groups = {"a": [1, 0], "b": [0, 1], "c": [1, 0]}
    lo, hi = cluster_bootstrap(groups, lambda xs: sum(xs) / len(xs), n_resamples=200)
    assert lo == hi == 0.5


def test_cluster_bootstrap_resamples_whole_clusters():
    # Two clusters, all-ones and all-zeros: a resample is {1,1}, {0,0} or mixed -> 0, 0.5, 1.
    seen = set()

    def stat(xs):
        v = sum(xs) / len(xs)
        seen.add(v)
        return v

    cluster_bootstrap({"x": [1, 1, 1], "y": [0, 0, 0]}, stat, n_resamples=300, seed=1)
    assert seen == {0.0, 0.5, 1.0}


def test_rate_and_mean_metrics():
    m = rate("r", {"a": (1.5, 2), "b": (0.5, 2)})
    assert m.value == pytest.approx(0.5) and m.k == 2.0 and m.n == 4
    assert m.method == "cluster_bootstrap" and m.lo <= 0.5 <= m.hi
    assert rate("r", {}).value is None
    lat = mean_metric("lat", {"a": [0, 2], "b": [1]})
    assert lat.value == pytest.approx(1.0) and lat.n == 3


def test_balanced_accuracy_needs_both_classes():
    m = balanced_accuracy("ba", {"a": (3, 4, 1, 2), "b": (1, 2, 4, 4)})
    # TPR 4/6, TNR 5/6 -> 0.75
    assert m.value == pytest.approx(0.75) and m.n == 12 and m.k == 9
    assert balanced_accuracy("ba", {"a": (1, 1, 0, 0)}).value is None


def test_difference_metric():
    m = difference_metric("d", {"a": (2, 4, 1, 4), "b": (1, 2, 0, 2)})
    # before 3/6, after 1/6 -> 1/3
    assert m.value == pytest.approx(1 / 3)
    assert m.counts == {"k_before": 3, "n_before": 6, "k_after": 1, "n_after": 6}
    assert difference_metric("d", {}).value is None


def test_metric_fmt_and_validation():
    m = Metric(name="x", value=0.75, k=3, n=4, lo=0.3, hi=0.95, method="wilson")
    assert m.fmt() == "0.750 (3/4) [0.300, 0.950]"
    assert np.isfinite(m.value)
    with pytest.raises(ValueError):
        Metric(name="x", value=0.5, k=1, n=-1)
