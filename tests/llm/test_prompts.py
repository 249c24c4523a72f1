"""The prompt files: present, well formed, hashed, rendered safely, usable end to end."""

from __future__ import annotations

import hashlib
import json
import re
from importlib import resources

import pytest
from llm_helpers import SECRET

from twistbench.errors import InputError
from twistbench.llm.client import LLMClient, LLMConfig
from twistbench.llm.loopback import LoopbackServer, Reply
from twistbench.llm.prompts import (
    _parse,
    available_prompts,
    format_lines,
    load_prompt,
    prompt_hashes,
    prompt_text,
)

SLOTS = {
    "answerer": ("memories", "question"),
    "judge_locomo": ("question", "gold_answer", "generated_answer"),
    "judge_track_c": ("question", "kind", "states", "answer"),
    "draft_alignment": ("context", "draft"),
    "session_tensions": ("earlier", "session"),
    "extractor": ("memories", "turns"),
    "tiap_audit": ("question", "gold_answer", "source", "memory"),
    "locomo_restyle": ("speaker", "examples", "before", "after", "protected", "text"),
}
# Prompts whose reply is the rewritten text itself, not JSON.
TEXT_REPLY = {"locomo_restyle"}
# The values each role will read from the reply; every one must appear in the prompt's
# output specification.
OUTPUT_WORDS = {
    "answerer": ['"answer"', '"evidence"', "Not mentioned in memory"],
    "judge_locomo": ['"label"', "CORRECT", "WRONG", '"reasoning"'],
    "judge_track_c": ['"label"', '"current"', '"stale"', '"hedged"', '"other"',
                      '"names_history"'],
    "draft_alignment": ['"aligned"', '"conflicts"', '"evidence"', '"rationale"'],
    "session_tensions": ['"tensions"', '"claim_evidence"', '"new_evidence"', '"rationale"'],
    "extractor": ['"operations"', '"op"', '"ADD"', '"UPDATE"', '"DELETE"', '"source_turns"',
                  '"id"', '"text"'],
    "tiap_audit": ['"label"', '"supports"', '"partial"', '"does_not_support"'],
}


def test_the_shipped_prompts_are_exactly_these() -> None:
    assert available_prompts() == sorted(SLOTS)


@pytest.mark.parametrize("name", sorted(SLOTS))
def test_each_prompt_is_well_formed(name: str) -> None:
    prompt = load_prompt(name)
    assert prompt.slots == SLOTS[name]
    assert "{{" not in prompt.system
    if name in TEXT_REPLY:
        assert "Reply with the rewritten line only" in prompt.system
        return
    assert "JSON" in prompt.system
    for word in OUTPUT_WORDS[name]:
        assert word in prompt.system, word
    # The output example in the system text is one line that names its keys in JSON form.
    example = [line for line in prompt.system.splitlines() if line.startswith("{")]
    assert len(example) == 1
    for key in re.findall(r'"(\w+)":', example[0]):
        assert f'"{key}"' in prompt.system


@pytest.mark.parametrize("name", sorted(SLOTS))
def test_hash_is_sha256_of_the_file(name: str) -> None:
    raw = resources.files("twistbench.llm.prompts").joinpath(f"{name}.txt").read_bytes()
    text, digest = prompt_text(name)
    assert text == raw.decode("utf-8")
    assert digest == hashlib.sha256(raw).hexdigest()
    assert prompt_hashes([name]) == {name: digest}


def test_hashes_differ_and_cover_every_prompt() -> None:
    hashes = prompt_hashes()
    assert sorted(hashes) == sorted(SLOTS) and len(set(hashes.values())) == len(SLOTS)


def test_a_changed_word_changes_the_hash() -> None:
    text, digest = prompt_text("judge_locomo")
    assert _parse("x", text).sha256 == digest
    assert _parse("x", text.replace("generous", "lenient")).sha256 != digest


def test_render_fills_slots_once_and_refuses_holes() -> None:
    prompt = load_prompt("judge_locomo")
    messages = prompt.render(question="When did she go?", gold_answer="7 May 2023",
                             generated_answer="{{question}} on May 7")
    assert messages[0] == {"role": "system", "content": prompt.system}
    assert messages[1]["content"] == ("Question: When did she go?\nGold answer: 7 May 2023\n"
                                      "Generated answer: {{question}} on May 7")
    with pytest.raises(KeyError, match=r"missing \['generated_answer'\]"):
        prompt.render(question="q", gold_answer="g")
    with pytest.raises(KeyError, match=r"unknown \['gold'\]"):
        prompt.render(question="q", gold_answer="g", generated_answer="a", gold="x")
    with pytest.raises(TypeError, match="takes a str"):
        prompt.render(question="q", gold_answer=2023, generated_answer="a")


@pytest.mark.parametrize("text, match", [
    ("[user]\nhi {{x}}\n", "followed by"),
    ("preface\n[system]\ns\n[user]\nu\n", "followed by"),
    ("[system]\ns {{x}}\n[user]\nu\n", "belong in the"),
    ("[system]\ns\n[user]\nu\n[user]\nv\n", "followed by"),
])
def test_malformed_prompt_files_are_refused(text: str, match: str) -> None:
    with pytest.raises(InputError, match=match):
        _parse("bad", text)


def test_unknown_prompt_names_the_choices() -> None:
    with pytest.raises(InputError, match="judge_locomo"):
        load_prompt("judge")


def test_format_lines_keeps_one_entry_per_line() -> None:
    assert format_lines([("m1", "2023-05-07  Caroline went\nto the group"), ("m2", "x")]) == (
        "[m1] 2023-05-07 Caroline went to the group\n[m2] x")


def test_a_judge_prompt_end_to_end_through_the_client() -> None:
    """Render, send, parse: the scripted judge reads the rendered prompt like a model would
    and labels CORRECT exactly when the generated answer contains the gold answer."""

    def judge(body: dict) -> Reply:
        text = body["messages"][1]["content"]
        gold = re.search(r"Gold answer: (.*)", text).group(1)
        generated = re.search(r"Generated answer: (.*)", text).group(1)
        label = "CORRECT" if gold.lower() in generated.lower() else "WRONG"
        return Reply("```json\n" + json.dumps({"reasoning": "compared", "label": label})
                     + "\n```")

    prompt = load_prompt("judge_locomo")
    cases = [("7 May 2023", "She went on 7 May 2023.", "CORRECT"),
             ("7 May 2023", "Sometime in the spring of 2023", "WRONG"),
             ("2022", "2021", "WRONG")]
    with LoopbackServer(judge) as server, LLMClient(
            LLMConfig(base_url=server.base_url, model="judge-m", api_key=SECRET),
            cache=None) as client:
        labels = [client.complete(prompt.render(question="When?", gold_answer=gold,
                                                generated_answer=answer), json=True)
                  .data["label"] for gold, answer, _ in cases]
        sent = server.requests[0].body
    assert labels == [expected for *_, expected in cases]
    assert sent["messages"][0]["content"] == prompt.system and sent["temperature"] == 0.0
    assert sent["response_format"] == {"type": "json_object"}
