"""A client for OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, llama.cpp server).

    config = LLMConfig.from_env()                      # or LLMConfig(base_url=..., model=...)
    with LLMClient(config) as client:
        reply = client.complete(prompt.render(question=q), json=True)   # from any thread
        reply.data, reply.prompt_tokens, reply.cached
        many = client.complete_many(requests)          # bounded concurrency, in order
        manifest["llm"] = client.usage_summary()

Environment (options passed in code win):
    TWIST_LLM_BASE_URL   endpoint root, e.g. http://localhost:8000/v1 (fallback OPENAI_BASE_URL)
    TWIST_LLM_MODEL      model name sent with each request
    TWIST_LLM_API_KEY    bearer token (fallback OPENAI_API_KEY; local servers need none)
    TWIST_LLM_MAX_CONCURRENCY  requests in flight at once (default 8)
    TWIST_LLM_TIMEOUT_S  deadline of one attempt in seconds (default 120)
    TWIST_LLM_CACHE      response cache file (default .twistbench-cache/llm.sqlite3; "off")
    TWIST_LLM_PRICE_PER_MTOK  "PROMPT,COMPLETION" USD per million tokens for the model

The client runs its own event loop in one background thread: the synchronous calls (from any
number of worker threads) and the async ones (from any other loop) all end up there, so one
set of connections, one concurrency bound, one cache and one usage meter serve them all.
HTTP goes through httpcore (httpx's transport) with HTTP(S)_PROXY / NO_PROXY honoured.

Retries: 429, 408, 409 and 5xx (not 501/505), connection errors and timeouts are retried up
to `max_attempts` in all, waiting what Retry-After (or retry-after-ms) says when the server
sends it: seconds or an HTTP date, up to `retry_after_cap_s` (a longer wait is an error, not a
silent hour of sleep); otherwise full-jitter exponential backoff: uniform(0, min(cap,
base * 2 ** (attempt - 1))). Other 4xx, a malformed body and a malformed reply are not
retried: at temperature 0 they come back the same.

JSON: `json=True` sends response_format {"type": "json_object"}; an endpoint that rejects the
field (400/422 naming it) is remembered and asked again without it, and every JSON reply goes
through the tolerant parser (jsonreply.py). A reply cut off (finish_reason "length") or not
parseable raises; nothing is ever replaced by a default.

The API key lives in a `Secret` and is sent only in the Authorization header. It is not in
any repr, exception, log line or cache row; error text from the server is scrubbed of it.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import email.utils
import json
import logging
import os
import random
import ssl
import threading
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from typing import Any, Literal, Self
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit
from urllib.request import getproxies, proxy_bypass

import httpcore
import httpx

from twistbench.errors import InputError
from twistbench.llm.cache import ResponseCache, request_key
from twistbench.llm.errors import (
    LLMConnectionError,
    LLMError,
    LLMHTTPError,
    LLMRateLimitError,
    LLMResponseError,
    LLMTimeoutError,
    LLMTruncatedError,
)
from twistbench.llm.jsonreply import parse_json_reply
from twistbench.llm.usage import ModelPrice, UsageMeter, estimate_prompt_tokens, estimate_tokens

log = logging.getLogger("twistbench.llm")

ENV_BASE_URL = "TWIST_LLM_BASE_URL"
ENV_MODEL = "TWIST_LLM_MODEL"
ENV_API_KEY = "TWIST_LLM_API_KEY"
ENV_MAX_CONCURRENCY = "TWIST_LLM_MAX_CONCURRENCY"
ENV_TIMEOUT = "TWIST_LLM_TIMEOUT_S"
ENV_CACHE = "TWIST_LLM_CACHE"
ENV_PRICE = "TWIST_LLM_PRICE_PER_MTOK"
DEFAULT_CACHE = ".twistbench-cache/llm.sqlite3"
# Fields a server may refuse; a refusal naming one is remembered per endpoint and model.
OPTIONAL_FIELDS = ("response_format", "stream_options")

JsonMode = Literal["auto", "prompt"]


class Secret:
    """A string that never shows itself: repr, str and format print <redacted>."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('<redacted>')"

    def __str__(self) -> str:
        return "<redacted>"

    def __bool__(self) -> bool:
        return bool(self._value)


def redact_url(url: str) -> str:
    """The URL without user info, query or fragment (either may carry a credential)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    if parts.username or parts.password:
        host = f"***@{host}"
    return urlunsplit((parts.scheme, host, parts.path, "***" if parts.query else "", ""))


@dataclass(frozen=True)
class LLMConfig:
    """Where and how to ask. Everything that changes an answer is part of the cache key."""

    base_url: str
    model: str
    api_key: Secret | str | None = field(default=None, repr=False, compare=False)
    temperature: float = 0.0
    max_tokens: int | None = None
    seed: int | None = None
    json_mode: JsonMode = "auto"  # "prompt": never send response_format, parse the text
    stream: bool = False
    max_concurrency: int = 8
    max_attempts: int = 6
    timeout_s: float = 120.0  # deadline of one attempt, whole reply included
    connect_timeout_s: float = 10.0
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 30.0
    retry_after_cap_s: float = 120.0
    cache_path: str | None = None
    cache_namespace: str = ""
    prices: Mapping[str, ModelPrice] = field(default_factory=dict)
    trust_env: bool = True  # honour HTTP(S)_PROXY / NO_PROXY and SSL_CERT_FILE / _DIR

    def __post_init__(self) -> None:
        if isinstance(self.api_key, str):
            object.__setattr__(self, "api_key", Secret(self.api_key) if self.api_key else None)
        parts = urlsplit(self.base_url or "")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError("LLM endpoint", f"base URL {redact_url(self.base_url or '')!r} "
                             "is not an http(s) URL", field="base_url",
                             expected="e.g. http://localhost:8000/v1")
        if not self.model:
            raise InputError("LLM endpoint", "no model name", field="model",
                             expected=f"a model name (option or {ENV_MODEL})")
        checks = {"max_concurrency": self.max_concurrency >= 1,
                  "max_attempts": self.max_attempts >= 1,
                  "timeout_s": self.timeout_s > 0, "connect_timeout_s": self.connect_timeout_s > 0,
                  "backoff_base_s": self.backoff_base_s >= 0,
                  "backoff_cap_s": self.backoff_cap_s >= 0,
                  "retry_after_cap_s": self.retry_after_cap_s >= 0,
                  "json_mode": self.json_mode in ("auto", "prompt")}
        for name, ok in checks.items():
            if not ok:
                raise InputError("LLM endpoint", f"bad {name} {getattr(self, name)!r}",
                                 field=name, expected="a positive number"
                                 if name != "json_mode" else "'auto' or 'prompt'")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **options: Any) -> LLMConfig:
        """Options first, then TWIST_LLM_* variables, then the OPENAI_* fallbacks."""
        env = os.environ if env is None else env
        base_url = options.pop("base_url", None) or env.get(ENV_BASE_URL) or env.get(
            "OPENAI_BASE_URL")
        if not base_url:
            raise InputError(ENV_BASE_URL, "no LLM endpoint is configured",
                             expected=f"{ENV_BASE_URL} (or OPENAI_BASE_URL), "
                                      "e.g. http://localhost:8000/v1")
        model = options.pop("model", None) or env.get(ENV_MODEL)
        if not model:
            raise InputError(ENV_MODEL, "no LLM model is configured",
                             expected=f"{ENV_MODEL}, the model name the endpoint serves")
        if "api_key" not in options:
            options["api_key"] = env.get(ENV_API_KEY) or env.get("OPENAI_API_KEY")
        if "max_concurrency" not in options and env.get(ENV_MAX_CONCURRENCY):
            options["max_concurrency"] = _env_number(env, ENV_MAX_CONCURRENCY, int)
        if "timeout_s" not in options and env.get(ENV_TIMEOUT):
            options["timeout_s"] = _env_number(env, ENV_TIMEOUT, float)
        if "cache_path" not in options:
            cache = env.get(ENV_CACHE, DEFAULT_CACHE).strip()
            options["cache_path"] = None if cache.lower() in ("", "off", "none", "0") else cache
        if "prices" not in options and env.get(ENV_PRICE):
            options["prices"] = {model: ModelPrice.parse(env[ENV_PRICE], ENV_PRICE)}
        return cls(base_url=base_url, model=model, **options)

    @property
    def endpoint(self) -> str:
        return redact_url(self.base_url)

    def describe(self) -> dict[str, Any]:
        """Everything about this configuration a manifest may show (no secrets)."""
        return {
            "endpoint": self.endpoint, "model": self.model,
            "api_key": "set" if self.api_key else "unset",
            "temperature": self.temperature, "max_tokens": self.max_tokens, "seed": self.seed,
            "json_mode": self.json_mode, "stream": self.stream,
            "max_concurrency": self.max_concurrency, "max_attempts": self.max_attempts,
            "timeout_s": self.timeout_s, "cache": self.cache_path,
            "cache_namespace": self.cache_namespace,
        }


    def identity(self) -> dict[str, Any]:
        """The options that change answers, for a run's config fingerprint (with the prompt
        hashes). Like the cache key, it leaves out the endpoint, the key and the throughput
        options: the same model asked the same way is the same configuration."""
        return {"model": self.model, "temperature": self.temperature,
                "max_tokens": self.max_tokens, "seed": self.seed, "json_mode": self.json_mode,
                "cache_namespace": self.cache_namespace}


def is_configured(env: Mapping[str, str] | None = None) -> bool:
    """True when the environment names an endpoint and a model (LLM roles become available)."""
    env = os.environ if env is None else env
    return bool((env.get(ENV_BASE_URL) or env.get("OPENAI_BASE_URL")) and env.get(ENV_MODEL))


def _env_number(env: Mapping[str, str], name: str, kind: type) -> Any:
    try:
        return kind(env[name])
    except ValueError:
        raise InputError(name, f"cannot read {env[name]!r}",
                         expected=f"a {'whole ' if kind is int else ''}number") from None


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion; None falls back to the config. `params` carries any further
    OpenAI parameter (top_p, stop, tools, ...). Every field is part of the cache key."""

    messages: Sequence[Mapping[str, Any]]
    json: bool = False
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Completion:
    """A reply. `data` is the parsed JSON value when JSON was asked for, else None."""

    text: str
    data: Any
    model: str
    served_model: str | None
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    tokens_estimated: bool
    cached: bool
    attempts: int
    key: str


@dataclass(frozen=True)
class _Status:
    """A non-200 answer, kept only as far as retry decisions need it."""

    status: int
    headers: Mapping[str, str]
    text: str


_REJECTED_FIELDS: set[tuple[str, str, str]] = set()
_REJECTED_LOCK = threading.Lock()

Sleep = Callable[[float], Awaitable[None]]


class LLMClient:
    """See the module docstring. Thread-safe; close() (or `with`) when done."""

    def __init__(self, config: LLMConfig, *, cache: ResponseCache | None | Literal["config"]
                 = "config", sleep: Sleep | None = None, rng: random.Random | None = None,
                 clock: Callable[[], float] = time.time):
        self.config = config
        self.usage = UsageMeter(config.prices)
        if cache == "config":
            cache = ResponseCache(config.cache_path) if config.cache_path else None
        self.cache: ResponseCache | None = cache
        if self.cache is not None:
            self.usage.enable_cache()
        self._sleep: Sleep = sleep or asyncio.sleep
        self._rng = rng or random.Random()
        self._clock = clock
        self._key = config.api_key.reveal() if isinstance(config.api_key, Secret) else ""
        url = urlsplit(config.base_url)
        # The path goes before any query (Azure-style ?api-version=...); user info becomes
        # Basic auth when there is no key, as browsers and httpx do.
        self._url = urlunsplit((url.scheme, _host_port(url),
                                url.path.rstrip("/") + "/chat/completions", url.query, ""))
        self._headers = [(b"User-Agent", b"twistbench"), (b"Content-Type", b"application/json")]
        if self._key:
            self._headers.append((b"Authorization", f"Bearer {self._key}".encode()))
        elif url.username:
            pair = f"{unquote(url.username)}:{unquote(url.password or '')}".encode()
            self._headers.append((b"Authorization", b"Basic " + base64.b64encode(pair)))
        self._proxy = _environment_proxy(url) if config.trust_env else None
        proxy_password = urlsplit(self._proxy).password if self._proxy else None
        # Whatever could be a credential, longest first so that no part of one survives.
        self._secrets = sorted({s for s in (self._key, url.password, url.query, proxy_password,
                                            config.base_url) if s and len(s) >= 4},
                               key=len, reverse=True)
        self._start_lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._slots: list[httpcore.AsyncConnectionPool] = []
        self._free_slots: list[httpcore.AsyncConnectionPool] = []  # one per admitted caller
        self._gate: asyncio.Semaphore | None = None
        self._cache_pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._closed = False

    def __repr__(self) -> str:
        cache = self.cache.path if self.cache else None
        return (f"LLMClient(endpoint={self.config.endpoint!r}, model={self.config.model!r}, "
                f"cache={str(cache) if cache else None!r})")

    # -- public API -------------------------------------------------------------------------

    def complete(self, messages: Sequence[Mapping[str, Any]], *, json: bool = False,
                 **options: Any) -> Completion:
        """One completion, blocking the calling thread (any thread but the client's own)."""
        return self._submit(self._run(ChatRequest(messages, json=json, **options))).result()

    async def acomplete(self, messages: Sequence[Mapping[str, Any]], *, json: bool = False,
                        **options: Any) -> Completion:
        """One completion, awaitable from any event loop."""
        return await self._await(self._run(ChatRequest(messages, json=json, **options)))

    def complete_many(self, requests: Iterable[ChatRequest], *,
                      concurrency: int | None = None) -> list[Completion | LLMError]:
        """Every request, at most `concurrency` (default max_concurrency) at once; results in
        request order, an LLMError in place of each failed one."""
        return self._submit(self._run_many(list(requests), concurrency)).result()

    async def acomplete_many(self, requests: Iterable[ChatRequest], *,
                             concurrency: int | None = None) -> list[Completion | LLMError]:
        return await self._await(self._run_many(list(requests), concurrency))

    def usage_summary(self) -> dict[str, Any]:
        """Configuration (redacted), calls, cache hits, errors, retries, tokens and cost."""
        summary = {"config": self.config.describe(), **self.usage.summary()}
        summary["json_mode_rejected"] = self.json_mode_rejected(self.config.model)
        return summary

    def json_mode_rejected(self, model: str | None = None) -> bool:
        """Whether this endpoint has refused response_format for `model` in this process."""
        with _REJECTED_LOCK:
            return (self.config.endpoint, model or self.config.model,
                    "response_format") in _REJECTED_FIELDS

    def flush(self) -> None:
        """Wait until every reply received so far is in the cache."""
        if self._cache_pool is not None:
            self._cache_pool.submit(lambda: None).result()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._loop is not None and self._thread is not None:
            asyncio.run_coroutine_threadsafe(self._aclose_http(), self._loop).result(timeout=30)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=30)
            if not self._thread.is_alive():
                self._loop.close()
        if self._cache_pool is not None:
            self._cache_pool.shutdown(wait=True)
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the loop thread --------------------------------------------------------------------

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._start_lock:
            if self._closed:
                raise RuntimeError("the LLM client is closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="llm-client",
                                          daemon=True)
                thread.start()
                asyncio.run_coroutine_threadsafe(self._setup(), loop).result()
                self._loop, self._thread = loop, thread
                if self.cache is not None:
                    self._cache_pool = concurrent.futures.ThreadPoolExecutor(
                        1, thread_name_prefix="llm-cache")
            return self._loop

    async def _setup(self) -> None:
        cfg = self.config
        # httpx's own layer (request and response models) costs 0.3-0.5 ms CPU per request
        # over httpcore, which it wraps; and a pool scans and polls all its connections on
        # every request (4.6 ms CPU per request for one pool of 32). So: one single-connection
        # httpcore pool per slot and one shared SSL context (benchmarks/bench_llm.py --compare).
        ssl_context = httpx.create_ssl_context(trust_env=cfg.trust_env)
        self._slots = [_connection(self._proxy, ssl_context) for _ in range(cfg.max_concurrency)]
        self._free_slots = list(self._slots)
        self._extensions = {"timeout": {"connect": cfg.connect_timeout_s, "read": cfg.timeout_s,
                                        "write": cfg.timeout_s, "pool": cfg.timeout_s}}
        self._gate = asyncio.Semaphore(cfg.max_concurrency)

    async def _aclose_http(self) -> None:
        for slot in self._slots:
            await slot.aclose()

    def _submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future:
        try:
            loop = self._ensure_loop()
            if threading.current_thread() is self._thread:
                raise RuntimeError("blocking call from the client's own loop; await acomplete()")
        except BaseException:
            coro.close()
            raise
        return asyncio.run_coroutine_threadsafe(coro, loop)

    async def _await(self, coro: Coroutine[Any, Any, Any]) -> Any:
        try:
            loop = self._ensure_loop()
        except BaseException:
            coro.close()
            raise
        if asyncio.get_running_loop() is loop:
            return await coro
        return await asyncio.wrap_future(self._submit(coro))

    async def _in_cache_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._cache_pool, fn, *args)

    # -- one request ------------------------------------------------------------------------

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        cfg = self.config
        body: dict[str, Any] = {
            "model": request.model or cfg.model,
            "messages": [dict(m) for m in request.messages],
            "temperature": cfg.temperature if request.temperature is None
            else request.temperature,
        }
        max_tokens = request.max_tokens if request.max_tokens is not None else cfg.max_tokens
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        seed = request.seed if request.seed is not None else cfg.seed
        if seed is not None:
            body["seed"] = seed
        body.update(request.params)
        if request.json:
            body["response_format"] = {"type": "json_object"}
        return body

    async def _run(self, request: ChatRequest) -> Completion:
        body = self._body(request)
        model = body["model"]
        self.usage.record_request(model)
        try:
            return await self._run_body(request, body)
        except LLMError as exc:
            self.usage.record_error(exc.kind)
            raise

    async def _run_body(self, request: ChatRequest, body: dict[str, Any]) -> Completion:
        key = request_key(body, self.config.cache_namespace)
        if self.cache is not None:
            stored = await self._in_cache_thread(self.cache.get, key)
            if stored is not None:
                return self._finish(request, body, stored, key, cached=True, attempts=0)
            self.usage.record_event("cache_miss")
        assert self._gate is not None
        async with self._gate:
            reply, attempts = await self._post_with_retries(body)
        if self.cache is not None:
            # Stored in the background: the caller does not wait for the write (close() and
            # flush() do). An identical request racing the write only costs one more call.
            assert self._cache_pool is not None
            self._cache_pool.submit(self.cache.put, key, body, reply).add_done_callback(
                self._stored)
        return self._finish(request, body, reply, key, cached=False, attempts=attempts)

    def _stored(self, future: concurrent.futures.Future) -> None:
        exc = future.exception()
        if exc is not None:
            self.usage.record_event("cache_write_error")
            log.warning("%s: the cache write failed: %s", self.cache, exc)

    def _finish(self, request: ChatRequest, body: dict[str, Any], reply: dict[str, Any],
                key: str, *, cached: bool, attempts: int) -> Completion:
        usage = reply.get("usage")
        text = reply["content"]
        if usage is None:
            prompt = estimate_prompt_tokens(body["messages"])
            completion_tokens = estimate_tokens(text)
        else:
            prompt, completion_tokens = usage
        self.usage.record(model=body["model"], served_model=reply.get("served_model"),
                          prompt_tokens=prompt, completion_tokens=completion_tokens,
                          estimated=usage is None, cached=cached)
        if reply.get("finish_reason") == "length":
            raise LLMTruncatedError(
                f"the reply was cut off at the token limit (finish_reason 'length', "
                f"{completion_tokens} completion tokens); raise max_tokens",
                content=text, attempts=attempts)
        data = None
        if request.json:
            try:
                data = parse_json_reply(text)
            except LLMError as exc:
                exc.attempts = attempts
                raise
        return Completion(text=text, data=data, model=body["model"],
                          served_model=reply.get("served_model"),
                          finish_reason=reply.get("finish_reason"), prompt_tokens=prompt,
                          completion_tokens=completion_tokens, tokens_estimated=usage is None,
                          cached=cached, attempts=attempts, key=key)

    async def _run_many(self, requests: list[ChatRequest],
                        concurrency: int | None) -> list[Completion | LLMError]:
        results: list[Completion | LLMError | None] = [None] * len(requests)
        pending = iter(enumerate(requests))

        async def worker() -> None:
            for index, request in pending:
                try:
                    results[index] = await self._run(request)
                except LLMError as exc:
                    results[index] = exc

        width = min(concurrency or self.config.max_concurrency, len(requests))
        await asyncio.gather(*(worker() for _ in range(width)))
        return results  # type: ignore[return-value]

    # -- HTTP with retries ------------------------------------------------------------------

    def _sendable(self, body: dict[str, Any]) -> dict[str, Any]:
        send = dict(body)
        if self.config.stream:
            send["stream"] = True
            send["stream_options"] = {"include_usage": True}
        if self.config.json_mode == "prompt":
            send.pop("response_format", None)
        with _REJECTED_LOCK:
            for name in OPTIONAL_FIELDS:
                if (self.config.endpoint, body["model"], name) in _REJECTED_FIELDS:
                    send.pop(name, None)
        return send

    async def _post_with_retries(self, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
        cfg = self.config
        attempt = 0
        while True:
            attempt += 1
            send = self._sendable(body)
            error: LLMError
            try:
                async with asyncio.timeout(cfg.timeout_s):
                    outcome = await self._attempt(send)
            except (httpcore.TimeoutException, TimeoutError):
                error = LLMTimeoutError(
                    f"{cfg.endpoint}: no complete reply within {cfg.timeout_s:g} s",
                    attempts=attempt)
                delay = self._backoff(attempt)
            except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.ProxyError) as exc:
                error = LLMConnectionError(
                    f"{cfg.endpoint}: {type(exc).__name__}: {self._scrub(str(exc))}",
                    attempts=attempt)
                delay = self._backoff(attempt)
            except LLMConnectionError as exc:  # a stream that ended early
                error, delay = exc, self._backoff(attempt)
            except LLMError as exc:  # a malformed reply: the same again on a retry
                exc.attempts = attempt
                raise
            else:
                if isinstance(outcome, dict):
                    return outcome, attempt
                refused = self._refused_field(send, outcome)
                if refused:
                    # Not an attempt that failed: the same request without the field follows.
                    with _REJECTED_LOCK:
                        _REJECTED_FIELDS.add((cfg.endpoint, body["model"], refused))
                    if refused == "response_format":
                        self.usage.record_event("json_fallback")
                    log.info("%s refused %s for %s; asking without it from now on",
                             cfg.endpoint, refused, body["model"])
                    attempt -= 1
                    continue
                error, delay = self._status_error(outcome, attempt)
            if attempt >= cfg.max_attempts or delay is None:
                error.attempts = attempt
                raise error
            self.usage.record_retry(error.kind)
            log.info("%s: %s; retry %d/%d in %.2f s", cfg.endpoint, error.message, attempt,
                     cfg.max_attempts - 1, delay)
            await self._sleep(delay)

    async def _attempt(self, send: dict[str, Any]) -> dict[str, Any] | _Status:
        body = json.dumps(send, ensure_ascii=False).encode("utf-8")
        headers = [*self._headers, (b"Content-Length", str(len(body)).encode())]
        # Last in, first out: the connection used most recently is the one most likely alive.
        slot = self._free_slots.pop()
        try:
            if send.get("stream"):
                async with slot.stream("POST", self._url, headers=headers, content=body,
                                       extensions=self._extensions) as response:
                    if response.status != 200:
                        return _status(response, await response.aread())
                    return await self._read_stream(response.aiter_stream())
            response = await slot.request("POST", self._url, headers=headers, content=body,
                                          extensions=self._extensions)
            if response.status != 200:
                return _status(response, response.content)
            return self._read_body(response.content)
        finally:
            self._free_slots.append(slot)

    def _read_body(self, raw: bytes) -> dict[str, Any]:
        # Errors are raised outside the except blocks: a chained JSONDecodeError would carry
        # the whole body, and a server may echo the key in it.
        data = _json_or_none(raw)
        if data is None:
            raise LLMResponseError(f"{self.config.endpoint}: the reply body is not JSON: "
                                   f"{self._excerpt(raw)}")
        choice = _first_choice(data)
        if choice is None:
            raise LLMResponseError(f"{self.config.endpoint}: the reply is not a chat completion "
                                   f"(no choices[0].message): {self._excerpt(raw)}")
        content = choice["message"].get("content")
        finish = choice.get("finish_reason")
        if content is None and finish != "length":
            raise LLMResponseError(f"{self.config.endpoint}: the reply has no message content "
                                   f"(finish_reason {finish!r})")
        return {"content": content or "", "finish_reason": finish,
                "served_model": data.get("model"), "usage": _usage_pair(data.get("usage"))}

    async def _read_stream(self, chunks: AsyncIterator[bytes]) -> dict[str, Any]:
        parts: list[str] = []
        finish = served = usage = None
        done = False
        async for line in _lines(chunks):
            if not line.startswith("data:"):
                continue
            payload = line[5:].strip()
            if payload == "[DONE]":
                done = True
                break
            event = _json_or_none(payload.encode())
            if not isinstance(event, dict):
                raise LLMResponseError(f"{self.config.endpoint}: a stream event is not a JSON "
                                       f"object: {self._excerpt(payload.encode())}")
            served = event.get("model") or served
            usage = _usage_pair(event.get("usage")) or usage
            for choice in event.get("choices") or []:
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    parts.append(delta["content"])
                finish = choice.get("finish_reason") or finish
        if not done and finish is None:
            raise LLMConnectionError(f"{self.config.endpoint}: the stream ended before its "
                                     "last event")
        return {"content": "".join(parts), "finish_reason": finish, "served_model": served,
                "usage": usage}

    def _refused_field(self, send: dict[str, Any], outcome: _Status) -> str | None:
        if outcome.status not in (400, 422):
            return None
        text = outcome.text.lower()
        for name in OPTIONAL_FIELDS:
            if name in send and (name in text or name.replace("_", " ") in text
                                 or (name == "response_format" and "json_object" in text)):
                return name
        return None

    def _status_error(self, outcome: _Status, attempt: int) -> tuple[LLMError, float | None]:
        """The error for a non-200 status and how long to wait before the next attempt
        (None: do not retry)."""
        cfg = self.config
        status = outcome.status
        message = f"{cfg.endpoint}: HTTP {status}: {self._server_message(outcome.text)}"
        retryable = status in (408, 409, 429) or (status >= 500 and status not in (501, 505))
        cls = LLMRateLimitError if status == 429 else LLMHTTPError
        if not retryable:
            return cls(message, status=status, attempts=attempt), None
        wait = retry_after_seconds(outcome.headers, self._clock())
        if wait is None:
            return cls(message, status=status, attempts=attempt), self._backoff(attempt)
        if wait > cfg.retry_after_cap_s:
            return cls(f"{message}; the server asks to wait {wait:g} s (Retry-After), more "
                       f"than retry_after_cap_s = {cfg.retry_after_cap_s:g}", status=status,
                       attempts=attempt, retry_after_s=wait), None
        return cls(message, status=status, attempts=attempt, retry_after_s=wait), wait

    def _backoff(self, attempt: int) -> float:
        cfg = self.config
        return self._rng.uniform(0, min(cfg.backoff_cap_s,
                                        cfg.backoff_base_s * 2 ** (attempt - 1)))

    # -- redaction --------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            replacement = self.config.endpoint if secret == self.config.base_url else "<redacted>"
            text = text.replace(secret, replacement)
        return text

    def _excerpt(self, raw: bytes, limit: int = 120) -> str:
        text = " ".join(raw[:limit * 4].decode("utf-8", "replace").split())
        text = self._scrub(text)
        return repr(text if len(text) <= limit else text[:limit] + "...")

    def _server_message(self, text: str) -> str:
        try:
            data = json.loads(text)
            inner = data.get("error", data) if isinstance(data, dict) else data
            message = inner.get("message") if isinstance(inner, dict) else None
        except ValueError:
            message = None
        return self._excerpt((message or text or "(empty body)").encode())


def _host_port(url: SplitResult) -> str:
    host = url.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return f"{host}:{url.port}" if url.port else host


def _environment_proxy(url: SplitResult) -> str | None:
    """The proxy HTTP(S)_PROXY / ALL_PROXY name for this URL, unless NO_PROXY exempts it."""
    proxies = getproxies()
    proxy = proxies.get(url.scheme) or proxies.get("all")
    if not proxy or proxy_bypass(url.hostname or ""):
        return None
    if urlsplit(proxy).scheme not in ("http", "https"):
        raise InputError(f"{url.scheme.upper()}_PROXY", f"proxy {redact_url(proxy)!r} is not "
                         "an http(s) proxy", expected="an http:// or https:// proxy URL, or "
                         "trust_env=False")
    return proxy


def _connection(proxy: str | None, ssl_context: ssl.SSLContext) -> httpcore.AsyncConnectionPool:
    if proxy is None:
        return httpcore.AsyncConnectionPool(ssl_context=ssl_context, max_connections=1)
    parts = urlsplit(proxy)
    auth = ((unquote(parts.username), unquote(parts.password or ""))
            if parts.username else None)
    return httpcore.AsyncHTTPProxy(proxy_url=urlunsplit((parts.scheme, _host_port(parts), "", "",
                                                         "")),
                                   proxy_auth=auth, ssl_context=ssl_context, max_connections=1)


def _status(response: httpcore.Response, raw: bytes) -> _Status:
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in response.headers}
    return _Status(response.status, headers, raw.decode("utf-8", "replace"))


async def _lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
    """The lines of a byte stream (a server-sent event stream), without their line ends."""
    pending = b""
    async for chunk in chunks:
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            yield line.rstrip(b"\r").decode("utf-8", "replace")
    if pending:
        yield pending.rstrip(b"\r").decode("utf-8", "replace")


def _json_or_none(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _first_choice(data: Any) -> dict[str, Any] | None:
    """choices[0] when it has a message object, else None."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    return choices[0] if isinstance(choices[0].get("message"), dict) else None


def _usage_pair(usage: Any) -> tuple[int, int] | None:
    """(prompt, completion) tokens from a usage block, or None when absent or unusable."""
    if not isinstance(usage, Mapping):
        return None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if (isinstance(prompt, int) and isinstance(completion, int)
            and prompt >= 0 and completion >= 0):
        return prompt, completion
    return None


def retry_after_seconds(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds to wait from retry-after-ms or Retry-After (seconds or an HTTP date), or None
    when neither is present and readable."""
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000
            if value >= 0:
                return value
        except ValueError:
            pass
    text = lowered.get("retry-after")
    if text is None:
        return None
    text = text.strip()
    try:
        value = float(text)
        return value if value >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now)
