"""LLMClient against the loopback server: replies, faults, retries, JSON mode, streams,
accounting, the cache across instances and processes, and the key kept secret."""

from __future__ import annotations

import asyncio
import base64
import email.utils
import json
import logging
import math
import multiprocessing
import random
import threading
import traceback

import pytest
from llm_helpers import SECRET, client_worker, user

from twistbench.errors import InputError
from twistbench.llm.cache import ResponseCache
from twistbench.llm.client import (
    ChatRequest,
    LLMClient,
    LLMConfig,
    Secret,
    is_configured,
    redact_url,
    retry_after_seconds,
)
from twistbench.llm.errors import (
    LLMConnectionError,
    LLMError,
    LLMHTTPError,
    LLMJSONError,
    LLMRateLimitError,
    LLMResponseError,
    LLMTimeoutError,
    LLMTruncatedError,
)
from twistbench.llm.loopback import Fault, LoopbackServer, Reply
from twistbench.llm.usage import ModelPrice


def words(text: str) -> int:
    return len(text.split())


# -- plain replies ------------------------------------------------------------------------------


def test_complete_sends_the_request_and_reads_reply_and_usage(server, make_client) -> None:
    server.script(Reply("Stockholm, since May 2023", model="served-7b-q4"))
    client = make_client()
    reply = client.complete(user("Where does Caroline want to live?"))
    assert reply.text == "Stockholm, since May 2023"
    assert reply.served_model == "served-7b-q4" and reply.model == "loopback-model"
    assert (reply.prompt_tokens, reply.completion_tokens) == (6, 4)  # the server's word counts
    assert not reply.tokens_estimated and not reply.cached and reply.attempts == 1
    assert reply.data is None
    [logged] = server.requests
    assert logged.path == "/v1/chat/completions"
    assert logged.headers["authorization"] == f"Bearer {SECRET}"
    assert logged.body == {"model": "loopback-model", "temperature": 0.0,
                           "messages": user("Where does Caroline want to live?")}


def test_options_reach_the_request(server, make_client) -> None:
    client = make_client(max_tokens=128, seed=3)
    client.complete(user("q"), temperature=0.7, params={"top_p": 0.5, "stop": ["\n"]},
                    model="other")
    body = server.requests[0].body
    assert body["temperature"] == 0.7 and body["model"] == "other"
    assert body["max_tokens"] == 128 and body["seed"] == 3
    assert body["top_p"] == 0.5 and body["stop"] == ["\n"]


def test_no_key_no_authorization_header(server, make_client) -> None:
    make_client(api_key=None).complete(user("q"))
    assert "authorization" not in server.requests[0].headers


# -- JSON ---------------------------------------------------------------------------------------


def test_json_mode_sends_response_format_and_parses(server, make_client) -> None:
    server.script(Reply('{"answer": "7 May 2023", "evidence": ["D1:3"]}'))
    reply = make_client().complete(user("When?"), json=True)
    assert reply.data == {"answer": "7 May 2023", "evidence": ["D1:3"]}
    assert server.requests[0].body["response_format"] == {"type": "json_object"}


def test_rejected_response_format_falls_back_and_is_remembered(make_client, sleep) -> None:
    with LoopbackServer(reject_response_format=True) as server:
        server.script(Reply("Sure.\n```json\n{\"label\": \"WRONG\",}\n```"),
                      Reply('{"label": "CORRECT"}'), Reply('{"label": "CORRECT"}'))
        client = make_client(base_url=server.base_url)
        assert client.complete(user("a"), json=True).data == {"label": "WRONG"}
        assert client.complete(user("b"), json=True).data == {"label": "CORRECT"}
        sent = [r.body for r in server.requests]
        # Refused once, asked again without the field, and never sent it again.
        assert ["response_format" in b for b in sent] == [True, False, False]
        assert server.hits == 3 and sleep.waits == []
        summary = client.usage_summary()
        assert summary["json_mode_fallbacks"] == 1 and summary["json_mode_rejected"] is True
        assert summary["retries"] == {} and summary["network_calls"] == 2
        # Another client to the same endpoint and model starts without the field.
        other = make_client(base_url=server.base_url)
        assert other.complete(user("c"), json=True).data == {"label": "CORRECT"}
        assert "response_format" not in server.requests[-1].body


def test_json_mode_prompt_never_sends_the_field(server, make_client) -> None:
    server.script(Reply('{"ok": true}'))
    assert make_client(json_mode="prompt").complete(user("a"), json=True).data == {"ok": True}
    assert "response_format" not in server.requests[0].body


def test_a_400_that_names_no_optional_field_is_an_error(server, make_client) -> None:
    server.script(Fault.status_code(400, message="messages: must not be empty"))
    with pytest.raises(LLMHTTPError, match="HTTP 400: 'messages: must not be empty'") as info:
        make_client().complete(user("a"), json=True)
    assert info.value.status == 400 and info.value.attempts == 1 and server.hits == 1


@pytest.mark.parametrize("reply, error", [
    (Reply('{"label": "COR'), LLMTruncatedError),
    (Reply('Verdict: {"label": "CORRECT", "reasoning": "the dates ma'), LLMTruncatedError),
    (Reply('{"label": "CORRECT", "reasoning": "ok"}', finish_reason="length"), LLMTruncatedError),
    (Reply("CORRECT"), LLMJSONError),
    (Reply("{'label': 'CORRECT'}"), LLMJSONError),
    (Reply(""), LLMJSONError),
])
def test_malformed_or_truncated_json_content_is_an_error(server, make_client, reply,
                                                         error) -> None:
    server.script(reply)
    client = make_client()
    with pytest.raises(error) as info:
        client.complete(user("grade"), json=True)
    assert info.value.attempts == 1 and server.hits == 1  # deterministic: not retried
    assert client.usage_summary()["errors"] == {info.value.kind: 1}


def test_cut_off_text_reply_is_an_error(server, make_client) -> None:
    server.script(Reply("The answer is", finish_reason="length"))
    with pytest.raises(LLMTruncatedError, match="token limit"):
        make_client().complete(user("q"))


def test_a_malformed_reply_comes_back_the_same_from_the_cache(server, make_client,
                                                              tmp_path) -> None:
    server.script(Reply("CORRECT, I think"))
    path = tmp_path / "c.sqlite3"
    for _ in range(2):
        client = make_client(cache=ResponseCache(path))
        with pytest.raises(LLMJSONError, match="no JSON object"):
            client.complete(user("grade"), json=True)
        client.close()
    assert server.hits == 1


# -- faults and retries -------------------------------------------------------------------------


def test_429_waits_what_retry_after_says(server, make_client, sleep) -> None:
    server.script(Fault.status_code(429, retry_after="3"), Fault.status_code(429, retry_after="0"),
                  Reply("ok"))
    client = make_client()
    reply = client.complete(user("q"))
    assert reply.text == "ok" and reply.attempts == 3
    assert sleep.waits == [3.0, 0.0]
    assert client.usage_summary()["retries"] == {"rate_limited": 2}


def test_retry_after_as_http_date(server, make_client, sleep) -> None:
    now = 1_800_000_000.0
    server.script(Fault.status_code(503, retry_after=email.utils.formatdate(now + 7, usegmt=True)),
                  Reply("ok"))
    assert make_client(clock=lambda: now).complete(user("q")).text == "ok"
    assert sleep.waits == [7.0]


def test_retry_after_ms_wins_over_retry_after(server, make_client, sleep) -> None:
    server.script(Fault.status_code(429, retry_after="9", retry_after_ms="1500"), Reply("ok"))
    make_client().complete(user("q"))
    assert sleep.waits == [1.5]


def test_retry_after_beyond_the_cap_is_an_error_not_a_long_sleep(server, make_client,
                                                                 sleep) -> None:
    server.script(Fault.status_code(429, retry_after="3600"))
    with pytest.raises(LLMRateLimitError, match="wait 3600 s") as info:
        make_client(retry_after_cap_s=60).complete(user("q"))
    assert info.value.attempts == 1 and sleep.waits == [] and server.hits == 1


@pytest.mark.parametrize("status", [500, 502, 503, 504, 408, 409, 429])
def test_transient_statuses_back_off_with_full_jitter(server, make_client, sleep,
                                                      status) -> None:
    server.script(*[Fault.status_code(status)] * 4, Reply("ok"))
    client = make_client(backoff_base_s=0.5, backoff_cap_s=3.0, rng=random.Random(11))
    assert client.complete(user("q")).attempts == 5
    rng = random.Random(11)
    expected = [rng.uniform(0, min(3.0, 0.5 * 2 ** (k - 1))) for k in range(1, 5)]
    assert sleep.waits == pytest.approx(expected)
    assert all(0 <= w <= min(3.0, 0.5 * 2 ** k) for k, w in enumerate(sleep.waits))


def test_max_attempts_then_the_last_error(server, make_client, sleep) -> None:
    server.script(*[Fault.status_code(503, message="overloaded")] * 5)
    client = make_client(max_attempts=3)
    with pytest.raises(LLMHTTPError, match="HTTP 503: 'overloaded'") as info:
        client.complete(user("q"))
    assert info.value.status == 503 and info.value.attempts == 3
    assert server.hits == 3 and len(sleep.waits) == 2
    summary = client.usage_summary()
    assert summary["errors"] == {"http": 1} and summary["retries"] == {"http": 2}


@pytest.mark.parametrize("status, fatal", [(400, False), (401, True), (403, True), (404, True),
                                           (422, False), (501, False)])
def test_other_statuses_are_not_retried(server, make_client, sleep, status, fatal) -> None:
    server.script(Fault.status_code(status))
    with pytest.raises(LLMHTTPError) as info:
        make_client().complete(user("q"))
    assert info.value.status == status and info.value.fatal is fatal
    assert server.hits == 1 and sleep.waits == []


def test_a_hang_times_out_and_is_retried(server, make_client) -> None:
    server.script(Fault.hang(), Reply("ok"))
    client = make_client(timeout_s=1.0)
    reply = client.complete(user("q"))
    assert reply.text == "ok" and reply.attempts == 2
    assert client.usage_summary()["retries"] == {"timeout": 1}


def test_hangs_on_every_attempt_raise_a_timeout(server, make_client) -> None:
    server.script(Fault.hang(), Fault.hang())
    with pytest.raises(LLMTimeoutError, match="no complete reply within 0.2 s") as info:
        make_client(timeout_s=0.2, max_attempts=2).complete(user("q"))
    assert info.value.attempts == 2 and server.hits == 2


def test_a_dropped_connection_is_retried(server, make_client) -> None:
    server.script(Fault.drop(), Reply("ok"))
    client = make_client()
    assert client.complete(user("q")).attempts == 2
    assert client.usage_summary()["retries"] == {"connection": 1}


def test_a_refused_connection_raises_after_the_attempts(make_client, sleep) -> None:
    with LoopbackServer() as gone:
        url = gone.base_url
    with pytest.raises(LLMConnectionError, match="ConnectError") as info:
        make_client(base_url=url, max_attempts=3).complete(user("q"))
    assert info.value.attempts == 3 and len(sleep.waits) == 2


@pytest.mark.parametrize("fault, match", [
    (Fault.malformed_body(), "the reply body is not JSON"),
    (Fault.raw(200, '{"object": "list", "data": []}'), "not a chat completion"),
    (Fault.raw(200, '{"choices": [{"message": {"role": "assistant"}, "finish_reason": "stop"}]}'),
     "no message content"),
    (Fault.raw(200, "<html>gateway</html>", "text/html"), "not JSON"),
])
def test_a_malformed_body_is_an_error_and_not_retried(server, make_client, fault,
                                                      match) -> None:
    server.script(fault)
    with pytest.raises(LLMResponseError, match=match):
        make_client().complete(user("q"))
    assert server.hits == 1


# -- streams ------------------------------------------------------------------------------------


def test_a_slow_stream_is_assembled_with_its_usage(server, make_client) -> None:
    text = '{"aligned": false, "conflicts": [{"evidence": ["D4:2"], "rationale": "r"}]}'
    server.script(Reply(text, chunks=6, chunk_delay_s=0.05, model="served-m"))
    reply = make_client(stream=True, timeout_s=5).complete(user("draft"), json=True)
    assert reply.text == text and reply.data["conflicts"][0]["evidence"] == ["D4:2"]
    assert reply.served_model == "served-m" and not reply.tokens_estimated
    assert reply.completion_tokens == words(text)
    body = server.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_a_stream_without_usage_is_estimated(server, make_client) -> None:
    server.script(Reply("plain words here", usage=False, chunks=3))
    reply = make_client(stream=True).complete(user("q"))
    assert reply.tokens_estimated and reply.completion_tokens == math.ceil(16 / 4)


def test_a_stalled_stream_times_out_and_is_retried(server, make_client) -> None:
    server.script(Reply("never finished", chunks=4, stall_after=2), Reply("done"))
    client = make_client(stream=True, timeout_s=1.0)
    assert client.complete(user("q")).text == "done"
    assert client.usage_summary()["retries"] == {"timeout": 1}


def test_a_cut_stream_is_a_connection_error_and_is_retried(server, make_client) -> None:
    server.script(Reply("cut short here", chunks=4, cut_after=2), Reply("whole"))
    client = make_client(stream=True)
    assert client.complete(user("q")).text == "whole"
    assert client.usage_summary()["retries"] == {"connection": 1}


def test_stream_options_refused_falls_back(make_client) -> None:
    def reply(body):
        if "stream_options" in body:
            return Fault.raw(400, '{"error": {"message": "unknown field stream_options"}}')
        return Reply("fine", usage=False)

    with LoopbackServer(reply) as server:
        client = make_client(base_url=server.base_url, stream=True)
        assert client.complete(user("q")).text == "fine"
        assert client.complete(user("r")).text == "fine"
        assert server.hits == 3


# -- accounting ---------------------------------------------------------------------------------


def test_usage_summary_sums_and_cost(server, make_client, tmp_path) -> None:
    price = ModelPrice(prompt_per_mtok=2.5, completion_per_mtok=10.0)
    replies = [Reply("one two three", prompt_tokens=100, completion_tokens=30),
               Reply("four", usage=False),
               Reply("five six", prompt_tokens=250, completion_tokens=12, model="snap-1"),
               Fault.status_code(500), Reply("seven")]
    server.script(*replies)
    path = tmp_path / "c.sqlite3"
    client = make_client(cache=ResponseCache(path), prices={"loopback-model": price})
    texts = ["a b", "c d e", "f", "g h i j"]
    got = [client.complete(user(t)) for t in texts]
    summary = client.usage_summary()
    prompt = sum(r.prompt_tokens for r in got)
    completion = sum(r.completion_tokens for r in got)
    assert summary["tokens"]["prompt"] == prompt == 100 + (2 + 4 + math.ceil(5 / 4)) + 250 + 4
    assert summary["tokens"]["completion"] == completion == 30 + 1 + 12 + 1
    assert summary["tokens"]["estimated_calls"] == 1
    assert summary["cost_usd"] == pytest.approx((prompt * 2.5 + completion * 10.0) / 1e6)
    assert summary["requests"] == 4 and summary["network_calls"] == 4
    assert summary["retries"] == {"http": 1}
    assert summary["by_model"]["loopback-model"]["served_as"] == {"loopback-model": 3,
                                                                  "snap-1": 1}
    assert summary["cache"]["misses"] == 4 and summary["cache"]["hits"] == 0
    client.close()
    # A second run is all cache hits: tokens move to the cached columns and cost nothing.
    again = make_client(cache=ResponseCache(path), prices={"loopback-model": price})
    assert [again.complete(user(t)).text for t in texts] == [r.text for r in got]
    second = again.usage_summary()
    assert second["cache"] == {"enabled": True, "hits": 4, "misses": 0, "hit_rate": 1.0,
                               "write_errors": 0}
    assert second["tokens"]["prompt"] == 0 and second["tokens"]["cached_prompt"] == prompt
    assert second["tokens"]["cached_completion"] == completion
    assert second["network_calls"] == 0 and second["cost_usd"] == 0


def test_cost_is_none_without_a_price(server, make_client) -> None:
    client = make_client()
    client.complete(user("q"))
    summary = client.usage_summary()
    assert summary["cost_usd"] is None
    assert summary["by_model"]["loopback-model"]["cost_usd"] is None


# -- the cache ----------------------------------------------------------------------------------


def test_a_second_client_with_the_same_configuration_makes_no_call(server, make_client,
                                                                   tmp_path) -> None:
    path = str(tmp_path / "c.sqlite3")
    requests = [ChatRequest(user(f"question {i}"), json=i % 2 == 0) for i in range(20)]
    first = make_client(cache_path=path, cache="config")
    before = [r.text for r in first.complete_many(requests)]
    first.close()
    assert server.hits == 20
    second = make_client(cache_path=path, cache="config")
    after = second.complete_many(requests)
    assert server.hits == 20  # not one more
    assert [r.text for r in after] == before and all(r.cached for r in after)
    assert second.usage_summary()["cache"]["hit_rate"] == 1.0
    # Another temperature is another request.
    second.complete(user("question 1"), temperature=0.5)
    assert server.hits == 21


def test_the_json_fallback_does_not_change_the_cache_key(make_client, tmp_path) -> None:
    path = tmp_path / "c.sqlite3"
    with LoopbackServer(reject_response_format=True) as server:
        server.script(Reply('{"x": 1}'))
        make_client(base_url=server.base_url, cache=ResponseCache(path)).complete(
            user("q"), json=True)
    with LoopbackServer() as server:
        reply = make_client(base_url=server.base_url, cache=ResponseCache(path)).complete(
            user("q"), json=True)
        assert reply.cached and reply.data == {"x": 1} and server.hits == 0


def test_two_processes_share_one_cache_while_writing(server, tmp_path) -> None:
    path = str(tmp_path / "c.sqlite3")
    texts_a = [f"item {i}" for i in range(60)]
    texts_b = [f"item {i}" for i in range(30, 90)]  # 30 shared with the other process
    server.latency_s = 0.01
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Manager().Event()
    with ctx.Pool(2) as pool:
        jobs = [pool.apply_async(client_worker, (server.base_url, path, texts, start))
                for texts in (texts_a, texts_b)]
        start.set()
        summaries = [job.get(timeout=120) for job in jobs]
    assert all(s["failed"] == [] for s in summaries)
    assert all(s["cache"]["write_errors"] == 0 for s in summaries)
    union = sorted(set(texts_a) | set(texts_b))
    calls = sum(s["network_calls"] for s in summaries)
    assert calls == server.hits and 90 <= calls <= 120
    hits_before = server.hits
    with LLMClient(LLMConfig(base_url=server.base_url, model="loopback-model", api_key=SECRET,
                             cache_path=path)) as client:
        replies = client.complete_many([ChatRequest(user(t)) for t in union])
    assert server.hits == hits_before
    assert [r.text for r in replies] == [f"echo: {t}" for t in union]


# -- concurrency and the three ways to call -----------------------------------------------------


# Latency 0.2 s: long enough that every admitted request is inside the server at once, even on
# a loaded machine, so the peak the server saw is the bound.
def test_concurrency_is_bounded_and_reached(server, make_client) -> None:
    server.latency_s = 0.2
    client = make_client(max_concurrency=4)
    results = client.complete_many([ChatRequest(user(f"q{i}")) for i in range(12)])
    assert [r.text for r in results] == [f"echo: q{i}" for i in range(12)]
    assert server.max_in_flight == 4


def test_many_threads_share_one_bound(server, make_client) -> None:
    server.latency_s = 0.2
    client = make_client(max_concurrency=3)
    out: dict[int, str] = {}

    def work(i: int) -> None:
        out[i] = client.complete(user(f"t{i}")).text

    threads = [threading.Thread(target=work, args=(i,)) for i in range(9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == {i: f"echo: t{i}" for i in range(9)}
    assert server.max_in_flight == 3


def test_a_wide_bound_is_reached_and_not_passed(server, make_client) -> None:
    server.latency_s = 0.2
    client = make_client(max_concurrency=20)
    client.complete_many([ChatRequest(user(f"q{i}")) for i in range(40)])
    assert server.max_in_flight == 20


def test_acomplete_from_another_event_loop(server, make_client) -> None:
    client = make_client()

    async def main() -> list[str]:
        one = await client.acomplete(user("a"))
        many = await client.acomplete_many([ChatRequest(user("b")), ChatRequest(user("c"))])
        return [one.text] + [r.text for r in many]

    assert asyncio.run(main()) == ["echo: a", "echo: b", "echo: c"]


def test_batch_keeps_order_and_puts_errors_in_place(server, make_client) -> None:
    server.script(Reply("first"), Fault.status_code(404), Reply("not json"), Reply("{}"))
    client = make_client(max_concurrency=1)
    results = client.complete_many([ChatRequest(user("1")), ChatRequest(user("2")),
                                    ChatRequest(user("3"), json=True),
                                    ChatRequest(user("4"), json=True)])
    assert results[0].text == "first"
    assert isinstance(results[1], LLMHTTPError) and results[1].status == 404
    assert isinstance(results[2], LLMJSONError)
    assert results[3].data == {}
    assert client.usage_summary()["errors"] == {"http": 1, "malformed_json": 1}


def test_a_closed_client_refuses_calls(make_client) -> None:
    client = make_client()
    client.close()
    with pytest.raises(RuntimeError, match="closed"):
        client.complete(user("q"))


# -- the key stays secret -----------------------------------------------------------------------


def test_the_key_is_in_no_error_log_repr_summary_or_cache_file(make_client, tmp_path,
                                                               caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="twistbench.llm")
    echo = f"Incorrect API key provided: {SECRET}. Find your key at ..."

    def reply(body):
        text = body["messages"][0]["content"]
        if text == "rate":
            return Fault.status_code(429, message=echo, retry_after="0")
        if text == "bad":
            return Fault.status_code(401, message=echo)
        if text == "body":
            return Fault.raw(200, f"not json {SECRET}")
        return Reply("ok")

    path = tmp_path / "c.sqlite3"
    errors: list[LLMError] = []
    with LoopbackServer(reply) as server:
        client = make_client(base_url=server.base_url, cache=ResponseCache(path), max_attempts=2)
        client.complete(user("fine"))
        for text in ("rate", "bad", "body"):
            with pytest.raises(LLMError) as info:
                client.complete(user(text))
            errors.append(info.value)
        summary = json.dumps(client.usage_summary())
        shown = [repr(client), repr(client.config), str(client.config), summary,
                 json.dumps(client.config.describe()), caplog.text]
        client.close()
    assert "<redacted>" in str(errors[0]) and "<redacted>" in str(errors[1])
    for error in errors:
        assert error.__cause__ is None and error.__context__ is None
        shown += [str(error), repr(error), "".join(traceback.format_exception(error))]
    assert "retry 1/1" in caplog.text  # the retry was logged, without the key
    for text in shown:
        assert SECRET not in text
    for file in tmp_path.iterdir():
        assert SECRET.encode() not in file.read_bytes(), file.name


def test_credentials_in_the_base_url_are_redacted(make_client) -> None:
    with LoopbackServer() as gone:
        port = gone.port
    url = f"http://admin:{SECRET}@127.0.0.1:{port}/v1?api-key={SECRET}"
    with pytest.raises(LLMConnectionError) as info:
        make_client(base_url=url, max_attempts=1).complete(user("q"))
    assert SECRET not in str(info.value) and "***@127.0.0.1" in str(info.value)


def test_query_stays_after_the_path_and_user_info_becomes_basic_auth(server,
                                                                    make_client) -> None:
    url = f"http://bob:s3cret-pw@127.0.0.1:{server.port}/v1?api-version=2024-06-01"
    make_client(base_url=url, api_key=None).complete(user("q"))
    [logged] = server.requests
    assert logged.target == "/v1/chat/completions?api-version=2024-06-01"
    assert logged.headers["authorization"] == "Basic " + base64.b64encode(
        b"bob:s3cret-pw").decode()


def test_requests_go_through_the_environment_proxy(make_client, monkeypatch) -> None:
    with LoopbackServer() as proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("NO_PROXY", "")
        reply = make_client(base_url="http://llm.internal:8000/v1").complete(user("via"))
        assert reply.text == "echo: via"
        assert proxy.requests[0].target == "http://llm.internal:8000/v1/chat/completions"
        # trust_env=False ignores the proxy (and then the made-up host cannot be reached).
        with pytest.raises(LLMConnectionError):
            make_client(base_url="http://llm.internal:8000/v1", trust_env=False,
                        max_attempts=1).complete(user("direct"))
        assert proxy.hits == 1


def test_no_proxy_exempts_a_host(server, make_client, monkeypatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # would refuse every connection
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert make_client().complete(user("q")).text == "echo: q"


def test_a_socks_proxy_is_an_input_error(monkeypatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"socks5://u:{SECRET}@127.0.0.1:1080")
    monkeypatch.setenv("NO_PROXY", "")
    with pytest.raises(InputError, match="not an http") as info:
        LLMClient(LLMConfig(base_url="http://llm.internal/v1", model="m"), cache=None)
    assert SECRET not in str(info.value)


def test_secret_and_redact_url() -> None:
    secret = Secret(SECRET)
    assert SECRET not in repr(secret) + str(secret) + f"{secret}" and secret.reveal() == SECRET
    assert redact_url("https://u:p@host:8443/v1?key=s#f") == "https://***@host:8443/v1?***"
    assert redact_url("http://localhost:8000/v1") == "http://localhost:8000/v1"


# -- configuration ------------------------------------------------------------------------------


def test_config_from_environment_and_fallbacks(tmp_path) -> None:
    env = {"TWIST_LLM_BASE_URL": "http://gpu:8000/v1", "TWIST_LLM_MODEL": "qwen",
           "OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": "https://api.openai.com/v1",
           "TWIST_LLM_MAX_CONCURRENCY": "16", "TWIST_LLM_TIMEOUT_S": "30",
           "TWIST_LLM_CACHE": str(tmp_path / "x.sqlite3"),
           "TWIST_LLM_PRICE_PER_MTOK": "0.15,0.60"}
    cfg = LLMConfig.from_env(env)
    assert cfg.base_url == "http://gpu:8000/v1" and cfg.model == "qwen"
    assert isinstance(cfg.api_key, Secret) and cfg.api_key.reveal() == SECRET
    assert cfg.max_concurrency == 16 and cfg.timeout_s == 30.0
    assert cfg.cache_path == str(tmp_path / "x.sqlite3")
    assert cfg.prices == {"qwen": ModelPrice(0.15, 0.60)}
    assert cfg.temperature == 0.0
    # Options win over the environment; TWIST_LLM_API_KEY wins over OPENAI_API_KEY.
    cfg = LLMConfig.from_env({**env, "TWIST_LLM_API_KEY": "sk-other-key"}, model="llama",
                             max_concurrency=2)
    assert cfg.model == "llama" and cfg.max_concurrency == 2
    assert cfg.api_key.reveal() == "sk-other-key"
    fallback = LLMConfig.from_env({"OPENAI_BASE_URL": "https://api.openai.com/v1",
                                   "TWIST_LLM_MODEL": "gpt", "TWIST_LLM_CACHE": "off"})
    assert fallback.base_url == "https://api.openai.com/v1" and fallback.cache_path is None
    assert fallback.api_key is None
    default = LLMConfig.from_env({"TWIST_LLM_BASE_URL": "http://h/v1", "TWIST_LLM_MODEL": "m"})
    assert default.cache_path == ".twistbench-cache/llm.sqlite3"
    assert is_configured(env) and not is_configured({"TWIST_LLM_MODEL": "m"})


def test_identity_holds_what_changes_answers_only() -> None:
    base = LLMConfig(base_url="http://a:1/v1", model="m", api_key=SECRET)
    same = LLMConfig(base_url="http://b:2/v1", model="m", max_concurrency=64, timeout_s=5,
                     stream=True, cache_path="/tmp/x")
    assert base.identity() == same.identity()
    assert SECRET not in json.dumps(base.identity())
    for change in ({"model": "n"}, {"temperature": 0.5}, {"max_tokens": 9}, {"seed": 1},
                   {"json_mode": "prompt"}, {"cache_namespace": "q4"}):
        other = LLMConfig(base_url="http://a:1/v1", **{"model": "m", **change})
        assert other.identity() != base.identity(), change


@pytest.mark.parametrize("env, match", [
    ({"TWIST_LLM_MODEL": "m"}, "no LLM endpoint"),
    ({"TWIST_LLM_BASE_URL": "http://h/v1"}, "no LLM model"),
    ({"TWIST_LLM_BASE_URL": "ftp://h/v1", "TWIST_LLM_MODEL": "m"}, "not an http"),
    ({"TWIST_LLM_BASE_URL": "http://h/v1", "TWIST_LLM_MODEL": "m",
      "TWIST_LLM_MAX_CONCURRENCY": "many"}, "cannot read 'many'"),
    ({"TWIST_LLM_BASE_URL": "http://h/v1", "TWIST_LLM_MODEL": "m",
      "TWIST_LLM_MAX_CONCURRENCY": "0"}, "bad max_concurrency"),
    ({"TWIST_LLM_BASE_URL": "http://h/v1", "TWIST_LLM_MODEL": "m",
      "TWIST_LLM_PRICE_PER_MTOK": "cheap"}, "cannot read price"),
])
def test_bad_configuration_is_an_input_error(env, match) -> None:
    with pytest.raises(InputError, match=match):
        LLMConfig.from_env(env)


def test_a_bad_url_error_does_not_show_its_credentials() -> None:
    with pytest.raises(InputError) as info:
        LLMConfig(base_url=f"ftp://u:{SECRET}@h/v1", model="m")
    assert SECRET not in str(info.value)


@pytest.mark.parametrize("headers, expected", [
    ({"Retry-After": "12"}, 12.0),
    ({"retry-after": "0.5"}, 0.5),
    ({"Retry-After": "Thu, 15 Jan 2027 08:00:30 GMT"}, 30.0),
    ({"Retry-After": "Thu, 15 Jan 2027 07:59:00 GMT"}, 0.0),  # in the past: go now
    ({"retry-after-ms": "250", "Retry-After": "3"}, 0.25),
    ({"Retry-After": "soon"}, None),
    ({"Retry-After": "-3"}, None),
    ({}, None),
])
def test_retry_after_parsing(headers, expected) -> None:
    now = email.utils.parsedate_to_datetime("Thu, 15 Jan 2027 08:00:00 GMT").timestamp()
    assert retry_after_seconds(headers, now) == expected


def test_estimated_tokens_follow_the_documented_rule(server, make_client) -> None:
    server.script(Reply("x" * 10, usage=False))
    messages = [{"role": "system", "content": "s" * 7}, *user("u" * 9)]
    reply = make_client().complete(messages)
    assert reply.tokens_estimated
    assert reply.prompt_tokens == 2 + (4 + 2) + (4 + 3)  # ceil(7/4), ceil(9/4)
    assert reply.completion_tokens == 3  # ceil(10/4)
