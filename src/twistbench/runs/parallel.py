"""Driving many conversations: one after another, or `--workers N` at once.

Each worker has its own GuardedSystem over its own instance of the system (built again by the
factory the CLI gives), unless the class says `thread_safe = True`, in which case the workers'
guards share one instance. A conversation is driven whole by one worker (reset, ingest, its
tasks in order), so the system's per-conversation state is never shared; records of different
conversations interleave in items.jsonl, which scoring reads in any order. Appends and the
progress bar are serialised here.

`--retry-errors` (drop_errors) takes the errored records out of a finished folder so that a
resumed run asks only those items again: the conversations they belong to are replayed (reset
and ingest), their finished items restored from their saved outputs, never re-asked.
"""

from __future__ import annotations

import json
import os
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from twistbench.model import Conversation
from twistbench.records import ItemRecord, iter_records
from twistbench.runs.drive import DriveCounts, drive_conversation, unit_ids
from twistbench.runs.guard import GuardedSystem
from twistbench.tracks.base import Task

Work = list[tuple[Conversation, list[Task]]]


@dataclass
class RunTotals:
    new: int = 0
    skipped: int = 0
    replay_failures: int = 0
    restarts: int = 0  # restores after a timeout
    stopped: int = 0  # conversations stopped after repeated timeouts


def drive_all(work: Work, guards: Sequence[GuardedSystem], done: dict[str, ItemRecord],
              ingest_timeout_s: float, write: Callable[[ItemRecord], None],
              advance: Callable[[int], None], describe: Callable[[str], None]) -> RunTotals:
    """Every conversation of `work`, by len(guards) workers; the totals of their counts. A
    conversation with every unit finished is skipped (counted) without touching a system."""
    totals = DriveCounts()
    conversations_stopped = 0
    lock = threading.Lock()
    todo: queue.Queue[tuple[Conversation, list[Task]]] = queue.Queue()
    for conv, tasks in work:
        ids = unit_ids(conv, tasks)
        if all(i in done for i in ids):
            totals.skipped += len(ids)
            advance(len(ids))
        else:
            todo.put((conv, tasks))

    def locked_write(rec: ItemRecord) -> None:
        with lock:
            write(rec)

    def locked_advance(n: int) -> None:
        with lock:
            advance(n)

    failures: list[BaseException] = []

    def worker(guarded: GuardedSystem) -> None:
        nonlocal conversations_stopped
        while not failures:
            try:
                conv, tasks = todo.get_nowait()
            except queue.Empty:
                return
            with lock:
                describe(conv.id)
            # Each conversation gets its own view of the finished units: drive_conversation
            # adds to it, and the workers must not share one dict.
            mine = {i: done[i] for i in unit_ids(conv, tasks) if i in done}
            try:
                counts = drive_conversation(conv, tasks, guarded, mine, ingest_timeout_s,
                                            locked_write, locked_advance)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                failures.append(exc)
                return
            with lock:
                totals.new += counts.new
                totals.skipped += counts.skipped
                totals.replay_failures += counts.replay_failures
                totals.restarts += counts.restarts
                conversations_stopped += bool(counts.stopped)

    if len(guards) == 1:
        worker(guards[0])
    else:
        threads = [threading.Thread(target=worker, args=(g,), name=f"twist-worker-{i}",
                                    daemon=True) for i, g in enumerate(guards)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if failures:
        raise failures[0]
    return RunTotals(totals.new, totals.skipped, totals.replay_failures, totals.restarts,
                     conversations_stopped)


def drop_errors(items_path: str | Path) -> int:
    """Rewrite items.jsonl without its errored records (atomically); returns how many went.
    The next resume of the folder runs exactly those items again."""
    path = Path(items_path)
    if not path.exists():
        return 0
    kept: list[ItemRecord] = []
    dropped = 0
    for rec in iter_records(path):
        if rec.ok:
            kept.append(rec)
        else:
            dropped += 1
    if dropped:
        tmp = path.with_name(path.name + ".retry-tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            for rec in kept:
                fh.write(json.dumps(rec.model_dump(mode="json"), sort_keys=True,
                                    ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    return dropped
