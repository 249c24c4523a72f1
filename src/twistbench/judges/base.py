"""What a judge of free-text answers is: the Track C outcomes, the verdict, the protocol.

A judge is chosen by name (`twist run --judge NAME`, judges/__init__.py) and recorded in the run
manifest from the object itself (`identity()`: name, version, model and prompt sha256 where it
has them). It classifies Track C answers (`classify`) and, when it also has `judge_qa`, grades
LoCoMo answers CORRECT / WRONG against the gold (the J score). A judgement it cannot make (its
model failed or replied out of form) raises JudgeError: the item's judgement is an error,
counted and shown, never a score.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

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


class JudgeError(Exception):
    """A judgement that could not be made. `kind` is a short label for counting."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class QACase:
    """One LoCoMo answer to grade: the question, its gold answer and category (1-4)."""

    question: str
    gold: str
    answer: str
    category: int


@dataclass
class QAVerdict:
    correct: bool
    reason: str
    judge: str

    def as_dict(self) -> dict[str, Any]:
        return {"correct": self.correct, "reason": self.reason, "judge": self.judge}


@runtime_checkable
class QAJudge(Protocol):
    """A judge that also grades LoCoMo answers (CORRECT / WRONG, the J protocol)."""

    name: str
    version: str

    def judge_qa(self, case: QACase) -> QAVerdict: ...


ChainCase = tuple[UpdateChain, ChainQuery, Answer]


def classify_all(judge: Judge, cases: Sequence[ChainCase]) -> list[JudgeVerdict | JudgeError]:
    """Every case classified, a JudgeError in place of each that failed; in one batch when the
    judge offers `classify_many` (an LLM judge asks its model concurrently)."""
    many = getattr(judge, "classify_many", None)
    if callable(many):
        return list(many(cases))
    return [caught(lambda c=case: judge.classify(*c)) for case in cases]


def judge_qa_all(judge: QAJudge, cases: Sequence[QACase]) -> list[QAVerdict | JudgeError]:
    """Every LoCoMo case graded, a JudgeError in place of each that failed (batched when the
    judge offers `judge_qa_many`)."""
    many = getattr(judge, "judge_qa_many", None)
    if callable(many):
        return list(many(cases))
    return [caught(lambda c=case: judge.judge_qa(c)) for case in cases]


def caught(judgement: Callable[[], Any]) -> Any:
    """judgement(), or the JudgeError it raised (a failed judgement stays in its place)."""
    try:
        return judgement()
    except JudgeError as exc:
        return exc


def judgement_record(judgement: JudgeVerdict | QAVerdict | JudgeError) -> dict[str, Any]:
    """A judgement as a record stores it and the item views read it: the verdict's fields, or
    {"judge_error": {"kind", "message"}} for a judgement that failed (message cut to 500
    characters: a model's whole reply can be long)."""
    if isinstance(judgement, JudgeError):
        return {"judge_error": {"kind": judgement.kind, "message": judgement.message[:500]}}
    return judgement.as_dict()


def judge_identity(judge: Judge) -> dict[str, Any]:
    """What identifies a judge's judgements: its identity() where it has one, else its name
    and version (a plugin judge)."""
    ident = getattr(judge, "identity", None)
    if callable(ident):
        return dict(ident())
    return {"name": judge.name, "version": str(getattr(judge, "version", ""))}
