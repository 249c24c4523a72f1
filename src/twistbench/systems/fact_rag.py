"""fact-rag: a Mem0-style fact-extraction baseline (whitepaper §6.3 ii, §9).

At ingest every turn becomes up to `max_facts` dated atomic facts (retrieval/parser.py: sentence
split, first person rewritten to the speaker's name, session date attached). Only facts are
stored and retrieved; each keeps its source turn (the lineage the TIAP audit needs: facts are
canonical, non-raw memories).

`recall` retrieves the top `k` facts, treats as "matching" every fact scoring at least
`match_ratio` of the best score, and answers with the most recent of them (latest timestamp,
then latest ingested): dated facts give it a notion of currency that flat RAG lacks. It has no
conflict detection: no tensions, and every draft is aligned (no mechanism to judge one).

`keep_raw=True` (`-S keep_raw=true`) also stores every raw turn beside its facts, for the TIAP
audit: `retrieve` then ranks turns and facts in one index and the lineage lists the turns as
raw, non-canonical memories, so Raw, Source and Canonical all apply to its traces. Recall and
everything else still use the facts alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from twistbench.contract import BaseSystem, Capabilities
from twistbench.model import Answer, Event, IngestResult, LineageRecord, ScoredMemory, Verdict
from twistbench.retrieval import Retriever, make_retriever, turn_text
from twistbench.retrieval.parser import Fact, extract_facts
from twistbench.systems.flat_rag import NO_ANSWER, check_retriever


def fact_body(text: str) -> str:
    """A parser fact without its "On 8 May 2023, " date prefix."""
    return re.sub(r"^On \d{1,2} [A-Z][a-z]+ \d{4}, ", "", text)


class FactRAG(BaseSystem):
    """Dated facts in a retriever; recall = the most recent matching fact, citing its turn."""

    name = "fact-rag"
    capabilities = Capabilities(recall=True, check_alignment=True, retrieve=True, lineage=True)

    def __init__(self, retriever: str = "dense", max_facts: int = 5, k: int = 10,
                 match_ratio: float = 0.8, keep_raw: bool = False) -> None:
        self.retriever_name = check_retriever(retriever)
        if max_facts < 1 or k < 1:
            raise ValueError("max_facts and k must be >= 1")
        if not 0.0 < match_ratio <= 1.0:
            raise ValueError("match_ratio must be in (0, 1]")
        self.max_facts = max_facts
        self.k = k
        self.match_ratio = match_ratio
        self.keep_raw = keep_raw
        self.reset("")

    def config(self) -> dict[str, Any]:
        config = {"retriever": self.retriever_name, "max_facts": self.max_facts, "k": self.k,
                  "match_ratio": self.match_ratio, "parser": "rule-based (retrieval/parser.py)",
                  "alignment": "always aligned: no mechanism"}
        if self.keep_raw:  # only when set: the runs' fingerprints predate the option
            config["keep_raw"] = True
        return config

    def reset(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.facts: dict[str, Fact] = {}
        self.order: dict[str, int] = {}
        self.index: Retriever = make_retriever(self.retriever_name)
        # keep_raw: raw turns and facts in one index, so `retrieve` ranks them together
        self.turns: dict[str, str] = {}
        self.store: Retriever | None = make_retriever(self.retriever_name) if self.keep_raw \
            else None

    def ingest(self, events: Sequence[Event]) -> IngestResult:
        new: list[Fact] = []
        for ev in events:
            for f in extract_facts(ev, self.max_facts):
                if f.id not in self.facts:
                    self.order[f.id] = len(self.facts)
                    self.facts[f.id] = f
                    new.append(f)
        # The date is metadata (it is in the answer text); embedding it would make every fact
        # of one day look alike and costs tokens.
        self.index.add([f.id for f in new], [fact_body(f.text) for f in new])
        if self.store is not None:
            ids: list[str] = []
            texts: list[str] = []
            for ev in events:
                if ev.id not in self.turns and ev.id not in self.facts:
                    self.turns[ev.id] = turn_text(ev)
                    ids.append(ev.id)
                    texts.append(self.turns[ev.id])
            self.store.add(ids + [f.id for f in new], texts + [fact_body(f.text) for f in new])
        return IngestResult()

    def matching(self, query: str) -> list[tuple[Fact, float]]:
        """Retrieved facts within match_ratio of the best score, best first."""
        hits = self.index.search(query, self.k)
        if not hits:
            return []
        best = hits[0][1]
        floor = best * self.match_ratio if best > 0 else best
        return [(self.facts[i], s) for i, s in hits if s >= floor]

    def recall(self, query: str) -> Answer:
        cands = self.matching(query)
        if not cands:
            return Answer(text=NO_ANSWER, evidence=[])
        fact = max((f for f, _ in cands), key=lambda f: (f.timestamp, self.order[f.id]))
        return Answer(text=fact.text, evidence=[fact.source])

    def check_alignment(self, draft: str) -> Verdict:
        return Verdict(aligned=True, conflicts=[])

    def retrieve(self, query: str, k: int) -> list[ScoredMemory]:
        index = self.store if self.store is not None else self.index
        return [ScoredMemory(id=i, score=s) for i, s in index.search(query, k)]

    def lineage(self) -> list[LineageRecord]:
        turns = [LineageRecord(memory_id=i, sources=[i], raw=True, canonical=False, text=t)
                 for i, t in self.turns.items()]
        return turns + [LineageRecord(memory_id=f.id, sources=[f.source], raw=False,
                                      canonical=True, text=f.text) for f in self.facts.values()]
