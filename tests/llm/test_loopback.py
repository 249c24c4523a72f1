"""The loopback server itself, driven with plain httpx (independent of LLMClient)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest

from twistbench.llm.loopback import Fault, LoopbackServer, Reply, echo_reply


def chat(server: LoopbackServer, text: str, **extra) -> httpx.Response:
    body = {"model": "m", "messages": [{"role": "user", "content": text}], **extra}
    return httpx.post(server.base_url + "/chat/completions", json=body, timeout=10)


def test_script_first_then_the_reply_function(server) -> None:
    server.script("scripted one", Reply("scripted two", finish_reason="length", usage=False))
    first, second, third = (chat(server, t).json() for t in ("a", "b", "c"))
    assert first["choices"][0]["message"]["content"] == "scripted one"
    assert first["usage"] == {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    assert second["choices"][0]["finish_reason"] == "length" and "usage" not in second
    assert third["choices"][0]["message"]["content"] == "echo: c"
    assert server.hits == 3 and server.scripted_left == 0
    assert [r.body["messages"][0]["content"] for r in server.requests] == ["a", "b", "c"]


def test_echo_reply_answers_json_when_json_is_asked() -> None:
    body = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}],
            "response_format": {"type": "json_object"}}
    assert echo_reply(body) == Reply('{"echo": "q"}')


def test_status_fault_carries_retry_after_and_an_openai_error_body(server) -> None:
    server.script(Fault.status_code(429, retry_after="2", retry_after_ms="2000", message="slow"))
    response = chat(server, "a")
    assert response.status_code == 429
    assert response.headers["retry-after"] == "2" and response.headers["retry-after-ms"] == "2000"
    assert response.json()["error"]["message"] == "slow"


def test_raw_and_malformed_bodies(server) -> None:
    server.script(Fault.malformed_body(), Fault.raw(502, "<html>bad gateway</html>", "text/html"))
    broken = chat(server, "a")
    assert broken.status_code == 200
    with pytest.raises(ValueError):
        broken.json()
    html = chat(server, "b")
    assert html.status_code == 502 and html.headers["content-type"] == "text/html"


def test_reject_response_format_switch() -> None:
    with LoopbackServer(reject_response_format=True) as server:
        server.script("kept for the retry")
        refused = chat(server, "a", response_format={"type": "json_object"})
        assert refused.status_code == 400
        assert refused.json()["error"]["param"] == "response_format"
        assert chat(server, "a").json()["choices"][0]["message"]["content"] == \
            "kept for the retry"


def test_stream_events_and_usage(server) -> None:
    server.script(Reply("abcdefgh", chunks=4, model="served"))
    body = {"model": "m", "messages": [{"role": "user", "content": "x y"}], "stream": True,
            "stream_options": {"include_usage": True}}
    with httpx.stream("POST", server.base_url + "/chat/completions", json=body) as response:
        lines = [line for line in response.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    events = [httpx.Response(200, content=line[6:]).json() for line in lines[:-1]]
    pieces = [e["choices"][0]["delta"].get("content", "") for e in events if e["choices"]]
    assert pieces == ["ab", "cd", "ef", "gh"]
    assert events[-2]["choices"][0]["finish_reason"] == "stop"
    assert events[-1]["usage"] == {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}


def test_a_cut_stream_breaks_the_chunked_body(server) -> None:
    server.script(Reply("abcdefgh", chunks=4, cut_after=1))
    body = {"model": "m", "messages": [], "stream": True}
    with (pytest.raises(httpx.RemoteProtocolError),
          httpx.stream("POST", server.base_url + "/chat/completions", json=body) as response):
        list(response.iter_lines())


def test_drop_closes_without_an_answer(server) -> None:
    server.script(Fault.drop())
    with pytest.raises(httpx.RemoteProtocolError):
        chat(server, "a")


def test_models_route_404_and_bad_body(server) -> None:
    listing = httpx.get(server.base_url + "/models").json()
    assert [m["id"] for m in listing["data"]] == ["loopback"]
    assert httpx.get(server.base_url + "/nothing").status_code == 404
    bad = httpx.post(server.base_url + "/chat/completions", content=b"[1, 2]")
    assert bad.status_code == 400 and server.hits == 0


def test_64_requests_are_in_flight_at_once(server) -> None:
    # One second of latency: 64 requests sent from one event loop are all inside the server
    # long before the first is answered.
    server.latency_s = 1.0
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}

    async def main() -> list[int]:
        limits = httpx.Limits(max_connections=64)
        async with httpx.AsyncClient(limits=limits, timeout=30) as client:
            url = server.base_url + "/chat/completions"
            replies = await asyncio.gather(*(client.post(url, json=body) for _ in range(64)))
        return [r.status_code for r in replies]

    assert asyncio.run(main()) == [200] * 64
    assert server.max_in_flight == 64


def test_stop_ends_hanging_requests() -> None:
    server = LoopbackServer().start()
    server.script(Fault.hang())
    outcome: list[str] = []

    def hang() -> None:
        try:
            chat(server, "a")
            outcome.append("answered")
        except httpx.HTTPError as exc:
            outcome.append(type(exc).__name__)

    thread = threading.Thread(target=hang)
    thread.start()
    while server.hits == 0:
        time.sleep(0.01)
    server.stop()
    thread.join(timeout=10)
    assert outcome == ["RemoteProtocolError"]


def test_standalone_command_serves_until_stopped() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "twistbench.llm.loopback", "--port", "0",
                             "--latency", "0"], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("serving http://127.0.0.1:")
        url = line.split()[1]
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        reply = httpx.post(url + "/chat/completions", json=body, timeout=10).json()
        assert reply["choices"][0]["message"]["content"] == "echo: hi"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_garbage_on_the_socket_drops_only_that_connection(server) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b"NONSENSE\r\n\r\n")
        assert sock.recv(100) == b""  # closed, no answer
    assert chat(server, "still up").status_code == 200
