"""Driving one conversation: reset, ingest session by session, then the tasks in phase order.

Each finished unit (an ingested session, a task) is appended to the run folder at once. Units
already finished (`done`) are not sent to the system again; a finished task that changed the
system's state (a resolve(), batch tensions) restores that change through Task.replay.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from twistbench.model import Conversation
from twistbench.records import ItemError, ItemRecord, SystemCallError, stable_hash
from twistbench.runs.guard import GuardedSystem
from twistbench.tracks.base import ConversationState, EmittedTension, Task


@dataclass
class DriveCounts:
    new: int = 0  # records written
    skipped: int = 0  # units already finished
    replay_failures: int = 0  # finished tasks whose state could not be restored


def ingest_id(conversation_id: str, session: int) -> str:
    return f"ingest:{conversation_id}:s{session}"


def unit_ids(conv: Conversation, tasks: list[Task]) -> list[str]:
    """Every unit of a conversation: its ingested sessions, then its tasks."""
    return [ingest_id(conv.id, k) for k, _ in conv.sessions()] + [t.item_id for t in tasks]


def drive_conversation(conv: Conversation, tasks: list[Task], guarded: GuardedSystem,
                       done: dict[str, ItemRecord], ingest_timeout_s: float,
                       write: Callable[[ItemRecord], None],
                       advance: Callable[[int], None]) -> DriveCounts:
    """Run one conversation's unfinished units; `write` appends a record, `advance` moves the
    progress bar by the number of units handled."""
    counts = DriveCounts()
    state = ConversationState(conversation=conv)
    try:
        guarded.reset(conv.id)
    except SystemCallError as exc:
        # Without a reset nothing of this conversation can be trusted: every unfinished item of
        # it is an error.
        for t_id, track, kind in _all_units(conv, tasks):
            if t_id not in done:
                write(error_record(t_id, track, kind, conv.id, {}, exc, 0.0))
                counts.new += 1
        advance(len(unit_ids(conv, tasks)))
        return counts
    for k, events in conv.sessions():
        item_id = ingest_id(conv.id, k)
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
        if item_id in done:
            counts.skipped += 1
        else:
            write(rec)
            counts.new += 1
        advance(1)
    for task in tasks:
        if task.item_id in done:
            prior = done[task.item_id]
            if task.replay is not None and prior.ok and prior.output is not None:
                try:
                    task.replay(guarded, state, prior.output)
                except SystemCallError:
                    counts.replay_failures += 1
            counts.skipped += 1
        else:
            write(run_task(task, guarded, state))
            counts.new += 1
        advance(1)
    return counts


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
    return ItemRecord(item_id=item_id, track=track, kind=kind, conversation=conversation,
                      input_hash=stable_hash(request), output=None,
                      error=ItemError(kind=exc.kind, call=exc.call, message=exc.message[:2000]),
                      latency_s=latency)


def _all_units(conv: Conversation, tasks: list[Task]) -> list[tuple[str, str, str]]:
    units = [(ingest_id(conv.id, k), "ingest", "session") for k, _ in conv.sessions()]
    return units + [(t.item_id, t.track, t.kind) for t in tasks]
