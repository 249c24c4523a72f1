"""The TWIST tracks (A, B, C, D) and LoCoMo QA: tasks that drive a system, pure scoring.

`TRACKS` maps a track key to its Track object; `tasks_for` is the one task selection (the
runner's too); `score_run` scores every track of one system's run from its saved ItemRecords, so
a saved run re-scores to identical numbers without the system. Each track declares its own
headline pairs (`headline_pairs()` collects them for the profile) and per-item outcomes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field

from twistbench.contract import Capabilities
from twistbench.judges.base import Judge
from twistbench.model import Dataset
from twistbench.records import ItemRecord
from twistbench.tracks import a_tension, b_alignment, c_supersession, d_safety, locomo_qa
from twistbench.tracks.base import HeadlinePair, ItemOutcome, Task, Track, TrackResult

TRACK_ORDER: tuple[str, ...] = ("locomo", "A", "B", "C", "D")

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
              keys: Iterable[str] | None = None, judge: Judge | None = None) -> RunScores:
    """Pure: score every selected track (all by default) from a run's records (any order).

    A track the system declines, or the dataset lacks items for, comes back with status "n/a"
    and its reason; it is never scored as zero. A track not selected for the run (keys) is
    reported as n/a "not run". `judge` judges free-text answers in every track that has them
    (None: the default judge; an LLM judge caches its responses so re-scoring stays
    deterministic)."""
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
        scores.tracks[key] = track.score(dataset, records, caps, judge=judge)
    return scores


def item_outcomes(dataset: Dataset, records: list[ItemRecord], caps: Capabilities,
                  judge: Judge | None = None) -> list[ItemOutcome]:
    """Per-item outcomes of every track, for paired comparison of two runs (report/compare)."""
    out: list[ItemOutcome] = []
    for key in TRACK_ORDER:
        out.extend(TRACKS[key].outcomes(dataset, records, caps, judge=judge))
    return out


__all__ = ["TRACKS", "TRACK_ORDER", "RunScores", "headline_pairs", "item_outcomes", "score_run",
           "select_tracks", "tasks_for"]
