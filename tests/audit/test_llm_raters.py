"""LLM raters for the TIAP semantic audit, through `twist audit labels --llm` against the
loopback server: one rater per model, failed calls counted and never labels."""

from __future__ import annotations

import csv
import json

from test_contested import _fixture
from typer.testing import CliRunner

from twistbench.audit.contested import read_cases
from twistbench.audit.core import audit_runs
from twistbench.audit.llm_raters import case_request, rate_cases
from twistbench.cli import app
from twistbench.llm import shared_client
from twistbench.llm.client import role_config
from twistbench.llm.loopback import Fault, Reply
from twistbench.llm.prompts import load_prompt
from twistbench.llm.scripted import respond


def _cases(tmp_path):
    run, lin, gold = _fixture()
    audit_runs([(run, lin)], gold, tmp_path / "a", n_resamples=20)
    return tmp_path / "a" / "contested_cases.jsonl"


def test_the_prompt_shows_question_gold_source_and_credited_memory(tmp_path, llm_env):
    (case,) = read_cases(_cases(tmp_path))
    msgs = case_request(case).messages
    assert msgs == load_prompt("tiap_audit").render(
        question="Where does the user live?", gold_answer="Lisbon",
        source="[D1] I moved to Lisbon in May.", memory="User lives in Lisbon.")


def test_a_failed_call_or_an_unknown_label_is_counted_never_a_label(tmp_path, llm_env):
    cases = read_cases(_cases(tmp_path)) * 3
    cases = [c.__class__(**{**c.as_dict(), "case_id": f"r|q{i}", "question": f"Q{i}?"})
             for i, c in enumerate(cases)]
    replies = {"r|q0": Reply(json.dumps({"reasoning": "r", "label": "Supports"})),
               "r|q1": Reply(json.dumps({"reasoning": "r", "label": "maybe"})),
               "r|q2": Fault.status_code(401, message="bad key")}
    order = iter([replies[c.case_id] for c in cases])
    llm_env.reply = lambda body: next(order)
    client = shared_client(role_config("rater", max_concurrency=1))
    run = rate_cases(cases, client)
    assert [(lab.case_id, lab.rater, lab.label) for lab in run.labels] == [
        ("r|q0", "llm:scripted", "supports")]
    assert run.errors == {"http": 1, "malformed_reply": 1}


def test_cli_adds_one_llm_rater_per_model_beside_the_peoples(tmp_path, llm_env):
    llm_env.reply = respond
    cases = _cases(tmp_path)
    people = tmp_path / "ann.csv"
    with open(people, "w", newline="") as fh:
        csv.writer(fh).writerows([["case_id", "rater", "label"], ["r|q1", "ann", "partial"]])
    res = CliRunner().invoke(app, ["audit", "labels", str(cases), str(people), "--llm",
                                   "--llm-model", "scripted", "--llm-model", "second",
                                   "-o", str(tmp_path / "sem.json")])
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "sem.json").read_text())
    assert data["raters"] == ["ann", "llm:scripted", "llm:second"]
    # the scripted rule: "Lisbon" is in "User lives in Lisbon." -> supports
    written = (cases.parent / "labels_llm_scripted.csv").read_text().splitlines()
    assert written == ["case_id,rater,label", "r|q1,llm:scripted,supports"]
    assert "llm:scripted: 1 of 1 cases labelled, errors none" in res.output
    # without labels or --llm there is nothing to compute
    bad = CliRunner().invoke(app, ["audit", "labels", str(cases)])
    assert bad.exit_code == 2 and "no labels" in bad.output
