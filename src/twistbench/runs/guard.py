"""Every call into a system under test goes through here: a timeout, and output validation.

A call that raises, runs past the timeout, or returns something that does not validate becomes a
SystemCallError; the runner records it as the item's error. Calls run on one worker thread per
system so a system never sees two calls at once. When a call times out, that worker is abandoned
(a Python thread cannot be killed) and a fresh one serves the next call; the abandoned call may
still finish in the background, which is why a timed-out system is suspect for the rest of its
conversation and the error is recorded, never retried.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from twistbench.contract import Capabilities, MemorySystem
from twistbench.model import (
    Answer,
    Event,
    IngestResult,
    LineageRecord,
    ScoredMemory,
    Tension,
    Verdict,
)
from twistbench.records import SystemCallError

T = TypeVar("T")

_TENSIONS = TypeAdapter(list[Tension])
_SCORED = TypeAdapter(list[ScoredMemory])
_LINEAGE = TypeAdapter(list[LineageRecord])


class _Worker:
    """One daemon thread that runs calls in order; daemon so a hung call never blocks exit."""

    def __init__(self) -> None:
        self.jobs: queue.Queue[tuple[Callable[[], Any], queue.Queue[tuple[bool, Any]]]] = (
            queue.Queue())
        self.thread = threading.Thread(target=self._loop, daemon=True, name="twist-system-call")
        self.thread.start()

    def _loop(self) -> None:
        while True:
            fn, reply = self.jobs.get()
            try:
                reply.put((True, fn()))
            except BaseException as exc:  # noqa: BLE001 - any failure of the system is data
                reply.put((False, exc))


class GuardedSystem:
    """Wraps a MemorySystem; the only object tracks ever call."""

    def __init__(self, system: MemorySystem, timeout_s: float):
        self.system = system
        self.timeout_s = timeout_s
        self.capabilities: Capabilities = system.capabilities
        self._worker = _Worker()
        self.calls = 0

    def _call(self, name: str, fn: Callable[[], Any], timeout_s: float | None = None) -> Any:
        self.calls += 1
        reply: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=1)
        self._worker.jobs.put((fn, reply))
        limit = self.timeout_s if timeout_s is None else timeout_s
        try:
            ok, value = reply.get(timeout=limit)
        except queue.Empty:
            self._worker = _Worker()  # abandon the stuck thread
            raise SystemCallError("timeout", name, f"no answer within {limit:g} s") from None
        if not ok:
            exc = value
            raise SystemCallError("exception", name, f"{type(exc).__name__}: {exc}") from exc
        return value

    @staticmethod
    def _validate(name: str, value: Any, validate: Callable[[Any], T]) -> T:
        try:
            return validate(value)
        except (ValidationError, TypeError, ValueError) as exc:
            msg = str(exc).splitlines()
            short = "; ".join(line.strip() for line in msg[:3])
            raise SystemCallError("invalid_output", name,
                                  f"{type(value).__name__}: {short}") from None

    @staticmethod
    def _model(model: type[BaseModel]) -> Callable[[Any], Any]:
        def check(value: Any) -> Any:
            if isinstance(value, model):
                return model.model_validate(value.model_dump())
            return model.model_validate(value)

        return check

    @staticmethod
    def _adapter(adapter: TypeAdapter) -> Callable[[Any], Any]:
        def check(value: Any) -> Any:
            if isinstance(value, BaseModel):
                raise TypeError("expected a list")
            if isinstance(value, (list, tuple)):
                value = [v.model_dump() if isinstance(v, BaseModel) else v for v in value]
            return adapter.validate_python(value)

        return check

    # -- the contract, guarded ----------------------------------------------------------------

    def reset(self, conversation_id: str) -> None:
        self._call("reset", lambda: self.system.reset(conversation_id))

    def ingest(self, events: Sequence[Event], timeout_s: float | None = None) -> IngestResult:
        evs = list(events)
        out = self._call("ingest", lambda: self.system.ingest(evs), timeout_s)
        if out is None:
            return IngestResult()
        return self._validate("ingest", out, self._model(IngestResult))

    def flag_tensions(self) -> list[Tension]:
        out = self._call("flag_tensions", self.system.flag_tensions)
        return self._validate("flag_tensions", out, self._adapter(_TENSIONS))

    def recall(self, query: str) -> Answer:
        out = self._call("recall", lambda: self.system.recall(query))
        return self._validate("recall", out, self._model(Answer))

    def check_alignment(self, draft: str) -> Verdict:
        out = self._call("check_alignment", lambda: self.system.check_alignment(draft))
        return self._validate("check_alignment", out, self._model(Verdict))

    def resolve(self, tension_id: str) -> None:
        self._call("resolve", lambda: self.system.resolve(tension_id))

    def retrieve(self, query: str, k: int) -> list[ScoredMemory]:
        out = self._call("retrieve", lambda: self.system.retrieve(query, k))
        return self._validate("retrieve", out, self._adapter(_SCORED))

    def lineage(self) -> list[LineageRecord]:
        out = self._call("lineage", self.system.lineage)
        return self._validate("lineage", out, self._adapter(_LINEAGE))
