"""Every call into a system under test goes through here: a timeout, copied inputs, a size cap
and output validation.

A call that raises, runs past the timeout, or returns something that does not validate becomes a
SystemCallError; the runner records it as the item's error. A recall that returns Memories is
answered here by the run's answerer (answerers/); an answerer that fails is the item's error
too (kind "answerer_error"). Nothing a system does can end the
run: an exception whose __str__ raises, a Mapping whose access raises, a model_dump that raises,
an output that is not JSON all become errors of that item. Where calls run, and what a timeout
does, is the executor's business (runs/isolation.py); the runner restores a conversation after a
timeout (runs/drive.py).

Inputs are copies: a system that mutates the events it is given changes its own copy, never the
dataset the next system sees. Outputs are validated, then converted to plain data through JSON,
so no object of the system's survives past this module; an output whose JSON is larger than
`max_output_bytes` is an error (invalid_output) and is not stored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from twistbench.answerers import Answerer, AnswererError, answer_recall
from twistbench.answerers.extractive import ExtractiveAnswerer
from twistbench.contract import Capabilities, MemorySystem
from twistbench.defaults import DEFAULT_MAX_OUTPUT_BYTES
from twistbench.model import (
    Answer,
    Dataset,
    Event,
    IngestResult,
    LineageRecord,
    Memories,
    ScoredMemory,
    Tension,
    Verdict,
)
from twistbench.records import SystemCallError
from twistbench.runs.isolation import (
    CallFailed,
    CallTimedOut,
    OutputTooLarge,
    ProcessExecutor,
    SystemFactory,
    ThreadExecutor,
)
from twistbench.sanitize import Redactor, safe_str, type_name

MAX_MESSAGE = 2000  # characters of an error message kept (after redaction)

_TENSIONS = TypeAdapter(list[Tension])
_SCORED = TypeAdapter(list[ScoredMemory])
_LINEAGE = TypeAdapter(list[LineageRecord])
_ADAPTERS: dict[type, TypeAdapter] = {m: TypeAdapter(m) for m in (IngestResult, Answer, Verdict,
                                                                  Memories)}

Executor = ThreadExecutor | ProcessExecutor


class GuardedSystem:
    """Wraps a MemorySystem (or an executor holding one); the only object tracks ever call.

    timeout_s: the default per-call limit. factory: builds a fresh instance after a timeout
    (thread executor). redactor: scrubs secrets from error messages before they are cut.
    max_output_bytes: the largest output (as JSON) that is accepted and stored. answerer: what
    answers a recall that returns Memories (default the offline extractive answerer)."""

    def __init__(self, system: MemorySystem | Executor, timeout_s: float, *,
                 factory: SystemFactory | None = None, redactor: Redactor | None = None,
                 max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
                 answerer: Answerer | None = None):
        self.answerer: Answerer = answerer or ExtractiveAnswerer()
        if isinstance(system, (ThreadExecutor, ProcessExecutor)):
            self.executor: Executor = system
        else:
            self.executor = ThreadExecutor(system, factory)
        self.timeout_s = timeout_s
        self.redactor = redactor or Redactor({}, {})
        self.max_output_bytes = max_output_bytes
        self.calls = 0
        self.timeouts = 0
        self._setup: list[tuple[str, tuple[Any, ...], float]] = []
        # The last output refused as invalid, as JSON text cut short (for `twist conform`).
        self.last_rejected: str | None = None
        # A call timed out and no restart followed: the instance may still be running it.
        self._untrusted = False

    @property
    def name(self) -> str:
        return self.executor.name

    @property
    def capabilities(self) -> Capabilities:
        return self.executor.capabilities

    def config(self) -> dict[str, Any]:
        return self.executor.config()

    def _message(self, text: str) -> str:
        return self.redactor.cut(text, MAX_MESSAGE)

    def _call(self, name: str, args: tuple[Any, ...], timeout_s: float | None = None) -> Any:
        self.calls += 1
        limit = self.timeout_s if timeout_s is None else timeout_s
        try:
            return self.executor.call(name, args, limit)
        except CallTimedOut:
            self.timeouts += 1
            self._untrusted = True
            raise SystemCallError("timeout", name, f"no answer within {limit:g} s") from None
        except CallFailed as exc:
            raise SystemCallError("exception", name,
                                  self._message(f"{exc.type_name}: {exc.message}")) from None
        except OutputTooLarge as exc:
            raise SystemCallError("invalid_output", name, self._too_large(exc.size)) from None
        except SystemCallError as exc:
            raise SystemCallError(exc.kind, exc.call, self._message(exc.message)) from None

    def _too_large(self, size: int) -> str:
        return (f"output of {size:,} bytes is over the limit of {self.max_output_bytes:,} "
                "(--max-output-bytes)")

    def _validate(self, name: str, value: Any, adapter: TypeAdapter) -> Any:
        """Validate, cap and copy an output: what leaves here is plain data in our models."""
        try:
            data = adapter.dump_json(adapter.validate_python(_plain(value)))
            if len(data) > self.max_output_bytes:
                raise _TooLarge(len(data))
            return adapter.validate_json(data)  # plain data: no object of the system survives
        except _TooLarge as exc:
            raise SystemCallError("invalid_output", name, self._too_large(exc.size)) from None
        except Exception as exc:  # noqa: BLE001 - whatever the output does is the system's fault
            self.last_rejected = _shown(value)
            raise SystemCallError("invalid_output", name,
                                  self._message(f"{type_name(value)}: {_problem(exc)}")) from None

    # -- setup and recovery -------------------------------------------------------------------

    def receive_gold(self, dataset: Dataset, timeout_s: float | None = None) -> None:
        """Open the oracle's gold channel (a copy of the dataset); repeated after a restart."""
        args = (dataset.model_copy(deep=True),)
        limit = self.timeout_s if timeout_s is None else timeout_s
        self._setup.append(("receive_gold", args, limit))
        self._call("receive_gold", args, limit)

    def restart(self) -> None:
        """After a timeout: no abandoned call may share the instance the next calls reach
        (a fresh instance or process, or the old one once idle); setup calls are repeated.
        Raises SystemCallError when the system cannot be brought back."""
        self.executor.restart(self.timeout_s)
        self._untrusted = False
        for name, args, limit in self._setup:
            self._call(name, args, limit)

    def close(self) -> None:
        self.executor.close()

    def end_conversation(self) -> SystemCallError | None:
        """The system's optional close(): the conversation is over. A failing close costs no
        item (every item of the conversation is recorded by then); its error is returned. After
        a timeout with no restart since, close is not called: the instance may still be running
        the abandoned call, and calls never overlap on one instance."""
        if self._untrusted:
            return None
        try:
            self._call("close", ())
        except SystemCallError as exc:
            return exc
        return None

    def diagnostics(self) -> dict[str, Any]:
        """The system's own counters (its optional `diagnostics()`: dropped citations,
        rejected operations), or {} for a system without one."""
        try:
            out = self._call("diagnostics", ())
        except SystemCallError as exc:
            if exc.message.startswith("AttributeError"):
                return {}
            raise
        return {str(k): v for k, v in out.items()} if isinstance(out, Mapping) else {}

    # -- the contract, guarded ----------------------------------------------------------------

    def reset(self, conversation_id: str) -> None:
        self._call("reset", (conversation_id,))

    def ingest(self, events: Sequence[Event], timeout_s: float | None = None) -> IngestResult:
        evs = [e.model_copy(deep=True) for e in events]  # the system gets its own copy
        out = self._call("ingest", (evs,), timeout_s)
        if out is None:
            return IngestResult()
        return self._validate("ingest", out, _ADAPTERS[IngestResult])

    def flag_tensions(self) -> list[Tension]:
        return self._validate("flag_tensions", self._call("flag_tensions", ()), _TENSIONS)

    def recall(self, query: str) -> Answer:
        out = self._call("recall", (query,))
        if _is_memories(out):
            reply = self._validate("recall", _memories_shape(out), _ADAPTERS[Memories])
        else:
            reply = self._validate("recall", out, _ADAPTERS[Answer])
        try:
            return answer_recall(query, reply, self.answerer)
        except AnswererError as exc:
            raise SystemCallError("answerer_error", "recall", self._message(
                f"answerer {self.answerer.name}: {exc}")) from None
        except ValueError as exc:
            raise SystemCallError("invalid_output", "recall", self._message(str(exc))) from None

    def check_alignment(self, draft: str) -> Verdict:
        return self._validate("check_alignment", self._call("check_alignment", (draft,)),
                              _ADAPTERS[Verdict])

    def resolve(self, tension_id: str) -> None:
        self._call("resolve", (tension_id,))

    def retrieve(self, query: str, k: int) -> list[ScoredMemory]:
        return self._validate("retrieve", self._call("retrieve", (query, k)), _SCORED)

    def lineage(self) -> list[LineageRecord]:
        return self._validate("lineage", self._call("lineage", ()), _LINEAGE)


class _TooLarge(Exception):
    def __init__(self, size: int):
        super().__init__(size)
        self.size = size


def _is_memories(value: Any) -> bool:
    """Whether a recall reply is memories: a Memories object, a list (of memories), or a
    mapping with "memories" and no "text". Anything odd is left to the Answer check."""
    try:
        if isinstance(value, (Memories, list, tuple)):
            return True
        return isinstance(value, Mapping) and "memories" in value and "text" not in value
    except Exception:  # noqa: BLE001 - a mapping whose access raises fails validation later
        return False


def _memories_shape(value: Any) -> Any:
    """A bare list of memories as the Memories shape."""
    if isinstance(value, (list, tuple)):
        return {"memories": [v.model_dump() if isinstance(v, BaseModel) else v for v in value]}
    return value


def _plain(value: Any) -> Any:
    """Models (ours or a subclass) as dicts, so the validator sees data, not the system's
    objects (a single model where a list is expected becomes a dict, and fails validation)."""
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, (list, tuple)):
        return [v.model_dump() if isinstance(v, BaseModel) else v for v in value]
    return value


def _shown(value: Any, limit: int = 2000) -> str:
    """An output as text for a report, never raising (it may be anything)."""
    try:
        text = json.dumps(_plain(value), ensure_ascii=False, default=type_name)
    except Exception:  # noqa: BLE001 - a value whose repr breaks JSON
        text = f"<{type_name(value)}>"
    return text[:limit]


def _problem(exc: Exception) -> str:
    """What is wrong with an output, without echoing the output (it may hold a secret, and
    pydantic cuts long values in the middle)."""
    if isinstance(exc, ValidationError):
        try:
            errs = exc.errors(include_url=False, include_context=False, include_input=False)
            parts = [f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}"
                     for e in errs[:3]]
            more = f" (+{len(errs) - 3} more)" if len(errs) > 3 else ""
            return "; ".join(parts) + more
        except Exception:  # noqa: BLE001 - fall through to the generic text
            pass
    return f"{type_name(exc)}: {safe_str(exc)}"


__all__ = ["DEFAULT_MAX_OUTPUT_BYTES", "GuardedSystem", "MAX_MESSAGE", "SystemFactory"]
