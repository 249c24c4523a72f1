"""How a track plugs into the runner.

A track turns a dataset into Tasks (one per item: a request and a function that drives the
system) and turns saved ItemRecords back into metrics with a pure `score` function, so a saved
run can be re-scored without the system.

Per conversation the runner does:
  reset -> ingest session by session (records with track "ingest", kind "session", output
  {"session": k, "result": IngestResult}) -> tasks in phase order:
  PHASE_BATCH (flag_tensions) -> PHASE_QUERY (B drafts, C current/history, D probes, LoCoMo QA)
  -> PHASE_POST_RESOLUTION (C: resolve a tension, then ask again).
Tasks see a SystemView (runs/guard.py's GuardedSystem implements it): every call runs under
the timeout and returns a validated model, or raises SystemCallError, which the runner records
as the item's error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from twistbench.contract import Capabilities
from twistbench.judges.base import Judge
from twistbench.model import (
    Answer,
    Conversation,
    Dataset,
    Event,
    IngestResult,
    LineageRecord,
    ScoredMemory,
    Tension,
    Verdict,
)
from twistbench.records import ItemRecord
from twistbench.stats import Metric

PHASE_BATCH = 1
PHASE_QUERY = 2
PHASE_POST_RESOLUTION = 3


class SystemView(Protocol):
    """The view of a system that tasks get (implemented in runs/guard.py)."""

    capabilities: Capabilities

    def ingest(self, events: Sequence[Event]) -> IngestResult: ...
    def flag_tensions(self) -> list[Tension]: ...
    def recall(self, query: str) -> Answer: ...
    def check_alignment(self, draft: str) -> Verdict: ...
    def resolve(self, tension_id: str) -> None: ...
    def retrieve(self, query: str, k: int) -> list[ScoredMemory]: ...
    def lineage(self) -> list[LineageRecord]: ...


@dataclass
class EmittedTension:
    mode: str  # "online" | "batch"
    session: int | None  # session after which it was emitted (online); None for batch
    tension: Tension


@dataclass
class ConversationState:
    """What the runner knows about the conversation being driven; tasks may read and add to it."""

    conversation: Conversation
    tensions: list[EmittedTension] = field(default_factory=list)


@dataclass
class Task:
    item_id: str  # unique in the run, e.g. "B:conv-26:v1b1"
    track: str
    kind: str
    conversation: str
    phase: int
    request: dict[str, Any]  # JSON-able input; its hash goes into the record
    run: Callable[[SystemView, ConversationState], dict[str, Any]]  # -> JSON-able output
    score: Callable[[dict[str, Any]], dict[str, Any]] | None = None  # per-item score fields
    # Restores the state this task left behind, from its saved output, when a resumed run
    # replays a conversation in which the task had already finished (e.g. re-apply a resolve(),
    # put batch tensions back into ConversationState). Never re-asks the item itself.
    replay: Callable[[SystemView, ConversationState, dict[str, Any]], None] | None = None


@dataclass(frozen=True)
class HeadlinePair:
    """One headline cell of the profile: a metric and its partner, which travel together.

    A track declares its pairs (`Track.headline`); the profile shows exactly these, in track
    order. `sub` names the sub-part (e.g. tension mode "online") whose N/A and error counts the
    cell shows."""

    key: str  # column id, e.g. "A.online"
    title: str  # e.g. "A online"
    track: str  # track key
    primary: str  # metric name in the TrackResult
    partner: str
    label: str  # e.g. "F1 / false-flag"
    primary_up: bool  # higher is better
    partner_up: bool
    sub: str | None = None
    judged: bool = False  # the run's judge decides it: reports print the judge beside it


class TrackResult(BaseModel):
    """The scores of one track for one run. `status` "n/a" carries the reason and no metrics
    (N/A is never zero). Sub-parts that are N/A (a tension mode the system lacks, Track C
    post-resolution) are listed in `na`. `errors` counts failed system calls per sub-part
    (excluded from every metric); `missing` counts items with no record at all (an unfinished
    run); `counts` holds other counted outcomes (excluded QA items, chains with no tension...).
    `judgements`: per judged item id, the judgement the metrics counted (`judgement_record`:
    the verdict's fields, or "judge_error"), so that the item views show what the score used
    without asking the judge again; kept in memory only, never written to report.json."""

    model_config = ConfigDict(extra="forbid")

    track: str
    title: str
    status: Literal["scored", "n/a"]
    reason: str | None = None
    metrics: dict[str, Metric] = Field(default_factory=dict)
    na: dict[str, str] = Field(default_factory=dict)
    errors: dict[str, int] = Field(default_factory=dict)
    missing: dict[str, int] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict)
    judgements: dict[str, dict[str, Any]] = Field(default_factory=dict, exclude=True, repr=False)

    @classmethod
    def not_applicable(cls, track: str, title: str, reason: str) -> TrackResult:
        return cls(track=track, title=title, status="n/a", reason=reason)

    @property
    def error_total(self) -> int:
        return sum(self.errors.values())

    def metric(self, name: str) -> Metric:
        """The named metric; KeyError names the ones that exist."""
        try:
            return self.metrics[name]
        except KeyError:
            have = sorted(self.metrics)
            raise KeyError(f"{self.track}: no metric {name!r} (have {have})") from None


class ItemOutcome(BaseModel):
    """One item's outcome for paired comparison: value 1/0 for binary outcomes (correct or not,
    in the direction where higher is better), a score in [0, 1] otherwise (LoCoMo F1)."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    item_type: str  # e.g. "A.online:arc", "B:contradicting", "C:current", "D:pii_probe"
    conversation: str
    value: float


class Track(Protocol):
    """A track: tasks that drive a system, pure scoring, per-item outcomes, headline pairs.

    `judge` is the judge of free-text answers chosen for the run (judges/); a track that judges
    no free text ignores it, and None means the default judge."""

    key: str  # "A", "B", "C", "D", "locomo"
    title: str
    headline: tuple[HeadlinePair, ...]  # the profile's cells for this track, in order

    def not_applicable(self, caps: Capabilities, dataset: Dataset) -> str | None:
        """Why this track is N/A for a system with these capabilities on this dataset, or None."""

    def tasks(self, dataset: Dataset, conversation_id: str, caps: Capabilities,
              judge: Judge | None = None) -> list[Task]:
        """The tasks of this track for one conversation."""

    def score(self, dataset: Dataset, records: list[ItemRecord], caps: Capabilities,
              judge: Judge | None = None) -> TrackResult:
        """Pure: metrics from saved records (all tracks' records, ingest included)."""

    def outcomes(self, dataset: Dataset, records: list[ItemRecord], caps: Capabilities,
                 judge: Judge | None = None) -> list[ItemOutcome]:
        """Pure: one outcome per item, for the paired comparison of two runs."""
