"""An OpenAI-compatible chat-completions server on 127.0.0.1 for tests and benchmarks.

    with LoopbackServer(latency_s=0.1) as server:
        client = LLMClient(LLMConfig(base_url=server.base_url, model="m"))
        server.script(Fault.status_code(429, retry_after="1"), Reply('{"label": "CORRECT"}'))

Replies are deterministic: each request takes the next scripted item (`script(...)`), or,
when the script is empty, whatever the `reply` function returns for the request body (by
default an echo of the last user message, as JSON when JSON mode was asked for). An item is
a `Reply` (content, finish reason, usage or none, served model name, latency, stream pacing),
a `Fault` (an error status with Retry-After, a hang, a malformed body, a dropped connection)
or a plain string (the content).

`reject_response_format=True` makes the server answer 400 to any request that carries
`response_format`, as servers without a JSON mode do. Every request is logged (`requests`),
counted (`hits`), and the peak number in flight is kept (`max_in_flight`).

Built on asyncio streams in one background thread: a request costs one coroutine, so 32 or
more concurrent requests with 100 ms latency need no thread per request (measured in
benchmarks/bench_llm.py). HTTP/1.1 with keep-alive; request bodies need Content-Length;
streams are sent as server-sent events with chunked transfer encoding.

Standalone: python -m twistbench.llm.loopback --port 8089 --latency 0.1 [--reply mod:func]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Self

FaultKind = Literal["status", "hang", "raw", "drop"]


@dataclass(frozen=True)
class Reply:
    """One successful completion. Streams split `content` into `chunks` deltas."""

    content: str
    finish_reason: str = "stop"
    usage: bool = True  # send a usage block (word counts, or the overrides below)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    model: str | None = None  # the served model name; default: the requested one
    latency_s: float | None = None  # overrides the server's latency for this request
    chunks: int = 4
    chunk_delay_s: float = 0.0
    stall_after: int | None = None  # streams: after this many chunks, send nothing more
    cut_after: int | None = None  # streams: after this many chunks, drop the connection


@dataclass(frozen=True)
class Fault:
    """An injected failure; build one with the class methods."""

    kind: FaultKind
    status: int = 500
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    hang_s: float | None = None

    @classmethod
    def status_code(cls, status: int, *, retry_after: str | None = None,
                    retry_after_ms: str | None = None, message: str = "") -> Fault:
        """An error status with an OpenAI-style error body and optional Retry-After headers."""
        headers: list[tuple[str, str]] = []
        if retry_after is not None:
            headers.append(("Retry-After", retry_after))
        if retry_after_ms is not None:
            headers.append(("retry-after-ms", retry_after_ms))
        text = message or f"injected {status}"
        body = json.dumps({"error": {"message": text, "type": "injected", "code": status}})
        return cls("status", status=status, headers=tuple(headers), body=body.encode())

    @classmethod
    def hang(cls, seconds: float | None = None) -> Fault:
        """Read the request and never answer (until `seconds` pass or the server stops)."""
        return cls("hang", hang_s=seconds)

    @classmethod
    def raw(cls, status: int, body: bytes | str, content_type: str = "application/json") -> Fault:
        """Any status and body verbatim, e.g. a 200 whose body is not JSON."""
        data = body.encode() if isinstance(body, str) else body
        return cls("raw", status=status, headers=(("Content-Type", content_type),), body=data)

    @classmethod
    def malformed_body(cls) -> Fault:
        """A 200 whose JSON body breaks off."""
        return cls.raw(200, '{"id": "chatcmpl-x", "choices": [{"message": {"content": "he')

    @classmethod
    def drop(cls) -> Fault:
        """Close the connection without answering."""
        return cls("drop")


Scripted = Reply | Fault | str
ReplyFn = Callable[[dict[str, Any]], Scripted]


def last_user_message(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def echo_reply(body: dict[str, Any]) -> Scripted:
    """The default: the last user message back, as {"echo": ...} when JSON mode was asked."""
    text = last_user_message(body)
    if (body.get("response_format") or {}).get("type") == "json_object":
        return Reply(json.dumps({"echo": text}))
    return Reply(f"echo: {text}")


@dataclass
class LoggedRequest:
    method: str
    target: str  # as sent: a path, or an absolute URL when the server is used as a proxy
    headers: dict[str, str]
    body: dict[str, Any] | None
    received_at: float = field(default_factory=time.monotonic)

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]


class LoopbackServer:
    """The server; use as a context manager or call start() / stop()."""

    def __init__(self, reply: ReplyFn = echo_reply, *, latency_s: float = 0.0,
                 reject_response_format: bool = False, models: Iterable[str] = ("loopback",),
                 host: str = "127.0.0.1", port: int = 0):
        self.reply = reply
        self.latency_s = latency_s
        self.reject_response_format = reject_response_format
        self.models = list(models)
        self.host = host
        self.port = port
        self._script: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self._requests: list[LoggedRequest] = []
        self.hits = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._stopping: asyncio.Event | None = None
        self._handlers: set[asyncio.Task] = set()

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> LoopbackServer:
        if self._thread is not None:
            raise RuntimeError("the loopback server is already running")
        ready = threading.Event()
        failure: list[BaseException] = []
        self._loop = asyncio.new_event_loop()

        def run() -> None:
            loop = self._loop
            assert loop is not None
            asyncio.set_event_loop(loop)
            try:
                self._stopping = asyncio.Event()
                self._server = loop.run_until_complete(asyncio.start_server(
                    self._serve_connection, self.host, self.port, backlog=2048))
                self.port = self._server.sockets[0].getsockname()[1]
            except OSError as exc:  # port taken, no loopback: reported to start()'s caller
                failure.append(exc)
                loop.close()
                ready.set()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="llm-loopback", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._thread = None
            raise failure[0]
        return self

    def stop(self) -> None:
        if self._thread is None or self._loop is None:
            return
        future = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
        future.result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._thread = None

    async def _shutdown(self) -> None:
        assert self._server is not None and self._stopping is not None
        self._stopping.set()
        self._server.close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting and inspection -----------------------------------------------------------

    def script(self, *items: Scripted) -> None:
        """Queue replies: each chat request takes the next one before `reply` is asked."""
        with self._lock:
            self._script.extend(items)

    @property
    def scripted_left(self) -> int:
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[LoggedRequest]:
        with self._lock:
            return list(self._requests)

    def reset_counts(self) -> None:
        with self._lock:
            self._requests.clear()
            self.hits = 0
            self.max_in_flight = 0

    # -- HTTP -------------------------------------------------------------------------------

    async def _serve_connection(self, reader: asyncio.StreamReader,
                                writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    if line:
                        name, _, value = line.partition(":")
                        headers[name.strip().lower()] = value.strip()
                try:
                    method, target, _version = lines[0].split(" ", 2)
                    length = int(headers.get("content-length", "0") or 0)
                except ValueError:
                    return  # not HTTP: drop the connection
                raw = await reader.readexactly(length) if length else b""
                keep_open = await self._dispatch(method, target, headers, raw, writer)
                if not keep_open or headers.get("connection", "").lower() == "close":
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        except asyncio.CancelledError:
            pass  # server shutdown
        finally:
            self._handlers.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _dispatch(self, method: str, target: str, headers: dict[str, str], raw: bytes,
                        writer: asyncio.StreamWriter) -> bool:
        path = target.split("?", 1)[0]
        body: dict[str, Any] | None = None
        if raw:
            try:
                parsed = json.loads(raw)
                body = parsed if isinstance(parsed, dict) else None
            except ValueError:
                body = None
        with self._lock:
            self._requests.append(LoggedRequest(method, target, headers, body))
        if method == "GET" and path.rstrip("/").endswith("/models"):
            data = {"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]}
            return await _send_json(writer, 200, data)
        if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
            return await _send_json(writer, 404, _error(f"no route {method} {path}", 404))
        if body is None:
            return await _send_json(writer, 400, _error("the body is not a JSON object", 400))
        rejected = self.reject_response_format and "response_format" in body
        with self._lock:
            self.hits += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            # A refused request consumes no scripted reply: the retry without the field gets it.
            item = self._script.popleft() if self._script and not rejected else None
        try:
            if rejected:
                return await _send_json(writer, 400, {"error": {
                    "message": "response_format is not supported by this server",
                    "type": "invalid_request_error", "param": "response_format", "code": None}})
            return await self._answer(body, item, writer)
        finally:
            with self._lock:
                self.in_flight -= 1

    async def _answer(self, body: dict[str, Any], item: Scripted | None,
                      writer: asyncio.StreamWriter) -> bool:
        if item is None:
            item = self.reply(body)
        if isinstance(item, str):
            item = Reply(item)
        if isinstance(item, Fault):
            return await self._fault(item, writer)
        latency = self.latency_s if item.latency_s is None else item.latency_s
        if latency > 0:
            await asyncio.sleep(latency)
        if body.get("stream"):
            return await self._stream(body, item, writer)
        return await _send_json(writer, 200, _completion(body, item))

    async def _fault(self, fault: Fault, writer: asyncio.StreamWriter) -> bool:
        if fault.kind == "drop":
            return False
        if fault.kind == "hang":
            assert self._stopping is not None
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), fault.hang_s)
            return False
        if self.latency_s > 0:
            await asyncio.sleep(self.latency_s)
        headers = [h for h in fault.headers if h[0].lower() != "content-type"]
        ctype = {k.lower(): v for k, v in fault.headers}.get("content-type", "application/json")
        return await _send(writer, fault.status, fault.body, ctype, headers)

    async def _stream(self, body: dict[str, Any], reply: Reply,
                      writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Transfer-Encoding: chunked\r\nCache-Control: no-cache\r\n\r\n")
        model = reply.model or body.get("model", "loopback")
        pieces = _split(reply.content, reply.chunks)
        for index, piece in enumerate(pieces):
            if reply.cut_after is not None and index >= reply.cut_after:
                writer.write(_chunk(b"data: {\"choi"))  # half an event, then the line drops
                await writer.drain()
                return False
            if reply.stall_after is not None and index >= reply.stall_after:
                assert self._stopping is not None
                await self._stopping.wait()
                return False
            last = index == len(pieces) - 1
            event = {"id": "chatcmpl-loopback", "object": "chat.completion.chunk",
                     "model": model, "choices": [{
                         "index": 0, "delta": {"content": piece} if piece else {},
                         "finish_reason": reply.finish_reason if last else None}]}
            writer.write(_chunk(b"data: " + json.dumps(event).encode() + b"\n\n"))
            await writer.drain()
            if reply.chunk_delay_s > 0 and not last:
                await asyncio.sleep(reply.chunk_delay_s)
        if reply.usage and (body.get("stream_options") or {}).get("include_usage"):
            event = {"id": "chatcmpl-loopback", "object": "chat.completion.chunk",
                     "model": model, "choices": [], "usage": _usage(body, reply)}
            writer.write(_chunk(b"data: " + json.dumps(event).encode() + b"\n\n"))
        writer.write(_chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()
        return True


def _split(text: str, parts: int) -> list[str]:
    if not text:
        return [""]
    parts = max(1, min(parts, len(text)))
    size = -(-len(text) // parts)
    return [text[i:i + size] for i in range(0, len(text), size)]


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _words(text: Any) -> int:
    return len(text.split()) if isinstance(text, str) else len(json.dumps(text).split())


def _usage(body: dict[str, Any], reply: Reply) -> dict[str, int]:
    prompt = reply.prompt_tokens
    if prompt is None:
        prompt = sum(_words(m.get("content") or "") for m in body.get("messages") or [])
    completion = reply.completion_tokens
    if completion is None:
        completion = _words(reply.content)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


def _completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "chatcmpl-loopback", "object": "chat.completion", "created": 0,
        "model": reply.model or body.get("model", "loopback"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.content},
                     "finish_reason": reply.finish_reason}],
    }
    if reply.usage:
        data["usage"] = _usage(body, reply)
    return data


def _error(message: str, code: int) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
            408: "Request Timeout", 429: "Too Many Requests", 500: "Internal Server Error",
            502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}


async def _send_json(writer: asyncio.StreamWriter, status: int, data: Any) -> bool:
    return await _send(writer, status, json.dumps(data).encode(), "application/json", [])


async def _send(writer: asyncio.StreamWriter, status: int, body: bytes, content_type: str,
                headers: list[tuple[str, str]] | tuple[tuple[str, str], ...]) -> bool:
    head = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
            f"Content-Type: {content_type}", f"Content-Length: {len(body)}"]
    head += [f"{name}: {value}" for name, value in headers]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
    await writer.drain()
    return True


def _load_reply(spec: str) -> ReplyFn:
    module, _, name = spec.partition(":")
    if not name:
        raise SystemExit(f"--reply {spec!r}: expected module:function")
    return getattr(importlib.import_module(module), name)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    parser.add_argument("--reply", default="", help="module:function giving each reply")
    parser.add_argument("--reject-response-format", action="store_true")
    args = parser.parse_args(argv)
    server = LoopbackServer(_load_reply(args.reply) if args.reply else echo_reply,
                            latency_s=args.latency, port=args.port,
                            reject_response_format=args.reject_response_format)
    with server:
        print(f"serving {server.base_url} (Ctrl-C stops)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
