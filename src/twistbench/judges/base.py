"""What a judge of free-text answers is: the Track C outcomes, the verdict, the protocol.

A judge is chosen by name (`twist run --judge NAME`, judges/__init__.py) and recorded in the run
manifest from the object itself (its `name` and `version`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

from twistbench.model import Answer, ChainQuery, UpdateChain

Outcome = Literal["current", "stale", "hedged", "history", "partial", "none"]
OUTCOMES: tuple[Outcome, ...] = ("current", "stale", "hedged", "history", "partial", "none")


@dataclass
class JudgeVerdict:
    outcome: Outcome
    current_named: list[int]  # indices (into chain.states) of current states named
    superseded_named: list[int]  # indices of superseded states named
    cites_current: bool  # Answer.evidence includes a current state's turn
    cites_superseded: bool
    reason: str
    mentions: list[dict] = field(default_factory=list)
    judge: str = "structural"

    def as_dict(self) -> dict:
        return {
            "outcome": self.outcome,
            "current_named": self.current_named,
            "superseded_named": self.superseded_named,
            "cites_current": self.cites_current,
            "cites_superseded": self.cites_superseded,
            "reason": self.reason,
            "mentions": self.mentions,
            "judge": self.judge,
        }


@runtime_checkable
class Judge(Protocol):
    """Classifies one Track C answer. A judge must be deterministic for re-scoring (an LLM judge
    caches its responses) and must say its name and version, which go into the manifest and the
    report; a new version of a judge is a new configuration (a run does not resume across it)."""

    name: str
    version: str

    def classify(self, chain: UpdateChain, query: ChainQuery, answer: Answer) -> JudgeVerdict: ...
