"""full-context: the whole record in the model's context, no retrieval (whitepaper §9; needs an
LLM endpoint).

Every turn ingested so far goes into each prompt, as long as the record fits `context_tokens`
(estimated at one token per four characters, the client's own estimate): recall with the
`answerer` prompt (every turn as a memory), check_alignment with `draft_alignment`, and online
tensions after each session with `session_tensions` (every earlier turn against the new
session). A call whose record does not fit is declined for that item (an error saying so,
never a guess from part of the record).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from twistbench.answerers.llm import PROMPT as ANSWER_PROMPT
from twistbench.answerers.llm import LLMAnswerer
from twistbench.contract import BaseSystem, Capabilities
from twistbench.llm.usage import estimate_tokens
from twistbench.model import Answer, Event, IngestResult, Verdict
from twistbench.systems.llm_common import (
    ALIGN_PROMPT,
    TENSION_PROMPT,
    CitationCounter,
    answer_from_turns,
    ask_tensions,
    ask_verdict,
    prompt_identity,
    system_client,
    turn_lines,
)


class RecordTooLong(NotImplementedError):
    """The record does not fit the context budget: the call is declined."""


class FullContext(BaseSystem):
    """See the module docstring."""

    name = "full-context"
    capabilities = Capabilities(online_tensions=True, recall=True, check_alignment=True)

    def __init__(self, context_tokens: int = 100_000, model: str | None = None) -> None:
        if context_tokens < 1000:
            raise ValueError("context_tokens must be >= 1000")
        self.context_tokens = context_tokens
        self.client = system_client(model)
        self.answerer = LLMAnswerer(client=self.client)
        self.citations = CitationCounter()
        self.reset("")

    def config(self) -> dict[str, Any]:
        return {"context_tokens": self.context_tokens, "token_estimate": "characters / 4",
                **prompt_identity([ALIGN_PROMPT, TENSION_PROMPT, ANSWER_PROMPT], self.client)}

    def diagnostics(self) -> dict[str, int]:
        """Counted at the end of a run into the manifest (not part of its identity)."""
        return {"dropped_citations": self.citations.dropped}

    def reset(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.events: dict[str, Event] = {}
        self._tension_count = 0

    def _fits(self, events: Sequence[Event], what: str) -> None:
        tokens = estimate_tokens(turn_lines(events))
        if tokens > self.context_tokens:
            raise RecordTooLong(f"{self.name} declines {what}: the record is ~{tokens:,} "
                                f"tokens, over its context budget of {self.context_tokens:,}")

    def ingest(self, events: Sequence[Event]) -> IngestResult:
        new = [e for e in events if e.id not in self.events]
        earlier = list(self.events.values())
        for e in new:
            self.events[e.id] = e
        if not new or not earlier:
            return IngestResult()
        self._fits(earlier + new, "the tension check of this session")
        tensions = ask_tensions(self.client, earlier, new, self.citations,
                                self._tension_count + 1)
        self._tension_count += len(tensions)
        return IngestResult(tensions=tensions)

    def recall(self, query: str) -> Answer:
        record = list(self.events.values())
        self._fits(record, "recall")
        return answer_from_turns(self.answerer, query, [(e, None) for e in record])

    def check_alignment(self, draft: str) -> Verdict:
        record = list(self.events.values())
        self._fits(record, "check_alignment")
        return ask_verdict(self.client, record, draft, self.citations)
