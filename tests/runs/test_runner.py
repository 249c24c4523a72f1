"""Runner mechanics with a minimal track defined here (the real tracks are tested in
tests/tracks)."""

import json

import pytest
from toy_systems import FaultyToy, KeywordToy

from twistbench.contract import Capabilities
from twistbench.datasets.demo import demo_dataset
from twistbench.errors import InputError
from twistbench.runs.runner import RunSettings, run_system
from twistbench.tracks.base import PHASE_QUERY, Task


class RecallTrack:
    """Asks every chain query and draft; scores nothing (the runner is under test)."""

    key = "T"
    title = "toy"
    headline = ()

    def not_applicable(self, caps: Capabilities, dataset):
        return None if caps.recall else "needs recall"

    def tasks(self, dataset, conversation_id, caps, judge=None):
        out = []
        for ch in dataset.items_of(conversation_id, "update_chains"):
            for q in ch.queries:
                out.append(Task(item_id=f"T:{ch.id}:{q.id}", track="T", kind=q.kind,
                                conversation=conversation_id, phase=PHASE_QUERY,
                                request={"query": q.text},
                                run=lambda g, st, text=q.text: {
                                    "answer": g.recall(text).model_dump()}))
        for d in dataset.items_of(conversation_id, "drafts"):
            out.append(Task(item_id=f"T:{d.id}", track="T", kind="draft",
                            conversation=conversation_id, phase=PHASE_QUERY,
                            request={"draft": d.text},
                            run=lambda g, st, text=d.text: {
                                "verdict": g.check_alignment(text).model_dump()}))
        return out

    def score(self, dataset, records, caps, judge=None):
        return {}


TRACKS = {"T": RecallTrack()}
# Real timeouts stay long: a slow machine must never turn a normal call into a timeout. Tests of
# timeouts use the `hangs` fixture, where a call times out exactly when the toy hangs.
QUIET = RunSettings(progress=False)




def run(tmp_path, system, **kw):
    settings = kw.pop("settings", QUIET)
    return run_system(demo_dataset(), system, tmp_path / "run", settings=settings, tracks=TRACKS,
                      **kw)


def lines(tmp_path):
    return [json.loads(x) for x in (tmp_path / "run" / "items.jsonl").read_text().splitlines()]


def test_run_writes_every_item_and_a_complete_manifest(tmp_path):
    out = run(tmp_path, KeywordToy())
    recs = lines(tmp_path)
    ds = demo_dataset()
    n_sessions = sum(len(c.sessions()) for c in ds.conversations)
    n_tasks = sum(len(ch.queries) for ch in ds.update_chains) + len(ds.drafts)
    assert len(recs) == out.items == n_sessions + n_tasks
    assert out.errors == 0 and out.skipped == 0
    man = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert man["status"] == "complete" and man["dataset"]["sha256"] == "builtin"
    assert man["system"]["capabilities"]["recall"] is True
    assert man["counts"]["items"] == len(recs)
    # tensions emitted online are kept in the ingest records
    assert any(r["output"]["result"]["tensions"] for r in recs if r["track"] == "ingest")


def test_second_run_skips_everything(tmp_path):
    run(tmp_path, KeywordToy())
    first = (tmp_path / "run" / "items.jsonl").read_text()
    out = run(tmp_path, KeywordToy())
    assert out.new_items == 0 and out.skipped == out.items
    assert (tmp_path / "run" / "items.jsonl").read_text() == first


def test_resume_after_partial_items_replays_state_but_not_items(tmp_path, monkeypatch):
    run(tmp_path, KeywordToy())
    full = lines(tmp_path)
    # keep only the first conversation's ingest + 2 tasks, as if killed there
    keep = full[:5]
    (tmp_path / "run" / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in keep))
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("TOY_LOG", str(log))
    out = run(tmp_path, KeywordToy())
    assert out.skipped == 5
    resumed = lines(tmp_path)
    strip = lambda rs: [{k: v for k, v in r.items() if k != "latency_s"} for r in rs]  # noqa: E731
    assert strip(resumed) == strip(full)
    calls = [json.loads(x) for x in log.read_text().splitlines()]
    finished_queries = {json.dumps(r["output"]) for r in keep if r["track"] == "T"}
    asked = [c["arg"] for c in calls if c["call"] in ("recall", "check_alignment")]
    finished_inputs = {t for r in keep if r["track"] == "T" for t in [_input_of(r["item_id"])]}
    assert not finished_inputs & set(asked)
    assert finished_queries  # the test really kept some finished tasks


def _input_of(item_id):
    ds = demo_dataset()
    for ch in ds.update_chains:
        for q in ch.queries:
            if item_id == f"T:{ch.id}:{q.id}":
                return q.text
    for d in ds.drafts:
        if item_id == f"T:{d.id}":
            return d.text
    raise KeyError(item_id)


def test_different_configuration_refuses_to_resume(tmp_path):
    run(tmp_path, KeywordToy())
    with pytest.raises(InputError) as info:
        run(tmp_path, KeywordToy(delay=0.01))
    assert "different configuration" in str(info.value) and "--force-new" in str(info.value)
    out = run(tmp_path, KeywordToy(delay=0.0), settings=RunSettings(progress=False, force_new=True))
    assert out.skipped == 0


def test_faults_are_errors_and_never_scored(tmp_path, hangs):
    out = run(tmp_path, FaultyToy(hang_s=60), factory=lambda: FaultyToy(hang_s=60))
    recs = lines(tmp_path)
    task_recs = [r for r in recs if r["track"] == "T"]
    fault = {r["item_id"]: FaultyToy.fault(_input_of(r["item_id"])) for r in task_recs}
    kind_of = {"raise": "exception", "hang": "timeout", "garbage": "invalid_output"}
    for conv in {r["conversation"] for r in task_recs}:
        timeouts = 0
        for r in (x for x in task_recs if x["conversation"] == conv):
            want = None if timeouts >= 3 else fault[r["item_id"]]
            if timeouts >= 3:  # stopped at the third timeout: the rest is not run
                assert r["error"]["kind"] == "stopped", r
            elif want is None:
                assert r["error"] is None, r
            else:
                assert r["error"]["kind"] == kind_of[want], r
            timeouts += r["error"] is not None and r["error"]["kind"] == "timeout"
    kinds = {r["error"]["kind"] for r in task_recs if r["error"]}
    assert {"exception", "timeout", "invalid_output"} <= kinds
    for r in task_recs:
        if r["error"]:
            assert r["output"] is None and r["scores"] == {}
    got = sum(1 for r in task_recs if r["error"])
    assert out.errors == got and out.errors_by_track == {"T": got}


def test_secret_options_never_reach_the_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-abcdef-987")
    run(tmp_path, KeywordToy(api_key="sk-very-secret-42"), options={"api_key": "sk-very-secret-42"})
    for f in (tmp_path / "run").iterdir():
        text = f.read_text()
        assert "sk-very-secret-42" not in text and "tok-abcdef-987" not in text


class StatefulTrack(RecallTrack):
    """One task per conversation that resolves something (state) and records what it did."""

    def tasks(self, dataset, conversation_id, caps, judge=None):
        def run(g, st):
            g.resolve(f"r-{conversation_id}")
            return {"resolved": f"r-{conversation_id}"}

        def replay(g, st, output):
            g.resolve(output["resolved"])

        resolve = Task(item_id=f"T:{conversation_id}:resolve", track="T", kind="resolve",
                       conversation=conversation_id, phase=PHASE_QUERY, request={"resolve": 1},
                       run=run, replay=replay)
        return [resolve, *super().tasks(dataset, conversation_id, caps)]


def test_a_resumed_conversation_restores_state_changes_of_finished_tasks(tmp_path, monkeypatch):
    tracks = {"T": StatefulTrack()}
    run_system(demo_dataset(), KeywordToy(), tmp_path / "run", settings=QUIET, tracks=tracks)
    full = lines(tmp_path)
    n_ingest = sum(1 for r in full if r["track"] == "ingest" and r["conversation"] == "demo-acme")
    keep = full[:n_ingest + 2]  # ingest, the resolve task and one query of the first conversation
    assert keep[-2]["kind"] == "resolve"
    (tmp_path / "run" / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in keep))
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("TOY_LOG", str(log))
    run_system(demo_dataset(), KeywordToy(), tmp_path / "run", settings=QUIET, tracks=tracks)
    calls = [json.loads(x) for x in log.read_text().splitlines()]
    # the finished resolve was re-applied from its saved output before the remaining queries
    acme = calls[:next(i for i, c in enumerate(calls) if c["call"] == "reset" and i > 0)]
    assert [c for c in acme if c["call"] == "resolve"] == [{"call": "resolve",
                                                            "arg": "r-demo-acme"}]
    first_query = next(i for i, c in enumerate(acme) if c["call"] in ("recall", "check_alignment"))
    assert acme.index({"call": "resolve", "arg": "r-demo-acme"}) < first_query
    strip = lambda rs: [{k: v for k, v in r.items() if k != "latency_s"} for r in rs]  # noqa: E731
    assert strip(lines(tmp_path)) == strip(full)
