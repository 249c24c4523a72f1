"""Cohen's and Fleiss' kappa against independent implementations: scikit-learn's
cohen_kappa_score, statsmodels' fleiss_kappa, and the published value of Fleiss (1971)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from twistbench.stats import (
    cluster_bootstrap,
    cluster_bootstrap_sums,
    cohen_kappa,
    cohen_parts,
    confusion_matrix,
    fleiss_kappa,
    fleiss_parts,
    fleiss_sums,
    kappa_from_parts,
)

# Fleiss (1971), Table 1: 30 patients, 6 psychiatrists each, 5 diagnoses (1 depression,
# 2 personality disorder, 3 schizophrenia, 4 neurosis, 5 other); one row per patient, one
# diagnosis per psychiatrist. The paper reports kappa = .430; R irr::kappam.fleiss gives 0.4302445.
FLEISS_1971 = [
    [4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5],
    [2, 2, 2, 4, 4, 4], [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4],
    [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5], [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4],
    [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5], [3, 3, 3, 3, 3, 5],
    [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
    [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4],
    [1, 4, 4, 4, 4, 5], [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4],
    [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5],
]


def _counts(rows: list[list[int]], k: int = 5) -> np.ndarray:
    out = np.zeros((len(rows), k), dtype=int)
    for i, row in enumerate(rows):
        for d in row:
            out[i, d - 1] += 1
    return out


def test_fleiss_1971_published_value_and_statsmodels():
    counts = _counts(FLEISS_1971)
    ours = fleiss_kappa(counts)
    assert ours == pytest.approx(0.4302445, abs=1e-7)
    assert round(ours, 3) == 0.430  # as printed in the paper
    table, _ = aggregate_raters(np.asarray(FLEISS_1971))
    assert ours == pytest.approx(sm_fleiss(table), abs=1e-12)


@pytest.mark.parametrize("seed", range(25))
def test_fleiss_matches_statsmodels_on_random_tables(seed):
    rng = np.random.default_rng(seed)
    raters, k = int(rng.integers(2, 7)), int(rng.integers(2, 5))
    # raters lean towards one label per item so kappa is not always near zero
    truth = rng.integers(0, k, size=40)
    labels = np.where(rng.random((40, raters)) < 0.7, truth[:, None],
                      rng.integers(0, k, size=(40, raters)))
    counts = np.stack([np.bincount(r, minlength=k) for r in labels])
    assert fleiss_kappa(counts) == pytest.approx(sm_fleiss(counts), abs=1e-12)


def test_cohen_two_classes_against_sklearn():
    a = ["yes", "yes", "no", "no", "yes", "no", "yes", "yes", "no", "yes"]
    b = ["yes", "no", "no", "no", "yes", "no", "yes", "no", "no", "yes"]
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    # by hand: p_o = 8/10; p1(yes) = 6/10, p2(yes) = 4/10; p_e = .24 + .24 = .48
    assert cohen_kappa(a, b) == pytest.approx((0.8 - 0.48) / 0.52)


def test_cohen_three_classes_against_sklearn():
    a = ["contradicts", "consistent", "acknowledges_change"] * 5 + ["contradicts"] * 3
    b = (["contradicts", "consistent", "consistent"] * 3
         + ["contradicts", "acknowledges_change", "acknowledges_change"] * 2
         + ["consistent", "contradicts", "contradicts"])
    assert len(a) == len(b) == 18
    ours = cohen_kappa(a, b)
    assert ours == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert 0 < ours < 1


@pytest.mark.parametrize("seed", range(25))
def test_cohen_matches_sklearn_on_random_labels(seed):
    rng = np.random.default_rng(100 + seed)
    k = int(rng.integers(2, 5))
    truth = rng.integers(0, k, size=30)
    a = np.where(rng.random(30) < 0.75, truth, rng.integers(0, k, size=30))
    b = np.where(rng.random(30) < 0.75, truth, rng.integers(0, k, size=30))
    if len(set(a) | set(b)) == 1:
        pytest.skip("one category only")
    assert cohen_kappa(list(a), list(b)) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_undefined_and_edge_cases():
    assert math.isnan(cohen_kappa(["x", "x"], ["x", "x"]))  # one category throughout
    assert cohen_kappa(["x", "y"], ["y", "x"]) == pytest.approx(-1.0)
    with pytest.raises(ValueError):
        cohen_kappa(["x"], ["x", "y"])
    with pytest.raises(ValueError):
        fleiss_sums([[2, 0], [1, 0]])


def test_sufficient_statistics_add_up_over_clusters():
    """The bootstrap pools per-cluster sums: the kappa of pooled sums equals the kappa of the
    pooled items, for Cohen (confusion counts) and Fleiss (P_i sums and category totals)."""
    rng = np.random.default_rng(7)
    a, b = rng.integers(0, 3, 60), rng.integers(0, 3, 60)
    parts = [confusion_matrix(a[i:i + 20], b[i:i + 20], [0, 1, 2]) for i in (0, 20, 40)]
    pooled = kappa_from_parts(*cohen_parts(sum(parts)))
    assert float(pooled) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    counts = _counts(FLEISS_1971)
    sums = sum(fleiss_sums(counts[i:i + 10]) for i in (0, 10, 20))
    assert float(kappa_from_parts(*fleiss_parts(sums, 6))) == pytest.approx(0.4302445, abs=1e-7)


def test_vectorised_bootstrap_equals_the_item_level_bootstrap():
    """cluster_bootstrap_sums over confusion counts gives the same interval as the generic
    cluster_bootstrap recomputing kappa with scikit-learn on the pooled items."""
    rng = np.random.default_rng(3)
    groups = {}
    for c in range(8):
        truth = rng.integers(0, 3, 12)
        a = np.where(rng.random(12) < 0.8, truth, rng.integers(0, 3, 12))
        b = np.where(rng.random(12) < 0.8, truth, rng.integers(0, 3, 12))
        groups[f"c{c}"] = list(zip(a.tolist(), b.tolist()))
    sums = {c: confusion_matrix([x for x, _ in v], [y for _, y in v], [0, 1, 2]).ravel()
            for c, v in groups.items()}

    def stat(p):
        return kappa_from_parts(*cohen_parts(p.reshape(-1, 3, 3)))

    def slow(pooled):
        x, y = [p[0] for p in pooled], [p[1] for p in pooled]
        return cohen_kappa_score(x, y, labels=[0, 1, 2])

    fast = cluster_bootstrap_sums(sums, stat, n_resamples=300)
    ref = cluster_bootstrap(groups, slow, n_resamples=300)
    assert fast == pytest.approx(ref, abs=1e-12)
