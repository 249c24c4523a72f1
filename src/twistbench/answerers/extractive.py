"""The offline extractive answerer (the default): no model, no network.

From the memories a system retrieved, in the system's order, it returns the one sentence that
shares the most content words with the question (lower-cased words of letters and digits, a
short stop-word list removed, a plural "s" dropped); a tie goes to the memory the system
ranked higher, then the earlier sentence. The answer cites that memory's source turns. When
no sentence shares a word, the top memory's first sentence is the answer: the system ranked
it first. With no memories the answer says nothing was found ("not mentioned", which LoCoMo's
adversarial rule reads as an abstention).

It is a floor, not a reader: it never combines two memories, resolves a relative date or
states a value in other words. Every report that uses it says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from twistbench.answerers.base import NO_MEMORY_ANSWER
from twistbench.model import Answer, Memory

_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)")
STOPWORDS = frozenset("""
a an the and or but if of to in on at by for with from as into about over after before
is are was were be been being am do does did done have has had having will would shall should
can could may might must i you he she it we they me him her us them my your his its our their
this that these those what which who whom whose when where why how there here not no yes so
than then too very just also any some all each every more most other such only own same
""".split())


def content_words(text: str) -> set[str]:
    out = set()
    for word in _WORD.findall(text.lower()):
        if word in STOPWORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.add(word)
    return out


def sentences(text: str) -> list[str]:
    parts = [p.strip() for p in _SENTENCE.split(" ".join(text.split()))]
    return [p for p in parts if p] or [text.strip()]


class ExtractiveAnswerer:
    """See the module docstring."""

    name = "extractive"
    version = "1"

    def identity(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "model": None,
                "rule": "the retrieved sentence sharing the most content words with the "
                        "question; ties to the system's higher-ranked memory"}

    def answer(self, question: str, memories: Sequence[Memory]) -> Answer:
        if not memories:
            return Answer(text=NO_MEMORY_ANSWER, evidence=[], retrieved=[],
                          answered_by=self.name)
        asked = content_words(question)
        best: tuple[int, int, int] | None = None
        chosen: tuple[Memory, str] | None = None
        for rank, memory in enumerate(memories):
            for pos, sentence in enumerate(sentences(memory.text)):
                key = (len(asked & content_words(sentence)), -rank, -pos)
                if best is None or key > best:
                    best, chosen = key, (memory, sentence)
        assert chosen is not None and best is not None
        if best[0] == 0:
            chosen = (memories[0], sentences(memories[0].text)[0])
        memory, sentence = chosen
        return Answer(text=sentence, evidence=list(dict.fromkeys(memory.sources)),
                      retrieved=list(memories), answered_by=self.name)
