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

Each row names the judge its judged cells (Track C) were scored with and that judge's decoy
calibration (`twist judge calibrate`; per style the rejection rate, n and interval, and the
verdict re-derived from those rates: an incomplete calibration never passes), or says it was
never calibrated; and its answerer (`answerer_lines`): who turned the system's memories into
recall answers, and how many it wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from twistbench.judges import Judge, judge_record
from twistbench.judges.calibration import (
    calibration_summary,
    calibration_verdict,
    describe_calibration,
    load_calibration,
)
from twistbench.model import qa_corpus
from twistbench.report.keys import KeyRef, require_one_key
from twistbench.stats import Metric
from twistbench.tracks import TRACK_ORDER, RunScores, headline_pairs, locomo_qa
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


class JudgeInfo(BaseModel):
    """The judge of a run's free-text answers, as its manifest records it, with its decoy
    calibration: the summary `judges.calibration.calibration_summary` derives (per style the
    rate, n, interval; the verdict re-derived from those rates), None when never calibrated."""

    model_config = ConfigDict(extra="forbid")

    name: str
    version: str = ""
    model: str | None = None
    calibration: dict[str, Any] | None = None

    def title(self) -> str:
        """'structural v3', or 'llm v1 (gpt-4o-mini)'."""
        version = f" v{self.version}" if self.version else ""
        return f"{self.name}{version}" + (f" ({self.model})" if self.model else "")

    def verdict(self) -> str:
        """Short, for beside a judged column: 'decoys rejected >= 0.826, FAILS calibration
        (< 0.95: ...)', 'INCOMPLETE calibration, not passing (...)' or 'not calibrated'."""
        cal = self.calibration
        if not cal:
            return "not calibrated"
        rates = [e.get("rejection_rate") for e in (cal.get("styles") or {}).values()
                 if e.get("kind") == "decoy" and e.get("rejection_rate") is not None]
        low = f"decoys rejected >= {min(rates):.3f}, " if rates else ""
        return f"{low}{calibration_verdict(cal)}"

    def short(self) -> str:
        """For beside a judged column: 'structural v3: not calibrated'."""
        return f"{self.title()}: {self.verdict()}"

    def describe(self) -> str:
        """Long, for under a table: 'structural v3 — decoys rejected: hedged 1.000 (n 2); ...
        — INCOMPLETE calibration, not passing (...)'."""
        return f"{self.title()} — {describe_calibration(self.calibration)}"

    @classmethod
    def from_manifest(cls, record: dict[str, Any] | None, judge: Judge) -> JudgeInfo:
        """The judge a run recorded (`judge` when the manifest names none). Its calibration:
        the one the run recorded, re-derived (a manifest written by an older harness may claim a
        pass its rates do not back), else the one stored for this identity (`twist judge
        calibrate` after the run), else None."""
        identity = dict(record or judge_record(judge))
        recorded = identity.pop("calibration", None)
        cal = calibration_summary(recorded if recorded is not None
                                  else load_calibration(identity))
        model = identity.get("model")
        return cls(name=str(identity.get("name") or judge.name),
                   version=str(identity.get("version", "")),
                   model=str(model) if model else None, calibration=cal)


class Cell(BaseModel):
    model_config = ConfigDict(extra="forbid")

    column: str
    status: Literal["scored", "n/a"]
    reason: str | None = None
    pair: PairedMetric | None = None
    errors: int = 0
    missing: int = 0
    judged: bool = False  # its pair is decided by the row's judge (the column says so)


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
                missing=missing, judged=column.judged)


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

    def titled_columns(self) -> list[Column]:
        """COLUMNS as this profile shows them: the QA column named after the dataset's corpus
        (LongMemEval-S and BEAM runs share the LoCoMo QA track, not LoCoMo's questions)."""
        return [replace(c, title=qa_corpus(self.dataset)) if c.track == locomo_qa.KEY else c
                for c in COLUMNS]

    def scored_columns(self) -> list[Column]:
        """Columns with at least one scored cell (the others are N/A for every row)."""
        return [c for c in self.titled_columns() if c.key in self.columns
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


def answerer_lines(profile: Profile) -> list[str]:
    """Each row's answerer (RunScores.answerer, read from the run) and how many recall answers
    it wrote from the system's memories; the rows it wrote none for, on one line."""
    lines = []
    unused: dict[str, list[str]] = {}  # answerer -> the systems that answered every recall
    for row in profile.rows:
        a = row.scores.answerer
        if not a:
            continue
        who = (f"{a.get('name')} ({a['model']})" if a.get("model")
               else f"{a.get('name')} (offline, no model)")
        if a.get("answered"):
            lines.append(f"answerer {who}: wrote {a['answered']} of {a.get('recalls', 0)} "
                         f"recall answers from the memories of {row.system}")
        else:
            unused.setdefault(who, []).append(row.system)
    for who, systems in unused.items():
        lines.append(f"answerer {who}: not used by {', '.join(systems)} (each answers "
                     "every recall itself)")
    return lines


__all__ = ["COLUMNS", "Cell", "Column", "JudgeInfo", "PairedMetric", "Profile",
           "ProfileEntry", "ProfileRow", "TRACK_ORDER", "answerer_lines", "build_profile",
           "build_row", "group_by_key", "make_cell", "paired"]
