"""Driving one conversation: reset, ingest session by session, then the tasks in phase order.

Each finished unit (an ingested session, a task) is appended to the run folder at once. Units
already finished (`done`) are not sent to the system again: their state is replayed instead
(sessions that were ingested successfully are ingested again; a finished task that changed the
system's state, a resolve() or batch tensions, restores that change through Task.replay).

Timeouts. A call that times out is an error for its item. The system may still be busy with it
(a thread cannot be stopped), or half-way through changing its state, so it is not trusted as
is: the guard restarts it (a fresh instance or process, runs/isolation.py) and the conversation
is restored by the same replay a resume uses (reset, the sessions ingested so far, the state
changes of finished tasks), then continues with the next unit. The rule that stops a system
that keeps hanging: the STOP_AFTER_TIMEOUTS-th timed-out call in one conversation (replayed
calls included) stops that conversation, and each of its unfinished items is recorded as an
error of kind "stopped". What a system may therefore assume: calls never overlap on one
instance; after a timeout the instance it is called on starts with reset().
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from twistbench.errors import InputError
from twistbench.model import Conversation
from twistbench.records import ItemError, ItemRecord, SystemCallError, stable_hash
from twistbench.runs.guard import GuardedSystem
from twistbench.tracks.base import ConversationState, EmittedTension, Task

STOP_AFTER_TIMEOUTS = 3


@dataclass
class DriveCounts:
    new: int = 0  # records written
    skipped: int = 0  # units already finished
    replay_failures: int = 0  # finished tasks whose state could not be restored
    restarts: int = 0  # restores after a timeout
    stopped: bool = False  # the conversation was stopped (STOP_AFTER_TIMEOUTS)


def ingest_id(conversation_id: str, session: int) -> str:
    return f"ingest:{conversation_id}:s{session}"


def unit_ids(conv: Conversation, tasks: list[Task]) -> list[str]:
    """Every unit of a conversation: its ingested sessions, then its tasks."""
    return [ingest_id(conv.id, k) for k, _ in conv.sessions()] + [t.item_id for t in tasks]


class _Restart(Exception):
    """A call timed out: restart the system and restore the conversation."""


class _Stop(Exception):
    """The conversation cannot go on: its unfinished units become errors."""

    def __init__(self, kind: str, call: str, message: str):
        super().__init__(message)
        self.error = SystemCallError(kind, call, message)


def drive_conversation(conv: Conversation, tasks: list[Task], guarded: GuardedSystem,
                       done: dict[str, ItemRecord], ingest_timeout_s: float,
                       write: Callable[[ItemRecord], None],
                       advance: Callable[[int], None]) -> DriveCounts:
    """Run one conversation's unfinished units; `write` appends a record, `advance` moves the
    progress bar by the number of units handled. `done` gains every record written."""
    counts = DriveCounts()
    before = set(done)
    counted: set[str] = set()
    timeouts = 0

    def handled(item_id: str) -> None:
        if item_id not in counted:
            counted.add(item_id)
            advance(1)
            if item_id in before:
                counts.skipped += 1

    def record(rec: ItemRecord) -> None:
        write(rec)
        done[rec.item_id] = rec
        counts.new += 1

    def timed_out(exc: SystemCallError) -> None:
        nonlocal timeouts
        timeouts += 1
        if timeouts >= STOP_AFTER_TIMEOUTS:
            raise _Stop("stopped", exc.call, f"conversation stopped after {timeouts} timed-out "
                        f"calls (the last: {exc.call}); this item was not run")
        raise _Restart()

    while True:
        try:
            _pass(conv, tasks, guarded, done, ingest_timeout_s, record, handled, timed_out,
                  counts)
            return counts
        except _Restart:
            counts.restarts += 1
            try:
                guarded.restart()
            except SystemCallError as exc:
                _stop(conv, tasks, done, record, handled,
                      SystemCallError(exc.kind if exc.kind != "timeout" else "stopped", exc.call,
                                      f"the system could not be restarted after a timeout: "
                                      f"{exc.message}"))
                counts.stopped = True
                return counts
        except _Stop as stop:
            _stop(conv, tasks, done, record, handled, stop.error)
            counts.stopped = True
            return counts


def _pass(conv: Conversation, tasks: list[Task], guarded: GuardedSystem,
          done: dict[str, ItemRecord], ingest_timeout_s: float,
          record: Callable[[ItemRecord], None], handled: Callable[[str], None],
          timed_out: Callable[[SystemCallError], None], counts: DriveCounts) -> None:
    """One pass over the conversation from reset; raises _Restart / _Stop."""
    state = ConversationState(conversation=conv)
    try:
        guarded.reset(conv.id)
    except SystemCallError as exc:
        if exc.kind == "timeout":
            timed_out(exc)
        # Without a reset nothing of this conversation can be trusted: every unfinished item
        # of it is an error.
        raise _Stop(exc.kind, exc.call, exc.message) from None
    for k, events in conv.sessions():
        item_id = ingest_id(conv.id, k)
        prior = done.get(item_id)
        if prior is not None and not prior.ok:
            handled(item_id)  # a session that failed is not sent again: replay as it was
            continue
        request = {"session": k, "events": [e.id for e in events]}
        t0 = time.perf_counter()
        try:
            result = guarded.ingest(events, ingest_timeout_s)
            rec = ItemRecord(item_id=item_id, track="ingest", kind="session",
                             conversation=conv.id, input_hash=stable_hash(request),
                             output={"session": k, "result": result.model_dump(mode="json")},
                             latency_s=time.perf_counter() - t0)
            state.tensions.extend(EmittedTension("online", k, t) for t in result.tensions)
        except SystemCallError as exc:
            rec = error_record(item_id, "ingest", "session", conv.id, request, exc,
                               time.perf_counter() - t0)
            if prior is None:
                record(rec)
                handled(item_id)
            if exc.kind == "timeout":
                timed_out(exc)
            continue
        if prior is None:
            record(rec)
        handled(item_id)
    for task in tasks:
        prior = done.get(task.item_id)
        if prior is not None:
            if task.replay is not None and prior.ok and prior.output is not None:
                try:
                    task.replay(guarded, state, prior.output)
                except SystemCallError as exc:
                    if exc.kind == "timeout":
                        timed_out(exc)
                    counts.replay_failures += 1
                except Exception as exc:  # noqa: BLE001 - the saved output, not the system
                    raise InputError("items.jsonl", "cannot restore the state this finished "
                                     f"item changed ({type(exc).__name__}: {exc})",
                                     where=f"item {task.item_id}", field="output",
                                     expected="the output `twist run` wrote for it") from None
            handled(task.item_id)
            continue
        rec = run_task(task, guarded, state)
        record(rec)
        handled(task.item_id)
        if rec.error is not None and rec.error.kind == "timeout":
            timed_out(SystemCallError("timeout", rec.error.call, rec.error.message))


def _stop(conv: Conversation, tasks: list[Task], done: dict[str, ItemRecord],
          record: Callable[[ItemRecord], None], handled: Callable[[str], None],
          exc: SystemCallError) -> None:
    for item_id, track, kind in _all_units(conv, tasks):
        if item_id not in done:
            record(error_record(item_id, track, kind, conv.id, {}, exc, 0.0))
        handled(item_id)


def run_task(task: Task, guarded: GuardedSystem, state: ConversationState) -> ItemRecord:
    t0 = time.perf_counter()
    try:
        output = task.run(guarded, state)
    except SystemCallError as exc:
        return error_record(task.item_id, task.track, task.kind, task.conversation, task.request,
                            exc, time.perf_counter() - t0)
    latency = time.perf_counter() - t0
    scores = task.score(output) if task.score is not None else {}
    return ItemRecord(item_id=task.item_id, track=task.track, kind=task.kind,
                      conversation=task.conversation, input_hash=stable_hash(task.request),
                      output=output, scores=scores, latency_s=latency)


def error_record(item_id: str, track: str, kind: str, conversation: str, request: dict[str, Any],
                 exc: SystemCallError, latency: float) -> ItemRecord:
    """The record of a failed unit. The message arrives redacted and cut by the guard."""
    return ItemRecord(item_id=item_id, track=track, kind=kind, conversation=conversation,
                      input_hash=stable_hash(request), output=None,
                      error=ItemError(kind=exc.kind, call=exc.call, message=exc.message),
                      latency_s=latency)


def _all_units(conv: Conversation, tasks: list[Task]) -> list[tuple[str, str, str]]:
    units = [(ingest_id(conv.id, k), "ingest", "session") for k, _ in conv.sessions()]
    return units + [(t.item_id, t.track, t.kind) for t in tasks]
