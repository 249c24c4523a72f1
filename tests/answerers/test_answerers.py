"""Answerers: the offline extractive rule on hand-made memories, the LLM answerer against the
loopback server (scripted replies and every fault), and the harness answering Memories."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from llm_helpers import RecordingSleep, role_client

from twistbench.answerers import (
    NO_MEMORY_ANSWER,
    AnswererError,
    answer_recall,
    answerer_record,
    make_answerer,
)
from twistbench.answerers.extractive import ExtractiveAnswerer
from twistbench.answerers.llm import LLMAnswerer, memory_lines
from twistbench.errors import InputError
from twistbench.llm.loopback import Fault, Reply
from twistbench.llm.prompts import load_prompt
from twistbench.model import Answer, Memories, Memory

MEMS = [
    Memory(id="m1", text="Caroline went hiking. She liked the trail.", sources=["D1:3"],
           score=0.9, timestamp=datetime(2023, 5, 8)),
    Memory(id="m2", text="Melanie painted a sunrise in 2022.", sources=["D2:1", "D2:2"],
           score=0.8),
    Memory(id="m3", text="The sunrise painting hangs in Melanie's kitchen.", sources=["D3:7"],
           score=0.7),
]


# -- extractive ---------------------------------------------------------------------------------


def test_extractive_returns_the_sentence_sharing_most_content_words():
    a = ExtractiveAnswerer().answer("When did Melanie paint a sunrise?", MEMS)
    # m2 shares melanie, paint(ed? no: 'painted' != 'paint'), sunrise -> 2; m3 shares sunrise,
    # melanie -> 2 as well: the tie goes to the memory the system ranked higher (m2)
    assert a.text == "Melanie painted a sunrise in 2022."
    assert a.evidence == ["D2:1", "D2:2"]
    assert a.retrieved == MEMS and a.answered_by == "extractive"


def test_extractive_picks_a_sentence_not_the_whole_memory():
    a = ExtractiveAnswerer().answer("What did Caroline think of the trail she liked?", MEMS)
    assert a.text == "She liked the trail." and a.evidence == ["D1:3"]


def test_extractive_without_overlap_gives_the_top_memory_and_without_memories_abstains():
    a = ExtractiveAnswerer().answer("What is the capital of Peru?", MEMS)
    assert a.text == "Caroline went hiking." and a.evidence == ["D1:3"]
    none = ExtractiveAnswerer().answer("Anything?", [])
    assert none.text == NO_MEMORY_ANSWER and none.evidence == [] and none.retrieved == []
    assert "not mentioned" in none.text.lower()  # LoCoMo's adversarial rule reads it so


# -- LLM answerer -------------------------------------------------------------------------------


def test_llm_answerer_sends_the_prompt_and_maps_cited_memories_to_turns(loopback, tmp_path):
    loopback.script(Reply(json.dumps({"answer": "in 2022", "evidence": ["m2", "m9"]})))
    answerer = LLMAnswerer(client=role_client(loopback))
    a = answerer.answer("When did Melanie paint a sunrise?", MEMS)
    assert a.text == "in 2022" and a.evidence == ["D2:1", "D2:2"]
    assert a.answered_by == "llm:scripted" and answerer.unknown_citations == 1  # m9 dropped
    sent = loopback.requests[-1].body
    assert sent["messages"] == load_prompt("answerer").render(
        memories=memory_lines(MEMS), question="When did Melanie paint a sunrise?")
    assert "[m1] 8 May 2023 Caroline went hiking." in sent["messages"][1]["content"]
    assert sent["temperature"] == 0 and sent["response_format"] == {"type": "json_object"}
    ident = answerer.identity()
    assert ident["model"] == "scripted"
    assert ident["prompt_sha256"] == load_prompt("answerer").sha256


def test_llm_answerer_asks_nothing_without_memories(loopback):
    a = LLMAnswerer(client=role_client(loopback)).answer("q?", [])
    assert a.text == NO_MEMORY_ANSWER and loopback.hits == 0


def test_llm_answerer_retries_429_with_retry_after_and_5xx(loopback):
    sleep = RecordingSleep()
    loopback.script(Fault.status_code(429, retry_after="2"), Fault.status_code(503),
                    Reply(json.dumps({"answer": "2022", "evidence": ["m2"]})))
    client = role_client(loopback, sleep=sleep)
    a = LLMAnswerer(client=client).answer("When?", MEMS)
    assert a.text == "2022" and loopback.hits == 3
    assert sleep.waits[0] == 2  # Retry-After honoured
    assert client.usage_summary()["retries"] == {"http": 1, "rate_limited": 1}


@pytest.mark.parametrize("fault,kind", [
    (Reply("The answer is 2022."), "malformed_json"),
    (Reply('{"answer": "20', finish_reason="length"), "truncated"),
    (Reply('{"answer": "2022", "evidence": ["m2"'), "truncated"),
    (Reply(json.dumps({"evidence": ["m2"]})), "malformed_reply"),
    (Reply(json.dumps({"answer": "x", "evidence": "m2"})), "malformed_reply"),
    (Fault.malformed_body(), "malformed_response"),
])
def test_llm_answerer_out_of_form_replies_are_errors_not_answers(loopback, fault, kind):
    loopback.script(fault)
    with pytest.raises(AnswererError) as e:
        LLMAnswerer(client=role_client(loopback)).answer("When?", MEMS)
    assert e.value.kind == kind


def test_llm_answerer_timeout_and_exhausted_5xx_are_errors(loopback):
    loopback.script(Fault.hang(2), Fault.hang(2))
    client = role_client(loopback, timeout_s=0.2, max_attempts=2)
    with pytest.raises(AnswererError) as e:
        LLMAnswerer(client=client).answer("When?", MEMS)
    assert e.value.kind == "timeout"
    loopback.script(*[Fault.status_code(500)] * 2)
    with pytest.raises(AnswererError) as e:
        LLMAnswerer(client=role_client(loopback, max_attempts=2)).answer("When?", MEMS)
    assert e.value.kind == "http"


def test_llm_answerer_answers_again_from_the_cache_without_a_call(loopback, tmp_path):
    cache = tmp_path / "c.sqlite3"
    loopback.script(Reply(json.dumps({"answer": "2022", "evidence": ["m2"]})))
    with role_client(loopback, cache_path=cache) as client:
        first = LLMAnswerer(client=client).answer("When?", MEMS)
    with role_client(loopback, cache_path=cache) as client:  # another process, say
        again = LLMAnswerer(client=client).answer("When?", MEMS)
        assert client.usage_summary()["cache"]["hits"] == 1
    assert again == first and loopback.hits == 1


# -- the registry and the harness ---------------------------------------------------------------


def test_make_answerer_and_its_record(llm_env):
    assert answerer_record(make_answerer())["name"] == "extractive"
    rec = answerer_record(make_answerer("llm"))
    assert rec["name"] == "llm" and rec["model"] == "scripted" and rec["prompt_sha256"]
    with pytest.raises(InputError, match="unknown answerer"):
        make_answerer("oracle-answerer")


def test_llm_answerer_without_an_endpoint_is_a_clear_input_error(monkeypatch):
    for var in ("TWIST_LLM_BASE_URL", "OPENAI_BASE_URL", "TWIST_ANSWERER_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(InputError) as e:
        make_answerer("llm")
    assert "answerer role needs an LLM endpoint" in str(e.value)
    assert "TWIST_ANSWERER_" in str(e.value)


def test_answer_recall_passes_answers_through_and_answers_memories():
    own = Answer(text="x", evidence=["D1:1"])
    assert answer_recall("q", own, ExtractiveAnswerer()) is own
    got = answer_recall("What did Caroline think of the trail she liked?", Memories(memories=MEMS),
                        ExtractiveAnswerer())
    assert got.text == "She liked the trail." and got.retrieved == MEMS
    with pytest.raises(ValueError, match="twice"):
        answer_recall("q", Memories(memories=[MEMS[0], MEMS[0]]), ExtractiveAnswerer())
