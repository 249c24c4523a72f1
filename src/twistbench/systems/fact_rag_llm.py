"""fact-rag-llm: fact RAG with a Mem0-style LLM extractor (whitepaper §6.3 ii, §9; needs an
LLM endpoint).

Ingest: a session's turns go, `batch_turns` at a time, to the `extractor` prompt together with
the stored memories most like them (each turn's `related_k` nearest); the model replies with
operations, each citing the turns it comes from:
- ADD a new fact (a new memory, id m<n>, sources = its turns);
- UPDATE a stored memory (new text; its sources gain the new turns);
- DELETE a stored memory the turns show is no longer true.
An operation naming a memory the model was not shown, citing no turn of the batch, or missing
its text is not applied, and counted (`rejected_ops`, in the run manifest's system
diagnostics); a reply that is not {"operations": [...]} is the session's ingest error.

Recall returns the `k` nearest memories (ids, texts, source turns, scores, dates): the harness's
answerer answers from them, as around Mem0. retrieve and lineage serve the TIAP audit (facts
are canonical, non-raw memories). No tensions, no draft check, no governance: it declines A, B
and D, like the memory layers it stands for.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from twistbench.contract import BaseSystem, Capabilities
from twistbench.llm import load_prompt
from twistbench.llm.prompts import format_lines
from twistbench.model import Event, IngestResult, LineageRecord, Memories, Memory, ScoredMemory
from twistbench.retrieval import Retriever, make_retriever, turn_text
from twistbench.systems.flat_rag import check_retriever
from twistbench.systems.llm_common import (
    LLMReplyError,
    prompt_identity,
    system_client,
    turn_lines,
)

EXTRACT_PROMPT = "extractor"


@dataclass
class StoredFact:
    id: str
    text: str
    sources: list[str]
    timestamp: datetime


class FactRAGLLM(BaseSystem):
    """See the module docstring."""

    name = "fact-rag-llm"
    capabilities = Capabilities(recall=True, retrieve=True, lineage=True)

    def __init__(self, retriever: str = "dense", k: int = 10, batch_turns: int = 8,
                 related_k: int = 3, max_related: int = 20, model: str | None = None) -> None:
        self.retriever_name = check_retriever(retriever)
        if min(k, batch_turns, related_k, max_related) < 1:
            raise ValueError("k, batch_turns, related_k and max_related must be >= 1")
        self.k = k
        self.batch_turns = batch_turns
        self.related_k = related_k
        self.max_related = max_related
        self.client = system_client(model)
        self.rejected_ops = 0
        self._lock = threading.Lock()
        self.reset("")

    def config(self) -> dict[str, Any]:
        return {"retriever": self.retriever_name, "k": self.k, "batch_turns": self.batch_turns,
                "related_k": self.related_k, "max_related": self.max_related,
                **prompt_identity([EXTRACT_PROMPT], self.client)}

    def diagnostics(self) -> dict[str, int]:
        """Counted at the end of a run into the manifest (not part of its identity)."""
        return {"rejected_ops": self.rejected_ops}

    def reset(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.facts: dict[str, StoredFact] = {}
        self._next = 1
        self._index: Retriever = make_retriever(self.retriever_name)
        self._dirty = False

    # -- the store ----------------------------------------------------------------------------

    def _search(self, query: str, k: int) -> list[tuple[str, float]]:
        if self._dirty:
            ids = list(self.facts)
            self._index.index(ids, [self.facts[i].text for i in ids])
            self._dirty = False
        return self._index.search(query, k) if self.facts else []

    def _related(self, turns: Sequence[Event]) -> list[StoredFact]:
        picked: dict[str, float] = {}
        for ev in turns:
            for i, s in self._search(turn_text(ev), self.related_k):
                picked[i] = max(s, picked.get(i, s))
        best = sorted(picked, key=lambda i: -picked[i])[: self.max_related]
        order = {i: n for n, i in enumerate(self.facts)}
        return [self.facts[i] for i in sorted(best, key=order.__getitem__)]

    # -- ingest -------------------------------------------------------------------------------

    def ingest(self, events: Sequence[Event]) -> IngestResult:
        events = list(events)
        for start in range(0, len(events), self.batch_turns):
            self._extract(events[start:start + self.batch_turns])
        return IngestResult()

    def _extract(self, turns: list[Event]) -> None:
        shown = self._related(turns)
        messages = load_prompt(EXTRACT_PROMPT).render(
            memories=format_lines((f.id, f.text) for f in shown) or "(none)",
            turns=turn_lines(turns))
        reply = self.client.complete(messages, json=True)
        ops = reply.data.get("operations") if isinstance(reply.data, dict) else None
        if not isinstance(ops, list):
            raise LLMReplyError(f"no operations list in the reply: {reply.text[:200]!r}")
        by_turn = {e.id: e for e in turns}
        shown_ids = {f.id for f in shown}
        for op in ops:
            if not self._apply(op, by_turn, shown_ids):
                with self._lock:
                    self.rejected_ops += 1

    def _apply(self, op: Any, turns: dict[str, Event], shown: set[str]) -> bool:
        if not isinstance(op, dict):
            return False
        kind = str(op.get("op", "")).upper()
        cited = op.get("source_turns")
        sources = ([t for t in dict.fromkeys(cited) if isinstance(t, str) and t in turns]
                   if isinstance(cited, list) else [])
        text = op.get("text")
        if not sources:
            return False
        when = max(turns[t].timestamp for t in sources)
        if kind == "ADD" and isinstance(text, str) and text.strip():
            fid = f"m{self._next}"
            self._next += 1
            self.facts[fid] = StoredFact(fid, text.strip(), sources, when)
        elif kind in ("UPDATE", "DELETE") and op.get("id") in shown and op["id"] in self.facts:
            if kind == "DELETE":
                del self.facts[op["id"]]
            elif isinstance(text, str) and text.strip():
                old = self.facts[op["id"]]
                self.facts[op["id"]] = StoredFact(old.id, text.strip(),
                                                  list(dict.fromkeys(old.sources + sources)),
                                                  max(old.timestamp, when))
            else:
                return False
        else:
            return False
        self._dirty = True
        return True

    # -- reading ------------------------------------------------------------------------------

    def recall(self, query: str) -> Memories:
        return Memories(memories=[
            Memory(id=i, text=self.facts[i].text, sources=self.facts[i].sources, score=s,
                   timestamp=self.facts[i].timestamp) for i, s in self._search(query, self.k)])

    def retrieve(self, query: str, k: int) -> list[ScoredMemory]:
        return [ScoredMemory(id=i, score=s) for i, s in self._search(query, k)]

    def lineage(self) -> list[LineageRecord]:
        return [LineageRecord(memory_id=f.id, sources=f.sources, raw=False, canonical=True,
                              text=f.text) for f in self.facts.values()]
