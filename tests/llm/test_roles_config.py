"""Role configuration (TWIST_<ROLE>_* over TWIST_LLM_*), shared clients, cache-only configs,
per-run usage from snapshots, and the scripted model's rules."""

from __future__ import annotations

import json

import pytest
from llm_helpers import user

from twistbench.errors import InputError
from twistbench.llm import close_shared_clients, role_config, shared_client
from twistbench.llm.client import (
    OFFLINE_URL,
    LLMClient,
    LLMConfig,
    is_configured,
    usage_since,
    usage_snapshot,
    usage_totals,
)
from twistbench.llm.errors import LLMConnectionError
from twistbench.llm.loopback import Reply
from twistbench.llm.prompts import format_lines, load_prompt
from twistbench.llm.scripted import respond, respond_with_faults

ENV = {"TWIST_LLM_BASE_URL": "http://a.test/v1", "TWIST_LLM_MODEL": "general",
       "TWIST_LLM_API_KEY": "k-general", "TWIST_JUDGE_MODEL": "judge-model",
       "TWIST_JUDGE_BASE_URL": "http://b.test/v1", "TWIST_LLM_CACHE": "off"}


def test_a_roles_variables_win_over_the_general_ones_and_options_over_both():
    judge = role_config("judge", ENV)
    assert (judge.base_url, judge.model) == ("http://b.test/v1", "judge-model")
    assert judge.api_key.reveal() == "k-general"  # not overridden for the role
    answerer = role_config("answerer", ENV)
    assert (answerer.base_url, answerer.model) == ("http://a.test/v1", "general")
    assert role_config("judge", ENV, model="x").model == "x"
    assert is_configured(ENV, role="judge") and is_configured(ENV, role="rater")
    assert not is_configured({"TWIST_JUDGE_MODEL": "m"}, role="judge")


def test_no_endpoint_names_the_roles_variables_unless_cache_only_is_allowed():
    with pytest.raises(InputError) as e:
        role_config("judge", {"TWIST_LLM_MODEL": "m"})
    assert "judge role needs an LLM endpoint" in str(e.value)
    assert "TWIST_JUDGE_" in str(e.value)
    offline = role_config("judge", {"TWIST_LLM_CACHE": "off"}, offline_ok=True, model="m")
    assert offline.offline and offline.base_url == OFFLINE_URL and offline.model == "m"


def test_offline_answers_from_the_cache_and_never_asks(loopback, tmp_path):
    cache = str(tmp_path / "c.sqlite3")
    with LLMClient(LLMConfig(base_url=loopback.base_url, model="m", cache_path=cache)) as c:
        c.complete(user("hello"))
    with LLMClient(LLMConfig(base_url=OFFLINE_URL, model="m", cache_path=cache,
                             offline=True)) as c:
        assert c.complete(user("hello")).cached
        with pytest.raises(LLMConnectionError, match="offline"):
            c.complete(user("never asked"))
    assert loopback.hits == 1


def test_shared_clients_per_configuration_and_usage_per_run(loopback):
    config = LLMConfig(base_url=loopback.base_url, model="m", cache_path=None)
    a, b = shared_client(config), shared_client(config)
    other = shared_client(LLMConfig(base_url=loopback.base_url, model="n", cache_path=None))
    assert a is b and a is not other
    a.complete(user("before the run"))
    mark = usage_snapshot()
    a.complete(user("one"))
    other.complete(user("two"))
    other.complete(user("three"))
    run = {u["config"]["model"]: u for u in usage_since(mark)}
    assert run["m"]["requests"] == 1 and run["n"]["requests"] == 2
    assert usage_totals(run.values())["requests"] == 3
    assert a.usage_summary()["requests"] == 2  # the client's own total is untouched
    close_shared_clients()
    assert shared_client(config) is not a
    close_shared_clients()


# -- the scripted model -------------------------------------------------------------------------


def body(prompt: str, **slots: str) -> dict:
    return {"model": "m", "messages": load_prompt(prompt).render(**slots),
            "response_format": {"type": "json_object"}}


def reply(prompt: str, **slots: str) -> dict:
    return json.loads(respond(body(prompt, **slots)).content)


def test_scripted_answerer_and_judges_follow_their_rules():
    mems = format_lines([("m1", "8 May 2023 Caroline went to a support group."),
                         ("m2", "Melanie painted a sunrise in 2022.")])
    assert reply("answerer", memories=mems, question="When did Melanie paint the sunrise?") == {
        "answer": "Melanie painted a sunrise in 2022.", "evidence": ["m2"]}
    assert reply("answerer", memories=mems, question="Who won the cup?")["evidence"] == []
    assert reply("judge_locomo", question="q", gold_answer="7 May 2023",
                 generated_answer="on 7 May 2023")["label"] == "CORRECT"
    assert reply("judge_locomo", question="q", gold_answer="7 May 2023",
                 generated_answer="12 April 2023")["label"] == "WRONG"
    states = "1. Chicago - SUPERSEDED\n2. Austin - CURRENT"
    got = {a: reply("judge_track_c", question="q", kind="current", states=states, answer=a)
           for a in ("Austin", "Chicago", "Chicago or Austin", "It used to be Chicago, now "
                     "Austin", "Denver")}
    assert {a: g["label"] for a, g in got.items()} == {
        "Austin": "current", "Chicago": "stale", "Chicago or Austin": "hedged",
        "It used to be Chicago, now Austin": "current", "Denver": "other"}
    assert got["It used to be Chicago, now Austin"]["names_history"] is True


def test_scripted_faults_come_once_per_request_and_malformed_replies_every_time():
    seen = {}
    for i in range(400):
        b = {"model": "m", "messages": load_prompt("judge_locomo").render(
            question=f"q{i}", gold_answer="x", generated_answer="x")}
        first, second = respond_with_faults(b), respond_with_faults(b)
        kind = type(first).__name__ + ("" if not isinstance(first, Reply) else
                                       f":{first.finish_reason}")
        seen[kind] = seen.get(kind, 0) + 1
        if not isinstance(first, Reply):
            assert isinstance(second, Reply)  # the retry gets through
        else:
            assert second == first  # replies (and broken replies) are the same every time
    assert seen["Fault"] > 0 and seen["Reply:length"] > 0 and seen["Reply:stop"] > 300
