"""Paired comparison: McNemar per item type, hand-computed, and between two saved runs."""

import pytest
from scipy.stats import binomtest
from toy_systems import KeywordToy

from twistbench.contract import Capabilities
from twistbench.datasets.demo import demo_dataset
from twistbench.errors import InputError
from twistbench.model import Verdict
from twistbench.report.compare import (
    compare_folders,
    compare_outcomes,
    compare_runs,
    render_comparison,
)
from twistbench.runs.runner import RunSettings, run_system
from twistbench.tracks.base import ItemOutcome


def outs(values, item_type="B:contradicting"):
    return [ItemOutcome(item_id=f"i{n}", item_type=item_type, conversation="c", value=v)
            for n, v in enumerate(values) if v is not None]


def test_hand_computed_mcnemar():
    # b = items 0-4 (run 1 right, run 2 wrong), c = item 7 (the reverse)
    r1 = outs([1, 1, 1, 1, 1, 1, 0, 0, 1, 1])
    r2 = outs([0, 0, 0, 0, 0, 1, 0, 1, 1, 1])
    cmp = compare_outcomes(r1, r2, "one", "two", "toy", "sha")
    t = cmp.tests[0]
    assert (t.n, t.b, t.c) == (10, 5, 1)
    assert t.p == pytest.approx(binomtest(1, 6, 0.5).pvalue)  # 2 * 7/64 = 0.21875
    assert t.p == pytest.approx(0.21875)
    assert t.mean_1 == pytest.approx(0.8) and t.mean_2 == pytest.approx(0.4)
    assert t.method == "exact McNemar"


def test_items_missing_on_one_side_are_left_out_and_counted():
    r1 = outs([1, 0, 1, None])
    r2 = outs([1, 1, None, 0])
    t = compare_outcomes(r1, r2, "a", "b", "toy", "sha").tests[0]
    assert (t.n, t.only_1, t.only_2, t.b, t.c) == (2, 1, 1, 0, 1)


def test_continuous_scores_use_a_sign_test_and_holm_covers_the_family():
    r1 = outs([1.0, 0.5, 0.2], "locomo:cat4") + outs([1, 1, 1, 1, 1, 1], "B:aligned")
    r2 = outs([0.5, 0.5, 0.1], "locomo:cat4") + outs([0, 0, 0, 0, 0, 0], "B:aligned")
    cmp = compare_outcomes(r1, r2, "a", "b", "toy", "sha")
    by = {t.item_type: t for t in cmp.tests}
    assert (by["locomo:cat4"].b, by["locomo:cat4"].c) == (2, 0)
    assert by["locomo:cat4"].method.startswith("exact sign test")
    assert by["B:aligned"].p == pytest.approx(2 / 64)
    assert by["B:aligned"].p_holm == pytest.approx(min(1, 2 * 2 / 64))
    assert by["locomo:cat4"].p_holm == pytest.approx(max(0.5, 2 * 2 / 64))


def test_empty_inputs():
    assert compare_outcomes([], [], "a", "b", "toy", "sha").tests == []


def test_refuses_runs_on_another_key():
    ds = demo_dataset()
    with pytest.raises(InputError) as ei:
        compare_runs(ds, [], Capabilities(), [], Capabilities(), key_1="builtin", key_2="other")
    assert ei.value.field == "dataset.sha256"


class FlagAll(KeywordToy):
    name = "flag-all"

    def check_alignment(self, draft: str) -> Verdict:
        return Verdict(aligned=False)


def test_compare_two_saved_runs(tmp_path):
    ds = demo_dataset()
    quiet = RunSettings(progress=False, timeout_s=5, tracks=["B"])
    run_system(ds, KeywordToy(), tmp_path / "a", settings=quiet, dataset_source={"name": "demo"})
    run_system(ds, FlagAll(), tmp_path / "b", settings=quiet, dataset_source={"name": "demo"})
    cmp = compare_folders(tmp_path / "a", tmp_path / "b")
    by = {t.item_type: t for t in cmp.tests}
    # KeywordToy passes every draft: right on aligned + hard negative, wrong on contradicting
    assert (by["B:contradicting"].b, by["B:contradicting"].c) == (0, 2)
    assert (by["B:aligned"].b, by["B:aligned"].c) == (1, 0)
    assert (by["B:hard_negative"].b, by["B:hard_negative"].c) == (1, 0)
    md = render_comparison(cmp)
    assert "keyword-toy vs flag-all" in md and "| B:contradicting | 2 |" in md


def test_compare_folders_refuses_different_keys(tmp_path):
    ds = demo_dataset()
    quiet = RunSettings(progress=False, timeout_s=5, tracks=["B"])
    run_system(ds, KeywordToy(), tmp_path / "a", settings=quiet, dataset_source={"name": "demo"})
    other = ds.model_copy(update={"key_sha256": "other"})
    run_system(other, KeywordToy(), tmp_path / "b", settings=quiet, dataset_source={"name": "demo"})
    with pytest.raises(InputError) as ei:
        compare_folders(tmp_path / "a", tmp_path / "b")
    assert "other" in str(ei.value)


def test_item_types_nobody_answered_are_not_tests_and_small_p_prints_as_a_bound():
    # B:aligned: 20 items run 1 right and run 2 wrong -> p = 2 / 2**20 < 1e-4
    r1 = outs([1] * 20, "B:aligned") + outs([1, 1], "C:current")
    r2 = outs([0] * 20, "B:aligned") + [ItemOutcome(item_id="other", item_type="C:current",
                                                    conversation="c", value=1)]
    cmp = compare_outcomes(r1, r2, "one", "two", "toy", "sha")
    by = {t.item_type: t for t in cmp.tests}
    assert by["B:aligned"].p == pytest.approx(binomtest(0, 20, 0.5).pvalue)
    assert by["C:current"].n == 0 and by["C:current"].p is None
    assert by["C:current"].p_holm is None
    # Holm over the one real test: unchanged
    assert by["B:aligned"].p_holm == pytest.approx(by["B:aligned"].p)
    md = render_comparison(cmp)
    row = next(line for line in md.splitlines() if line.startswith("| B:aligned"))
    assert "| < 1e-4 | < 1e-4 |" in row and "0.0000" not in md
    assert not any(line.startswith("| C:current") for line in md.splitlines())
    assert "Not compared (no item of the type answered by both runs): C:current (only one: " \
           "2, only two: 1)" in md
