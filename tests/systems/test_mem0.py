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


def test_nothing_is_downloaded_at_run_time(mem0_demo):
    from mem0.utils import spacy_models

    system, _ = mem0_demo
    assert system.memory.vector_store._get_bm25_encoder() is None  # no fastembed hub model
    assert spacy_models.get_nlp_full() is None and spacy_models.get_nlp_lemma() is None


def test_telemetry_is_off_even_when_mem0_was_imported_first(mem0_demo):
    from mem0.memory import main, telemetry

    assert telemetry.MEM0_TELEMETRY is False and main.MEM0_TELEMETRY is False


def test_mem0_passes_conform_and_declines_what_it_cannot_serve():
    pytest.importorskip("mem0", reason="mem0ai is not installed (pip install 'twistbench[mem0]')")
    system, _ = make_system("mem0")
    results = {r.check: r.status for r in check_conformance(system)}
    assert "fail" not in results.values()
    for call in ("flag_tensions", "check_alignment", "resolve"):
        assert results[f"{call} [demo-acme]"] == "declined"
    assert system.memory is None  # close freed the store


class _FakeExtractor:
    """An OpenAI-compatible endpoint that extracts one fact per call: "fact N" (N counts calls),
    so each memory's source turn is known from the order of the adds."""

    def __init__(self) -> None:
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        calls = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                calls.append(self.path)
                content = json.dumps({"memory": [{"text": f"fact {len(calls)}"}]})
                body = json.dumps({
                    "id": "x", "object": "chat.completion", "created": 0, "model": "fake",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.calls = calls
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


def test_with_infer_extracted_memories_keep_the_turn_they_came_from(monkeypatch):
    pytest.importorskip("mem0", reason="mem0ai is not installed (pip install 'twistbench[mem0]')")
    fake = _FakeExtractor()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fake-endpoint")
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    try:
        system, _ = make_system("mem0", {"infer": "true", "llm_base_url": fake.url,
                                         "llm_model": "fake"})
        conv = demo_dataset().conversations[0]
        system.reset(conv.id)
        for _, events in conv.sessions():
            system.ingest(events)
        records = system.lineage()
        assert len(fake.calls) == len(conv.events)  # one extraction per turn
        order = {f"fact {i + 1}": ev.id for i, ev in enumerate(conv.events)}
        assert {r.text: r.sources for r in records} == {t: [tid] for t, tid in order.items()}
        assert not any(r.raw for r in records)  # extracted, not the turn as written
        # Cross-check: Mem0's own stored metadata names the same turn for every memory.
        stored = system.memory.get_all(filters={"run_id": conv.id})["results"]
        assert {m["memory"]: m["metadata"]["turn_id"] for m in stored} == order
        answer = system.recall("fact 3")
        assert answer.evidence == [conv.events[2].id]
        system.close()
    finally:
        fake.server.shutdown()
        fake.server.server_close()
