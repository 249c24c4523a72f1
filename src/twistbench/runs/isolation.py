"""Where a system's calls run: a worker thread in this process, or a child process.

An executor runs one call at a time on one instance of the system and enforces the timeout. What
happens when a call runs past it:

- thread (the default): a Python thread cannot be killed, so the call is abandoned and may still
  finish in the background (its result is discarded). Before the system is called again,
  `restart()` gives the next calls a fresh instance built by the factory, so an abandoned call
  never runs beside a new call on the same object. Without a factory (a system handed over as an
  object), `restart()` waits for the abandoned call to finish; if it does not within the
  timeout, the system is stuck and is not called again. At most `MAX_ABANDONED` abandoned calls
  may still be running at once; past that the system is stuck too, so threads never pile up.
- process (`--isolate process`): the system lives in a child process that is killed on a
  timeout; `restart()` starts a new one. The child converts every output to plain JSON and
  refuses one larger than the output cap before sending it, so a runaway output never reaches
  this process.

Either way a timed-out conversation is restored before it continues (runs/drive.py).
"""

from __future__ import annotations

import json
import multiprocessing
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from twistbench.contract import Capabilities, MemorySystem
from twistbench.errors import InputError
from twistbench.records import SystemCallError
from twistbench.sanitize import safe_str, type_name

MAX_ABANDONED = 8
SystemFactory = Callable[[], MemorySystem]


class CallTimedOut(Exception):
    """The call ran past its timeout (internal: the guard turns it into a SystemCallError)."""


@dataclass
class CallFailed(Exception):
    """The system raised: its exception as text (type name and message, never the object)."""

    type_name: str
    message: str


@runtime_checkable
class Executor(Protocol):
    name: str
    capabilities: Capabilities

    def config(self) -> dict[str, Any]: ...
    def call(self, method: str, args: tuple[Any, ...], timeout_s: float) -> Any: ...
    def restart(self, timeout_s: float) -> None: ...
    def close(self) -> None: ...


def describe(system: Any, where: str) -> tuple[str, Capabilities]:
    """The system's name and capabilities, read defensively: a plug-in whose attributes raise or
    have the wrong type is bad input (InputError naming it), never a crash."""
    try:
        caps = system.capabilities
    except Exception as exc:  # noqa: BLE001 - a plug-in's property may raise anything
        raise InputError(where, f"reading capabilities raised {type_name(exc)}: "
                         f"{safe_str(exc)[:200]}", field="capabilities",
                         expected="a twistbench.contract.Capabilities") from None
    if not isinstance(caps, Capabilities):
        raise InputError(where, f"capabilities is a {type_name(caps)}", field="capabilities",
                         expected="a twistbench.contract.Capabilities")
    try:
        name = system.name
    except Exception:  # noqa: BLE001
        name = None
    if not isinstance(name, str) or not name.strip():
        name = type_name(system)
    return str.__add__("", name), caps


def system_config(system: Any) -> dict[str, Any]:
    """The system's config() as a plain dict; a broken config() is reported, never raised."""
    getter = getattr(system, "config", None)
    if not callable(getter):
        return {}
    try:
        cfg = getter()
        return {safe_str(k): v for k, v in dict(cfg).items()}
    except Exception as exc:  # noqa: BLE001 - a broken config() must not stop the run
        return {"config_error": f"{type_name(exc)}: {safe_str(exc)[:500]}"}


def wait_for(done: threading.Event, timeout_s: float) -> bool:
    """Wait for a call to finish. Module-level so that tests can swap the clock: a test waiter
    can decide a call timed out when the system signals a hang, not after wall-clock time."""
    return done.wait(timeout_s)


@dataclass
class _Job:
    method: str
    args: tuple[Any, ...]
    done: threading.Event = field(default_factory=threading.Event)
    ok: bool = False
    value: Any = None


class _Worker:
    """One daemon thread that runs the calls of one system instance in order. Once retired (its
    call was abandoned), it ends as soon as that call returns: an idle thread never lingers."""

    def __init__(self, system: Any) -> None:
        self.system = system
        self.jobs: list[_Job | None] = []  # None: end the thread
        self.cond = threading.Condition()
        self.busy = False
        self.retired = False
        self.thread = threading.Thread(target=self._loop, daemon=True, name="twist-system-call")
        self.thread.start()

    def submit(self, job: _Job | None) -> None:
        with self.cond:
            self.jobs.append(job)
            self.cond.notify()

    def _loop(self) -> None:
        while True:
            with self.cond:
                while not self.jobs:
                    self.cond.wait()
                job = self.jobs.pop(0)
                if job is None:
                    return
                self.busy = True
            try:
                job.value = getattr(self.system, job.method)(*job.args)
                job.ok = True
            except BaseException as exc:  # noqa: BLE001 - any failure of the system is data
                job.value = CallFailed(type_name(exc), safe_str(exc))
            with self.cond:
                self.busy = False
                job.done.set()
                if self.retired:
                    return

    def retire(self) -> None:
        with self.cond:
            self.retired = True
            self.jobs.append(None)
            self.cond.notify()

    @property
    def running(self) -> bool:
        return self.thread.is_alive() and self.busy


class ThreadExecutor:
    """Calls on a worker thread of this process (see the module docstring for timeouts)."""

    def __init__(self, system: MemorySystem, factory: SystemFactory | None = None,
                 where: str = "--system"):
        self.factory = factory
        self.where = where
        self.system = system
        self.name, self.capabilities = describe(system, where)
        self._worker: _Worker | None = None
        self._abandoned: list[_Worker] = []
        self.stuck: str | None = None

    def config(self) -> dict[str, Any]:
        return system_config(self.system)

    def abandoned_running(self) -> int:
        self._abandoned = [w for w in self._abandoned if w.running]
        return len(self._abandoned)

    def call(self, method: str, args: tuple[Any, ...], timeout_s: float) -> Any:
        if self.stuck:
            raise SystemCallError("timeout", method, self.stuck)
        if self._worker is None:
            self._worker = _Worker(self.system)
        job = _Job(method, args)
        self._worker.submit(job)
        if not wait_for(job.done, timeout_s):
            self._worker.retire()
            self._abandoned.append(self._worker)
            self._worker = None
            if self.abandoned_running() >= MAX_ABANDONED:
                self.stuck = (f"{MAX_ABANDONED} timed-out calls are still running; the system "
                              "is not called again")
            raise CallTimedOut()
        if not job.ok:
            raise job.value
        return job.value

    def restart(self, timeout_s: float) -> None:
        """Make sure no abandoned call shares the instance the next calls go to."""
        if self.stuck:
            raise SystemCallError("timeout", "restart", self.stuck)
        busy_same = [w for w in self._abandoned if w.system is self.system and w.running]
        if not busy_same:
            return
        if self.factory is not None:
            try:
                system = self.factory()
            except Exception as exc:  # noqa: BLE001 - constructing the user's class
                raise SystemCallError("exception", "rebuild",
                                      f"{type_name(exc)}: {safe_str(exc)}") from None
            self.system = system
            return
        deadline = time.monotonic() + timeout_s
        for w in busy_same:
            w.thread.join(max(0.0, deadline - time.monotonic()))
        if any(w.running for w in busy_same):
            self.stuck = ("a timed-out call is still running on the system object and no "
                          "factory can build a fresh one; the system is not called again")
            raise SystemCallError("timeout", "restart", self.stuck)

    def close(self) -> None:
        if self._worker is not None:
            self._worker.retire()
            self._worker = None


# ---------------------------------------------------------------------------------------------
# process isolation


def to_plain(value: Any) -> Any:
    """A system's output as JSON-able data (our models dumped; anything else left to json)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    return value


def _child_main(conn: Any, factory: SystemFactory, max_output_bytes: int) -> None:
    """The child process: build the system, then serve calls until the pipe closes."""
    try:
        system = factory()
        name, caps = describe(system, "--system")
        conn.send(("ready", name, caps.as_dict(), system_config(system)))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent as one line
        conn.send(("failed", f"{type_name(exc)}: {safe_str(exc)}"))
        return
    while True:
        try:
            method, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            value = getattr(system, method)(*args)
        except BaseException as exc:  # noqa: BLE001 - any failure of the system is data
            conn.send(("raised", type_name(exc), safe_str(exc)))
            continue
        try:
            text = json.dumps(to_plain(value), ensure_ascii=False, allow_nan=False)
        except Exception as exc:  # noqa: BLE001 - the parent reports it as invalid output
            conn.send(("unserializable", type_name(value), f"{type_name(exc)}: {safe_str(exc)}"))
            continue
        size = len(text.encode("utf-8"))
        if size > max_output_bytes:
            conn.send(("too_large", size))
            continue
        conn.send(("ok", text))


class OutputTooLarge(Exception):
    def __init__(self, size: int):
        super().__init__(size)
        self.size = size


class ProcessExecutor:
    """Calls in a child process, killed on a timeout and started again by restart().

    factory: a picklable callable that builds the system (the child calls it). The system's
    name, capabilities and config come from the child."""

    def __init__(self, factory: SystemFactory, max_output_bytes: int,
                 start_timeout_s: float = 300.0, where: str = "--system"):
        self.factory = factory
        self.max_output_bytes = max_output_bytes
        self.start_timeout_s = start_timeout_s
        self.where = where
        self._ctx = multiprocessing.get_context("spawn")
        self._proc: Any = None
        self._conn: Any = None
        self._config: dict[str, Any] = {}
        self.starts = 0
        self.name, self.capabilities = self._start(first=True)

    def _start(self, first: bool = False) -> tuple[str, Capabilities]:
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=_child_main, args=(child, self.factory,
                                                           self.max_output_bytes), daemon=True)
        proc.start()
        child.close()
        self._proc, self._conn = proc, parent
        self.starts += 1
        if not parent.poll(self.start_timeout_s):
            self._kill()
            msg = f"the system's process did not start within {self.start_timeout_s:g} s"
            if first:
                raise InputError(self.where, msg, expected="a system that can be constructed")
            raise SystemCallError("timeout", "restart", msg)
        try:
            msg = parent.recv()
        except (EOFError, OSError):
            code = proc.exitcode
            self._kill()
            text = f"the system's process ended while starting (exit code {code})"
            if first:
                raise InputError(self.where, text,
                                 expected="a system that can be constructed") from None
            raise SystemCallError("exception", "restart", text) from None
        if msg[0] != "ready":
            self._kill()
            if first:
                raise InputError(self.where, f"cannot construct the system: {msg[1]}",
                                 expected="a system that can be constructed")
            raise SystemCallError("exception", "restart", msg[1])
        _, name, caps, config = msg
        self._config = config
        return name, Capabilities(**caps)

    def config(self) -> dict[str, Any]:
        return dict(self._config)

    def call(self, method: str, args: tuple[Any, ...], timeout_s: float) -> Any:
        if self._proc is None or not self._proc.is_alive():
            raise SystemCallError("exception", method, "the system's process is not running")
        try:
            self._conn.send((method, args))
        except (OSError, ValueError) as exc:
            raise SystemCallError("exception", method,
                                  f"cannot send the call to the system's process: {exc}") from None
        if not self._conn.poll(timeout_s):
            self._kill()
            raise CallTimedOut()
        try:
            msg = self._conn.recv()
        except (EOFError, OSError):
            code = self._proc.exitcode if self._proc is not None else None
            self._kill()
            raise CallFailed("ProcessDied", f"the system's process ended during the call "
                             f"(exit code {code})") from None
        kind = msg[0]
        if kind == "ok":
            return json.loads(msg[1])
        if kind == "raised":
            raise CallFailed(msg[1], msg[2])
        if kind == "too_large":
            raise OutputTooLarge(msg[1])
        raise CallFailed("Unserializable", f"{msg[1]} output: {msg[2]}")

    def restart(self, timeout_s: float) -> None:
        """A fresh child (the old one is killed: nothing of it can run beside the new one)."""
        self._kill()
        self.name, self.capabilities = self._start()

    def _kill(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:
                pass
        if self._proc is not None:
            if self._proc.is_alive():
                self._proc.kill()
            self._proc.join(5)
        self._proc = self._conn = None

    def close(self) -> None:
        self._kill()
