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

Each row names the judge its judged cells (Track C) were scored with, and that judge's
calibration on decoys when it has one (an LLM judge: its rejection rate, n, interval and
whether it passed); a rule-based judge has none, and the report says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

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


class Calibration(BaseModel):
    """A judge's calibration on decoys: how often it rejected answers it must reject."""

    model_config = ConfigDict(extra="forbid")

    rejection_rate: float | None
    n: int = 0
    interval: tuple[float, float] | None = None
    passed: bool | None = None

    def describe(self) -> str:
        if self.rejection_rate is None:
            return f"calibration: no decoys (n={self.n})"
        out = f"decoy rejection {self.rejection_rate:.2f}"
        if self.interval is not None:
            out += f" [{self.interval[0]:.2f}, {self.interval[1]:.2f}]"
        out += f", n={self.n}"
        if self.passed is not None:
            out += ", passed" if self.passed else ", FAILED"
        return out


class JudgeInfo(BaseModel):
    """The judge of a run's free-text answers, as its manifest records it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    version: str = ""
    calibration: Calibration | None = None

    def describe(self) -> str:
        """'structural 1 (rule-based: no calibration)' or 'llm-x 2 (decoy rejection ...)'."""
        head = f"{self.name} {self.version}".strip()
        if self.calibration is None:
            return f"{head} (no decoy calibration)"
        return f"{head} ({self.calibration.describe()})"

    @classmethod
    def from_manifest(cls, record: dict[str, Any] | None, default: str) -> JudgeInfo:
        record = record or {}
        cal = record.get("calibration")
        return cls(name=str(record.get("name") or default), version=str(record.get("version", "")),
                   calibration=Calibration.model_validate(cal) if isinstance(cal, dict) else None)


class Cell(BaseModel):
    model_config = ConfigDict(extra="forbid")

    column: str
    status: Literal["scored", "n/a"]
    reason: str | None = None
    pair: PairedMetric | None = None
    errors: int = 0
    missing: int = 0
    judged: bool = False  # scored through the row's judge (the track records it in details)


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
                missing=missing, judged="judge" in result.details)


class ProfileRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    system: str  # the run's label, or its system's name
    run: str | None = None  # run folder, when read from one
    judge: JudgeInfo | None = None
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
    columns: list[str] = Field(default_factory=lambda: [c.key for c in COLUMNS])
    rows: list[ProfileRow]

    def judges(self) -> list[JudgeInfo]:
        """The distinct judges of the rows that have a judged cell, in row order."""
        out: list[JudgeInfo] = []
        for r in self.rows:
            if r.judge is not None and r.judge not in out and any(
                    c.judged for c in r.cells.values()):
                out.append(r.judge)
        return out

    def scored_columns(self) -> list[Column]:
        """Columns with at least one scored cell (the others are N/A for every row)."""
        return [c for c in COLUMNS if c.key in self.columns
                and any(r.cells[c.key].status == "scored" for r in self.rows)]


@dataclass
class ProfileEntry:
    """One system's scores, as read from a run folder or computed in memory."""

    system: str
    scores: RunScores
    run: str | None = None
    judge: JudgeInfo | None = None


def build_row(entry: ProfileEntry) -> ProfileRow:
    cells = {c.key: make_cell(entry.scores.tracks.get(c.track), c) for c in COLUMNS}
    judge = entry.judge
    if judge is None:
        named = {str(t.details["judge"]) for t in entry.scores.tracks.values()
                 if "judge" in t.details}
        judge = JudgeInfo(name=named.pop()) if len(named) == 1 else None
    return ProfileRow(system=entry.system, run=entry.run, judge=judge,
                      capabilities=entry.scores.capabilities, cells=cells, scores=entry.scores)


def build_profile(entries: list[ProfileEntry]) -> Profile:
    """One profile over runs on the same dataset key. Raises InputError when the entries name
    different key sha256s (scores on different keys are not comparable in one table)."""
    require_one_key([KeyRef(e.run or e.system, e.scores.dataset_version, e.scores.key_sha256)
                     for e in entries])
    first = entries[0].scores
    return Profile(dataset=first.dataset, dataset_version=first.dataset_version,
                   key_sha256=first.key_sha256, rows=[build_row(e) for e in entries])


def group_by_key(entries: list[ProfileEntry]) -> list[Profile]:
    """One profile per dataset key sha256, in first-seen order."""
    groups: dict[str, list[ProfileEntry]] = {}
    for e in entries:
        groups.setdefault(e.scores.key_sha256, []).append(e)
    return [build_profile(g) for g in groups.values()]


__all__ = ["COLUMNS", "Calibration", "Cell", "Column", "JudgeInfo", "PairedMetric", "Profile",
           "ProfileEntry", "ProfileRow", "TRACK_ORDER", "build_profile", "build_row",
           "group_by_key", "make_cell", "paired"]
