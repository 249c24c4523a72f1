"""The system under test: the TWIST contract (whitepaper §7) plus the retrieval-audit calls.

A system implements the calls it supports and declares them in `capabilities`. A declined call
makes the tracks that need it N/A in every report, never zero. Calls may return our pydantic
models or plain dicts of the same shape; the harness validates every output, and an output that
fails validation is an error for that item, never a score.

`recall` may answer (an Answer) or retrieve (Memories: ids, texts, source turn ids, scores), as
memory layers such as Mem0 or Zep do; the harness then answers with the run's answerer
(`twist run --answerer`, answerers/) and records which one did.

Throughput: `twist run --workers N` drives conversations in parallel, each worker with its own
instance of the system, unless the class sets `thread_safe = True`: one instance then serves
every worker, its calls for different conversations overlap, and each worker's calls come from
a thread of its own, so per-conversation state must be kept per thread (or per conversation id
given to reset) by the system.

This module imports only model.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from twistbench.model import (
    Answer,
    Dataset,
    Event,
    IngestResult,
    LineageRecord,
    Memories,
    ScoredMemory,
    Tension,
    Verdict,
)

TensionMode = Literal["online", "batch"]


@dataclass(frozen=True)
class Capabilities:
    """What a system supports. Each flag gates the tracks that need it."""

    online_tensions: bool = False  # ingest() returns tensions after each session (Track A online)
    batch_tensions: bool = False  # flag_tensions() at the end of the corpus (Track A batch)
    check_alignment: bool = False  # Track B
    recall: bool = False  # Track C, Track D probes, LoCoMo QA
    resolve: bool = False  # Track C post-resolution sub-track
    safety: bool = False  # Track D: write-time governance of PII and crisis content
    retrieve: bool = False  # TIAP traces
    lineage: bool = False  # TIAP lineage

    def as_dict(self) -> dict[str, bool]:
        return asdict(self)

    def tension_modes(self) -> list[TensionMode]:
        modes: list[TensionMode] = []
        if self.online_tensions:
            modes.append("online")
        if self.batch_tensions:
            modes.append("batch")
        return modes


@runtime_checkable
class MemorySystem(Protocol):
    """What twistbench drives. Everything is per conversation: reset, then ingest in order."""

    name: str
    capabilities: Capabilities

    def reset(self, conversation_id: str) -> None:
        """Forget everything; the next events belong to `conversation_id`."""

    def ingest(self, events: Sequence[Event]) -> IngestResult | dict[str, Any]:
        """Take one session's events, in order. Online systems return tensions found so far."""

    def flag_tensions(self) -> list[Tension] | list[dict[str, Any]]:
        """Batch mode: every tension in the conversation ingested so far, in one generic call."""

    def recall(self, query: str) -> Answer | Memories | dict[str, Any]:
        """Answer a question from memory, citing the turn ids used; or return the retrieved
        Memories for the harness's answerer to answer from."""

    def check_alignment(self, draft: str) -> Verdict | dict[str, Any]:
        """Would sending `draft` contradict the record? Cite the contradicted turns."""

    def resolve(self, tension_id: str) -> None:
        """A human resolved this tension: the refuted belief should stop being asserted."""

    def retrieve(self, query: str, k: int) -> list[ScoredMemory] | list[dict[str, Any]]:
        """Top-k memory ids with scores (retrieval audit)."""

    def lineage(self) -> list[LineageRecord] | list[dict[str, Any]]:
        """For every stored memory id: its source turn ids and raw / canonical flags."""


@runtime_checkable
class GoldReader(Protocol):
    """The oracle's explicit gold channel. The runner opens it only for systems registered with
    `gold_channel=True`; no track ever passes gold to a system."""

    def receive_gold(self, dataset: Dataset) -> None: ...


class BaseSystem:
    """Convenience base: every call declines by default. Subclass and override what you support;
    declare it in `capabilities`."""

    name = "base"
    capabilities = Capabilities()
    thread_safe = False  # True: one instance may serve several conversations at once (module doc)

    def reset(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id

    def ingest(self, events: Sequence[Event]) -> IngestResult:
        return IngestResult()

    def flag_tensions(self) -> list[Tension]:
        raise NotImplementedError(f"{self.name} declines flag_tensions")

    def recall(self, query: str) -> Answer | Memories:
        raise NotImplementedError(f"{self.name} declines recall")

    def check_alignment(self, draft: str) -> Verdict:
        raise NotImplementedError(f"{self.name} declines check_alignment")

    def resolve(self, tension_id: str) -> None:
        raise NotImplementedError(f"{self.name} declines resolve")

    def retrieve(self, query: str, k: int) -> list[ScoredMemory]:
        raise NotImplementedError(f"{self.name} declines retrieve")

    def lineage(self) -> list[LineageRecord]:
        raise NotImplementedError(f"{self.name} declines lineage")

    def close(self) -> None:
        """Optional: the conversation is over; free what it holds (a teardown). The runner calls
        it after each conversation; a system without close() has nothing to free."""

    def config(self) -> dict[str, Any]:
        """Options that shape behaviour; written (with secrets redacted) into the manifest."""
        return {}
