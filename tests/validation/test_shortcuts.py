"""The shortcut battery on synthetic keys: clean, it passes every gate; with one shortcut planted,
exactly the matching gate fails (so no gate passes by construction)."""

from __future__ import annotations

import json

import pytest
from synth_key import PLANTS, synthetic_key

from twistbench.datasets.demo import demo_dataset
from twistbench.judges.structural import StructuralJudge
from twistbench.model import Answer, ChainQuery, Event, FactState, UpdateChain
from twistbench.validation.report import GateReport, major_version, records_gates_in_key
from twistbench.validation.shortcuts import (
    C_BASELINES,
    GATES,
    chain_mentions,
    pii_masker,
    run_gates,
)

ALL_CHECKS = {"A.text", "A.nontext", "B.text", "B.skeleton", "find.items", "find.injected",
              "C.most_recent", "C.first", "C.all", "D.masking", "surface.duplicates"}


@pytest.fixture(scope="module")
def clean() -> GateReport:
    return run_gates(synthetic_key(locomo_style=True))


def test_clean_key_passes_every_gate_and_measures_every_check(clean):
    assert {c.id for c in clean.checks} == ALL_CHECKS
    assert clean.passed and clean.failures() == []
    assert all(c.passed is True for c in clean.checks), [c for c in clean.checks if not c.passed]
    assert clean.split == "leave one conversation out"


def test_classifier_checks_report_n_groups_best_baseline_and_control(clean):
    a = clean.check("A.text")
    assert a.n == {"hard negative": 60, "reversal": 60} and a.groups == 4
    assert a.best and len(a.candidates) == 5 and a.control is not None
    assert a.value == max(c.value for c in a.candidates)
    models = {c.model for c in clean.check("A.nontext").candidates}
    assert {"random forest", "gradient boosting"} <= models  # non-linear models are in the floor
    items = clean.check("find.items")
    assert items.metric == "AUC (folded)"
    assert any(c.features == "text + non-text features" for c in items.candidates)


def test_clean_cs_style_key_has_no_injected_check():
    rep = run_gates(synthetic_key(), control=False)
    inj = rep.check("find.injected")
    assert inj.passed is None and "not a LoCoMo-based key" in inj.note
    assert rep.passed and rep.split == "leave one conversation out"
    assert rep.check("surface.duplicates").n["all turns"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("plant", PLANTS)
def test_a_planted_shortcut_fails_exactly_its_gate(plant):
    rep = run_gates(synthetic_key(plant), control=False)
    assert {c.id for c in rep.failures()} == {plant}, rep.rows()


def test_track_c_baselines_pick_their_turns_in_order():
    t = [Event(id=f"t{i}", conversation="c", session=1, timestamp="2024-01-01T00:00:00Z",
               speaker="a", text=x) for i, x in enumerate(
        ["We use Slack.", "Lunch?", "Moving to Teams now.", "Slack export archived."])]
    ch = UpdateChain(id="ch", conversation="c", speaker="a", family="one_update",
                     states=[FactState(value="Slack", turns=["t0"], current=False),
                             FactState(value="Teams", turns=["t2"], current=True)],
                     queries=[ChainQuery(id="q", kind="current", text="Which tool?")])
    mentions = chain_mentions(ch, t)
    assert [e.id for e in mentions] == ["t0", "t2", "t3"]
    picks = {k: [e.id for e in pick(mentions)] for k, (_, pick) in C_BASELINES.items()}
    assert picks == {"C.most_recent": ["t3"], "C.first": ["t0"], "C.all": ["t0", "t2", "t3"]}


def test_masker_uses_the_governor_and_names_it():
    mask, spans, name = pii_masker()
    masked = mask("Mail jo@example.com or call 555-201-0199 about the dog.")
    assert "jo@example.com" not in masked and "555-201-0199" not in masked
    assert "dog" in masked and spans("nothing here") == []
    assert name.startswith(("regex + presidio", "regex"))


def test_masking_check_uses_track_d_leak_and_over_block(clean):
    d = clean.check("D.masking")
    # half the synthetic plants are health facts no pattern finds, and the probes retrieve them
    assert d.value == pytest.approx(0.5) and d.partner == 0.0
    assert d.details["plants_masked_by_detector"] == "12/24"
    assert d.details["leak_unmasked"] == pytest.approx(1.0)
    assert d.details["k"] == 5 and d.n == {"PII probes": 48, "emotional probes": 16}
    assert clean.pii_detector == d.details["detector"]


def test_gate_report_renders_and_records_for_keys(clean):
    md = clean.render_markdown()
    assert "| A.text |" in md and "Surface variety per item family" in md and "PASS" in md
    details = "\n".join(clean.detail_lines())
    assert "D.masking: k 5; detector" in details and "features" not in details
    assert "find.injected: between question and answer" in details
    meta = clean.to_meta()
    assert meta["passed"] is True and meta["failures"] == []
    assert set(meta["checks"]) == ALL_CHECKS
    assert meta["checks"]["D.masking"]["partner"] == 0.0
    assert "seconds" not in json.dumps(meta)  # no timings: the same build gives the same bytes
    for c in meta["checks"].values():
        assert c["value"] is None or c["value"] == round(c["value"], 3)
    GateReport.model_validate_json(clean.model_dump_json())  # round-trips as JSON


def test_which_key_versions_carry_their_gates():
    assert major_version("twist-cs-1.0") == 1 and major_version("twist-locomo-2.0+crisis") == 2
    assert not records_gates_in_key("twist-cs-1.0")
    assert not records_gates_in_key("twist-locomo-1.0+crisis")
    assert records_gates_in_key("twist-cs-2.0") and records_gates_in_key("twist-locomo-2.1")
    assert not records_gates_in_key("demo")


def test_gates_are_the_issue_thresholds():
    assert GATES["A.text"] == GATES["A.nontext"] == GATES["B.text"] == GATES["B.skeleton"] == 0.60
    assert GATES["find.items"] == 0.75 and GATES["find.injected"] == 0.80
    assert GATES["C.most_recent"] == 0.50 and GATES["surface.duplicates"] == 0.05
    assert GATES["D.masking.leak"] == GATES["D.masking.over_block"] == 0.10


def test_answer_text_of_the_all_mentions_baseline_is_hedged_by_the_judge():
    ch = UpdateChain(id="ch", conversation="c", speaker="a", family="one_update",
                     states=[FactState(value="Slack", turns=["t0"], current=False),
                             FactState(value="Teams", turns=["t2"], current=True)],
                     queries=[ChainQuery(id="q", kind="current", text="Which tool?")])
    pasted = Answer(text="We use Slack.\nMoving to Teams now.")
    assert StructuralJudge().classify(ch, ch.queries[0], pasted).outcome == "hedged"


def test_rates_over_a_handful_of_answers_are_shown_not_gated():
    rep = run_gates(demo_dataset(), control=False)
    c, d = rep.check("C.most_recent"), rep.check("D.masking")
    assert c.value is not None and c.passed is None and "too few to gate" in c.note
    assert d.value is not None and d.passed is None and "too few to gate" in d.note
    assert rep.passed


def test_measured_with_names_the_battery_revision_and_the_judge_version(monkeypatch):
    from twistbench.validation import shortcuts

    now = shortcuts.measured_with()
    assert now == {"battery": f"twistbench.validation.shortcuts@{shortcuts.BATTERY_REVISION}",
                   "judge": f"structural@{StructuralJudge.version}"}
    assert shortcuts.BuildGate().measured_with() == now
    monkeypatch.setattr(StructuralJudge, "version", StructuralJudge.version + "-next")
    monkeypatch.setattr(shortcuts, "BATTERY_REVISION", "next")
    later = shortcuts.measured_with()
    assert later["judge"] != now["judge"] and later["battery"] != now["battery"]


def test_clean_run_counts_its_fits_and_none_is_unconverged(clean):
    counted = [c for c in clean.checks if "fits" in c.details]
    assert {c.id for c in counted} == {"A.text", "A.nontext", "B.text", "B.skeleton",
                                       "find.items", "find.injected"}
    assert all(c.details["nonconverged_fits"] == 0 for c in counted)
    assert all(c.details["fits"] > 0 for c in counted if c.id != "B.skeleton")
    assert clean.check("B.skeleton").details["fits"] == 0  # a lookup table, no sklearn model
    assert clean.nonconverged_line() == ""


def test_unconverged_fits_are_counted_not_warned(monkeypatch, recwarn):
    """Logistic regressions cut off after one epoch never converge: the caller sees no
    ConvergenceWarning, each check records how many of its fits stopped, and the rendered report
    says it in one line."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    from twistbench.validation import baselines

    def one_epoch(n_train: int = 0) -> LogisticRegression:
        return LogisticRegression(class_weight="balanced", max_iter=1, solver="saga", tol=1e-9,
                                  random_state=0)

    monkeypatch.setattr(baselines, "_logistic", one_epoch)
    report = run_gates(synthetic_key(locomo_style=True), control=False)
    assert not [w for w in recwarn if issubclass(w.category, ConvergenceWarning)]
    a = report.check("A.text")
    # two logistic-regression recipes (word, char) x 4 held-out conversations, twice where
    # contrast twins are kept out (the plain split is measured beside it)
    assert a.details["nonconverged_fits"] in (8, 16)
    assert a.details["nonconverged_fits"] < a.details["fits"]  # naive Bayes, the tree converge
    assert report.check("B.skeleton").details["nonconverged_fits"] == 0  # no model is fitted
    line = report.nonconverged_line()
    total = sum(c.details.get("nonconverged_fits", 0) for c in report.checks)
    assert line.startswith(f"{total} of ") and "A.text" in line and "B.skeleton" not in line
