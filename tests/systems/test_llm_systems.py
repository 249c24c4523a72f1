"""The LLM reference systems against the loopback server: what each shows the model, how it
reads the reply (ids it was not shown dropped, out-of-form replies raised), what it declines,
and whole runs on the demo dataset with the scripted model, a second time from the cache."""

from __future__ import annotations

import json

import pytest

from twistbench.datasets.demo import demo_dataset
from twistbench.llm.loopback import Fault, Reply
from twistbench.llm.prompts import load_prompt
from twistbench.llm.scripted import respond
from twistbench.model import Memories
from twistbench.runs.runner import RunSettings, run_system
from twistbench.systems import make_system
from twistbench.systems.fact_rag_llm import FactRAGLLM
from twistbench.systems.flat_rag_llm import FlatRAGLLM
from twistbench.systems.full_context import FullContext, RecordTooLong
from twistbench.systems.llm_common import LLMReplyError, turn_lines

DS = demo_dataset()
ACME = DS.conversation("demo-acme")
SESSIONS = dict(ACME.sessions())


def _user(request) -> str:
    return request.body["messages"][1]["content"]


def test_flat_rag_llm_asks_per_session_with_the_speakers_earlier_turns(llm_env):
    system = FlatRAGLLM(retriever="lexical", tension_k=2)
    system.reset(ACME.id)
    assert system.ingest(SESSIONS[1]).tensions == []
    assert llm_env.hits == 0  # nothing earlier to contradict: no call
    llm_env.script(Reply(json.dumps({"tensions": [
        {"claim_evidence": ["demo-acme:e00", "demo-acme:zz"], "new_evidence": ["demo-acme:e04"],
         "rationale": "r"},
        {"claim_evidence": ["demo-acme:e04"], "new_evidence": ["demo-acme:e05"]}]})))
    out = system.ingest(SESSIONS[2])
    sent = _user(llm_env.requests[-1])
    earlier, new = sent.split("New session:")
    assert "[demo-acme:e04]" in new and "[demo-acme:e04]" not in earlier
    assert all(f"[{e.id}]" not in earlier or e.session == 1 for e in ACME.events)
    # the earlier turns shown are the new turns' speakers' own
    shown = [e for e in SESSIONS[1] if f"[{e.id}]" in earlier]
    assert shown and {e.speaker for e in shown} <= {e.speaker for e in SESSIONS[2]}
    # the second tension cites a new turn as its claim: dropped; an invented id is dropped
    assert [(t.id, t.claim_evidence, t.new_evidence) for t in out.tensions] == [
        ("t1", ["demo-acme:e00"], ["demo-acme:e04"])]
    assert system.citations.dropped == 2


def test_flat_rag_llm_verdict_recall_and_out_of_form_replies(llm_env):
    system = FlatRAGLLM(retriever="lexical", k=4)
    system.reset(ACME.id)
    system.ingest(SESSIONS[1])
    llm_env.script(Reply(json.dumps({"aligned": False, "conflicts": [
        {"evidence": ["demo-acme:e02", "nope"], "rationale": "120 seats, not 90"}]})))
    v = system.check_alignment("Confirming your rollout of 90 seats.")
    assert not v.aligned and v.conflicts[0].evidence == ["demo-acme:e02"]
    assert _user(llm_env.requests[-1]).count("\n[") <= 4  # k excerpts
    llm_env.script(Reply(json.dumps({"answer": "120 seats", "evidence": ["demo-acme:e02"]})))
    a = system.recall("How many seats does the rollout cover?")
    assert a.text == "120 seats" and a.evidence == ["demo-acme:e02"]
    assert a.retrieved is None and a.answered_by is None  # the system answered itself
    llm_env.script(Reply(json.dumps({"verdict": "fine"})))
    with pytest.raises(LLMReplyError):
        system.check_alignment("Anything.")


def test_full_context_shows_the_whole_record_and_declines_what_does_not_fit(llm_env):
    system = FullContext(context_tokens=1000)
    system.reset(ACME.id)
    system.ingest(SESSIONS[1])
    llm_env.script(Reply(json.dumps({"aligned": True, "conflicts": []})))
    assert system.check_alignment("Thanks for the call.").aligned
    assert turn_lines(SESSIONS[1]) in _user(llm_env.requests[-1])
    long = [SESSIONS[2][0].model_copy(update={"id": f"x{i}", "text": "word " * 400})
            for i in range(3)]
    llm_env.script(Reply(json.dumps({"tensions": []})))
    with pytest.raises(RecordTooLong, match="context budget"):
        system.ingest(long)
    with pytest.raises(RecordTooLong):
        system.recall("Anything?")


def test_fact_rag_llm_applies_valid_operations_and_counts_the_others(llm_env):
    system = FactRAGLLM(retriever="lexical", batch_turns=10)
    system.reset(ACME.id)
    llm_env.script(Reply(json.dumps({"operations": [
        {"op": "ADD", "text": "Dana's rollout covers 120 seats.",
         "source_turns": ["demo-acme:e02"]},
        {"op": "ADD", "text": "Renewal planned.", "source_turns": ["demo-acme:e01", "x"]},
        {"op": "ADD", "text": "No source.", "source_turns": []},
        {"op": "UPDATE", "id": "m99", "text": "?", "source_turns": ["demo-acme:e00"]},
        {"op": "MERGE", "text": "?", "source_turns": ["demo-acme:e00"]}]})))
    system.ingest(SESSIONS[1])
    assert {f.id: f.sources for f in system.facts.values()} == {
        "m1": ["demo-acme:e02"], "m2": ["demo-acme:e01"]}
    assert system.rejected_ops == 3
    llm_env.script(Reply(json.dumps({"operations": [
        {"op": "UPDATE", "id": "m1", "text": "Dana's rollout covers 180 seats since session 3.",
         "source_turns": ["demo-acme:e08"]},
        {"op": "DELETE", "id": "m2", "source_turns": ["demo-acme:e10"]}]})))
    system.ingest(SESSIONS[3])
    shown = _user(llm_env.requests[-1])
    assert "[m1] Dana's rollout covers 120 seats." in shown  # related memories are shown
    assert list(system.facts) == ["m1"]
    assert system.facts["m1"].sources == ["demo-acme:e02", "demo-acme:e08"]
    got = system.recall("How many seats?")
    assert isinstance(got, Memories) and got.memories[0].id == "m1"
    assert got.memories[0].sources == ["demo-acme:e02", "demo-acme:e08"]
    assert system.lineage()[0].sources == ["demo-acme:e02", "demo-acme:e08"]
    llm_env.script(Reply('{"ops": []}'))
    with pytest.raises(LLMReplyError):
        system.ingest(SESSIONS[2])


def test_system_config_names_model_and_prompts_for_the_fingerprint(llm_env):
    cfg = make_system("flat-rag-llm", {"retriever": "lexical", "model": "other"})[0].config()
    assert cfg["model"] == "other"
    assert cfg["prompts"]["draft_alignment"] == load_prompt("draft_alignment").sha256


@pytest.mark.parametrize("name", ["flat-rag-llm", "full-context", "fact-rag-llm"])
def test_whole_runs_on_demo_then_again_from_the_cache(llm_env, tmp_path, name):
    llm_env.reply = respond
    opts = {} if name == "full-context" else {"retriever": "lexical"}
    settings = RunSettings(progress=False, timeout_s=30)
    first = run_system(DS, make_system(name, opts)[0], tmp_path / "one", settings=settings,
                       options=opts, dataset_source={"name": "demo"})
    assert first.errors == 0
    calls = llm_env.hits
    again = run_system(DS, make_system(name, opts)[0], tmp_path / "two", settings=settings,
                       options=opts, dataset_source={"name": "demo"})
    assert again.errors == 0 and llm_env.hits == calls  # not one request reached the server
    manifest = json.loads((tmp_path / "two" / "manifest.json").read_text())
    assert set(manifest["system"]["diagnostics"]) <= {"dropped_citations", "rejected_ops"}
    (usage,) = manifest["llm_usage"]
    assert usage["network_calls"] == 0 and usage["cache"]["hit_rate"] == 1.0
    one = [json.loads(x) for x in (tmp_path / "one" / "items.jsonl").read_text().splitlines()]
    two = [json.loads(x) for x in (tmp_path / "two" / "items.jsonl").read_text().splitlines()]
    strip = [{k: v for k, v in r.items() if k != "latency_s"} for r in one]
    assert strip == [{k: v for k, v in r.items() if k != "latency_s"} for r in two]


def test_a_failing_model_call_is_the_items_error(llm_env, tmp_path):
    llm_env.reply = lambda body: Fault.status_code(400, message="scripted refusal")
    system = make_system("full-context", {})[0]
    out = run_system(DS, system, tmp_path / "r", settings=RunSettings(progress=False),
                     dataset_source={"name": "demo"}, options={})
    records = [json.loads(x) for x in (tmp_path / "r" / "items.jsonl").read_text().splitlines()]
    failed = [r for r in records if r["error"]]
    assert out.errors == len(failed) > 0
    assert all("400" in r["error"]["message"] for r in failed)
