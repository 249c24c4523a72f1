"""The variety report: classifiers against hand-computed values, cue shares, splits, gate."""

from __future__ import annotations

import math

import numpy as np
import pytest
from rich.console import Console

from twistbench.itemgen.variety import (
    VarietyTurn,
    Vocabulary,
    cue_shares,
    heldout_accuracy,
    logistic_fit,
    logistic_predict,
    naive_bayes_fit,
    naive_bayes_predict,
    ngrams,
    split_arcs,
    tokenize,
    variety_report,
)


def test_tokenize_and_ngrams():
    assert tokenize("We're evaluating Vantyx — at $48k!") == ["we're", "evaluating", "vantyx", "at",
                                                              "48k"]
    assert tokenize("We\u2019re") == ["we're"]
    assert ngrams(["a", "b", "c"], 2) == ["a", "b", "c", "a b", "b c"]


def test_naive_bayes_matches_hand_computation():
    # vocabulary [x, y]; class 0 docs: "x x y", class 1 docs: "y y", alpha = 1
    x = np.array([[2.0, 1.0], [0.0, 2.0]])
    y = np.array([0, 1])
    logprior, loglik = naive_bayes_fit(x, y)
    # class 0: counts x=2+1, y=1+1 over 5 -> 3/5, 2/5; class 1: x=0+1, y=2+1 over 4 -> 1/4, 3/4
    assert np.allclose(np.exp(loglik), [[3 / 5, 2 / 5], [1 / 4, 3 / 4]])
    assert np.allclose(np.exp(logprior), [0.5, 0.5])
    # doc "x": class 0 log(3/5) > class 1 log(1/4) -> 0; doc "y y": 2log(2/5) < 2log(3/4) -> 1
    pred = naive_bayes_predict((logprior, loglik), np.array([[1.0, 0.0], [0.0, 2.0]]))
    assert pred.tolist() == [0, 1]
    # a tie (empty doc, equal priors) goes to class 0
    assert naive_bayes_predict((logprior, loglik), np.array([[0.0, 0.0]])).tolist() == [0]


def test_logistic_regression_separable_and_uninformative():
    x = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    y = np.array([0, 0, 1, 1])
    w = logistic_fit(x, y, l2=0.1)
    assert logistic_predict(w, x).tolist() == [0, 0, 1, 1]
    # with identical inputs for both labels the optimum is w = 0 (symmetric): predicts class 0
    same = np.ones((4, 2))
    w0 = logistic_fit(same, y)
    assert np.allclose(w0, 0.0, atol=1e-5)
    # the fitted weights minimise the objective: gradient is ~0 (independent check of the optimum)
    xb = np.hstack([x, np.ones((4, 1))])
    p = 1 / (1 + np.exp(-(xb @ w)))
    grad = xb.T @ (p - y) + np.array([0.1, 0.1, 0.0]) * w
    assert np.allclose(grad, 0.0, atol=1e-4)


def _rows(n: int, rev_text, hn_text) -> list[VarietyTurn]:
    rows = []
    for i in range(n):
        rows.append(VarietyTurn(f"r{i}", "reversal", "direct", f"t{i % 3}", rev_text(i)))
        rows.append(VarietyTurn(f"h{i}", "hard_negative", "nostalgia", f"u{i % 4}", hn_text(i)))
    return rows


def test_separable_wording_is_caught():
    rows = _rows(20, lambda i: f"we are switching vendors now case {i}",
                 lambda i: f"i remember the old days fondly case {i}")
    rep = variety_report(rows, seed=1, n_splits=3)
    assert rep.bow_accuracy == 1.0
    assert rep.bow_accuracy_mean == 1.0
    assert not rep.passes
    assert rep.templates_per_family == {"direct": 3, "nostalgia": 4}


def test_identical_wording_is_chance():
    rows = _rows(20, lambda i: "same words here", lambda i: "same words here")
    rep = variety_report(rows, seed=3, n_splits=4)
    # every test turn scores a tie (texts carry no label) -> class 0 -> exactly half right
    assert rep.bow_accuracy_nb == 0.5
    assert rep.bow_accuracy_lr == 0.5
    assert rep.passes


def test_split_is_by_arc_stratified_and_seeded():
    arcs = {f"r{i}": "reversal" for i in range(9)} | {f"h{i}": "hard_negative" for i in range(7)}
    train, test = split_arcs(arcs, 5)
    assert train.isdisjoint(test) and train | test == set(arcs)
    assert sum(arcs[a] == "reversal" for a in train) == 4
    assert sum(arcs[a] == "hard_negative" for a in train) == 3
    assert split_arcs(arcs, 5) == (train, test)
    assert split_arcs(arcs, 6) != (train, test)


def test_turns_of_one_arc_stay_together():
    rows = [VarietyTurn("h0", "hard_negative", "pressure_signal", "p1", "alpha"),
            VarietyTurn("h0", "hard_negative", "pressure_signal", "p2", "beta")]
    rows += [VarietyTurn(f"r{i}", "reversal", "direct", "r", f"gamma {i}") for i in range(4)]
    rows += [VarietyTurn(f"h{i}", "hard_negative", "nostalgia", "n", f"delta {i}")
             for i in range(1, 4)]
    nb, lr = heldout_accuracy(rows, 0)
    assert 0.0 <= nb <= 1.0 and 0.0 <= lr <= 1.0
    with pytest.raises(ValueError, match="two labels"):
        variety_report(rows + [VarietyTurn("h0", "reversal", "direct", "r", "x")])


def test_cue_shares_hand_computed():
    rows = [
        VarietyTurn("r1", "reversal", "direct", "a", "We are evaluating Vantyx now"),
        VarietyTurn("r2", "reversal", "direct", "a", "Evaluating options, honestly"),
        VarietyTurn("r3", "reversal", "direct", "a", "The renewal is off"),
        VarietyTurn("r4", "reversal", "direct", "a", "We are out"),
        VarietyTurn("h1", "hard_negative", "nostalgia", "b", "I remember evaluating Vantyx"),
        VarietyTurn("h2", "hard_negative", "nostalgia", "b", "Renewal is fine"),
    ]
    top = cue_shares(rows, top=3)
    # "evaluating" is in r1 and r2 (2/4) and in h1 (1/2); "we are" is only function words
    assert top[0] == ("evaluating", 0.5, 0.5)
    assert all(c != "we are" for c, _, _ in top)
    assert ("renewal", 0.25, 0.5) in cue_shares(rows, top=20)


def test_bad_label_is_refused():
    with pytest.raises(ValueError, match="label"):
        variety_report([("a", "positive", "f", "t", "x")])


def test_renderings_carry_the_figures():
    rows = _rows(12, lambda i: f"we are switching {i} soon",
                 lambda i: f"we might switch {i} someday")
    rep = variety_report(rows, seed=0, n_splits=2)
    md = rep.to_markdown()
    assert f"{rep.bow_accuracy:.3f}" in md and "| direct | reversal | 3 |" in md
    d = rep.to_dict()
    assert d["n_splits"] == 2 and d["passes"] == rep.passes
    assert math.isclose(d["bow_accuracy_mean"], round(rep.bow_accuracy_mean, 4))
    console = Console(record=True, width=120)
    console.print(rep.to_rich())
    assert "bag-of-words" in console.export_text()


def test_vocabulary_ignores_unseen_ngrams():
    vocab = Vocabulary(["a b"], n_max=2)
    m = vocab.matrix(["a b c", "c"])
    assert m.shape == (2, 3) and m[1].sum() == 0 and m[0].sum() == 3
