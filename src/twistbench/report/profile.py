"""The TWIST profile: one row per system, five track columns, paired metrics only.

Columns (whitepaper §5), each declared by its track (`Track.headline`): LoCoMo (F1 / evidence
recall) · A online and A batch (detection F1 / false-flag rate) · B (balanced accuracy /
hard-negative specificity) · C (current / stale) · D (leak / over-blocking). A headline cell
holds a `PairedMetric`, and `paired()` is the only way to make one, so a detection number can
never be shown without its partner. A track the system declines, or the dataset lacks, is an
N/A cell with its reason — never zero. Every cell carries the error count (failed calls,
excluded from the metrics) and the missing count.

A profile covers one dataset key: rows on different keys are refused (`build_profile`);
`group_by_key` splits mixed entries into one profile per key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from twistbench.report.keys import KeyRef, require_one_key
from twistbench.stats import Metric
from twistbench.tracks import TRACK_ORDER, RunScores, headline_pairs
from twistbench.tracks.base import HeadlinePair, TrackResult


class PairedMetric(BaseModel):
    """A headline metric and its partner; they travel together through every report function."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str  # e.g. "F1 / false-flag"
    primary: Metric
    partner: Metric
    primary_higher_is_better: bool = True
    partner_higher_is_better: bool = False


# The profile's columns are the tracks' own headline pairs, in track order (tracks/*.py).
Column = HeadlinePair
COLUMNS: tuple[Column, ...] = headline_pairs()


def paired(result: TrackResult, column: Column) -> PairedMetric:
    """The column's pair from a scored track result (KeyError if either metric is absent)."""
    return PairedMetric(label=column.label, primary=result.metric(column.primary),
                        partner=result.metric(column.partner),
                        primary_higher_is_better=column.primary_up,
                        partner_higher_is_better=column.partner_up)


class Cell(BaseModel):
    model_config = ConfigDict(extra="forbid")

    column: str
    status: Literal["scored", "n/a"]
    reason: str | None = None
    pair: PairedMetric | None = None
    errors: int = 0
    missing: int = 0


def make_cell(result: TrackResult | None, column: Column) -> Cell:
    if result is None:
        return Cell(column=column.key, status="n/a", reason="track not scored")
    if result.status == "n/a":
        return Cell(column=column.key, status="n/a", reason=result.reason)
    if column.sub is not None:
        if column.sub in result.na:
            return Cell(column=column.key, status="n/a", reason=result.na[column.sub])
        errors = result.errors.get(column.sub, 0)
        missing = result.missing.get(column.sub, 0)
    else:
        errors, missing = result.error_total, sum(result.missing.values())
    return Cell(column=column.key, status="scored", pair=paired(result, column), errors=errors,
                missing=missing)


class ProfileRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    system: str
    run: str | None = None  # run folder, when read from one
    capabilities: dict[str, bool] = Field(default_factory=dict)
    cells: dict[str, Cell]
    scores: RunScores  # everything: all metrics with k/n and intervals, counts, details

    @property
    def errors_total(self) -> int:
        return sum(t.error_total for t in self.scores.tracks.values()) + self.scores.ingest_errors


class Profile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dataset: str
    dataset_version: str
    key_sha256: str
    judge: str = "structural"
    columns: list[str] = Field(default_factory=lambda: [c.key for c in COLUMNS])
    rows: list[ProfileRow]


@dataclass
class ProfileEntry:
    """One system's scores, as read from a run folder or computed in memory."""

    system: str
    scores: RunScores
    run: str | None = None


def build_row(entry: ProfileEntry) -> ProfileRow:
    cells = {c.key: make_cell(entry.scores.tracks.get(c.track), c) for c in COLUMNS}
    return ProfileRow(system=entry.system, run=entry.run, capabilities=entry.scores.capabilities,
                      cells=cells, scores=entry.scores)


def build_profile(entries: list[ProfileEntry]) -> Profile:
    """One profile over runs on the same dataset key. Raises InputError when the entries name
    different key sha256s (scores on different keys are not comparable in one table)."""
    require_one_key([KeyRef(e.run or e.system, e.scores.dataset_version, e.scores.key_sha256)
                     for e in entries])
    first = entries[0].scores
    judge = "structural"
    c = first.tracks.get("C")
    if c is not None and c.status == "scored":
        judge = str(c.details.get("judge", judge))
    return Profile(dataset=first.dataset, dataset_version=first.dataset_version,
                   key_sha256=first.key_sha256, judge=judge,
                   rows=[build_row(e) for e in entries])


def group_by_key(entries: list[ProfileEntry]) -> list[Profile]:
    """One profile per dataset key sha256, in first-seen order."""
    groups: dict[str, list[ProfileEntry]] = {}
    for e in entries:
        groups.setdefault(e.scores.key_sha256, []).append(e)
    return [build_profile(g) for g in groups.values()]


__all__ = ["COLUMNS", "Cell", "Column", "PairedMetric", "Profile", "ProfileEntry", "ProfileRow",
           "TRACK_ORDER", "build_profile", "build_row", "group_by_key", "make_cell", "paired"]
