"""Judge calibration: TWIST decoys built from chains, rates with Wilson intervals (checked
against statsmodels), the pass rule, the store, the structural judge's figures on the LoCoMo
audit's decoy files, and `twist judge calibrate` end to end."""

from __future__ import annotations

import json

import pytest
from conftest import shared_file
from statsmodels.stats.proportion import proportion_confint
from typer.testing import CliRunner

from twistbench.cli import app
from twistbench.judges.base import JudgeVerdict, QACase, QAVerdict
from twistbench.judges.calibration import (
    ASSERT_FRAMES,
    calibrate,
    calibration_summary,
    describe_calibration,
    load_calibration,
    store_calibration,
    twist_decoys,
)
from twistbench.judges.structural import StructuralJudge, contains_form
from twistbench.model import ChainQuery, FactState, QADecoy, UpdateChain


def chain(cid, kind, states, family="one_update"):
    return UpdateChain(id=cid, conversation="conv", speaker="Amina", family=family,
                       subject=f"{kind}: reports", meta={"subject_key": kind},
                       states=[FactState(value=v, turns=[f"t{cid}{i}"], current=c)
                               for i, (v, c) in enumerate(states)],
                       queries=[ChainQuery(id=f"{cid}:current", kind="current",
                                           text="Which time zone now?"),
                                ChainQuery(id=f"{cid}:history", kind="history",
                                           text="Has it changed?")])


CHAINS = [
    chain("a", "timezone", [("US Central time", False), ("US Pacific time", True)]),
    chain("b", "timezone", [("UTC", False), ("US Eastern time", False), ("CET", True)],
          family="two_updates"),
    chain("c", "city", [("Chicago", False), ("Austin", True)]),
    chain("d", "city", [("Denver", True), ("Boston", True)], family="coexisting"),
]


def test_twist_decoys_per_chain_share_a_frame_and_differ_only_in_value():
    decoys, skipped = twist_decoys(CHAINS)
    assert skipped == {"no_current_query": 0, "no_wrong_value": 0}
    by = {(d.chain.id, d.style): d for d in decoys}
    # every chain: a control and a plausible wrong value; superseded chains: stale and hedged
    assert {s for c, s in by if c == "d"} == {"twist_current", "plausible_wrong"}
    assert {s for c, s in by if c == "b"} == {"twist_current", "plausible_wrong",
                                             "stale_as_current", "hedged"}
    for cid in "abc":
        ctrl, stale = by[(cid, "twist_current")], by[(cid, "stale_as_current")]
        frame = next(f for f in ASSERT_FRAMES if ctrl.answer == f.format(
            v=ctrl.chain.current_states[0].value)[0].upper() + f.format(
            v=ctrl.chain.current_states[0].value)[1:])
        # the stale decoy says the latest superseded value in the same frame
        latest_old = [s.value for s in ctrl.chain.states if not s.current][-1]
        assert stale.answer.lower() == frame.format(v=latest_old).lower()
        assert not ctrl.decoy and stale.decoy
    # plausible wrong values come from another chain of the same kind, never from this chain
    assert by[("a", "plausible_wrong")].answer.count("UTC") + by[
        ("a", "plausible_wrong")].answer.count("Eastern") + by[
        ("a", "plausible_wrong")].answer.count("CET") == 1
    for cid in "abcd":
        wrong = by[(cid, "plausible_wrong")]
        assert not any(contains_form(wrong.answer, f) for s in wrong.chain.states
                       for f in s.surface_forms())
    hedge = by[("b", "hedged")].answer
    assert "US Eastern time" in hedge and "CET" in hedge
    assert by[("d", "twist_current")].answer.count(" and ") == 1  # both current values
    # as many wrong values as the control has right ones: the count is no shortcut
    assert by[("d", "plausible_wrong")].answer in (
        f.format(v=v)[0].upper() + f.format(v=v)[1:] for f in ASSERT_FRAMES
        for v in ("Chicago and Austin", "Austin and Chicago"))
    for cid in "abcd":
        assert (by[(cid, "plausible_wrong")].answer.count(" and ")
                == by[(cid, "twist_current")].answer.count(" and "))


def test_a_coexisting_chain_with_one_other_value_of_its_kind_gives_no_wrong_value():
    pair = chain("p", "city", [("Denver", True), ("Boston", True)], family="coexisting")
    other = chain("q", "city", [("Chicago", False), ("Boston", True)])
    decoys, skipped = twist_decoys([pair, other])
    # only Chicago is wrong for the pair: one value cannot stand in for two
    assert skipped["no_wrong_value"] == 1
    assert ("p", "plausible_wrong") not in {(d.chain.id, d.style) for d in decoys}


def test_a_chain_with_no_other_value_of_its_kind_gives_no_wrong_value():
    lonely = chain("z", "po_number", [("PO-1", False), ("PO-2", True)])
    decoys, skipped = twist_decoys([lonely])
    assert skipped["no_wrong_value"] == 1
    assert {d.style for d in decoys} == {"twist_current", "stale_as_current", "hedged"}


class TrackCOnly:
    """The structural judge's Track C rule without judge_qa: LoCoMo styles do not apply."""

    name, version = "c-only", "1"

    def classify(self, chain, query, answer):
        return StructuralJudge().classify(chain, query, answer)


def test_structural_judge_rejects_every_hand_built_decoy_and_accepts_the_controls():
    decoys, _ = twist_decoys(CHAINS)
    rec = calibrate(StructuralJudge(), [], decoys)
    for style in ("plausible_wrong", "stale_as_current", "hedged"):
        assert rec["styles"][style]["rejection_rate"] == 1.0
    assert rec["styles"]["twist_current"]["acceptance_rate"] == 1.0
    assert rec["styles"]["stale_as_current"]["outcomes"] == {"stale": 3}
    # every TWIST rate is 1.0, but the structural judge also grades LoCoMo answers and was not
    # calibrated on them: incomplete, so not passing
    assert rec["missing"] == ["specific_but_wrong", "vague_but_topical", "locomo_gold"]
    assert rec["passed"] is False and not rec["complete"] and rec["below"] == []
    # the same rule without judge_qa covers every style it can be asked about: it passes; how
    # little 3 decoys say is in the interval beside the rate
    only_c = calibrate(TrackCOnly(), [], decoys)
    assert only_c["required"] == ["plausible_wrong", "stale_as_current", "hedged",
                                  "twist_current"]
    assert only_c["passed"] is True and only_c["styles"]["hedged"]["interval"][0] < 0.5


class Lenient:
    name, version = "lenient", "1"

    def classify(self, chain, query, answer):
        return JudgeVerdict("current", [], [], False, False, "accepts everything")

    def judge_qa(self, case: QACase) -> QAVerdict:
        return QAVerdict(True, "accepts everything", self.name)


class Strict(Lenient):
    name = "strict"

    def classify(self, chain, query, answer):
        return JudgeVerdict("none", [], [], False, False, "rejects everything")

    def judge_qa(self, case: QACase) -> QAVerdict:
        return QAVerdict(False, "rejects everything", self.name)


QA = [QADecoy(id=f"q{i}", style="specific_but_wrong", question="When?", gold="7 May 2023",
              answer="12 April 2023", category=2) for i in range(40)]


def test_a_lenient_judge_fails_and_a_judge_rejecting_everything_fails_its_controls():
    decoys, _ = twist_decoys(CHAINS)
    lenient = calibrate(Lenient(), QA, decoys)
    assert lenient["styles"]["specific_but_wrong"]["rejection_rate"] == 0.0
    assert not lenient["passed"] and "specific_but_wrong" in lenient["failing"]
    strict = calibrate(Strict(), QA, decoys)
    assert strict["styles"]["specific_but_wrong"]["rejection_rate"] == 1.0
    assert strict["below"] == ["locomo_gold", "twist_current"] and not strict["passed"]
    assert strict["missing"] == ["vague_but_topical"]  # QA holds one LoCoMo style only
    assert "FAILS calibration" in describe_calibration(calibration_summary(strict))


def test_a_judge_without_judge_qa_has_the_locomo_styles_not_applicable():
    rec = calibrate(TrackCOnly(), QA, twist_decoys(CHAINS)[0])
    assert "specific_but_wrong" not in rec["styles"]
    assert "no judge_qa" in rec["not_applicable"]["specific_but_wrong"]
    assert rec["missing"] == [] and rec["passed"] is True


def test_a_style_no_chain_could_give_keeps_a_perfect_judge_from_passing():
    # no chain has anything superseded: no stale or hedged decoys exist to judge
    flat = [chain("e", "city", [("Denver", True), ("Boston", True)], family="coexisting"),
            chain("f", "city", [("Austin", True), ("Tampa", True)], family="coexisting")]
    rec = calibrate(TrackCOnly(), [], twist_decoys(flat)[0])
    assert rec["styles"]["plausible_wrong"]["rejection_rate"] == 1.0
    assert rec["missing"] == ["stale_as_current", "hedged"] and rec["failing"] == [
        "hedged", "stale_as_current"]
    assert not rec["passed"]
    line = describe_calibration(calibration_summary(rec))
    assert line.endswith("INCOMPLETE calibration, not passing (not calibrated on: "
                         "stale_as_current, hedged)")
    # no decoys at all is never a pass either
    assert not calibrate(TrackCOnly(), [], [])["passed"]


class ErrsOnce:
    """The structural rule, but the judgement of one given answer fails (a JudgeError)."""

    name, version = "errs-once", "1"

    def __init__(self, failing_answer: str):
        self.failing_answer = failing_answer

    def classify(self, chain, query, answer):
        from twistbench.judges.base import JudgeError

        if answer.text == self.failing_answer:
            raise JudgeError("malformed_json", "the judge's reply was not JSON")
        return StructuralJudge().classify(chain, query, answer)


def test_a_judge_error_on_any_decoy_keeps_it_from_passing_and_is_never_a_rejection():
    decoys, _ = twist_decoys(CHAINS)
    first_hedge = next(d.answer for d in decoys if d.style == "hedged")
    rec = calibrate(ErrsOnce(first_hedge), [], decoys)
    hedged = rec["styles"]["hedged"]
    # the error is counted apart: the rate over the judged answers is still 1.0 (2 of 2)
    assert (hedged["errors"], hedged["k"], hedged["n"]) == (1, 2, 2)
    assert hedged["rejection_rate"] == 1.0 and hedged["passed"] is False
    assert rec["errored"] == ["hedged"] and rec["below"] == [] and not rec["passed"]
    line = describe_calibration(calibration_summary(rec))
    assert "hedged 1.000 (n 2, 1 errors)" in line
    assert line.endswith("INCOMPLETE calibration, not passing (judge errors on: hedged)")
    # errors beside a rate below the threshold: the verdict says both
    summary = calibration_summary(rec)
    summary["styles"]["stale_as_current"]["rejection_rate"] = 0.5
    assert calibration_summary(summary)["below"] == ["stale_as_current"]
    assert describe_calibration(calibration_summary(summary)).endswith(
        "FAILS calibration (< 0.95: stale_as_current; judge errors on: hedged)")


def test_a_stored_record_cannot_claim_a_pass_its_styles_do_not_back(tmp_path):
    rec = calibrate(TrackCOnly(), [], twist_decoys(CHAINS)[0])
    assert rec["passed"]
    # edited by hand (or written by an older harness): a style gone, the claim kept
    forged = json.loads(json.dumps(rec))
    del forged["styles"]["hedged"]
    store_calibration(forged, tmp_path)
    summary = calibration_summary(load_calibration(forged["judge"], tmp_path))
    assert summary["passed"] is False and summary["missing"] == ["hedged"]
    # a record from before `required` existed is held to every style it did not mark N/A
    old = {k: v for k, v in rec.items() if k not in ("required", "missing", "errored")}
    old_summary = calibration_summary(old)
    assert old_summary["passed"] is False and old_summary["missing"] == [
        "specific_but_wrong", "vague_but_topical", "locomo_gold"]
    # an error count in a style marked passed: not a pass
    errs = json.loads(json.dumps(rec))
    errs["styles"]["plausible_wrong"]["errors"] = 1
    assert calibration_summary(errs)["errored"] == ["plausible_wrong"]
    assert not calibration_summary(errs)["passed"]
    # a record cannot lower the bar it is held to
    lowered = json.loads(json.dumps(rec))
    lowered["threshold"] = 0.2
    lowered["styles"]["hedged"]["rejection_rate"] = 0.5
    assert calibration_summary(lowered)["below"] == ["hedged"]
    assert calibration_summary(lowered)["threshold"] == 0.95
    # a summary read again (as a report re-reads a manifest's) gives the same verdict
    good = calibration_summary(rec)
    assert good["passed"] and calibration_summary(good) == good


@pytest.mark.parametrize("k,n", [(1272, 1540), (42, 42), (0, 7), (3, 4)])
def test_intervals_are_wilson_as_statsmodels_computes_them(k, n):
    style = [QADecoy(id=f"q{i}", style="s", question="q", gold="7 May 2023",
                     answer="7 May 2023" if i >= k else "no", category=2) for i in range(n)]
    rec = calibrate(StructuralJudge(), style, [])
    lo, hi = rec["styles"]["s"]["interval"]
    want = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert lo == pytest.approx(want[0], abs=1e-9) and hi == pytest.approx(want[1], abs=1e-9)
    assert rec["styles"]["s"]["rejection_rate"] == pytest.approx(k / n)


def test_the_store_round_trips_by_identity(tmp_path):
    rec = calibrate(StructuralJudge(), QA, twist_decoys(CHAINS)[0])
    path = store_calibration(rec, tmp_path)
    assert path.parent == tmp_path and path.name.startswith("structural-nomodel-")
    assert load_calibration(rec["judge"], tmp_path) == rec
    other = {**rec["judge"], "version": rec["judge"]["version"] + ".1"}
    assert load_calibration(other, tmp_path) is None
    summary = calibration_summary(rec)
    assert set(summary["styles"]["specific_but_wrong"]) == {
        "kind", "rejection_rate", "n", "interval", "errors", "passed"}


def test_structural_judge_figures_on_the_locomo_audit_decoys():
    shared_file("locomo-audit", "decoys", "specific_but_wrong.json")
    from twistbench.datasets.decoys import load_locomo_decoys

    qa = load_locomo_decoys("specific_but_wrong") + load_locomo_decoys("vague_but_topical")
    assert len(qa) == 3080 and {d.category for d in qa} == {1, 2, 3, 4}
    rec = calibrate(StructuralJudge(), qa, [])
    spec, vague = rec["styles"]["specific_but_wrong"], rec["styles"]["vague_but_topical"]
    # official F1 >= 0.5 accepts a wrong value in the gold's frame ("The week before 16 June
    # 2023" against "... 9 June 2023"): the structural judge fails on both styles
    assert (spec["k"], spec["n"]) == (1272, 1540) and not spec["passed"]
    assert (vague["k"], vague["n"]) == (1437, 1540) and not vague["passed"]
    assert rec["styles"]["locomo_gold"]["acceptance_rate"] > 0.99


def test_cli_calibrates_stores_and_exits_1_when_failing(tmp_path, llm_env):
    runner = CliRunner()
    shared_file("locomo-audit", "decoys", "vague_but_topical.json")
    res = runner.invoke(app, ["judge", "calibrate", "--judge", "structural", "-o",
                              str(tmp_path / "cal")])
    assert res.exit_code == 1, res.output
    assert "FAILS calibration" in res.output
    (stored,) = (tmp_path / "cal").glob("structural-*.json")
    doc = json.loads(stored.read_text())
    assert doc["sources"]["datasets"][0]["name"] == "twist-cs"
    assert doc["sources"]["locomo_decoys"]["specific_but_wrong"]["sha256"]
    # the LLM judge through the scripted model, a fixed sample of 25 per style
    res = runner.invoke(app, ["judge", "calibrate", "--judge", "llm", "--sample", "25"])
    assert res.exit_code in (0, 1), res.output
    (llm_doc,) = (tmp_path / "calibration").glob("llm-scripted-*.json")
    rec = json.loads(llm_doc.read_text())
    assert rec["judge"]["model"] == "scripted" and rec["sources"]["sample_per_style"] == 25
    assert all(e["n"] + e["errors"] <= 25 for e in rec["styles"].values())


def test_cli_without_the_locomo_decoys_is_incomplete_and_exits_1(tmp_path):
    res = CliRunner().invoke(app, ["judge", "calibrate", "--judge", "structural",
                                   "--no-locomo-decoys", "-o", str(tmp_path)])
    assert res.exit_code == 1, res.output
    assert "specific_but_wrong: not calibrated" in res.output
    assert ("not calibrated on: specific_but_wrong, vague_but_topical, locomo_gold"
            in " ".join(res.output.split()))


@pytest.mark.parametrize("args,where", [
    (["--sample", "0"], "--sample"), (["--judge", "nope"], "unknown judge"),
    (["-o", "{file}"], "not a folder"), (["-d", "no-such-key"], "unknown dataset"),
])
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, where):
    from twistbench.cli import run_cli

    afile = tmp_path / "a.txt"
    afile.write_text("x")
    code = run_cli(["judge", "calibrate", *[a.replace("{file}", str(afile)) for a in args]])
    err = capsys.readouterr().err
    assert code == 2 and where in err and len(err.strip().splitlines()) == 1
