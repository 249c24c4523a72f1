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

import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # POSIX: peak memory in the manifest
    import resource
except ImportError:  # pragma: no cover
    resource = None  # type: ignore[assignment]

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from twistbench.answerers import Answerer, answerer_record
from twistbench.answerers.extractive import ExtractiveAnswerer
from twistbench.contract import Capabilities, MemorySystem
from twistbench.errors import InputError
from twistbench.judges import judge_record
from twistbench.judges.base import Judge
from twistbench.judges.calibration import calibration_summary, load_calibration
from twistbench.judges.structural import StructuralJudge
from twistbench.llm import usage_since, usage_snapshot, usage_totals
from twistbench.llm.client import UsageMark
from twistbench.model import Conversation, Dataset
from twistbench.records import ItemRecord, SystemCallError
from twistbench.runs.drive import unit_ids
from twistbench.runs.folder import Redactor, RunFolder
from twistbench.runs.guard import DEFAULT_MAX_OUTPUT_BYTES, GuardedSystem
from twistbench.runs.isolation import ProcessExecutor, SystemFactory, ThreadExecutor
from twistbench.runs.lock import RunLock
from twistbench.runs.manifest import finish_manifest, run_config, start_manifest
from twistbench.runs.parallel import drive_all, drop_errors
from twistbench.runs.resume import finished_items
from twistbench.sanitize import plain
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
    isolate: str = "thread"  # "thread" or "process" (the system in a child, killed on timeout)
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES  # a larger output is an error, not stored
    workers: int = 1  # conversations driven at once (runs/parallel.py); not fingerprinted
    retry_errors: bool = False  # resume asking only the errored items of the folder again
    embedder: str | None = None  # model id of --embedder, fingerprinted; None: the built-in
    embedder_id: str | None = None  # model id of the embedder in use (manifest only)


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
    notes: list[str] = field(default_factory=list)  # e.g. a stale lock taken over

    @property
    def error_rate(self) -> float:
        return self.errors / self.items if self.items else 0.0


def check_selection(dataset: Dataset, settings: RunSettings,
                    tracks: Mapping[str, Track] | None = None) -> None:
    """InputError for a --track or --conversation the dataset does not have: checked before
    the run folder is created, so a typo leaves nothing behind."""
    tracks = tracks if tracks is not None else TRACKS
    if settings.tracks is not None:
        unknown = [t for t in settings.tracks if t not in tracks]
        if unknown:
            raise InputError("--track", f"unknown track(s) {', '.join(unknown)}",
                             expected=f"one of {', '.join(tracks)}")
    if settings.conversations:
        missing = set(settings.conversations) - {c.id for c in dataset.conversations}
        if missing:
            raise InputError("--conversation", f"unknown conversation(s) {sorted(missing)}",
                             expected=f"ids of {dataset.name}")


def plan_tracks(dataset: Dataset, caps: Capabilities, tracks: Mapping[str, Track],
                wanted: Sequence[str] | None) -> dict[str, str]:
    """Which tracks run, and why each other one is N/A (the names checked by check_selection)."""
    status: dict[str, str] = {}
    for key, track in tracks.items():
        if wanted is not None and key not in wanted:
            status[key] = "N/A: not selected"
            continue
        why = track.not_applicable(caps, dataset)
        status[key] = "run" if why is None else f"N/A: {why}"
    return status


def make_guarded(system: MemorySystem | None, settings: RunSettings, *,
                 factory: SystemFactory | None, redactor: Redactor, where: str,
                 answerer: Answerer | None = None) -> GuardedSystem:
    """The guarded system the run drives: a worker thread over `system` (rebuilt by `factory`
    after a timeout), or with settings.isolate == "process" a child process built by `factory`."""
    if settings.isolate == "process":
        if factory is None:
            raise InputError("--isolate", "process isolation builds the system in a child "
                             "process and needs its spec, not an object", field="isolate",
                             expected="thread for a system handed over as an object")
        executor: ThreadExecutor | ProcessExecutor = ProcessExecutor(
            factory, settings.max_output_bytes, start_timeout_s=settings.ingest_timeout_s,
            where=where)
    elif settings.isolate == "thread":
        if system is None:
            if factory is None:
                raise ValueError("run_system needs a system or a factory")
            system = factory()
        executor = ThreadExecutor(system, factory, where=where)
    else:
        raise InputError("--isolate", f"unknown isolation {settings.isolate!r}",
                         field="isolate", expected="thread or process")
    return GuardedSystem(executor, settings.timeout_s, redactor=redactor,
                         max_output_bytes=settings.max_output_bytes, answerer=answerer)


def make_guards(system: MemorySystem | None, settings: RunSettings, *,
                factory: SystemFactory | None, redactor: Redactor, where: str,
                answerer: Answerer) -> list[GuardedSystem]:
    """One guarded system per worker: the first over `system`; each other over a fresh
    instance from `factory` (its own child process with --isolate process), or over `system`
    itself when the class is thread_safe."""
    if settings.workers < 1:
        raise InputError("--workers", f"{settings.workers}", field="workers",
                         expected="1 or more")
    shared = system is not None and bool(getattr(system, "thread_safe", False))
    if settings.workers > 1 and not shared and factory is None:
        raise InputError("--workers", f"{settings.workers} workers need a fresh instance of "
                         "the system each, and no way to build one was given", field="workers",
                         expected="--workers 1, or a system built by name (twist run -s)")
    guards: list[GuardedSystem] = []
    try:
        for i in range(settings.workers):
            own = system if i == 0 or shared or settings.isolate == "process" else None
            guards.append(make_guarded(own, settings, factory=factory, redactor=redactor,
                                       where=where, answerer=answerer))
    except BaseException:
        for g in guards:
            g.close()
        raise
    return guards


def run_system(
    dataset: Dataset,
    system: MemorySystem | None,
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
    label: str | None = None,
    factory: SystemFactory | None = None,
    answerer: Answerer | None = None,
) -> RunOutcome:
    """Run `system` over `dataset` into `out_dir`, resuming what is already there.

    factory: builds a fresh instance of the system (after a timeout; in the child process with
    settings.isolate == "process", where `system` may be None; one per extra worker with
    settings.workers > 1 unless the system is thread_safe). judge: the judge of free-text
    answers (judges/; default the structural judge); answerer: what answers a recall that
    returns memories (answerers/; default the offline extractive one). The identity of both
    goes into the manifest and the fingerprint. label: what reports call this run (a
    configuration of the system); recorded in the manifest, outside the fingerprint. The
    folder is locked for the whole run
    (runs/lock.py)."""
    settings = settings or RunSettings()
    if settings.retry_errors and settings.force_new:
        raise InputError("--retry-errors", "cannot be combined with --force-new",
                         field="retry_errors", expected="one of them")
    tracks = tracks if tracks is not None else TRACKS
    check_selection(dataset, settings, tracks)
    judge = judge if judge is not None else StructuralJudge()
    answerer = answerer if answerer is not None else ExtractiveAnswerer()
    redactor = Redactor(options or {})
    folder = RunFolder(out_dir, redactor)
    with RunLock(folder.path) as lock:
        guards = make_guards(system, settings, factory=factory, redactor=redactor,
                             where=spec or "--system", answerer=answerer)
        try:
            outcome = _run_locked(dataset, guards, folder, spec=spec, options=options,
                                  gold_channel=gold_channel, settings=settings, tracks=tracks,
                                  judge=judge, on_item=on_item, dataset_source=dataset_source,
                                  label=label, answerer=answerer)
        finally:
            for guarded in guards:
                guarded.close()
    if lock.note:
        outcome.notes.append(lock.note)
    return outcome


def _run_locked(dataset: Dataset, guards: list[GuardedSystem], folder: RunFolder, *,
                spec: str | None, options: dict[str, Any] | None, gold_channel: bool,
                settings: RunSettings, tracks: Mapping[str, Track], judge: Judge,
                on_item: Callable[[ItemRecord], None] | None,
                dataset_source: dict[str, Any] | None, label: str | None,
                answerer: Answerer) -> RunOutcome:
    guarded = guards[0]
    name = guarded.name
    caps = guarded.capabilities
    plan = plan_tracks(dataset, caps, tracks, settings.tracks)
    config = run_config(dataset, name, spec or name, _system_config(guarded, options), plan,
                        settings.conversations, settings.seed, judge_record(judge),
                        folder.redactor, answerer=answerer_record(answerer),
                        embedder=settings.embedder)
    manifest = start_manifest(config, dataset, dataset_source or {}, caps.as_dict(),
                              gold_channel, settings.seed,
                              {"call_s": settings.timeout_s,
                               "ingest_s": settings.ingest_timeout_s}, 0)
    manifest["limits"] = {"isolate": settings.isolate,
                          "max_output_bytes": settings.max_output_bytes}
    # Not fingerprinted: calibrating a judge later must not stop a run from resuming.
    manifest["judge"] = {**config["judge"], "calibration": calibration_summary(
        load_calibration(judge_record(judge)))}
    manifest["workers"] = settings.workers
    # the vectors behind dense retrieval (fingerprinted through config["embedder"] unless the
    # built-in model, which runs predating the field used)
    manifest["embedder"] = settings.embedder_id
    llm_mark = usage_snapshot()
    if settings.retry_errors and folder.exists():
        # Checked first (it refuses another configuration), then the errors go.
        finished_items(folder, config, manifest["fingerprint"], False)
        manifest["retried_errors"] = drop_errors(folder.items_path)
    done = finished_items(folder, config, manifest["fingerprint"], settings.force_new)
    manifest["resumed_from_items"] = len(done)
    if label:
        manifest["system"]["label"] = label
    folder.write_manifest(manifest)

    work = _work(dataset, caps, settings, tracks, plan, judge)
    total = sum(len(unit_ids(c, t)) for c, t in work)
    if gold_channel:
        for g in guards:
            try:
                g.receive_gold(dataset, settings.ingest_timeout_s)
            except SystemCallError as exc:
                raise InputError(spec or name, f"the gold channel failed: {exc}",
                                 field="receive_gold",
                                 expected="a system registered for the gold channel") from None

    new = skipped = replay_failures = restarts = stopped = 0
    status = "interrupted"
    progress = _progress(settings.progress)
    item_errors = 0
    last_shown = [0.0]

    def write(rec: ItemRecord) -> None:
        nonlocal item_errors
        folder.append(rec)
        item_errors += not rec.ok
        if on_item is not None:
            on_item(rec)
        now = time.monotonic()
        if settings.progress and now - last_shown[0] > 0.5:  # the LLM line, twice a second
            last_shown[0] = now
            progress.update(bar, calls=_calls_line(llm_mark, item_errors))

    try:
        with progress:
            bar = progress.add_task(plain(name), total=total, calls="")
            counts = drive_all(
                work, guards, done, settings.ingest_timeout_s, write,
                lambda n: progress.advance(bar, n),
                lambda conv: progress.update(bar, description=f"{plain(name)} · {plain(conv)}"))
            new, skipped, replay_failures = counts.new, counts.skipped, counts.replay_failures
            restarts, stopped = counts.restarts, counts.stopped
            progress.update(bar, calls=_calls_line(llm_mark, item_errors))
        status = "complete"
    finally:
        records = folder.records()
        by_track = finish_manifest(manifest, status, records, new, skipped, replay_failures)
        manifest["counts"].update({"restarts_after_timeout": restarts,
                                   "conversations_stopped": stopped,
                                   "timeouts": sum(g.timeouts for g in guards)})
        manifest["resources"] = peak_memory()
        manifest["llm_usage"] = usage_since(llm_mark)  # this invocation's calls, per client
        manifest["system"]["diagnostics"] = _diagnostics(guards)
        folder.write_manifest(manifest)
    return RunOutcome(folder=folder.path, system=label or name, items=len(records), new_items=new,
                      skipped=skipped, errors=sum(by_track.values()), errors_by_track=by_track,
                      tracks=plan)


def peak_memory() -> dict[str, float | None]:
    """High-water marks of resident memory, MB: this process (the harness and any system run in
    a thread) and its finished children (systems run with --isolate process)."""
    if resource is None:  # pragma: no cover - not POSIX
        return {"peak_rss_mb": None, "children_peak_rss_mb": None}
    scale = 1 / 1024 if sys.platform != "darwin" else 1 / (1024 * 1024)  # KB on Linux, B on mac
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * scale
    return {"peak_rss_mb": round(own, 1), "children_peak_rss_mb": round(kids, 1)}


def _work(dataset: Dataset, caps: Capabilities, settings: RunSettings,
          tracks: Mapping[str, Track], plan: dict[str, str], judge: Judge
          ) -> list[tuple[Conversation, list[Task]]]:
    """(conversation, its tasks in run order) for every conversation the run covers."""
    convs = [c for c in dataset.conversations
             if not settings.conversations or c.id in settings.conversations]
    active = [k for k, v in plan.items() if v == "run"]
    return [(conv, tasks_for(dataset, conv.id, caps, keys=active, tracks=tracks,
                             judge=judge)) for conv in convs]


def _system_config(guarded: GuardedSystem, options: dict[str, Any] | None) -> dict[str, Any]:
    cfg = guarded.config()
    if options:
        cfg = {**{f"option.{k}": v for k, v in options.items()}, **cfg}
    return cfg


def _progress(enabled: bool) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TextColumn("{task.fields[calls]}"),
                    disable=not enabled, transient=False)


def _diagnostics(guards: Iterable[GuardedSystem]) -> dict[str, Any]:
    """What the system counted during the run (its optional `diagnostics()`), summed over the
    workers' instances; a broken or absent diagnostics() is noted, never fatal."""
    total: dict[str, Any] = {}
    for guarded in guards:
        try:
            values = guarded.diagnostics()
        except Exception as exc:  # noqa: BLE001 - a broken diagnostics() must not lose the run
            total["diagnostics_error"] = f"{type(exc).__name__}: {exc}"[:300]
            continue
        for k, v in values.items():
            total[k] = total.get(k, 0) + v if isinstance(v, (int, float)) else v
    return total


def _calls_line(mark: UsageMark, item_errors: int) -> str:
    """'LLM 120 calls · 80 cached · 0 errors · 45.2k tokens · 3 item errors' for the bar."""
    usage = usage_since(mark)
    parts = []
    if usage:
        t = usage_totals(usage)
        parts.append(f"LLM {t['network_calls']} calls · {t['cache_hits']} cached · "
                     f"{t['errors']} errors · {t['tokens'] / 1000:.1f}k tokens")
    if item_errors:
        parts.append(f"{item_errors} item errors")
    return " · ".join(parts)
