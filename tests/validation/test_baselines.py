"""Leave-one-group-out evaluation, folding, the skeleton lookup: cross-checked by hand and
against independent implementations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from twistbench.validation.baselines import (
    Evaluated,
    Recipe,
    balanced_contrast_sets,
    folded,
    logo_predict,
    nontext_recipes,
    skeleton_coverage,
    skeleton_lookup_recipe,
    text_recipes,
)
from twistbench.validation.shortcuts import classifier_check


def test_folded_maps_both_sides_of_chance_to_the_distance():
    assert folded(0.5) == 0.5
    assert folded(0.8) == pytest.approx(0.8)
    assert folded(0.2) == pytest.approx(0.8)
    assert folded(0.0) == 1.0


def test_every_fold_holds_out_exactly_one_group_and_trains_on_all_others():
    seen = []

    def spy(train, test, y):
        seen.append((set(groups[train]), set(groups[test])))
        return np.zeros(len(test), dtype=int), np.zeros(len(test))

    groups = np.array(["a", "a", "b", "c", "c", "c", "d"])
    y = np.array([0, 1, 0, 1, 0, 1, 1])
    logo_predict(Recipe("spy", "none", spy), y, groups)
    assert all(len(test) == 1 for _, test in seen)
    assert sorted(next(iter(test)) for _, test in seen) == ["a", "b", "c", "d"]
    for train, test in seen:
        assert not train & test and train | test == {"a", "b", "c", "d"}


def test_a_single_class_training_fold_predicts_that_class_without_fitting():
    def never(train, test, y):
        raise AssertionError("must not be fitted on one class")

    groups = np.array(["a", "b", "b"])
    y = np.array([1, 0, 0])
    ev = logo_predict(Recipe("never", "none", never), y, groups)
    assert ev.predictions.tolist() == [0, 1, 1]


def test_balanced_accuracy_and_auc_match_hand_and_scipy():
    y = np.array([0, 0, 0, 1, 1, 1, 1, 0])
    pred = np.array([0, 1, 0, 1, 1, 0, 1, 0])
    score = np.array([0.1, 0.7, 0.3, 0.8, 0.6, 0.2, 0.9, 0.4])
    ev = Evaluated(Recipe("x", "y", None), pred, score)
    # recall of class 0: 3/4, of class 1: 3/4
    assert ev.balanced_accuracy(y) == pytest.approx((3 / 4 + 3 / 4) / 2)
    u = mannwhitneyu(score[y == 1], score[y == 0]).statistic
    assert ev.auc(y) == pytest.approx(u / (4 * 4))


def test_text_classifiers_find_a_cue_word_across_groups():
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(60)]
    texts, y, groups = [], [], []
    for g in range(4):
        for i in range(30):
            label = i % 2
            body = " ".join(rng.choice(words, 8))
            texts.append(body + (" tram" if label else " bus"))
            y.append(label)
            groups.append(g)
    y, groups = np.array(y), np.array(groups)
    for r in text_recipes(texts):
        assert logo_predict(r, y, groups).balanced_accuracy(y) > 0.95, r.label


def test_nontext_models_find_a_threshold_and_miss_noise():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 5))
    y = (x[:, 2] > 0.3).astype(int)
    groups = np.repeat(np.arange(4), 50)
    for r in nontext_recipes(x):
        assert logo_predict(r, y, groups).balanced_accuracy(y) > 0.85, r.label
    noise = rng.integers(0, 2, 200)
    values = [folded(logo_predict(r, noise, groups).balanced_accuracy(noise))
              for r in nontext_recipes(x)]
    assert max(values) < 0.65


def test_skeleton_lookup_uses_other_groups_only():
    skeletons = ["s1", "s1", "s2", "s2", "s3", "s3", "s1", "s2"]
    y = np.array([1, 1, 0, 0, 1, 0, 1, 0])
    groups = np.array([0, 1, 0, 1, 2, 3, 2, 3])
    ev = logo_predict(skeleton_lookup_recipe(skeletons), y, groups)
    # s1 -> 1 and s2 -> 0 everywhere; s3 occurs in groups 2 and 3 with opposite labels: unseen
    # in training for either, so those two get the training majority
    assert ev.predictions[[0, 1, 2, 3, 6, 7]].tolist() == [1, 1, 0, 0, 1, 0]
    assert skeleton_coverage(skeletons, groups) == pytest.approx(1.0)
    assert skeleton_coverage(["a", "b"], np.array([0, 1])) == 0.0


def test_below_chance_from_contrast_pairs_is_folded_and_fails_the_gate():
    # The same draft texts carry label 1 in groups 0-1 and label 0 in groups 2-3: whichever
    # group is held out, training holds a majority of the opposite label, so every prediction
    # is wrong. Raw balanced accuracy ~0 is a leak of structure, not a pass.
    texts = [f"please confirm the {w} plan" for w in ("north", "south", "east", "west", "mid")]
    all_texts, y, groups = [], [], []
    for g in range(4):
        for t in texts:
            all_texts.append(t)
            y.append(1 if g < 2 else 0)
            groups.append(g)
    check = classifier_check("B.text", "contrast", text_recipes(all_texts), np.array(y),
                             np.array(groups), metric="balanced_accuracy",
                             class_names=("aligned", "contradicting"), seed=0)
    assert check.raw is not None and check.raw < 0.1
    assert check.value == pytest.approx(folded(check.raw)) and check.passed is False


def test_too_few_groups_or_items_is_not_measurable_not_a_pass_or_fail():
    check = classifier_check("A.text", "tiny", text_recipes(["a b", "c d", "e f"]),
                             np.array([0, 1, 0]), np.array([0, 1, 2]),
                             metric="balanced_accuracy", class_names=("n", "r"), seed=0)
    assert check.passed is None and check.value is None and "not measurable" in check.note


def test_balanced_contrast_sets_keeps_only_sets_with_as_many_items_of_each_label():
    members = ["t1", "t1", "t2", "t2", "t2", None, "t3", "t3", "t4", "t4"]
    y = np.array([1, 0, 1, 1, 0, 1, 1, 1, 0, 1])
    # t1 1:1 and t4 1:1 are balanced; t2 (2:1) and t3 (one label only) say something by their text
    assert balanced_contrast_sets(members, y) == ["t1", "t1", None, None, None, None, None, None,
                                                  "t4", "t4"]


def test_training_never_holds_a_twin_of_a_held_out_item():
    seen = []

    def spy(train, test, y):
        seen.append((train.tolist(), test.tolist()))
        return np.zeros(len(test), dtype=int), np.zeros(len(test))

    groups = np.array(["a", "a", "b", "b", "c", "c", "d"])
    y = np.array([1, 0, 0, 1, 1, 0, 1])
    twins = ["t1", "t2", "t1", "t2", None, None, None]
    logo_predict(Recipe("spy", "none", spy), y, groups, twins)
    for train, test in seen:
        held = {twins[i] for i in test} - {None}
        assert not any(twins[i] in held for i in train)
    # group "a" holds t1 and t2: their twins in "b" are out of its training; "c" trains on all
    by_test = {tuple(test): set(train) for train, test in seen}
    assert by_test[(0, 1)] == {4, 5, 6}
    assert by_test[(4, 5)] == {0, 1, 2, 3, 6}


def _contrast_key(seed: int, shortcut: bool):
    """Ten groups; each of 30 sentences is said twice, in two different groups. Balanced twins
    (one per label) when not `shortcut`; with `shortcut` both uses carry one label, fixed per
    sentence by a word in it."""
    rng = np.random.default_rng(seed)
    texts, y, groups, members = [], [], [], []
    for k in range(30):
        word = ["maybe", "surely"][k % 2]
        text = f"sentence {k} {word} " + " ".join(f"w{rng.integers(0, 50)}" for _ in range(6))
        first, second = rng.choice(10, size=2, replace=False)
        labels = [k % 2, k % 2] if shortcut else [1, 0]
        for g, lab in zip((first, second), labels):
            texts.append(text)
            y.append(lab)
            groups.append(f"g{g}")
            members.append(f"m{k}")
    return texts, np.array(y), np.array(groups), members


def _word_recipes(texts):
    # the word 1-2-gram baselines are enough to see memorised twins (and much cheaper)
    return [r for r in text_recipes(texts) if r.features == "word 1-2-grams"]


def test_cross_group_twins_read_as_a_perfect_anti_classifier_unless_kept_out_of_training():
    texts, y, groups, members = _contrast_key(0, shortcut=False)
    recipes = _word_recipes(texts)
    plain = classifier_check("A.text", "t", recipes, y, groups,
                             metric="balanced_accuracy", class_names=("n", "r"), seed=0,
                             control=False)
    assert plain.raw < 0.2 and not plain.passed  # memorised twins: always the opposite label
    twin_free = classifier_check("A.text", "t", recipes, y, groups,
                                 metric="balanced_accuracy", class_names=("n", "r"), seed=0,
                                 control=False, members=members)
    assert twin_free.passed and twin_free.value <= 0.6
    assert twin_free.details["twins_kept_out_of_training"] == 60
    assert twin_free.details["value_with_twins_in_training"] == pytest.approx(plain.value, abs=1e-4)


def test_a_bank_line_used_for_one_label_is_still_caught_with_members_given():
    texts, y, groups, members = _contrast_key(1, shortcut=True)
    check = classifier_check("A.text", "t", _word_recipes(texts), y, groups,
                             metric="balanced_accuracy", class_names=("n", "r"), seed=0,
                             control=False, members=members)
    assert not check.passed and check.value > 0.9
    assert "twins_kept_out_of_training" not in check.details


def test_unconverged_fits_are_counted_inside_a_scope_and_warned_outside():
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    from twistbench.validation.baselines import _fit, count_nonconverged

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(60, 5)), np.array([0, 1] * 30)

    def stopped() -> LogisticRegression:
        return LogisticRegression(max_iter=1, solver="saga", tol=1e-12, random_state=0)

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # any leak fails the test
        with count_nonconverged() as outer:
            _fit(stopped(), x, y, x)
            with count_nonconverged() as inner:
                _fit(LogisticRegression(), x, y, x)
    assert (outer.fits, outer.nonconverged) == (2, 1)
    assert (inner.fits, inner.nonconverged) == (1, 0)
    with pytest.warns(ConvergenceWarning):  # no scope counts it: it must not vanish
        _fit(stopped(), x, y, x)
