"""Bootstrap against scipy.stats.bootstrap; Fleiss' kappa against hand-computed examples."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from twistbench.stats import (
    count_matrix,
    fleiss_kappa,
    majority,
    mean_gap_bootstrap,
    mean_pairwise_agreement,
    paired_bootstrap,
    paired_bootstrap_many,
    two_group_bootstrap,
)


def _scipy_paired(a: np.ndarray, b: np.ndarray, seed: int) -> tuple[float, float]:
    res = sps.bootstrap((a, b), lambda x, y, axis=-1: x.mean(axis) - y.mean(axis), paired=True,
                        vectorized=True, method="percentile", n_resamples=3000,
                        confidence_level=0.95, random_state=seed)
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


@pytest.mark.parametrize("seed", [0, 1])
def test_paired_bootstrap_matches_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.random(400)
    b = np.clip(a - 0.05 + rng.normal(0, 0.25, 400), 0, 1)
    ours = paired_bootstrap(a, b)  # 3,000 resamples, seed 1337
    lo, hi = _scipy_paired(a, b, seed + 99)
    width = hi - lo
    assert ours.estimate == pytest.approx(a.mean() - b.mean())
    assert ours.low < ours.estimate < ours.high
    # different random draws: the bounds agree to a small fraction of the interval width
    assert abs(ours.low - lo) < 0.1 * width
    assert abs(ours.high - hi) < 0.1 * width
    assert abs((ours.high - ours.low) - width) < 0.1 * width


def test_bootstrap_deterministic_and_seeded() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.random(200), rng.random(200)
    assert paired_bootstrap(a, b) == paired_bootstrap(a, b, n_resamples=3000, seed=1337)
    assert paired_bootstrap(a, b, seed=1) != paired_bootstrap(a, b, seed=2)


def test_paired_many_equals_single_column() -> None:
    rng = np.random.default_rng(2)
    d = rng.normal(size=(300, 3))
    many = paired_bootstrap_many(d)
    for j in range(3):
        single = paired_bootstrap(d[:, j], np.zeros(300))
        assert many[j].low == pytest.approx(single.low)
        assert many[j].high == pytest.approx(single.high)


def test_block_boundaries_do_not_change_the_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    import twistbench.stats as st

    rng = np.random.default_rng(3)
    a, b = rng.random(1000), rng.random(1000)
    full = paired_bootstrap(a, b)
    monkeypatch.setattr(st, "_BLOCK_ELEMS", 7 * 1000)  # 7 resamples per matrix product
    monkeypatch.setattr(st, "_COUNT_ELEMS", 3 * 1000)  # 3 resamples per count
    blocked = paired_bootstrap(a, b)
    # the same draws; only the matrix product's row blocking differs (last-bit rounding)
    assert blocked.estimate == full.estimate and blocked.n == full.n
    assert blocked.low == pytest.approx(full.low, abs=1e-15)
    assert blocked.high == pytest.approx(full.high, abs=1e-15)


def test_batch_equals_resampling_by_gather_and_shares_draws() -> None:
    """Second algorithm: the same index draws (PCG64, seed, int32, one block) gathered and
    averaged per column; the batch's count-times-column sums agree to rounding. Matrices of
    the same n and seed share a draw; a column given twice is resampled once."""
    import twistbench.stats as st

    rng = np.random.default_rng(9)
    n, r = 500, 400
    x, y, z = rng.random((n, 3)), rng.random((n, 2)), rng.random(n - 1)
    batch = st.BootstrapBatch(r)
    tx, ty, tz = batch.add(x, 1337), batch.add(np.column_stack([x[:, 1], y[:, 0]]), 1337), \
        batch.add(z, 1337)
    ty2 = batch.add(y, 1338)
    assert batch.columns == 3 + 1 + 1 + 2 and batch.draws == 3
    batch.run()
    idx = np.random.default_rng(1337).integers(0, n, size=(r, n), dtype=np.int32)
    by_gather = np.column_stack([x[idx, j].mean(axis=1) for j in range(3)])
    np.testing.assert_allclose(batch.dist(tx), by_gather, rtol=0, atol=1e-14)
    np.testing.assert_allclose(batch.dist(ty)[:, 1], y[idx, 0].mean(axis=1), rtol=0, atol=1e-14)
    assert np.array_equal(batch.dist(ty)[:, 0], batch.dist(tx)[:, 1])  # shared draw, one slot
    idx2 = np.random.default_rng(1338).integers(0, n, size=(r, n), dtype=np.int32)
    np.testing.assert_allclose(batch.dist(ty2)[:, 0], y[idx2, 0].mean(axis=1), atol=1e-14)
    idx_z = np.random.default_rng(1337).integers(0, n - 1, size=(r, n - 1), dtype=np.int32)
    np.testing.assert_allclose(batch.dist(tz)[:, 0], z[idx_z].mean(axis=1), atol=1e-14)
    # the module-level functions are the same computation on a batch of one
    assert st.paired_bootstrap_many(x, r, 1337)[2].low == \
        float(np.percentile(batch.dist(tx)[:, 2], 2.5))


def test_two_group_bootstrap_matches_scipy() -> None:
    rng = np.random.default_rng(4)
    x, y = rng.random(300) + 0.1, rng.random(200)
    ours = two_group_bootstrap(x, y)
    res = sps.bootstrap((x, y), lambda p, q, axis=-1: p.mean(axis) - q.mean(axis),
                        paired=False, vectorized=True, method="percentile", n_resamples=3000,
                        random_state=11)
    lo, hi = res.confidence_interval
    width = hi - lo
    assert ours.estimate == pytest.approx(x.mean() - y.mean())
    assert abs(ours.low - lo) < 0.1 * width and abs(ours.high - hi) < 0.1 * width


def test_mean_gap_bootstrap_single_run_equals_two_group() -> None:
    rng = np.random.default_rng(8)
    x, y = rng.random(100), rng.random(80)
    one = mean_gap_bootstrap([(x, y)])
    two = two_group_bootstrap(x, y)
    assert one.estimate == pytest.approx(two.estimate)
    assert one.low == pytest.approx(two.low) and one.high == pytest.approx(two.high)
    both = mean_gap_bootstrap([(x, y), (x + 1, y)])
    assert both.estimate == pytest.approx(((x.mean() - y.mean()) + (x.mean() + 1 - y.mean())) / 2)
    assert math.isnan(mean_gap_bootstrap([(x, np.array([]))]).estimate)
    # a group of one would resample to itself and give a zero-width interval: n/a instead
    assert math.isnan(two_group_bootstrap(x, y[:1]).low)
    assert mean_gap_bootstrap([(x, y[:1]), (x, y)]).n == 1


def test_empty_samples_are_nan_not_zero() -> None:
    iv = paired_bootstrap([], [])
    assert iv.n == 0 and math.isnan(iv.estimate)


def test_fleiss_kappa_classic_example() -> None:
    # The worked example of Fleiss' kappa (Wikipedia "Fleiss' kappa"): 10 subjects, 14 raters,
    # 5 categories. P_bar = 0.378, P_e = 0.213, kappa = (0.378 - 0.213) / (1 - 0.213) = 0.210.
    table = [
        [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
    ]
    assert fleiss_kappa(table) == pytest.approx(0.20993, abs=1e-4)


def test_fleiss_kappa_small_hand_example() -> None:
    # 4 cases, 3 raters, labels supports / partial / does_not_support:
    #   case 1: S S S   case 2: S S P   case 3: D D D   case 4: P D D
    # counts rows: [3,0,0] [2,1,0] [0,0,3] [0,1,2]
    # P_i = (sum n_ij^2 - 3) / 6: 1, 1/3, 1, 1/3  -> P_bar = 2/3
    # p_j = (5, 2, 5) / 12 -> P_e = (25 + 4 + 25) / 144 = 0.375
    # kappa = (2/3 - 0.375) / 0.625 = 0.46667
    labels = {"1": ["supports"] * 3, "2": ["supports", "supports", "partial"],
              "3": ["does_not_support"] * 3,
              "4": ["partial", "does_not_support", "does_not_support"]}
    cats = ("supports", "partial", "does_not_support")
    m = count_matrix(labels, cats)
    assert m.tolist() == [[3, 0, 0], [2, 1, 0], [0, 0, 3], [0, 1, 2]]
    assert fleiss_kappa(m) == pytest.approx((2 / 3 - 0.375) / 0.625)
    assert fleiss_kappa([[2, 0], [2, 0]]) != fleiss_kappa([[2, 0], [0, 2]])
    assert math.isnan(fleiss_kappa([[2, 0], [2, 0]]))  # all in one category: undefined
    assert fleiss_kappa([[2, 0], [0, 2]]) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        fleiss_kappa([[2, 0], [1, 0]])


def test_pairwise_agreement_and_majority() -> None:
    labels = {"r1": {"a": "x", "b": "y", "c": "x"}, "r2": {"a": "x", "b": "x"},
              "r3": {"c": "y"}}
    # pairs: r1-r2 share a,b: 1/2; r1-r3 share c: 0; r2-r3 share nothing (skipped)
    mean, pairs = mean_pairwise_agreement(labels)
    assert pairs == 2 and mean == pytest.approx(0.25)
    assert majority(["a", "b", "a"]) == "a"
    assert majority(["a", "b"]) is None
    assert majority([]) is None
