"""The LLM answerer: the memories and the question go to a model with the `answerer` prompt
(llm/prompts/answerer.txt); it answers in JSON citing memory ids, and the Answer cites those
memories' source turns.

Its endpoint is the ANSWERER role's (TWIST_ANSWERER_* over TWIST_LLM_*); its identity (model,
prompt sha256, sampling options) goes into the run's manifest and fingerprint. A failed call or
a reply out of form (not JSON, no answer, evidence not a list of ids) is an AnswererError: the
item's error, never a score. Ids the model cites that were not among the memories are dropped
(counted in `unknown_citations`); with no memories retrieved no call is made.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from twistbench.answerers.base import NO_MEMORY_ANSWER, AnswererError, memory_date, sources_of
from twistbench.llm import LLMClient, LLMError, load_prompt, role_config, shared_client
from twistbench.llm.prompts import format_lines
from twistbench.model import Answer, Memory

PROMPT = "answerer"


def memory_lines(memories: Sequence[Memory]) -> str:
    """'[id] date text' lines, the form the answerer prompt reads."""
    return format_lines((m.id, f"{memory_date(m)} {m.text}".strip()) for m in memories)


class LLMAnswerer:
    """See the module docstring. `model` overrides the role's configured model."""

    name = "llm"
    version = "1"

    def __init__(self, model: str | None = None, client: LLMClient | None = None,
                 max_tokens: int | None = 400):
        self.client = client or shared_client(
            role_config("answerer", **({"model": model} if model else {})))
        self.prompt = load_prompt(PROMPT)
        self.max_tokens = max_tokens
        self.unknown_citations = 0
        self._lock = threading.Lock()

    def identity(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "model": self.client.config.model,
                "prompt": PROMPT, "prompt_sha256": self.prompt.sha256,
                "llm": self.client.config.identity(), "max_tokens": self.max_tokens}

    def answer(self, question: str, memories: Sequence[Memory]) -> Answer:
        if not memories:
            return Answer(text=NO_MEMORY_ANSWER, evidence=[], retrieved=[],
                          answered_by=self.label)
        messages = self.prompt.render(memories=memory_lines(memories), question=question)
        try:
            reply = self.client.complete(messages, json=True, max_tokens=self.max_tokens)
        except LLMError as exc:
            raise AnswererError(exc.kind, exc.message) from None
        data = reply.data
        text = data.get("answer") if isinstance(data, dict) else None
        cited = data.get("evidence", []) if isinstance(data, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise AnswererError("malformed_reply", "the reply has no answer string: "
                                f"{reply.text[:200]!r}")
        if not isinstance(cited, list) or not all(isinstance(c, str) for c in cited):
            raise AnswererError("malformed_reply", "evidence is not a list of memory ids: "
                                f"{reply.text[:200]!r}")
        by_id: dict[str, Memory] = {}
        for m in memories:
            by_id.setdefault(m.id, m)
        used = [by_id[c] for c in dict.fromkeys(cited) if c in by_id]
        with self._lock:
            self.unknown_citations += sum(c not in by_id for c in cited)
        return Answer(text=text.strip(), evidence=sources_of(used), retrieved=list(memories),
                      answered_by=self.label)

    @property
    def label(self) -> str:
        return f"{self.name}:{self.client.config.model}"
