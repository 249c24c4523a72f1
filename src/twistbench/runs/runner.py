"""Drives one system through the tracks on one dataset and writes its run folder.

Per conversation: reset, ingest session by session (each session is a record), then the tracks'
tasks in phase order. Each finished item is appended to items.jsonl at once; running again on the
same folder skips finished items. A conversation with unfinished items is replayed (reset and
ingest again) to rebuild the system's state: ingest is state, not an item, and no finished item
is sent to the system again; a finished task that changed state (a resolve(), batch tensions)
restores that change from its saved output through Task.replay. Every system call is guarded (runs/guard.py): faults become recorded
errors, never scores.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from twistbench.contract import GoldReader, MemorySystem
from twistbench.errors import InputError
from twistbench.model import Dataset
from twistbench.runs.folder import Redactor, RunFolder
from twistbench.runs.guard import GuardedSystem
from twistbench.runs.manifest import SCHEMA_VERSION, environment, fingerprint, now_iso
from twistbench.runs.records import ItemError, ItemRecord, stable_hash
from twistbench.tracks.base import ConversationState, EmittedTension, SystemCallError, Task, Track

JUDGE = {"name": "structural", "version": "1"}


@dataclass
class RunSettings:
    tracks: Sequence[str] | None = None  # None = every track the dataset and the system support
    timeout_s: float = 30.0  # per call
    ingest_timeout_s: float = 300.0  # per session
    seed: int = 1337
    force_new: bool = False
    conversations: Sequence[str] | None = None  # restrict to these conversation ids
    progress: bool = True


@dataclass
class RunOutcome:
    folder: Path
    system: str
    items: int  # records in the folder when done
    new_items: int  # written by this invocation
    skipped: int  # already finished, skipped on resume
    errors: int  # records with an error, whole folder
    errors_by_track: dict[str, int] = field(default_factory=dict)
    tracks: dict[str, str] = field(default_factory=dict)  # key -> "run" or "N/A: reason"

    @property
    def error_rate(self) -> float:
        return self.errors / self.items if self.items else 0.0


def default_tracks() -> Mapping[str, Track]:
    from twistbench.tracks import TRACKS

    return TRACKS


def plan_tracks(dataset: Dataset, system: MemorySystem, tracks: Mapping[str, Track],
                wanted: Sequence[str] | None) -> dict[str, str]:
    """Which tracks run, and why each other one is N/A."""
    if wanted is not None:
        unknown = [t for t in wanted if t not in tracks]
        if unknown:
            raise InputError("--track", f"unknown track(s) {', '.join(unknown)}",
                             expected=f"one of {', '.join(tracks)}")
    status: dict[str, str] = {}
    for key, track in tracks.items():
        if wanted is not None and key not in wanted:
            status[key] = "N/A: not selected"
            continue
        why = track.not_applicable(system.capabilities, dataset)
        status[key] = "run" if why is None else f"N/A: {why}"
    return status


def run_config(dataset: Dataset, system_name: str, system_spec: str, system_config: dict[str, Any],
               plan: dict[str, str], settings: RunSettings, redactor: Redactor) -> dict[str, Any]:
    """The part of the manifest that the fingerprint covers."""
    return redactor.config({
        "dataset": {"name": dataset.name, "version": dataset.version,
                    "sha256": dataset.key_sha256},
        "system": {"name": system_name, "spec": system_spec, "config": system_config},
        "tracks": plan,
        "conversations": list(settings.conversations) if settings.conversations else None,
        "seed": settings.seed,
        "judge": JUDGE,
    })


def run_system(
    dataset: Dataset,
    system: MemorySystem,
    out_dir: str | Path,
    *,
    spec: str | None = None,
    options: dict[str, Any] | None = None,
    gold_channel: bool = False,
    settings: RunSettings | None = None,
    tracks: Mapping[str, Track] | None = None,
    on_item: Callable[[ItemRecord], None] | None = None,
    dataset_source: dict[str, Any] | None = None,
) -> RunOutcome:
    """Run `system` over `dataset` into `out_dir`, resuming what is already there."""
    settings = settings or RunSettings()
    tracks = tracks if tracks is not None else default_tracks()
    redactor = Redactor(options or {})
    folder = RunFolder(out_dir, redactor)
    name = getattr(system, "name", type(system).__name__)
    sys_config = _system_config(system, options)
    plan = plan_tracks(dataset, system, tracks, settings.tracks)
    config = run_config(dataset, name, spec or name, sys_config, plan, settings, redactor)
    fp = fingerprint(config)

    done: dict[str, ItemRecord] = {}
    if folder.exists():
        old = folder.read_manifest()
        if old.get("fingerprint") != fp and not settings.force_new:
            raise InputError(str(folder.manifest_path),
                             "this folder holds a run with a different configuration "
                             f"(fingerprint {old.get('fingerprint')} vs {fp}); refusing to resume",
                             field=_first_difference(old.get("config", {}), config),
                             expected="the same dataset, system, options and tracks, or "
                                      "--force-new to start over")
        if settings.force_new:
            folder.clear()
        else:
            folder.repair_tail()
            done = {r.item_id: r for r in folder.records()}
    elif folder.items_path.exists():
        if not settings.force_new:
            raise InputError(str(folder.items_path), "items without a manifest; refusing to mix",
                             expected="an empty folder, a run folder, or --force-new")
        folder.clear()

    manifest: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        **environment(),
        "config": config,
        # source: how to load the dataset again for `twist report` (not fingerprinted: paths
        # differ between machines; the sha256 is what identifies the key).
        "dataset": {**config["dataset"], "counts": dataset.counts(),
                    "source": dataset_source or {}},
        "system": {**config["system"], "capabilities": system.capabilities.as_dict(),
                   "gold_channel": gold_channel},
        "tracks": plan,
        "seeds": {"run": settings.seed},
        "judge": JUDGE,
        "timeouts": {"call_s": settings.timeout_s, "ingest_s": settings.ingest_timeout_s},
        "fingerprint": fp,
        "started": now_iso(),
        "ended": None,
        "status": "running",
        "resumed_from_items": len(done),
    }
    folder.write_manifest(manifest)

    active = [tracks[k] for k, v in plan.items() if v == "run"]
    convs = [c for c in dataset.conversations
             if not settings.conversations or c.id in settings.conversations]
    if settings.conversations:
        missing = set(settings.conversations) - {c.id for c in convs}
        if missing:
            raise InputError("--conversation", f"unknown conversation(s) {sorted(missing)}",
                             expected=f"ids of {dataset.name}")

    work = []
    for conv in convs:
        tasks = [t for tr in active for t in tr.tasks(dataset, conv.id, system.capabilities)]
        tasks.sort(key=lambda t: t.phase)  # stable: keeps each track's own order within a phase
        work.append((conv, tasks))
    total = sum(len(c.sessions()) + len(t) for c, t in work)

    guarded = GuardedSystem(system, settings.timeout_s)
    if gold_channel:
        if not isinstance(system, GoldReader):
            raise InputError(spec or name, "registered for the gold channel but has no receive_gold")
        system.receive_gold(dataset)

    new = skipped = replay_failures = 0
    status = "interrupted"
    progress = _progress(settings.progress)
    try:
        with progress:
            bar = progress.add_task(f"{name}", total=total)
            for conv, tasks in work:
                ids = [_ingest_id(conv.id, k) for k, _ in conv.sessions()] + [t.item_id for t in tasks]
                if all(i in done for i in ids):
                    skipped += len(ids)
                    progress.advance(bar, len(ids))
                    continue
                progress.update(bar, description=f"{name} · {conv.id}")
                state = ConversationState(conversation=conv)
                try:
                    guarded.reset(conv.id)
                except SystemCallError as exc:
                    # Without a reset nothing of this conversation can be trusted: every
                    # unfinished item of it is an error.
                    for t_id, track, kind in _all_units(conv, tasks):
                        if t_id not in done:
                            rec = _error_record(t_id, track, kind, conv.id, {}, exc, 0.0)
                            folder.append(rec)
                            new += 1
                            _notify(on_item, rec)
                    progress.advance(bar, len(ids))
                    continue
                for k, events in conv.sessions():
                    item_id = _ingest_id(conv.id, k)
                    request = {"session": k, "events": [e.id for e in events]}
                    t0 = time.perf_counter()
                    try:
                        result = guarded.ingest(events, settings.ingest_timeout_s)
                        rec = ItemRecord(item_id=item_id, track="ingest", kind="session",
                                         conversation=conv.id, input_hash=stable_hash(request),
                                         output={"session": k,
                                                 "result": result.model_dump(mode="json")},
                                         latency_s=time.perf_counter() - t0)
                        state.tensions.extend(EmittedTension("online", k, t) for t in result.tensions)
                    except SystemCallError as exc:
                        rec = _error_record(item_id, "ingest", "session", conv.id, request, exc,
                                            time.perf_counter() - t0)
                    if item_id in done:
                        skipped += 1
                    else:
                        folder.append(rec)
                        new += 1
                        _notify(on_item, rec)
                    progress.advance(bar)
                for task in tasks:
                    if task.item_id in done:
                        prior = done[task.item_id]
                        if task.replay is not None and prior.ok and prior.output is not None:
                            try:
                                task.replay(guarded, state, prior.output)
                            except SystemCallError:
                                replay_failures += 1
                        skipped += 1
                        progress.advance(bar)
                        continue
                    rec = _run_task(task, guarded, state)
                    folder.append(rec)
                    new += 1
                    _notify(on_item, rec)
                    progress.advance(bar)
        status = "complete"
    finally:
        records = folder.records()
        by_track: dict[str, int] = {}
        for r in records:
            if r.error is not None:
                by_track[r.track] = by_track.get(r.track, 0) + 1
        manifest.update({
            "ended": now_iso(),
            "status": status,
            "counts": {"items": len(records), "errors": sum(by_track.values()),
                       "errors_by_track": by_track, "new_items": new, "skipped": skipped,
                       "replay_failures": replay_failures},
        })
        folder.write_manifest(manifest)
    return RunOutcome(folder=folder.path, system=name, items=len(records), new_items=new,
                      skipped=skipped, errors=sum(by_track.values()), errors_by_track=by_track,
                      tracks=plan)


def _run_task(task: Task, guarded: GuardedSystem, state: ConversationState) -> ItemRecord:
    t0 = time.perf_counter()
    try:
        output = task.run(guarded, state)
    except SystemCallError as exc:
        return _error_record(task.item_id, task.track, task.kind, task.conversation, task.request,
                             exc, time.perf_counter() - t0)
    latency = time.perf_counter() - t0
    scores = task.score(output) if task.score is not None else {}
    return ItemRecord(item_id=task.item_id, track=task.track, kind=task.kind,
                      conversation=task.conversation, input_hash=stable_hash(task.request),
                      output=output, scores=scores, latency_s=latency)


def _error_record(item_id: str, track: str, kind: str, conversation: str, request: dict[str, Any],
                  exc: SystemCallError, latency: float) -> ItemRecord:
    return ItemRecord(item_id=item_id, track=track, kind=kind, conversation=conversation,
                      input_hash=stable_hash(request), output=None,
                      error=ItemError(kind=exc.kind, call=exc.call, message=exc.message[:2000]),
                      latency_s=latency)


def _all_units(conv: Any, tasks: list[Task]) -> list[tuple[str, str, str]]:
    units = [(_ingest_id(conv.id, k), "ingest", "session") for k, _ in conv.sessions()]
    return units + [(t.item_id, t.track, t.kind) for t in tasks]


def _ingest_id(conversation_id: str, session: int) -> str:
    return f"ingest:{conversation_id}:s{session}"


def _system_config(system: MemorySystem, options: dict[str, Any] | None) -> dict[str, Any]:
    cfg: dict[str, Any] = {}
    getter = getattr(system, "config", None)
    if callable(getter):
        try:
            cfg = dict(getter())
        except Exception as exc:  # noqa: BLE001 - a broken config() must not stop the run
            cfg = {"config_error": f"{type(exc).__name__}: {exc}"}
    if options:
        cfg = {**{f"option.{k}": v for k, v in options.items()}, **cfg}
    return cfg


def _first_difference(old: Any, new: Any, path: str = "") -> str | None:
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new)):
            d = _first_difference(old.get(k), new.get(k), f"{path}.{k}" if path else k)
            if d:
                return d
        return None
    return None if old == new else (path or "config")


def _notify(cb: Callable[[ItemRecord], None] | None, rec: ItemRecord) -> None:
    if cb is not None:
        cb(rec)


def _progress(enabled: bool) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), disable=not enabled, transient=False)
