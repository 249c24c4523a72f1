"""flat-rag: the "embed + retrieve + answer" baseline (whitepaper §6.3, §9).

Stores every raw turn as "Speaker: text" in one retriever. `recall` answers extractively with the
top retrieved turn(s) and cites them. It has no notion of contradiction, currency or safety:
- no tensions (neither online nor batch: it declines both);
- `check_alignment` answers aligned for every draft, because without an LLM endpoint it has no
  mechanism to judge a draft (the LLM variant belongs to the LLM issue);
- no write-time governance (Track D is N/A).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from twistbench.contract import BaseSystem, Capabilities
from twistbench.model import Answer, Event, IngestResult, LineageRecord, ScoredMemory, Verdict
from twistbench.retrieval import RETRIEVERS, Retriever, make_retriever

NO_ANSWER = "I don't know."


def turn_text(ev: Event) -> str:
    """How a turn is indexed: the speaker's name carries attribution for queries about people."""
    return f"{ev.speaker}: {ev.text}"


def check_retriever(name: str) -> str:
    if name not in RETRIEVERS:
        raise ValueError(f"retriever must be one of {', '.join(RETRIEVERS)}, not {name!r}")
    return name


class FlatRAG(BaseSystem):
    """Raw turns in a retriever; recall = the top turn(s), verbatim, with their ids."""

    name = "flat-rag"
    capabilities = Capabilities(recall=True, check_alignment=True, retrieve=True, lineage=True)

    def __init__(self, retriever: str = "dense", k: int = 5, answer_turns: int = 1) -> None:
        self.retriever_name = check_retriever(retriever)
        if k < 1 or answer_turns < 1:
            raise ValueError("k and answer_turns must be >= 1")
        self.k = k
        self.answer_turns = answer_turns
        self.reset("")

    def config(self) -> dict[str, Any]:
        return {"retriever": self.retriever_name, "k": self.k, "answer_turns": self.answer_turns,
                "alignment": "always aligned: no LLM endpoint configured, no mechanism"}

    def reset(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.events: dict[str, Event] = {}
        self.index: Retriever = make_retriever(self.retriever_name)

    def ingest(self, events: Sequence[Event]) -> IngestResult:
        new = [e for e in events if e.id not in self.events]
        for e in new:
            self.events[e.id] = e
        self.index.add([e.id for e in new], [turn_text(e) for e in new])
        return IngestResult()

    def recall(self, query: str) -> Answer:
        hits = self.index.search(query, max(self.k, self.answer_turns))[: self.answer_turns]
        if not hits:
            return Answer(text=NO_ANSWER, evidence=[])
        used = [self.events[i] for i, _ in hits]
        return Answer(text=" / ".join(turn_text(e) for e in used), evidence=[e.id for e in used])

    def check_alignment(self, draft: str) -> Verdict:
        return Verdict(aligned=True, conflicts=[])

    def retrieve(self, query: str, k: int) -> list[ScoredMemory]:
        return [ScoredMemory(id=i, score=s) for i, s in self.index.search(query, k)]

    def lineage(self) -> list[LineageRecord]:
        return [LineageRecord(memory_id=e.id, sources=[e.id], raw=True, canonical=False,
                              text=turn_text(e)) for e in self.events.values()]
