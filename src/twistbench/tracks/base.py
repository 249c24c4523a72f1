"""How a track plugs into the runner.

A track turns a dataset into Tasks (one per item: a request and a function that drives the
system) and turns saved ItemRecords back into metrics with a pure `score` function, so a saved
run can be re-scored without the system.

Per conversation the runner does:
  reset -> ingest session by session (records with track "ingest", kind "session", output
  {"session": k, "result": IngestResult}) -> tasks in phase order:
  PHASE_BATCH (flag_tensions) -> PHASE_QUERY (B drafts, C current/history, D probes, LoCoMo QA)
  -> PHASE_POST_RESOLUTION (C: resolve a tension, then ask again).
Tasks see a GuardedSystem: every call runs under the timeout and returns a validated model, or
raises SystemCallError, which the runner records as the item's error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from twistbench.contract import Capabilities
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
from twistbench.runs.records import ItemRecord

PHASE_BATCH = 1
PHASE_QUERY = 2
PHASE_POST_RESOLUTION = 3


class SystemCallError(Exception):
    """A system call raised, timed out, or returned output that failed validation."""

    def __init__(self, kind: str, call: str, message: str):
        super().__init__(f"{call}: {kind}: {message}")
        self.kind = kind
        self.call = call
        self.message = message


class GuardedSystem(Protocol):
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
    run: Callable[[GuardedSystem, ConversationState], dict[str, Any]]  # -> JSON-able output
    score: Callable[[dict[str, Any]], dict[str, Any]] | None = None  # per-item score fields
    # Restores the state this task left behind, from its saved output, when a resumed run
    # replays a conversation in which the task had already finished (e.g. re-apply a resolve(),
    # put batch tensions back into ConversationState). Never re-asks the item itself.
    replay: Callable[[GuardedSystem, ConversationState, dict[str, Any]], None] | None = None


class Track(Protocol):
    key: str  # "A", "B", "C", "D", "locomo"
    title: str

    def not_applicable(self, caps: Capabilities, dataset: Dataset) -> str | None:
        """Why this track is N/A for a system with these capabilities on this dataset, or None."""

    def tasks(self, dataset: Dataset, conversation_id: str, caps: Capabilities) -> list[Task]:
        """The tasks of this track for one conversation."""

    def score(self, dataset: Dataset, records: list[ItemRecord], caps: Capabilities) -> Any:
        """Pure: metrics from saved records (all tracks' records, ingest included)."""
