"""What the LLM reference systems share: their client, how they show turns to a model, and how
they read its JSON replies (whitepaper §9 baselines; flat_rag_llm.py, full_context.py,
fact_rag_llm.py).

A system's model is the SYSTEM role's (TWIST_SYSTEM_* over TWIST_LLM_*; `-S model=NAME`
overrides the name). Without an endpoint the system cannot be built: `twist run -s NAME` stops
with one line saying which variables to set, and `twist list systems` marks it. A reply out of
form (not the JSON the prompt asks for) raises LLMReplyError and a failed call raises LLMError:
either is that item's error, never a verdict. Ids a model cites that it was not shown are
dropped and counted (`dropped_citations` in the run manifest's system diagnostics), never
kept.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any

from twistbench.answerers.llm import LLMAnswerer
from twistbench.llm import LLMClient, load_prompt, role_config, shared_client
from twistbench.llm.prompts import format_lines
from twistbench.model import Answer, Conflict, Event, Memory, Tension, Verdict
from twistbench.retrieval import turn_text

ALIGN_PROMPT = "draft_alignment"
TENSION_PROMPT = "session_tensions"


class LLMReplyError(ValueError):
    """The model's reply is not the JSON its prompt asks for."""


def system_client(model: str | None = None) -> LLMClient:
    """The client of an LLM reference system: the SYSTEM role's shared client; InputError
    naming the variables when no endpoint is configured."""
    return shared_client(role_config("system", **({"model": model} if model else {})))


def event_date(ev: Event) -> str:
    ts = ev.timestamp
    return f"{ts.day} {ts:%B %Y}"


def turn_lines(events: Iterable[Event]) -> str:
    """'[id] 8 May 2023 Speaker: text' lines, the form the prompts read turns in."""
    return format_lines((e.id, f"{event_date(e)} {e.speaker}: {e.text}") for e in events)


def prompt_identity(names: Sequence[str], client: LLMClient) -> dict[str, Any]:
    """The model, its options and the prompts' sha256: what a system's config() records so
    that the run's fingerprint changes with any of them."""
    return {"model": client.config.model, "llm": client.config.identity(),
            "prompts": {n: load_prompt(n).sha256 for n in names}}


class CitationCounter:
    """Counts ids a model cited that it was not shown (thread-safe)."""

    def __init__(self) -> None:
        self.dropped = 0
        self._lock = threading.Lock()

    def keep(self, ids: Any, allowed: set[str]) -> list[str]:
        """The cited ids that were shown, in order, each once; others are counted."""
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise LLMReplyError(f"evidence is not a list of ids: {ids!r:.200}")
        kept = [i for i in dict.fromkeys(ids) if i in allowed]
        with self._lock:
            self.dropped += len(dict.fromkeys(ids)) - len(kept)
        return kept


def parse_verdict(data: Any, shown: set[str], citations: CitationCounter) -> Verdict:
    """{"aligned": bool, "conflicts": [{"evidence": [ids], "rationale": str}]} -> Verdict.
    An aligned draft carries no conflicts; a contradicting one keeps its conflicts, with the
    ids it was not shown dropped (a conflict left without evidence still says why)."""
    if not isinstance(data, dict) or not isinstance(data.get("aligned"), bool):
        raise LLMReplyError(f"no aligned true/false in the reply: {data!r:.200}")
    conflicts = data.get("conflicts", [])
    if not isinstance(conflicts, list):
        raise LLMReplyError(f"conflicts is not a list: {conflicts!r:.200}")
    if data["aligned"]:
        return Verdict(aligned=True, conflicts=[])
    out = []
    for c in conflicts:
        if not isinstance(c, dict):
            raise LLMReplyError(f"a conflict is not an object: {c!r:.200}")
        out.append(Conflict(evidence=citations.keep(c.get("evidence", []), shown),
                            rationale=str(c.get("rationale", ""))[:500]))
    return Verdict(aligned=False, conflicts=out)


def parse_tensions(data: Any, earlier: set[str], new: set[str], citations: CitationCounter,
                   next_id: int) -> list[Tension]:
    """{"tensions": [{"claim_evidence", "new_evidence", "rationale"}]} -> Tensions numbered
    from `next_id`; claim ids must be earlier turns shown, new ids turns of the new session; a
    tension left without either side is dropped."""
    if not isinstance(data, dict) or not isinstance(data.get("tensions"), list):
        raise LLMReplyError(f"no tensions list in the reply: {data!r:.200}")
    out: list[Tension] = []
    for t in data["tensions"]:
        if not isinstance(t, dict):
            raise LLMReplyError(f"a tension is not an object: {t!r:.200}")
        claim = citations.keep(t.get("claim_evidence", []), earlier)
        fresh = citations.keep(t.get("new_evidence", []), new)
        if claim and fresh:
            out.append(Tension(id=f"t{next_id + len(out)}", claim_evidence=claim,
                               new_evidence=fresh, rationale=str(t.get("rationale", ""))[:500]))
    return out


# -- the calls the turn-reading systems share (flat-rag-llm, full-context) ---------------------


def ask_tensions(client: LLMClient, earlier: Sequence[Event], new: Sequence[Event],
                 citations: CitationCounter, next_id: int) -> list[Tension]:
    """One `session_tensions` call: the earlier turns shown against the new session's."""
    messages = load_prompt(TENSION_PROMPT).render(earlier=turn_lines(earlier),
                                                  session=turn_lines(new))
    reply = client.complete(messages, json=True)
    return parse_tensions(reply.data, {e.id for e in earlier}, {e.id for e in new}, citations,
                          next_id)


def ask_verdict(client: LLMClient, shown: Sequence[Event], draft: str,
                citations: CitationCounter) -> Verdict:
    """One `draft_alignment` call: the draft against the record excerpts shown."""
    messages = load_prompt(ALIGN_PROMPT).render(context=turn_lines(shown), draft=draft)
    reply = client.complete(messages, json=True)
    return parse_verdict(reply.data, {e.id for e in shown}, citations)


def answer_from_turns(answerer: LLMAnswerer, query: str,
                      turns: Sequence[tuple[Event, float | None]]) -> Answer:
    """The `answerer` prompt over these turns (speaker names kept: who said it matters), as the
    system's own answer: not marked as written by the run's answerer."""
    memories = [Memory(id=e.id, text=turn_text(e), sources=[e.id], score=score,
                       timestamp=e.timestamp) for e, score in turns]
    answer = answerer.answer(query, memories)
    return answer.model_copy(update={"retrieved": None, "answered_by": None})
