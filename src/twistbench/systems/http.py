"""A system served over HTTP: `twist run -s http://host:port` (or https://).

The server speaks the wire contract (twistbench.wire; docs/http-contract.openapi.json): any
language will do. This client keeps one connection open for all calls (httpx keep-alive), limits
each call to `timeout_s`, refuses a response body over `max_response_bytes`, and validates every
response against the contract's model. A malformed, oversized or failed response raises, so the
guard records it as that item's error, never a score; a 501 answer is a declined call.

A bearer token is read from the environment variable named by `api_key_env` (default
TWIST_HTTP_TOKEN) and sent on every call; it never appears in the config, the manifest or an
error message (the client scrubs its own errors with sanitize.Redactor, and the harness's
redactor knows secret-named variables).
"""

from __future__ import annotations

import json
import os
import ssl
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, ValidationError

from twistbench.contract import BaseSystem
from twistbench.model import (
    Answer,
    Event,
    IngestResult,
    LineageRecord,
    Memories,
    ScoredMemory,
    Tension,
)
from twistbench.model import Verdict as VerdictModel
from twistbench.sanitize import Redactor, safe_str
from twistbench.wire import (
    CALLS,
    CONTRACT_VERSION,
    VERSION_HEADER,
    CapabilitiesResponse,
    ErrorResponse,
    RecallResponse,
    validation_problems,
)

DEFAULT_TOKEN_ENV = "TWIST_HTTP_TOKEN"
MAX_MESSAGE = 500


class InvalidResponse(ValueError):
    """The server's answer does not fit the contract (not JSON, wrong shape, too large)."""


class ServerError(RuntimeError):
    """The server answered with an error (its kind and message)."""


def is_http_spec(spec: str) -> bool:
    return spec.lower().startswith(("http://", "https://"))


class HttpSystem(BaseSystem):
    """A memory system behind the HTTP contract. Options: api_key_env, timeout_s,
    max_response_bytes, ca_file (a PEM bundle that signs a private https server's certificate;
    default: the system's trusted authorities)."""

    def __init__(self, url: str, api_key_env: str = DEFAULT_TOKEN_ENV, timeout_s: float = 60.0,
                 max_response_bytes: int = 10_000_000, ca_file: str | None = None) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{url!r} is not an http:// or https:// URL with a host")
        if parts.username or parts.password:
            raise ValueError("put credentials in the environment variable named by api_key_env, "
                             "not in the URL")
        self.url = url.rstrip("/")
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.max_response_bytes = max_response_bytes
        self.ca_file = ca_file
        verify: ssl.SSLContext | bool = True  # https: certificates are always checked
        if ca_file is not None:
            verify = ssl.create_default_context(cafile=ca_file)
        token = os.environ.get(api_key_env) or None
        self._redactor = Redactor({"token": token} if token else {}, environ={})
        headers = {VERSION_HEADER: CONTRACT_VERSION, "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._has_token = token is not None
        self._client = httpx.Client(base_url=self.url, headers=headers,
                                    timeout=httpx.Timeout(timeout_s), follow_redirects=False,
                                    verify=verify)
        self.conversation_id: str | None = None
        described = self._call("capabilities")
        assert isinstance(described, CapabilitiesResponse)
        if described.contract != CONTRACT_VERSION:
            raise InvalidResponse(f"the server speaks contract {described.contract!r}, this "
                                  f"client {CONTRACT_VERSION!r}")
        self.name = described.name
        self.capabilities = described.capabilities.to_capabilities()
        self.remote_config = described.config

    def config(self) -> dict[str, Any]:
        return {"url": self.url, "contract": CONTRACT_VERSION, "api_key_env": self.api_key_env,
                "key_sent": self._has_token, "timeout_s": self.timeout_s,
                "max_response_bytes": self.max_response_bytes, "ca_file": self.ca_file,
                "server": self.remote_config}

    # -- transport ------------------------------------------------------------------------------

    def _call(self, name: str, body: dict[str, Any] | None = None) -> BaseModel:
        call = CALLS[name]
        try:
            with self._client.stream(call.method, call.path, json=body) as response:
                status = response.status_code
                declared = response.headers.get("Content-Length")
                if declared and declared.isdigit() and int(declared) > self.max_response_bytes:
                    raise InvalidResponse(self._too_large(int(declared)))
                data = bytearray()
                for chunk in response.iter_bytes():
                    data += chunk
                    if len(data) > self.max_response_bytes:
                        raise InvalidResponse(self._too_large(len(data)))
        except httpx.HTTPError as exc:
            raise ConnectionError(self._scrub(f"{name}: {type(exc).__name__}: "
                                              f"{safe_str(exc)}")) from None
        if status != 200:
            self._raise_error(name, status, bytes(data))
        try:
            return call.response.model_validate_json(bytes(data))
        except ValidationError as exc:
            raise InvalidResponse(self._scrub(f"{name}: the response does not fit the "
                                              f"contract: {validation_problems(exc)}")) from None

    def _too_large(self, size: int) -> str:
        return f"a response of over {size:,} bytes (max_response_bytes={self.max_response_bytes:,})"

    def _raise_error(self, name: str, status: int, data: bytes) -> None:
        try:
            err = ErrorResponse.model_validate_json(data).error
        except ValidationError:
            text = data[:200].decode("utf-8", "replace")
            raise ServerError(self._scrub(f"{name}: HTTP {status}, not a contract error: "
                                          f"{json.dumps(text)}")) from None
        message = self._scrub(err.message)
        if err.kind == "declined":
            raise NotImplementedError(message)
        raise ServerError(f"{name}: HTTP {status} {err.kind}: {message}")

    def _scrub(self, text: str) -> str:
        return self._redactor.cut(text, MAX_MESSAGE)

    def _conv(self) -> str:
        if self.conversation_id is None:
            raise RuntimeError("no conversation: reset() was not called")
        return self.conversation_id

    # -- the contract ---------------------------------------------------------------------------

    def reset(self, conversation_id: str) -> None:
        if self.conversation_id is not None and self.conversation_id != conversation_id:
            try:  # the server frees the previous conversation's instance
                self.close()
            except (ConnectionError, ServerError, InvalidResponse):
                pass  # a failed teardown of the last conversation must not fail this one
            self.conversation_id = None
        self.conversation_id = conversation_id
        self._call("reset", {"conversation_id": conversation_id})

    def ingest(self, events: Sequence[Event]) -> IngestResult:
        payload = [e.model_dump(mode="json") if isinstance(e, BaseModel) else e for e in events]
        out = self._call("ingest", {"conversation_id": self._conv(), "events": payload})
        assert isinstance(out, IngestResult)
        return out

    def flag_tensions(self) -> list[Tension]:
        return self._call("flag_tensions", {"conversation_id": self._conv()}).tensions

    def recall(self, query: str) -> Answer | Memories:
        out = self._call("recall", {"conversation_id": self._conv(), "query": query})
        assert isinstance(out, RecallResponse)
        return out.root

    def check_alignment(self, draft: str) -> VerdictModel:
        out = self._call("check_alignment", {"conversation_id": self._conv(), "draft": draft})
        assert isinstance(out, VerdictModel)
        return out

    def resolve(self, tension_id: str) -> None:
        self._call("resolve", {"conversation_id": self._conv(), "tension_id": tension_id})

    def retrieve(self, query: str, k: int) -> list[ScoredMemory]:
        return self._call("retrieve", {"conversation_id": self._conv(), "query": query,
                                       "k": k}).hits

    def lineage(self) -> list[LineageRecord]:
        return self._call("lineage", {"conversation_id": self._conv()}).records

    def close(self) -> None:
        """The conversation is over: the server frees its instance (the connection stays)."""
        if self.conversation_id is None:
            return
        cid, self.conversation_id = self.conversation_id, None
        self._call("close", {"conversation_id": cid})



__all__ = ["DEFAULT_TOKEN_ENV", "HttpSystem", "InvalidResponse", "ServerError", "is_http_spec"]
