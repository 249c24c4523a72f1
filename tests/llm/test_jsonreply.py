"""The tolerant JSON reader: the forms it accepts, and clear errors for everything else."""

from __future__ import annotations

import json

import pytest

from twistbench.llm.errors import LLMJSONError, LLMTruncatedError
from twistbench.llm.jsonreply import parse_json_reply

EXPECTED = {"label": "CORRECT", "reasoning": "same date, {braces} and \"quotes\" inside"}
PLAIN = json.dumps(EXPECTED)


@pytest.mark.parametrize("reply", [
    PLAIN,
    f"  \n{PLAIN}\n  ",
    f"```json\n{PLAIN}\n```",
    f"```\n{PLAIN}\n```",
    f"Here is my verdict:\n```json\n{PLAIN}\n```\nHope this helps.",
    f"Sure! The grading follows. {PLAIN} That is all.",
    f"<think>The gold says {{7 May}}; the answer agrees.</think>\n{PLAIN}",
    f"```json\n{PLAIN}",  # fence never closed, value complete
    '{"label": "CORRECT", "reasoning": "same date, {braces} and \\"quotes\\" inside",}',
    ('Result: {"reasoning": "same date, {braces} and \\"quotes\\" inside", '
    '"label": "CORRECT" , }'),
])
def test_accepted_forms(reply: str) -> None:
    assert parse_json_reply(reply) == EXPECTED


def test_trailing_commas_in_nested_arrays_and_strings_kept() -> None:
    reply = '{"evidence": ["D1:2", "D3:4",], "text": "a, ]b,}", "n": [1, [2, 3,],],}'
    assert parse_json_reply(reply) == {"evidence": ["D1:2", "D3:4"], "text": "a, ]b,}",
                                       "n": [1, [2, 3]]}


def test_prose_braces_before_the_value_are_skipped() -> None:
    reply = 'I considered {maybe} and {"not json": } first. {"aligned": false, "conflicts": []}'
    assert parse_json_reply(reply) == {"aligned": False, "conflicts": []}


def test_expect_array_and_any() -> None:
    assert parse_json_reply('Facts: ["a", "b",]', expect="array") == ["a", "b"]
    assert parse_json_reply('[1, 2]', expect="any") == [1, 2]
    with pytest.raises(LLMJSONError, match="no JSON object"):
        parse_json_reply("[1, 2]")  # an array where an object is expected


@pytest.mark.parametrize("reply", [
    '{"label": "CORR',
    'Verdict: {"label": "CORRECT", "reasoning": "the date',
    '```json\n{"operations": [{"op": "ADD", "text": "x"}\n```',
    '{"a": {"b": [1, 2',
])
def test_truncated_value_is_a_clear_error_never_a_guess(reply: str) -> None:
    with pytest.raises(LLMTruncatedError, match="never closes") as info:
        parse_json_reply(reply)
    assert info.value.content == reply
    assert info.value.kind == "truncated"


@pytest.mark.parametrize("reply, match", [
    ("", "empty"),
    ("   \n", "empty"),
    (None, "empty"),
    ("CORRECT", "no JSON object"),
    ("{'label': 'CORRECT'}", "not valid JSON"),  # single quotes are not repaired
    ('{label: "CORRECT"}', "not valid JSON"),  # unquoted keys are not repaired
])
def test_malformed_replies_raise(reply, match: str) -> None:
    with pytest.raises(LLMJSONError, match=match) as info:
        parse_json_reply(reply)
    assert not isinstance(info.value, LLMTruncatedError)
    assert info.value.kind == "malformed_json"


def test_first_complete_value_wins_and_later_text_is_ignored() -> None:
    assert parse_json_reply('{"a": 1} // then {"b": 2} and {"c": ') == {"a": 1}


def test_error_excerpt_is_short() -> None:
    with pytest.raises(LLMJSONError) as info:
        parse_json_reply("no json here " * 100)
    assert len(str(info.value)) < 200


def test_trailing_comma_before_a_deeply_indented_bracket() -> None:
    assert parse_json_reply('{"a": [1,\n' + " " * 200 + "],\n" + " " * 100 + "}") == {"a": [1]}
