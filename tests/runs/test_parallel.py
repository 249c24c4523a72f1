"""--workers N (conversations in parallel, a fresh instance per worker unless thread_safe) and
--retry-errors (ask only the errored items again), on the real tracks and the demo dataset."""

from __future__ import annotations

import json
import threading
import time

import pytest
from toy_systems import KeywordToy

from twistbench.datasets.demo import demo_dataset
from twistbench.errors import InputError
from twistbench.records import read_records
from twistbench.report.runs import report_runs
from twistbench.runs.runner import RunSettings, run_system

DS = demo_dataset()


class SlowToy(KeywordToy):
    """KeywordToy that notes which instance serves which conversation and how many
    conversations are being driven at once (a short sleep per ingest makes them overlap)."""

    active = 0
    peak = 0
    seen: dict[str, set[int]] = {}
    lock = threading.Lock()

    def reset(self, conversation_id: str) -> None:
        super().reset(conversation_id)
        with SlowToy.lock:
            SlowToy.seen.setdefault(conversation_id, set()).add(id(self))

    def ingest(self, events):
        with SlowToy.lock:
            SlowToy.active += 1
            SlowToy.peak = max(SlowToy.peak, SlowToy.active)
        time.sleep(0.05)
        try:
            return super().ingest(events)
        finally:
            with SlowToy.lock:
                SlowToy.active -= 1


class SharedToy(SlowToy):
    """One instance for every worker: its per-conversation state lives per calling thread
    (each worker's calls come from its own thread), as a thread_safe system must keep it."""

    thread_safe = True

    def __init__(self):
        self._local = threading.local()
        super().__init__()

    @property
    def events(self):
        return self._local.__dict__.setdefault("events", [])

    @events.setter
    def events(self, value):
        self._local.events = value

    @property
    def tensions(self):
        return self._local.__dict__.setdefault("tensions", [])

    @tensions.setter
    def tensions(self, value):
        self._local.tensions = value

    @property
    def resolved(self):
        return self._local.__dict__.setdefault("resolved", set())

    @resolved.setter
    def resolved(self, value):
        self._local.resolved = value


def _strip(folder):
    return sorted((r.item_id, json.dumps(r.output, sort_keys=True), json.dumps(r.scores,
                   sort_keys=True)) for r in read_records(folder))


def _reset_counters():
    SlowToy.active, SlowToy.peak, SlowToy.seen = 0, 0, {}


def test_workers_give_the_same_records_and_scores_as_one(tmp_path):
    _reset_counters()
    one = run_system(DS, SlowToy(), tmp_path / "one", settings=RunSettings(progress=False),
                     dataset_source={"name": "demo"})
    built = []

    def factory():
        built.append(SlowToy())
        return built[-1]

    _reset_counters()
    two = run_system(DS, SlowToy(), tmp_path / "two", dataset_source={"name": "demo"},
                     settings=RunSettings(progress=False, workers=2), factory=factory)
    assert len(built) == 1  # the run's instance plus one fresh instance for the 2nd worker
    assert SlowToy.peak == 2  # both conversations were driven at once
    assert _strip(tmp_path / "one") == _strip(tmp_path / "two")
    assert (one.items, one.errors) == (two.items, two.errors)
    a, b = report_runs([tmp_path / "one"]), report_runs([tmp_path / "two"])
    assert a.data["profiles"][0]["rows"][0]["cells"] == b.data["profiles"][0]["rows"][0]["cells"]
    manifest = json.loads((tmp_path / "two" / "manifest.json").read_text())
    assert manifest["workers"] == 2
    one_fp = json.loads((tmp_path / "one" / "manifest.json").read_text())["fingerprint"]
    assert manifest["fingerprint"] == one_fp  # throughput is not identity


def test_a_thread_safe_system_serves_every_worker_with_one_instance(tmp_path):
    _reset_counters()
    system = SharedToy()
    run_system(DS, system, tmp_path / "r", dataset_source={"name": "demo"},
               settings=RunSettings(progress=False, workers=2))
    assert all(ids == {id(system)} for ids in SlowToy.seen.values())
    assert SlowToy.peak == 2
    _reset_counters()
    run_system(DS, SlowToy(), tmp_path / "one", dataset_source={"name": "demo"},
               settings=RunSettings(progress=False))
    assert _strip(tmp_path / "r") == _strip(tmp_path / "one")  # state kept apart per thread


def test_workers_without_a_way_to_build_instances_are_refused(tmp_path):
    with pytest.raises(InputError, match="fresh instance"):
        run_system(DS, KeywordToy(), tmp_path / "r", settings=RunSettings(workers=2))
    with pytest.raises(InputError, match="--workers"):
        run_system(DS, KeywordToy(), tmp_path / "r", settings=RunSettings(workers=0))


class FlakyToy(KeywordToy):
    """Recall fails for every query while FLAKY is set (class flag), then works."""

    failing = True

    def recall(self, query):
        if FlakyToy.failing:
            raise RuntimeError("the store is down")
        return super().recall(query)


def test_retry_errors_asks_only_the_errored_items_again(tmp_path, monkeypatch):
    FlakyToy.failing = True
    folder = tmp_path / "r"
    first = run_system(DS, FlakyToy(), folder, settings=RunSettings(progress=False),
                       dataset_source={"name": "demo"})
    errored = {r.item_id for r in read_records(folder) if not r.ok}
    assert first.errors == len(errored) > 0
    ok_before = {r.item_id: r for r in read_records(folder) if r.ok}
    FlakyToy.failing = False
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("TOY_LOG", str(log))
    again = run_system(DS, FlakyToy(), folder, dataset_source={"name": "demo"},
                       settings=RunSettings(progress=False, retry_errors=True))
    assert again.errors == 0 and again.new_items == len(errored)
    after = {r.item_id: r for r in read_records(folder)}
    assert set(after) == set(ok_before) | errored and len(read_records(folder)) == len(after)
    assert all(after[i] == r for i, r in ok_before.items())  # finished items untouched
    asked = [json.loads(x) for x in log.read_text().splitlines()]
    recalls = [c for c in asked if c["call"] == "recall"]
    assert len(recalls) == len(errored)  # only the errored items were asked again
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["retried_errors"] == len(errored)
    with pytest.raises(InputError, match="force-new"):
        run_system(DS, FlakyToy(), folder, settings=RunSettings(retry_errors=True,
                                                                force_new=True))
