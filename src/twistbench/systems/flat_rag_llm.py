"""flat-rag-llm: flat RAG with a model around it, the public TWIST flat-RAG baseline
(whitepaper §6.3 i, §9; needs an LLM endpoint).

The same store as flat-rag (every raw turn, one retriever). Around it, one model call per
question, with no machinery for contradiction, currency or safety:
- check_alignment: the draft and its `k` nearest turns -> the `draft_alignment` prompt ->
  a verdict citing the turns it contradicts (as the public baseline: retrieve 12, ask once);
- tensions, online: after each session but the first, the new session's turns and, for each of
  them, its `tension_k` nearest earlier turns of the same speaker -> the `session_tensions`
  prompt -> tensions citing earlier and new turns;
- recall: the `answer_k` nearest turns -> the `answerer` prompt (answerers/llm.py) -> an answer
  citing the turns it used.
No write-time governance (Track D is N/A), no resolve.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from twistbench.answerers.llm import PROMPT as ANSWER_PROMPT
from twistbench.answerers.llm import LLMAnswerer
from twistbench.contract import Capabilities
from twistbench.model import Answer, Event, IngestResult, Verdict
from twistbench.retrieval import turn_text
from twistbench.systems.flat_rag import FlatRAG
from twistbench.systems.llm_common import (
    ALIGN_PROMPT,
    TENSION_PROMPT,
    CitationCounter,
    LLMReplyError,
    answer_from_turns,
    ask_tensions,
    ask_verdict,
    prompt_identity,
    system_client,
)


class FlatRAGLLM(FlatRAG):
    """See the module docstring."""

    name = "flat-rag-llm"
    capabilities = Capabilities(online_tensions=True, recall=True, check_alignment=True,
                                retrieve=True, lineage=True)

    def __init__(self, retriever: str = "dense", k: int = 12, answer_k: int = 10,
                 tension_k: int = 3, max_earlier: int = 60, model: str | None = None) -> None:
        if min(k, answer_k, tension_k, max_earlier) < 1:
            raise ValueError("k, answer_k, tension_k and max_earlier must be >= 1")
        super().__init__(retriever=retriever, k=k)
        self.answer_k = answer_k
        self.tension_k = tension_k
        self.max_earlier = max_earlier
        self.client = system_client(model)
        self.answerer = LLMAnswerer(client=self.client)
        self.citations = CitationCounter()

    def config(self) -> dict[str, Any]:
        return {"retriever": self.retriever_name, "k": self.k, "answer_k": self.answer_k,
                "tension_k": self.tension_k, "max_earlier": self.max_earlier,
                **prompt_identity([ALIGN_PROMPT, TENSION_PROMPT, ANSWER_PROMPT], self.client)}

    def diagnostics(self) -> dict[str, int]:
        """Counted at the end of a run into the manifest (not part of its identity)."""
        return {"dropped_citations": self.citations.dropped}

    def reset(self, conversation_id: str) -> None:
        super().reset(conversation_id)
        self._tension_count = 0

    def ingest(self, events: Sequence[Event]) -> IngestResult:
        new = [e for e in events if e.id not in self.events]
        earlier_before = set(self.events)
        super().ingest(events)
        if not new or not earlier_before:
            return IngestResult()
        earlier = self._earlier_for(new, earlier_before)
        if not earlier:
            return IngestResult()
        tensions = ask_tensions(self.client, earlier, new, self.citations,
                                self._tension_count + 1)
        self._tension_count += len(tensions)
        return IngestResult(tensions=tensions)

    def _earlier_for(self, new: list[Event], earlier: set[str]) -> list[Event]:
        """For each new turn, its tension_k nearest earlier turns of the same speaker; in
        record order, at most max_earlier."""
        depth = max(self.tension_k * 8, 24)  # enough hits to find the speaker's own turns
        picked: dict[str, float] = {}
        for ev, hits in zip(new, self.index.search_many([turn_text(e) for e in new], depth)):
            mine = [(i, s) for i, s in hits if i in earlier
                    and self.events[i].speaker == ev.speaker][: self.tension_k]
            for i, s in mine:
                picked[i] = max(s, picked.get(i, s))
        best = sorted(picked, key=lambda i: -picked[i])[: self.max_earlier]
        order = {i: n for n, i in enumerate(self.events)}
        return [self.events[i] for i in sorted(best, key=order.__getitem__)]

    def recall(self, query: str) -> Answer:
        hits = self.index.search(query, self.answer_k)
        return answer_from_turns(self.answerer, query, [(self.events[i], s) for i, s in hits])

    def check_alignment(self, draft: str) -> Verdict:
        shown = [self.events[i] for i, _ in self.index.search(draft, self.k)]
        return ask_verdict(self.client, shown, draft, self.citations)

    def flag_tensions(self) -> list:
        raise NotImplementedError("flat-rag-llm reports tensions online, after each session")


__all__ = ["FlatRAGLLM", "LLMReplyError"]
