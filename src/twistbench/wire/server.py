"""`twist serve`: any Python system over the HTTP contract, one instance per conversation.

reset builds a fresh instance with the factory (so conversations never share state and may run
side by side) and close frees it. Calls on one conversation run one at a time. Every request is
validated against its wire model (400 with the field at fault), every output against its
response model (500 when the system's output does not fit the contract), a declined call
(NotImplementedError) is 501, any other exception of the system 500 with its type and message.
The server binds 127.0.0.1 unless told otherwise; with a token it requires
`Authorization: Bearer <token>` on every call.
"""

from __future__ import annotations

import hmac
import json
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import BaseModel, ValidationError

from twistbench.contract import MemorySystem
from twistbench.model import IngestResult
from twistbench.sanitize import Redactor, safe_str, type_name
from twistbench.wire import (
    CALLS,
    CONTRACT_VERSION,
    ERROR_STATUS,
    VERSION_HEADER,
    CapabilitiesResponse,
    WireCapabilities,
    validation_problems,
)

MAX_REQUEST_BYTES = 64 * 1024 * 1024
MAX_MESSAGE = 2000
# Outputs that are lists travel inside an object, under this field.
_LIST_FIELD = {"flag_tensions": "tensions", "retrieve": "hits", "lineage": "records"}


class _Refused(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass
class _Instance:
    system: MemorySystem
    lock: threading.Lock = field(default_factory=threading.Lock)


class ContractServer(ThreadingHTTPServer):
    """The HTTP server; `url` is where it listens (IPv4). Stop it with stop()."""

    daemon_threads = True

    def __init__(self, factory: Callable[[], MemorySystem], host: str = "127.0.0.1",
                 port: int = 0, token: str | None = None, log: bool = False):
        self.factory = factory
        self.token = token
        self.log = log
        self.redactor = Redactor({"token": token} if token else {})
        probe = factory()  # name, capabilities and config come from a first instance
        caps = probe.capabilities
        config_fn = getattr(probe, "config", None)
        self.description = CapabilitiesResponse(
            contract=CONTRACT_VERSION, name=str(probe.name),
            capabilities=WireCapabilities(**caps.as_dict()),
            config=_jsonable(config_fn() if callable(config_fn) else {}))
        _close(probe)
        self.instances: dict[str, _Instance] = {}
        self.instances_lock = threading.Lock()
        self.connections: set[socket.socket] = set()  # open keep-alive connections
        super().__init__((host, port), _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start_in_thread(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, daemon=True, name="twist-serve")
        thread.start()
        return thread

    def stop(self) -> None:
        """Stop listening, end every open connection (a keep-alive handler would otherwise go
        on serving its client) and close every conversation's instance."""
        self.shutdown()
        self.server_close()
        with self.instances_lock:
            connections, self.connections = list(self.connections), set()
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed by the client
                pass
        with self.instances_lock:
            instances, self.instances = list(self.instances.values()), {}
        for inst in instances:
            _close_when_idle(inst)

    # -- the calls ------------------------------------------------------------------------------

    def dispatch(self, name: str, request: BaseModel | None) -> BaseModel:
        if name == "capabilities":
            return self.description
        assert request is not None
        cid = request.conversation_id  # type: ignore[attr-defined]
        if name == "reset":
            return self._reset(cid)
        if name == "close":
            with self.instances_lock:
                inst = self.instances.pop(cid, None)
            if inst is not None:
                _close_when_idle(inst)
            return CALLS["close"].response()
        with self.instances_lock:
            inst = self.instances.get(cid)
        if inst is None:
            raise _Refused("no_conversation", f"conversation {cid!r} was not reset (or was "
                           "closed): call reset first")
        args = {k: v for k, v in request if k != "conversation_id"}
        with inst.lock:
            value = self._call(inst.system, name, list(args.values()))
        return self._response(name, value)

    def _reset(self, cid: str) -> BaseModel:
        try:
            system = self.factory()
        except Exception as exc:  # noqa: BLE001 - constructing the user's class
            raise _Refused("system_error", f"building the system raised "
                           f"{type_name(exc)}: {safe_str(exc)}") from None
        self._call(system, "reset", [cid])
        with self.instances_lock:
            old = self.instances.pop(cid, None)
            self.instances[cid] = _Instance(system)
        if old is not None:
            _close_when_idle(old)
        return CALLS["reset"].response()

    @staticmethod
    def _call(system: MemorySystem, name: str, args: list[Any]) -> Any:
        try:
            return getattr(system, name)(*args)
        except NotImplementedError as exc:
            raise _Refused("declined", safe_str(exc) or f"{name} is declined") from None
        except Exception as exc:  # noqa: BLE001 - whatever the system raises is reported
            raise _Refused("system_error", f"{type_name(exc)}: {safe_str(exc)}") from None

    @staticmethod
    def _response(name: str, value: Any) -> BaseModel:
        model = CALLS[name].response
        if name in ("resolve",):
            return model()
        if name == "ingest" and value is None:
            return IngestResult()
        data = _plain(value)
        if name in _LIST_FIELD:
            data = {_LIST_FIELD[name]: data}
        if name == "recall" and isinstance(data, list):  # a bare list of memories, as in process
            data = {"memories": data}
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise _Refused("system_error", "the system's output does not fit the contract: "
                           + validation_problems(exc)) from None


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _jsonable(config: Any) -> dict[str, Any]:
    try:
        return json.loads(json.dumps(dict(config), default=str))
    except Exception as exc:  # noqa: BLE001 - a broken config() is reported, never raised
        return {"config_error": f"{type_name(exc)}: {safe_str(exc)[:500]}"}


def _encode(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False, allow_nan=False).encode("utf-8")


def _close_when_idle(inst: _Instance) -> None:
    """Close an instance once its running call (if any) returns, without waiting for it: after
    a client-side timeout, the abandoned call may still run while the conversation is reset."""
    def close() -> None:
        with inst.lock:
            _close(inst.system)

    if inst.lock.acquire(blocking=False):
        try:
            _close(inst.system)
        finally:
            inst.lock.release()
    else:
        threading.Thread(target=close, daemon=True, name="twist-serve-close").start()


def _close(system: Any) -> None:
    closer = getattr(system, "close", None)
    if callable(closer):
        try:
            closer()
        except Exception:  # noqa: BLE001, S110 - teardown of a finished conversation
            pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the client reuses one connection
    # Headers and body go out as two writes; with Nagle's algorithm the body waits for the
    # client's delayed ACK (about 40 ms per call on Linux).
    disable_nagle_algorithm = True
    server: ContractServer

    def setup(self) -> None:
        super().setup()
        with self.server.instances_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.instances_lock:
            self.server.connections.discard(self.connection)
        super().finish()

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    # Other methods get a contract error (405 on a known path), not http.server's HTML 501.
    def do_PUT(self) -> None:  # noqa: N802
        self._handle("PUT")

    def do_DELETE(self) -> None:  # noqa: N802
        self._handle("DELETE")

    def do_PATCH(self) -> None:  # noqa: N802
        self._handle("PATCH")

    def do_OPTIONS(self) -> None:  # noqa: N802
        self._handle("OPTIONS")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        if self.server.log:
            sys.stderr.write(self.server.redactor.text(format % args) + "\n")

    def _handle(self, method: str) -> None:
        try:
            body = self._body()
            call = CALLS.get(self.path.split("?", 1)[0].lstrip("/"))
            if call is None:
                raise _Refused("not_found", f"no call {self.path}; the calls are "
                               + ", ".join(f"{c.method} {c.path}" for c in CALLS.values()))
            if call.method != method:
                raise _Refused("method_not_allowed", f"{call.path} takes {call.method}, "
                               f"not {method}")
            self._check_auth()
            version = self.headers.get(VERSION_HEADER)
            if version != CONTRACT_VERSION:
                raise _Refused("contract_version", f"{VERSION_HEADER} is {version!r}; this "
                               f"server speaks contract version {CONTRACT_VERSION}")
            request = self._request(call.request, body) if call.request is not None else None
            result = self.server.dispatch(call.name, request)
            try:
                data = _encode(result.model_dump(mode="json"))
            except ValueError as exc:  # NaN or infinity in a score: not JSON
                raise _Refused("system_error", f"the system's output is not JSON: "
                               f"{safe_str(exc)}") from None
            self._send(200, data)
        except _Refused as exc:
            self._error(exc.kind, exc.message)
        except Exception as exc:  # noqa: BLE001 - a fault of the server is an answer, not a hang-up
            self._error("system_error", f"the server failed: {type_name(exc)}: {safe_str(exc)}")

    def _error(self, kind: str, message: str) -> None:
        text = self.server.redactor.cut(message, MAX_MESSAGE)
        self._send(ERROR_STATUS[kind], _encode({"error": {"kind": kind, "message": text}}))

    def _body(self) -> bytes:
        raw = self.headers.get("Content-Length") or "0"
        try:
            length = int(raw)
        except ValueError:
            self.close_connection = True
            raise _Refused("bad_request", f"Content-Length {raw!r} is not a number") from None
        if length < 0 or length > MAX_REQUEST_BYTES:
            self.close_connection = True  # the body is not read: the connection cannot be reused
            raise _Refused("bad_request", f"a request body of {length} bytes (the limit is "
                           f"{MAX_REQUEST_BYTES})")
        return self.rfile.read(length) if length else b""

    def _check_auth(self) -> None:
        if not self.server.token:
            return
        given = self.headers.get("Authorization", "")
        expected = f"Bearer {self.server.token}"
        if not hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode()):
            raise _Refused("unauthorized", "a missing or wrong bearer token")

    @staticmethod
    def _request(model: type[BaseModel], body: bytes) -> BaseModel:
        try:
            return model.model_validate_json(body)
        except ValidationError as exc:
            raise _Refused("bad_request", f"{model.__name__}: {validation_problems(exc)}"
                           ) from None

    def _send(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


__all__ = ["ContractServer", "MAX_REQUEST_BYTES"]
