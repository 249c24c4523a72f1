"""The item browser's per-item outcomes agree with the tracks' own per-item outcomes and with the
profile's counts; errors are errors (a failed judgement too), declined tracks N/A; the turn table
holds cited text."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

import pytest
from toy_systems import FaultyToy, KeywordToy
from typer.testing import CliRunner

from twistbench.cli import app
from twistbench.datasets.demo import demo_dataset
from twistbench.judges import make_judge
from twistbench.llm.loopback import Reply, last_user_message
from twistbench.llm.scripted import respond
from twistbench.report.items import OUTCOMES, build_item_views, outcome_counts
from twistbench.report.runs import find_sources, report_runs
from twistbench.runs.runner import RunSettings, run_system
from twistbench.tracks import item_outcomes


def view_id(o) -> str | None:
    """The browser's id of one of the tracks' ItemOutcomes (None: a plant-level outcome)."""
    t = o.item_type.split(":")[0]
    if t.startswith("A."):
        return f"A.{o.item_id}"
    if t == "B":
        return f"B:{o.item_id}"
    if t == "locomo":
        return f"locomo:{o.item_id}"
    if o.item_type == "D:crisis_plant":
        return None
    return o.item_id


def check_against_tracks(rep) -> int:
    """Every run's per-item outcomes equal the tracks' outcomes() (1 = correct, 0 = wrong, a
    LoCoMo score strictly between = partial); returns how many were compared."""
    compared = 0
    for profile in rep.profiles:
        runs = rep.runs_of(profile)
        views = build_item_views(runs)
        by_id = {it.id: it for it in views.items}
        for k, run in enumerate(runs):
            for o in item_outcomes(run.dataset, run.records, run.caps, judge=run.judge):
                vid = view_id(o)
                if vid is None:
                    continue
                got = by_id[vid].results[k].outcome
                want = ("correct" if o.value == 1 else "wrong" if o.value == 0 else "partial")
                assert got == want, (run.name, vid, got, o.value)
                compared += 1
            # everything the tracks did not score for this run is error, missing or n/a
            scored = {view_id(o) for o in item_outcomes(run.dataset, run.records, run.caps,
                                                         judge=run.judge)}
            for it in views.items:
                if it.id not in scored and not it.family.startswith("crisis"):  # plant-level
                    assert it.results[k].outcome in ("error", "missing", "n/a"), it.id
    return compared


def test_default_run_items_agree_with_the_tracks_and_the_profile(default_run):
    rep = report_runs(find_sources([default_run]).runs)
    assert check_against_tracks(rep) > 100
    profile = rep.profiles[0]
    views = rep.views(profile)
    counts = outcome_counts(views)
    for row in profile.rows:
        c = counts[row.system]
        b = row.scores.tracks["B"]
        if b.status == "scored":
            # contradiction recall's k and n, hard-negative specificity's, from the item outcomes
            by_family = Counter((it.family.split(" · ")[0], it.results[views.systems.index(
                row.system)].outcome) for it in views.items if it.track == "B")
            cr, hn = b.metrics["contradiction_recall"], b.metrics["hard_negative_specificity"]
            assert by_family[("contradicting", "correct")] == cr.k
            assert sum(by_family[("contradicting", o)] for o in ("correct", "wrong")) == cr.n
            assert by_family[("hard_negative", "correct")] == hn.k
        cur = row.scores.tracks["C"].metrics.get("current_rate")
        if cur is not None:
            current = [it.results[views.systems.index(row.system)].outcome for it in views.items
                       if it.track == "C" and it.family.startswith("current ·")]
            assert current.count("correct") == cur.k
        if row.cells["D"].status == "n/a":
            assert set(c["D"]) == {"n/a"}
    # gold and cited turns carry their text
    assert all(t[3] for conv in views.turns.values() for t in conv.values())
    item = next(it for it in views.items if it.track == "B" and it.gold_turns)
    gold_turn = item.gold_turns[0][1][0]
    assert gold_turn in views.turns[item.conversation]


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("items")
    ds = demo_dataset()
    run_system(ds, KeywordToy(), root / "kw", settings=RunSettings(progress=False),
               dataset_source={"name": "demo"})
    run_system(ds, FaultyToy(hang_s=1.0), root / "faulty",
               settings=RunSettings(progress=False, timeout_s=0.3),
               dataset_source={"name": "demo"})
    return root


def test_failed_calls_are_errors_with_their_message_never_outcomes(demo_runs):
    rep = report_runs([demo_runs / "kw", demo_runs / "faulty"])
    assert check_against_tracks(rep) > 0
    views = rep.views(rep.profiles[0])
    faulty = [it.results[1] for it in views.items]
    errors = [r for r in faulty if r.outcome == "error"]
    assert errors and all(r.error and "failed" in r.why for r in errors)
    row = rep.profiles[0].rows[1]
    n_errors = sum(t.error_total for t in row.scores.tracks.values() if t.status == "scored")
    counted = sum(n for track in outcome_counts(views)[row.system].values()
                  for o, n in track.items() if o == "error")
    assert counted == n_errors
    # KeywordToy declares no safety layer: D is N/A with the reason, for every probe
    d = [it.results[0] for it in views.items if it.track == "D"]
    assert d and all(r.outcome == "n/a" and "safety" in r.why for r in d)
    # LoCoMo questions of the demo: scored with the official F1
    qa = [it for it in views.items if it.track == "LoCoMo"]
    assert qa and all(it.results[0].score.startswith(("F1", "abstained", "answered"))
                      for it in qa)


def test_item_json_is_compact_and_complete(demo_runs):
    rep = report_runs([demo_runs / "kw"])
    data = json.loads(json.dumps(rep.views(rep.profiles[0]).as_json()))
    assert data["systems"] == ["keyword-toy"] and data["outcomes"] == list(OUTCOMES)
    assert set(data["tracks"]) <= {"LoCoMo", "A online", "A batch", "B", "C", "D"}
    assert data["tracks"][0] == "LoCoMo" and data["lead"]["LoCoMo"] == "Question"
    assert set(data["lead"]) == set(data["tracks"])
    ids = [it["i"] for it in data["items"]]
    assert len(ids) == len(set(ids))
    first = data["items"][0]
    assert set(first) == {"i", "t", "f", "c", "q", "g", "gt", "r"}
    assert first["r"][0]["o"] in OUTCOMES


@pytest.mark.parametrize("dataset, corpus, scorer", [
    ("demo", "LoCoMo", "official LoCoMo token F1"),
    ("locomo", "LoCoMo", "official LoCoMo token F1"),
    ("longmemeval", "LongMemEval-S", "plain token F1"),
    ("beam", "BEAM", "plain token F1"),
])
def test_qa_items_are_labelled_by_the_corpus_and_scored_in_the_registry_words(
        demo_runs, dataset, corpus, scorer):
    """The browser's QA track and its explanations name the run's corpus and the scorer its
    registry entry names: LongMemEval-S and BEAM questions are not LoCoMo's and their F1 is
    plain (no category rules)."""
    from twistbench.datasets.registry import PLAIN_SCORER, REGISTRY
    from twistbench.report.html import _profile_table

    rep = report_runs([demo_runs / "kw"])
    runs = [replace(r, dataset=r.dataset.model_copy(update={"name": dataset}))
            for r in rep.runs_of(rep.profiles[0])]
    views = build_item_views(runs)
    data = views.as_json()
    qa = [it for it in views.items if it.id.startswith("locomo:")]
    assert qa and {it.track for it in qa} == {corpus}
    assert data["tracks"][0] == corpus and data["lead"][corpus] == "Question"
    assert corpus == "LoCoMo" or "LoCoMo" not in data["tracks"] + list(data["lead"])
    whys = {r.why for it in qa for r in it.results if r.outcome != "n/a"}
    answerable = {w for w in whys if not w.startswith("category 5")}
    assert answerable == {f"{scorer} against the gold answer"}
    if scorer == PLAIN_SCORER:  # the registry's description says the same scorer
        assert f"QA ({scorer}, evidence recall)" in REGISTRY[dataset].description
    # the profile's `items →` link of the QA column opens the browser on that track
    profile = rep.profiles[0].model_copy(update={"dataset": dataset})
    assert f"#items?track={corpus}&amp;" in _profile_table(profile)


# ---------------------------------------------------------------------------------------------
# A judgement the run's judge cannot make (an LLM judge's malformed reply) is that item's error
# in every part of the report: the profile counts it under errors["judge"], the Markdown and
# JSON say so, the item browser shows it as an error with the judge's message, the other items
# are unaffected, and the report is written with exit 0 (before the fix, building the item views
# asked the judge again and its JudgeError ended `twist report` / `twist run` with "internal
# error", exit 3).

# The Track C question and the LoCoMo question whose judgements fail: the model answers them
# out of form, every time.
BROKEN_QUERY, BROKEN_ITEM = "When is Boreal's go-live date?", "C:demo-uc2:q1"
BROKEN_QUESTION, BROKEN_QA = "Why did Boreal's go-live move?", "locomo:demo-qa2"


def _malformed_replies(body):
    """The scripted model, except for the judgements of BROKEN_QUERY and BROKEN_QUESTION: a
    reply with no JSON in it (what a real model sometimes sends)."""
    text = last_user_message(body)
    if (f"Question: {BROKEN_QUERY}" in text and "Kind: current" in text
            or BROKEN_QUESTION in text and "Gold answer" in text):
        return Reply("I think the answer is probably fine.")
    return respond(body)


@pytest.fixture
def judged_run(llm_env, tmp_path):
    """A demo run of the keyword toy judged by the LLM judge, one of whose Track C judgements
    and one of whose LoCoMo judgements fail; the loopback stays up for the re-scoring the tests
    do."""
    llm_env.reply = _malformed_replies
    run_system(demo_dataset(), KeywordToy(), tmp_path / "run" / "kw",
               settings=RunSettings(progress=False), judge=make_judge("llm"),
               dataset_source={"name": "demo"})
    return tmp_path / "run"


def test_a_failed_judgement_is_the_items_error_in_the_profile_and_the_browser(judged_run):
    rep = report_runs([judged_run / "kw"])
    profile = rep.profiles[0]
    c = profile.rows[0].scores.tracks["C"]
    assert c.errors == {"judge": 1} and c.details["judge_errors"] == 1
    views = rep.views(profile)
    by_id = {it.id: it.results[0] for it in views.items}
    broken = by_id[BROKEN_ITEM]
    assert broken.outcome == "error"
    assert "malformed_json" in broken.error and "judge llm" in broken.why
    assert broken.fields and broken.fields[0][0] == "answer"  # the answer it could not judge
    # a LoCoMo item stands on its F1, which needs no judge; its failed J judgement is shown as
    # the error the profile counts, and the other question carries its J verdict
    qa = profile.rows[0].scores.tracks["locomo"]
    assert qa.errors == {"judge": 1} and qa.metrics["j"].n == 1
    assert by_id[BROKEN_QA].outcome in ("correct", "partial", "wrong")
    assert "malformed_json in judge llm" in by_id[BROKEN_QA].error
    judged_qa = [dict(r.fields)["judge"] for iid, r in by_id.items()
                 if iid.startswith("locomo:") and iid != BROKEN_QA]
    assert judged_qa and all(j.startswith(("llm: CORRECT", "llm: WRONG")) for j in judged_qa)
    # every other item is exactly what the tracks scored, and the browser's errors are the
    # profile's: error outcomes, and the J judgements that failed beside a LoCoMo F1
    assert check_against_tracks(rep) > 0
    counts = outcome_counts(views)["keyword-toy"]
    beside_f1 = sum(1 for it in views.items if it.id.startswith("locomo:")
                    and it.results[0].error and it.results[0].outcome != "error")
    assert sum(t.get("error", 0) for t in counts.values()) + beside_f1 == sum(
        t.error_total for t in profile.rows[0].scores.tracks.values() if t.status == "scored")
    others = [r for iid, r in by_id.items() if iid.startswith("C:") and iid != BROKEN_ITEM]
    assert others and all(r.outcome != "error" and r.score.startswith("llm: ")
                          for r in others if r.outcome != "n/a")


def test_the_browser_shows_the_verdicts_the_score_used_without_asking_the_judge(judged_run):
    """The views read each Track C verdict from the scores: no judge call at render time, so a
    judge that changed its mind (the cache off, a new model) cannot make the browser disagree
    with the profile."""
    rep = report_runs([judged_run / "kw"])
    runs = rep.runs_of(rep.profiles[0])

    class RefusingJudge:
        name, version = "refusing", "1"

        def classify(self, chain, query, answer):
            raise AssertionError("the item views asked the judge again")

        def judge_qa(self, case):
            raise AssertionError("the item views asked the judge again")

    for run in runs:
        run.judge = RefusingJudge()
    views = build_item_views(runs)
    assert [it.as_json() for it in views.items] == [
        it.as_json() for it in rep.views(rep.profiles[0]).items]


def test_twist_report_writes_every_format_and_exits_0(judged_run, tmp_path):
    out = tmp_path / "report"
    r = CliRunner().invoke(app, ["report", str(judged_run), "-o", str(out)])
    assert r.exit_code == 0, r.output
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    tracks = data["profiles"][0]["rows"][0]["scores"]["tracks"]
    assert tracks["C"]["errors"] == {"judge": 1} and tracks["locomo"]["errors"] == {"judge": 1}
    assert "judgements" not in tracks["C"]  # kept in memory for the views, not written
    assert "judge 1" in (out / "report.md").read_text(encoding="utf-8")
    html = (out / "report.html").read_text(encoding="utf-8")
    assert BROKEN_ITEM in html and "malformed_json" in html
