"""What an answerer is: it turns the memories a system retrieved into an Answer.

Memory layers (Mem0, Zep, Letta, MemoryOS) return memories, not answers; around them an
answerer model writes the answer. The harness does the same when `recall` returns `Memories`:
the run's answerer (`twist run --answerer NAME`) answers, and the Answer records what was
retrieved and who answered. The answerer is part of the run's identity: its `identity()` goes
into the manifest and the config fingerprint, so a run never resumes across another answerer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from twistbench.model import Answer, Memory

# Said when nothing was retrieved; LoCoMo's adversarial rule reads "not mentioned" as an
# abstention, which is what it is.
NO_MEMORY_ANSWER = "Not mentioned in the retrieved memories."


class AnswererError(Exception):
    """The answerer could not answer (its model failed or replied out of form): an error for
    the item, never a score. `kind` is a short label for counting."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


@runtime_checkable
class Answerer(Protocol):
    name: str
    version: str

    def identity(self) -> dict[str, Any]:
        """Everything that changes its answers (name, version, model, prompt sha256)."""

    def answer(self, question: str, memories: Sequence[Memory]) -> Answer:
        """An Answer to `question` from `memories` only; evidence = source turn ids."""


def sources_of(memories: Sequence[Memory]) -> list[str]:
    """The source turn ids of these memories, each once, in order."""
    return list(dict.fromkeys(s for m in memories for s in m.sources))


def memory_date(memory: Memory) -> str:
    """'8 May 2023' for a memory with a timestamp, else ''."""
    ts = memory.timestamp
    return f"{ts.day} {ts:%B %Y}" if ts is not None else ""
