"""Drives one system through the tracks on one dataset and writes its run folder.

Per conversation: reset, ingest session by session (each session is a record), then the tracks'
tasks in phase order (runs/drive.py). Each finished item is appended to items.jsonl at once;
running again on the same folder skips finished items (runs/resume.py). A conversation with
unfinished items is replayed (reset and ingest again) to rebuild the system's state: ingest is
state, not an item, and no finished item is sent to the system again; a finished task that
changed state (a resolve(), batch tensions) restores that change from its saved output through
Task.replay. Every system call is guarded (runs/guard.py): faults become recorded errors, never
scores.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from twistbench.contract import GoldReader, MemorySystem
from twistbench.errors import InputError
from twistbench.judges import judge_record
from twistbench.judges.base import Judge
from twistbench.judges.structural import StructuralJudge
from twistbench.model import Conversation, Dataset
from twistbench.records import ItemRecord
from twistbench.runs.drive import drive_conversation, unit_ids
from twistbench.runs.folder import Redactor, RunFolder
from twistbench.runs.guard import GuardedSystem
from twistbench.runs.manifest import finish_manifest, run_config, start_manifest
from twistbench.runs.resume import finished_items
from twistbench.tracks import TRACKS, tasks_for
from twistbench.tracks.base import Task, Track


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
    judge: Judge | None = None,
    on_item: Callable[[ItemRecord], None] | None = None,
    dataset_source: dict[str, Any] | None = None,
) -> RunOutcome:
    """Run `system` over `dataset` into `out_dir`, resuming what is already there.

    judge: the judge of free-text answers (judges/; default the structural judge); its name and
    version go into the manifest and the fingerprint."""
    settings = settings or RunSettings()
    tracks = tracks if tracks is not None else TRACKS
    judge = judge if judge is not None else StructuralJudge()
    redactor = Redactor(options or {})
    folder = RunFolder(out_dir, redactor)
    name = getattr(system, "name", type(system).__name__)
    plan = plan_tracks(dataset, system, tracks, settings.tracks)
    config = run_config(dataset, name, spec or name, _system_config(system, options), plan,
                        settings.conversations, settings.seed, judge_record(judge), redactor)
    manifest = start_manifest(config, dataset, dataset_source or {},
                              system.capabilities.as_dict(), gold_channel, settings.seed,
                              {"call_s": settings.timeout_s,
                               "ingest_s": settings.ingest_timeout_s}, 0)
    done = finished_items(folder, config, manifest["fingerprint"], settings.force_new)
    manifest["resumed_from_items"] = len(done)
    folder.write_manifest(manifest)

    work = _work(dataset, system, settings, tracks, plan, judge)
    total = sum(len(unit_ids(c, t)) for c, t in work)
    guarded = GuardedSystem(system, settings.timeout_s)
    if gold_channel:
        if not isinstance(system, GoldReader):
            raise InputError(spec or name,
                             "registered for the gold channel but has no receive_gold")
        system.receive_gold(dataset)

    new = skipped = replay_failures = 0
    status = "interrupted"
    progress = _progress(settings.progress)

    def write(rec: ItemRecord) -> None:
        folder.append(rec)
        if on_item is not None:
            on_item(rec)

    try:
        with progress:
            bar = progress.add_task(f"{name}", total=total)
            for conv, tasks in work:
                ids = unit_ids(conv, tasks)
                if all(i in done for i in ids):
                    skipped += len(ids)
                    progress.advance(bar, len(ids))
                    continue
                progress.update(bar, description=f"{name} · {conv.id}")
                counts = drive_conversation(conv, tasks, guarded, done, settings.ingest_timeout_s,
                                            write, lambda n: progress.advance(bar, n))
                new += counts.new
                skipped += counts.skipped
                replay_failures += counts.replay_failures
        status = "complete"
    finally:
        records = folder.records()
        by_track = finish_manifest(manifest, status, records, new, skipped, replay_failures)
        folder.write_manifest(manifest)
    return RunOutcome(folder=folder.path, system=name, items=len(records), new_items=new,
                      skipped=skipped, errors=sum(by_track.values()), errors_by_track=by_track,
                      tracks=plan)


def _work(dataset: Dataset, system: MemorySystem, settings: RunSettings,
          tracks: Mapping[str, Track], plan: dict[str, str], judge: Judge
          ) -> list[tuple[Conversation, list[Task]]]:
    """(conversation, its tasks in run order) for every conversation the run covers."""
    convs = [c for c in dataset.conversations
             if not settings.conversations or c.id in settings.conversations]
    if settings.conversations:
        missing = set(settings.conversations) - {c.id for c in convs}
        if missing:
            raise InputError("--conversation", f"unknown conversation(s) {sorted(missing)}",
                             expected=f"ids of {dataset.name}")
    active = [k for k, v in plan.items() if v == "run"]
    return [(conv, tasks_for(dataset, conv.id, system.capabilities, keys=active, tracks=tracks,
                             judge=judge)) for conv in convs]


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


def _progress(enabled: bool) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), disable=not enabled, transient=False)
