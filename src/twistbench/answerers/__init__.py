"""Answerers: what turns a memory layer's retrieved Memories into an Answer (`--answerer`).

- extractive (default): offline, no model; the best-matching retrieved sentence (extractive.py).
- llm: a model with the `answerer` prompt, through the ANSWERER role's endpoint (llm.py).

More register under the `twistbench.answerers` entry-point group, or `--answerer module:Class`.
`answer_recall` is the one place a recall reply becomes an Answer.
"""

from __future__ import annotations

from typing import Any

from twistbench.answerers.base import NO_MEMORY_ANSWER, Answerer, AnswererError
from twistbench.defaults import DEFAULT_ANSWERER
from twistbench.model import Answer, Memories
from twistbench.plugins import build, resolve

ENTRY_POINT_GROUP = "twistbench.answerers"
ANSWERERS: dict[str, str] = {
    "extractive": "twistbench.answerers.extractive:ExtractiveAnswerer",
    "llm": "twistbench.answerers.llm:LLMAnswerer",
}


def make_answerer(spec: str = DEFAULT_ANSWERER, **options: Any) -> Answerer:
    """The answerer `spec` names; InputError when it cannot be built (an LLM answerer with no
    endpoint configured says which variables to set)."""
    cls = resolve(spec, table=ANSWERERS, group=ENTRY_POINT_GROUP, flag="--answerer",
                  what="answerer")
    return build(spec, cls, options, flag="--answerer", what="answerer", protocol=Answerer,
                 shape="a class with name, version, identity() and answer()")


def answerer_record(answerer: Answerer) -> dict[str, Any]:
    """What the manifest and the fingerprint record about the run's answerer."""
    return dict(answerer.identity())


def answer_recall(query: str, reply: Answer | Memories, answerer: Answerer) -> Answer:
    """The Answer for a recall reply: the system's own, or the answerer's from its memories.
    AnswererError when the answerer fails; ValueError when two memories share an id."""
    if isinstance(reply, Answer):
        return reply
    ids = [m.id for m in reply.memories]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"memories: id {dup!r} appears twice")
    answer = answerer.answer(query, reply.memories)
    return answer.model_copy(update={
        "retrieved": list(reply.memories),
        "answered_by": answer.answered_by or answerer.name})


__all__ = ["ANSWERERS", "DEFAULT_ANSWERER", "ENTRY_POINT_GROUP", "NO_MEMORY_ANSWER", "Answerer",
           "AnswererError", "answer_recall", "answerer_record", "make_answerer"]
