"""The TWIST tracks (A, B, C, D) and LoCoMo QA: tasks that drive a system, pure scoring.

`TRACKS` maps a track key to its Track object; `tasks_for` is the one task selection (the
runner's too); `score_run` scores every track of one system's run from its saved ItemRecords, so
a saved run re-scores to identical numbers without the system. Each track declares its own
headline pairs (`headline_pairs()` collects them for the profile) and per-item outcomes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from twistbench.contract import Capabilities
from twistbench.errors import InputError
from twistbench.judges.base import Judge
from twistbench.model import Dataset
from twistbench.records import ItemRecord, charge_ingest_failures
from twistbench.tracks import a_tension, b_alignment, c_supersession, d_safety, locomo_qa
from twistbench.tracks.base import HeadlinePair, ItemOutcome, Task, Track, TrackResult

TRACK_ORDER: tuple[str, ...] = ("locomo", "A", "B", "C", "D")
T = TypeVar("T")

TRACKS: dict[str, Track] = {
    "locomo": locomo_qa.TRACK,
    "A": a_tension.TRACK,
    "B": b_alignment.TRACK,
    "C": c_supersession.TRACK,
    "D": d_safety.TRACK,
}


class RunScores(BaseModel):
    """Every track's TrackResult for one system's run on one dataset."""

    model_config = ConfigDict(extra="forbid")

    dataset: str
    dataset_version: str
    key_sha256: str
    capabilities: dict[str, bool]
    tracks: dict[str, TrackResult] = Field(default_factory=dict)
    records: int = 0
    ingest_errors: int = 0

    def track(self, key: str) -> TrackResult:
        return self.tracks[key]


def headline_pairs(tracks: Mapping[str, Track] | None = None) -> tuple[HeadlinePair, ...]:
    """Every track's headline pairs, in track order: the profile's columns."""
    return tuple(p for t in (tracks if tracks is not None else TRACKS).values()
                 for p in t.headline)


def select_tracks(keys: Iterable[str] | None = None,
                  tracks: Mapping[str, Track] | None = None) -> dict[str, Track]:
    """The named tracks of `tracks` (default TRACKS) in its order (all when keys is None);
    ValueError on an unknown key."""
    table = tracks if tracks is not None else TRACKS
    if keys is None:
        return dict(table)
    keys = list(keys)
    bad = [k for k in keys if k not in table]
    if bad:
        raise ValueError(f"unknown track(s) {bad}; known: {list(table)}")
    return {k: t for k, t in table.items() if k in keys}


def tasks_for(dataset: Dataset, conversation_id: str, caps: Capabilities,
              keys: Iterable[str] | None = None, tracks: Mapping[str, Track] | None = None,
              judge: Judge | None = None) -> list[Task]:
    """All tasks of the selected tracks for one conversation, ordered by (phase, track order,
    item order as each track returns them) — the order the runner runs them in."""
    out: list[tuple[int, int, int, Task]] = []
    for ti, track in enumerate(select_tracks(keys, tracks).values()):
        for pos, t in enumerate(track.tasks(dataset, conversation_id, caps, judge=judge)):
            out.append((t.phase, ti, pos, t))
    out.sort(key=lambda x: x[:3])
    return [t for *_, t in out]


def score_run(dataset: Dataset, records: list[ItemRecord], caps: Capabilities,
              keys: Iterable[str] | None = None, judge: Judge | None = None,
              source: str = "items.jsonl") -> RunScores:
    """Pure: score every selected track (all by default) from a run's records (any order).

    A track the system declines, or the dataset lacks items for, comes back with status "n/a"
    and its reason; it is never scored as zero. A track not selected for the run (keys) is
    reported as n/a "not run". `judge` judges free-text answers in every track that has them
    (None: the default judge; an LLM judge caches its responses so re-scoring stays
    deterministic). Items of a conversation whose ingest failed count as errors
    (records.charge_ingest_failures)."""
    records = charge_ingest_failures(records)
    scores = RunScores(dataset=dataset.name, dataset_version=dataset.version,
                       key_sha256=dataset.key_sha256, capabilities=caps.as_dict(),
                       records=len(records),
                       ingest_errors=sum(1 for r in records if r.track == "ingest" and not r.ok))
    selected = select_tracks(keys)
    for key in TRACK_ORDER:
        track = TRACKS[key]
        if key not in selected:
            scores.tracks[key] = TrackResult.not_applicable(key, track.title, "track not run")
            continue
        scores.tracks[key] = _checked(key, lambda recs, t=track: t.score(
            dataset, recs, caps, judge=judge), records, source)
    return scores


def _checked(key: str, score: Callable[[list[ItemRecord]], T], records: list[ItemRecord],
             source: str) -> T:
    """score(records), where a record whose saved output has a shape the track never writes
    (a hand-edited or foreign items.jsonl) is an InputError naming it, not a crash. The record
    is found by scoring the track's records one at a time; a failure no single record causes is
    a bug of ours and is raised as it is."""
    try:
        return score(records)
    except InputError as exc:
        if exc.file == "items.jsonl" and source != exc.file:  # name the run's own file
            raise InputError(source, exc.message, where=exc.where, field=exc.field,
                             expected=exc.expected) from None
        raise
    except Exception as exc:
        for r in records:
            if r.track not in (key, "ingest"):
                continue
            try:
                score([r])
            except InputError:
                raise
            except Exception:  # noqa: BLE001 - this record alone breaks the scorer
                raise InputError(source, f"track {key} cannot read this record's output "
                                 f"({type(exc).__name__}: {exc})", where=f"item {r.item_id}",
                                 field="output", expected="the output `twist run` writes for "
                                 "this track") from None
        raise


def item_outcomes(dataset: Dataset, records: list[ItemRecord], caps: Capabilities,
                  judge: Judge | None = None) -> list[ItemOutcome]:
    """Per-item outcomes of every track, for paired comparison of two runs (report/compare)."""
    records = charge_ingest_failures(records)
    out: list[ItemOutcome] = []
    for key in TRACK_ORDER:
        out.extend(_checked(key, lambda recs, t=TRACKS[key]: t.outcomes(
            dataset, recs, caps, judge=judge), records, "items.jsonl"))
    return out


__all__ = ["TRACKS", "TRACK_ORDER", "RunScores", "headline_pairs", "item_outcomes", "score_run",
           "select_tracks", "tasks_for"]
