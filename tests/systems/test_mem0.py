"""The Mem0 adapter (`-s mem0`): offline, source turns kept, declines what it cannot serve.
Skipped with a reason when mem0ai (the mem0 extra) is not installed."""

from __future__ import annotations

import sys

import pytest

from twistbench.datasets.demo import demo_dataset
from twistbench.errors import InputError
from twistbench.runs.conform import check_conformance
from twistbench.systems import make_system


def test_without_mem0ai_the_system_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "mem0", None)  # import mem0 raises ImportError
    with pytest.raises(InputError, match=r"pip install 'twistbench\[mem0\]'"):
        make_system("mem0")


@pytest.fixture(scope="module")
def mem0_demo():
    pytest.importorskip("mem0", reason="mem0ai is not installed (pip install 'twistbench[mem0]')")
    system, _ = make_system("mem0")
    conv = demo_dataset().conversations[0]
    system.reset(conv.id)
    for _, events in conv.sessions():
        system.ingest(events)
    yield system, conv
    system.close()


def test_every_memory_names_its_source_turn(mem0_demo):
    system, conv = mem0_demo
    records = system.lineage()
    assert len(records) == len(conv.events)  # infer=False: one raw memory per turn
    by_turn = {r.sources[0]: r for r in records}
    for ev in conv.events:
        assert by_turn[ev.id].text == f"{ev.speaker}: {ev.text}" and by_turn[ev.id].raw


def test_recall_cites_the_turn_its_answer_comes_from(mem0_demo):
    system, conv = mem0_demo
    turns = conv.event_index()
    answer = system.recall("When is the renewal review planned?")
    assert len(answer.evidence) == 1
    ev = turns[answer.evidence[0]]
    assert answer.text == f"{ev.speaker}: {ev.text}"


def test_retrieve_ranks_mem0_memory_ids_that_lineage_maps_to_turns(mem0_demo):
    system, _ = mem0_demo
    hits = system.retrieve("dashboards renewal", 3)
    lineage = {r.memory_id for r in system.lineage()}
    assert 1 <= len(hits) <= 3 and {h.id for h in hits} <= lineage
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_speakers_are_users_named_by_the_speaker(mem0_demo):
    system, conv = mem0_demo
    stored = system.memory.get_all(filters={"run_id": conv.id})["results"]
    assert {m.get("role") for m in stored} == {"user"}
    assert {m.get("actor_id") for m in stored} == set(conv.speakers or
                                                      {e.speaker for e in conv.events})


def test_mem0_passes_conform_and_declines_what_it_cannot_serve():
    pytest.importorskip("mem0", reason="mem0ai is not installed (pip install 'twistbench[mem0]')")
    system, _ = make_system("mem0")
    results = {r.check: r.status for r in check_conformance(system)}
    assert "fail" not in results.values()
    for call in ("flag_tensions", "check_alignment", "resolve"):
        assert results[f"{call} [demo-acme]"] == "declined"
    assert system.memory is None  # close freed the store
