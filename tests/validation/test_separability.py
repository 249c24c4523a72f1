"""The separability audit: checks that can fail, per-item lists, filtered keys."""

import json

import pytest

from twistbench.datasets.demo import demo_dataset
from twistbench.datasets.registry import load_dataset_key
from twistbench.model import Dataset, QAItem
from twistbench.validation.separability import (
    FLAT_A_F1_MAX,
    FlaggedItem,
    filter_dataset,
    render_validation_markdown,
    validate_dataset,
)


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("validate")
    rep = validate_dataset(demo_dataset(), out, write_filtered=out / "filtered.json")
    return rep, out


def test_runs_the_three_audit_systems_without_errors(demo_report):
    rep, out = demo_report
    assert list(rep.systems) == ["flat-rag", "fact-rag", "oracle"]
    assert all(s["errors"] == 0 for s in rep.systems.values())
    assert rep.systems["flat-rag"]["options"] == {"probe": "true"}
    assert (out / "validation.json").exists() and (out / "validation.md").exists()
    assert json.loads((out / "validation.json").read_text())["dataset"] == "demo"


def test_oracle_checks_cover_every_headline_metric_and_hold(demo_report):
    rep, _ = demo_report
    oracle = [c for c in rep.checks if c.system == "oracle"]
    metrics = {c.metric for c in oracle}
    assert {"A.online.f1", "A.online.false_flag_rate", "B.balanced_accuracy",
            "B.hard_negative_specificity", "C.current_rate", "C.stale_rate", "D.leak_rate",
            "D.over_block_rate", "locomo.f1"} <= metrics
    assert all(c.ok for c in oracle), [c for c in oracle if not c.ok]
    assert rep.oracle_failed == []


def test_flat_probe_check_is_measured_not_assumed(demo_report):
    rep, _ = demo_report
    (online,) = [c for c in rep.checks if c.metric == "A.online.f1" and c.system == "flat-rag"]
    assert online.value is not None and online.ok == (online.value <= FLAT_A_F1_MAX)
    figs = {(f.system, f.metric): f.value for f in rep.figures}
    assert ("flat-rag", "online.f1") in figs and ("fact-rag", "current_rate") in figs
    assert ("fact-rag", "online.f1") not in figs  # fact-rag declines Track A: N/A, not zero


def test_markdown_lists_checks_figures_and_items(demo_report):
    rep, _ = demo_report
    md = render_validation_markdown(rep)
    assert "Separability audit: demo" in md and "| oracle |" in md and "flat-rag A online" in md
    assert "Items the oracle fails (0)" in md


def test_filtered_key_round_trips(demo_report):
    rep, out = demo_report
    ds = load_dataset_key(out / "filtered.json")
    assert ds.counts() == rep.filtered_counts
    assert ds.meta["validated_from"] == "builtin"
    flagged = {f.item_id for f in rep.flat_solved + rep.oracle_failed}
    assert not flagged & {it.id for fld in Dataset.ITEM_FIELDS for it in getattr(ds, fld)
                          if fld != "qa"}


def test_oracle_failure_is_listed_when_the_gold_is_wrong(tmp_path):
    # Two questions with the same text and different answers: the oracle can answer only one,
    # so the audit must flag the other (an item bug), and the locomo check must fail.
    ds = demo_dataset()
    data = ds.model_dump()
    q = data["qa"][0]
    data["qa"].append(QAItem(id="dup", conversation=q["conversation"], question=q["question"],
                             answer="a different answer entirely", category=4,
                             evidence=q["evidence"]).model_dump())
    bad = Dataset.model_validate(data)
    rep = validate_dataset(bad, tmp_path)
    assert [f.item_id for f in rep.oracle_failed] == ["dup"]
    assert any(c.metric == "locomo.f1" and c.ok is False for c in rep.checks)
    assert not rep.passed


def test_similarity_solvable_arc_is_listed(tmp_path):
    # An arc whose reversal nearly repeats its anchor (a near-duplicate wording with one word
    # changed) and whose hard negative is unrelated: similarity alone finds it.
    ds = demo_dataset()
    data = ds.model_dump()
    conv = data["conversations"][1]
    for e in conv["events"]:
        if e["id"] == "demo-boreal:e00":
            e["text"] = "We will keep the on-prem connector for the warehouse sync jobs."
        if e["id"] == "demo-boreal:e06":
            e["text"] = "We will drop the on-prem connector for the warehouse sync jobs."
    rep = validate_dataset(Dataset.model_validate(data), tmp_path)
    assert "demo-ra2" in {f.item_id for f in rep.flat_solved if f.field == "reversal_arcs"}


def test_filter_drops_pairs_and_marks_questions():
    ds = demo_dataset()
    flagged = [FlaggedItem(field="reversal_arcs", item_id="demo-ra1", conversation="demo-acme",
                           why="t"),
               FlaggedItem(field="qa", item_id="demo-qa1", conversation="demo-acme", why="t"),
               FlaggedItem(field="update_chains", item_id="demo-uc2", conversation="demo-boreal",
                           why="t")]
    out = filter_dataset(ds, flagged)
    assert [a.id for a in out.reversal_arcs] == ["demo-ra2"]
    assert [h.id for h in out.hard_negative_arcs] == ["demo-hn2"]  # the pair goes together
    assert [c.id for c in out.update_chains] == ["demo-uc1"]
    assert {q.id: q.excluded for q in out.qa}["demo-qa1"].startswith("twist validate")
    assert out.meta["validation_dropped"]["hard_negative_arcs"] == ["demo-hn1"]


def test_similarity_separable_draft_is_listed(tmp_path):
    # A contradicting draft that nearly copies its evidence turn, in a conversation whose
    # consistent drafts are far from any turn: a similarity threshold alone separates it.
    ds = demo_dataset()
    data = ds.model_dump()
    for d in data["drafts"]:
        if d["id"] == "demo-d4":
            d["text"] = "Priya Natarajan: Go-live moves to April 14 because of the data migration."
        if d["id"] == "demo-d3":
            d["text"] = "Priya, here is the agenda for our next meeting."
    rep = validate_dataset(Dataset.model_validate(data), tmp_path)
    listed = {f.item_id: f.why for f in rep.flat_solved if f.field == "drafts"}
    assert "demo-d4" in listed and "exceeds every consistent draft" in listed["demo-d4"]
    assert "demo-d1" not in listed  # the acme draft is not separable from acme's aligned one


def test_shortcut_audit_runs_beside_separability_and_counts_in_passed(demo_report):
    rep, out = demo_report
    assert rep.shortcuts is not None and rep.shortcuts.dataset == "demo"
    # the demo has one item of each kind and two conversations: every classifier check says so
    a = rep.shortcuts.check("A.text")
    assert a.passed is None and "not measurable" in a.note
    assert rep.shortcuts.passed
    saved = json.loads((out / "validation.json").read_text())
    assert saved["shortcuts"]["checks"][0]["id"] == "A.text"
    assert "## Shortcut audit: demo" in (out / "validation.md").read_text()
    failing = rep.model_copy(update={"shortcuts": rep.shortcuts.model_copy(update={
        "checks": [c.model_copy(update={"passed": False}) for c in rep.shortcuts.checks]})})
    assert not failing.passed
