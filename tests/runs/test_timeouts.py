"""After a timeout: a fresh instance, a restored conversation, a stop rule, bounded threads, and
a child process that is killed. In-process tests decide timeouts with the toys' hang signal
(toy_systems.hang_aware_wait), never with wall-clock time."""

import functools
import json
import os
import threading

import pytest
import toy_systems
from toy_systems import KeywordToy, hang

from twistbench.contract import BaseSystem, Capabilities
from twistbench.datasets.demo import demo_dataset
from twistbench.records import SystemCallError
from twistbench.runs.drive import STOP_AFTER_TIMEOUTS
from twistbench.runs.guard import GuardedSystem
from twistbench.runs.isolation import (
    MAX_ABANDONED,
    CallTimedOut,
    OutputTooLarge,
    ProcessExecutor,
    ThreadExecutor,
)
from twistbench.runs.runner import RunSettings, run_system
from twistbench.systems import build_system
from twistbench.tracks.base import PHASE_QUERY, Task

QUIET = RunSettings(progress=False, tracks=["C"])
FIRST_QUERY = next(q.text for ch in demo_dataset().update_chains for q in ch.queries)




class Counted(KeywordToy):
    """KeywordToy that logs which instance served each call."""

    made = 0

    def __init__(self, hang_on: str = "", hang_every_recall: bool = False):
        super().__init__()
        Counted.made += 1
        self.instance = Counted.made
        self.hang_on = hang_on
        self.hang_every_recall = hang_every_recall
        self.calls: list[tuple[int, str, str]] = []

    def reset(self, conversation_id):
        LOG.append((self.instance, "reset", conversation_id))
        super().reset(conversation_id)

    def ingest(self, events):
        LOG.append((self.instance, "ingest", events[0].id))
        return super().ingest(events)

    def recall(self, query):
        LOG.append((self.instance, "recall", query))
        if self.hang_every_recall or query == self.hang_on:
            hang(600)
        return super().recall(query)


LOG: list[tuple[int, str, str]] = []


def records(folder):
    return [json.loads(x) for x in (folder / "items.jsonl").read_text().splitlines()]


def test_a_timed_out_call_gets_a_fresh_instance_and_a_restored_conversation(tmp_path, hangs):
    LOG.clear()
    make = functools.partial(Counted, hang_on=FIRST_QUERY)
    run_system(demo_dataset(), make(), tmp_path / "hung", settings=QUIET, factory=make)
    clean = records(run_system(demo_dataset(), Counted(), tmp_path / "clean",
                               settings=QUIET).folder)
    hung = records(tmp_path / "hung")
    by_id = {r["item_id"]: r for r in hung}
    timed_out = [r for r in hung if r["error"]]
    assert [r["error"]["kind"] for r in timed_out] == ["timeout"]
    for r in clean:  # every other item is exactly what a run without the hang gives
        if r["item_id"] != timed_out[0]["item_id"]:
            assert by_id[r["item_id"]]["output"] == r["output"], r["item_id"]
    calls = [c for c in LOG if c[0] <= 2]  # the first two instances: the hung run
    hang_at = calls.index((1, "recall", FIRST_QUERY))
    after = calls[hang_at + 1:]
    conv = demo_dataset().conversations[0]
    # the next calls go to instance 2 and begin with reset and the whole conversation again
    assert after[0] == (2, "reset", conv.id)
    assert [c[2] for c in after[1:1 + len(conv.sessions())]] == [
        evs[0].id for _, evs in conv.sessions()]
    assert all(c[0] == 2 for c in after)
    man = json.loads((tmp_path / "hung" / "manifest.json").read_text())
    assert man["counts"]["restarts_after_timeout"] == 1 and man["counts"]["timeouts"] == 1


class AskEveryQueryTwice:
    """Two recall tasks per update-chain query: enough items per conversation to stop one."""

    key = "T"
    title = "toy"
    headline = ()

    def not_applicable(self, caps, dataset):
        return None

    def tasks(self, dataset, conversation_id, caps, judge=None):
        return [Task(item_id=f"T:{ch.id}:{q.id}:{n}", track="T", kind="ask",
                     conversation=conversation_id, phase=PHASE_QUERY, request={"q": q.text},
                     run=lambda g, st, text=q.text: {"answer": g.recall(text).model_dump()})
                for ch in dataset.items_of(conversation_id, "update_chains")
                for q in ch.queries for n in (1, 2)]

    def score(self, dataset, records, caps, judge=None):
        return {}


def test_the_third_timeout_stops_the_conversation(tmp_path, hangs):
    make = functools.partial(Counted, hang_every_recall=True)
    out = run_system(demo_dataset(), make(), tmp_path / "r", settings=RunSettings(progress=False),
                     factory=make, tracks={"T": AskEveryQueryTwice()})
    recs = [r for r in records(out.folder) if r["track"] == "T"]
    stopped_convs = set()
    for conv in sorted({r["conversation"] for r in recs}):
        timeouts = 0
        for r in (x for x in recs if x["conversation"] == conv):
            kind = r["error"]["kind"] if r["error"] else None
            if timeouts >= STOP_AFTER_TIMEOUTS:
                assert kind == "stopped" and "stopped after 3 timed-out calls" in \
                    r["error"]["message"]
                stopped_convs.add(conv)
            else:
                assert kind == "timeout"
            timeouts += kind == "timeout"
    assert stopped_convs == {"demo-acme", "demo-boreal"}
    man = json.loads((out.folder / "manifest.json").read_text())
    assert man["counts"]["conversations_stopped"] == 2
    assert man["counts"]["timeouts"] == 2 * STOP_AFTER_TIMEOUTS
    assert out.errors == len(recs)  # every item an error, none scored


class AlwaysHangs(BaseSystem):
    name = "always-hangs"
    capabilities = Capabilities(recall=True)

    def recall(self, query):
        hang(600)


def test_120_timeouts_do_not_leave_121_threads(hangs):
    before = threading.active_count()
    g = GuardedSystem(AlwaysHangs(), 30, factory=AlwaysHangs)
    kinds = []
    for i in range(120):
        try:
            g.restart()
        except SystemCallError:
            pass
        with pytest.raises(SystemCallError) as info:
            g.recall(f"q{i}")
        kinds.append(info.value.message)
        assert threading.active_count() - before <= MAX_ABANDONED + 1
    assert g.timeouts == MAX_ABANDONED  # then the system is stuck and is not called again
    assert MAX_ABANDONED < 120
    assert "not called again" in kinds[-1]


def test_without_a_factory_restart_waits_for_the_abandoned_call(hangs):
    g = GuardedSystem(AlwaysHangs(), 0.05)  # the wait for the abandoned call, in real time
    with pytest.raises(SystemCallError):
        g.recall("q")
    with pytest.raises(SystemCallError) as info:
        g.restart()  # the abandoned call still runs on the only instance: stuck
    assert "no factory" in info.value.message
    with pytest.raises(SystemCallError):
        g.recall("again")  # refused at once: never a second call on the busy object


def test_without_a_factory_a_finished_abandoned_call_frees_the_instance(hangs):
    system = Counted(hang_on="x")
    g = GuardedSystem(system, 60)
    with pytest.raises(SystemCallError):
        g.recall("x")
    toy_systems.RELEASE.set()  # the abandoned call returns
    g.restart()
    assert isinstance(g.executor, ThreadExecutor) and g.executor.system is system
    assert g.recall("y").text  # the same instance serves again, alone


# -- the child process (real time: only the hanging call gets a short timeout) ----------------


def test_a_process_is_killed_on_timeout_and_a_new_one_serves_the_next_call():
    ex = ProcessExecutor(functools.partial(build_system, "toy_systems:ProcessProbe", {}), 1000,
                         start_timeout_s=120)
    try:
        first = ex.call("recall", ("pid",), 60)["text"]
        assert int(first) != os.getpid()
        old = ex._proc
        with pytest.raises(CallTimedOut):
            ex.call("recall", ("hang",), 0.5)
        assert not old.is_alive()  # killed, not abandoned
        ex.restart(60)
        second = ex.call("recall", ("pid",), 60)["text"]
        assert second != first
        with pytest.raises(OutputTooLarge) as info:
            ex.call("recall", ("huge",), 60)  # refused in the child, never sent here
        assert info.value.size > 1000
    finally:
        ex.close()


def test_a_run_in_a_child_process_gives_the_same_items(tmp_path):
    factory = functools.partial(build_system, "toy_systems:KeywordToy", {})
    settings = RunSettings(progress=False, isolate="process")
    iso = run_system(demo_dataset(), None, tmp_path / "iso", settings=settings, factory=factory)
    thr = run_system(demo_dataset(), KeywordToy(), tmp_path / "thr",
                     settings=RunSettings(progress=False))
    strip = lambda rs: [{k: v for k, v in r.items() if k != "latency_s"} for r in rs]  # noqa: E731
    assert strip(records(iso.folder)) == strip(records(thr.folder))
    man = json.loads((iso.folder / "manifest.json").read_text())
    assert man["limits"]["isolate"] == "process"
    assert man["resources"]["children_peak_rss_mb"] > 0
