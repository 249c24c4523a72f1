"""oracle: answers from the gold, handed over through the explicit gold channel.

The runner calls `receive_gold(dataset)` only for registry entries with gold_channel=True; no
track ever passes gold to a system. The oracle maps every query, probe or draft text back to its
gold item by exact (whitespace- and case-normalised) text within the current conversation, then:

- Track A: after ingesting the session that holds a reversal arc's last reversal turn, emits a
  Tension(claim=anchor, new=reversal); `flag_tensions` returns all of them (batch mode);
- Track C: likewise a Tension(claim=superseded state, new=next state) for each change of a
  genuine update chain (never between coexisting facts): Track A counts these apart, and they
  are what the post-resolution sub-track resolves;
- Track B: the gold verdict, citing the gold evidence for contradicting drafts;
- Track C: current queries and post-resolution queries -> the current value(s); history
  queries -> every state in order, marked ("X, changed from Y");
- Track D: refuses PII and crisis probes without naming the value; answers emotional probes with
  the emotional turn (cited); at ingest emits a Referral and a content-free AuditRecord for
  crisis turns and an AuditRecord for PII turns;
- LoCoMo QA: the gold answer with its evidence.

Its purpose is the ceiling check of the separability audit: below 0.95 on a headline metric,
an item or a scorer is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from twistbench.contract import BaseSystem, Capabilities
from twistbench.model import (
    Answer,
    AuditRecord,
    ChainQuery,
    Conflict,
    CrisisPlant,
    Dataset,
    Draft,
    EmotionalHardNegative,
    Event,
    IngestResult,
    LineageRecord,
    PIIPlant,
    QAItem,
    Referral,
    ReversalArc,
    ScoredMemory,
    Tension,
    UpdateChain,
    Verdict,
)

REFUSAL = "I can't share that: it was withheld from memory when it was written."
NOT_MENTIONED = "Not mentioned in the conversation."
UNKNOWN = "I don't know."
REFERRAL_MESSAGE = ("This message may describe a person at risk. Please point them to a crisis "
                    "line or emergency services and follow your escalation policy.")


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


class Oracle(BaseSystem):
    """Reads the gold through GoldReader.receive_gold; everything else is a lookup."""

    name = "oracle"
    capabilities = Capabilities(online_tensions=True, batch_tensions=True, check_alignment=True,
                                recall=True, resolve=True, safety=True, retrieve=True,
                                lineage=True)

    def __init__(self) -> None:
        self.dataset: Dataset | None = None
        self.reset("")

    def config(self) -> dict[str, Any]:
        return {"gold_channel": True, "dataset": self.dataset.name if self.dataset else None}

    # -- gold ---------------------------------------------------------------------------------

    def receive_gold(self, dataset: Dataset) -> None:
        self.dataset = dataset
        # (conversation, normalised text) -> [(kind, item, sub)]
        self.by_text: dict[tuple[str, str], list[tuple[str, Any, Any]]] = {}
        for d in dataset.drafts:
            self._put(d.conversation, d.text, ("draft", d, None))
        for ch in dataset.update_chains:
            for q in ch.queries:
                self._put(ch.conversation, q.text, ("chain", ch, q))
        for p in dataset.pii_plants:
            for pr in p.probes:
                self._put(p.conversation, pr.text, ("pii", p, pr))
        for c in dataset.crisis_plants:
            for pr in c.probes:
                self._put(c.conversation, pr.text, ("crisis", c, pr))
        for e in dataset.emotional_negatives:
            self._put(e.conversation, e.probe.text, ("emotional", e, e.probe))
        for qa in dataset.qa:
            self._put(qa.conversation, qa.question, ("qa", qa, None))

    def _put(self, conv: str, text: str, entry: tuple[str, Any, Any]) -> None:
        self.by_text.setdefault((conv, norm(text)), []).append(entry)

    def _lookup(self, text: str) -> tuple[str, Any, Any] | None:
        if self.dataset is None:
            raise RuntimeError("oracle has no gold: the runner must open its gold channel")
        entries = self.by_text.get((self.conversation_id, norm(text)), [])
        if not entries:
            return None
        # Several items with one text: a safety refusal must win over an answer (never leak).
        rank = {"pii": 0, "crisis": 1, "draft": 2, "chain": 3, "emotional": 4, "qa": 5}
        return min(entries, key=lambda e: rank[e[0]])

    # -- contract -----------------------------------------------------------------------------

    def reset(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.events: dict[str, Event] = {}
        self.tensions: list[Tension] = []
        self.resolved: set[str] = set()

    def _arcs(self) -> list[ReversalArc]:
        return self.dataset.items_of(self.conversation_id, "reversal_arcs") if self.dataset else []

    def ingest(self, events: Sequence[Event]) -> IngestResult:
        if self.dataset is None:
            raise RuntimeError("oracle has no gold: the runner must open its gold channel")
        for e in events:
            self.events[e.id] = e
        here = {e.id for e in events}
        out = IngestResult()
        for arc in self._arcs():
            if self._last_turn(arc.reversal) in here:
                t = Tension(id=f"oracle:{arc.id}", claim_evidence=list(arc.anchor),
                            new_evidence=list(arc.reversal),
                            rationale=f"{arc.speaker} reversed their stance on "
                                      f"{arc.topic or 'a topic'}")
                self.tensions.append(t)
                out.tensions.append(t)
        for ch in self.dataset.items_of(self.conversation_id, "update_chains"):
            ch: UpdateChain
            if ch.family == "coexisting" or all(st.current for st in ch.states):
                continue  # coexisting facts are not a change of belief
            for k in range(len(ch.states) - 1):
                old, newer = ch.states[k], ch.states[k + 1]
                if old.current or self._last_turn(newer.turns) not in here:
                    continue
                t = Tension(id=f"oracle:{ch.id}:{k}", claim_evidence=list(old.turns),
                            new_evidence=list(newer.turns),
                            rationale=f"{ch.speaker}: {ch.subject or 'a fact'} changed")
                self.tensions.append(t)
                out.tensions.append(t)
        for c in self.dataset.items_of(self.conversation_id, "crisis_plants"):
            c: CrisisPlant
            if c.turn in here:
                out.referrals.append(Referral(turn=c.turn, kind="crisis", message=REFERRAL_MESSAGE))
                out.audit_records.append(AuditRecord(turn=c.turn, category="crisis",
                                                     action="suppressed"))
        for p in self.dataset.items_of(self.conversation_id, "pii_plants"):
            p: PIIPlant
            if p.turn in here:
                out.audit_records.append(AuditRecord(turn=p.turn, category="pii", action="redacted",
                                                     note=f"{p.kind} withheld"))
        return out

    def _last_turn(self, turns: list[str]) -> str:
        """The reversal turn ingested last (ids are listed in any order in a key)."""
        conv = self.dataset.conversation(self.conversation_id)  # type: ignore[union-attr]
        pos = {e.id: i for i, e in enumerate(conv.events)}
        return max(turns, key=lambda t: pos.get(t, -1))

    def flag_tensions(self) -> list[Tension]:
        return list(self.tensions)

    def recall(self, query: str) -> Answer:
        hit = self._lookup(query)
        if hit is None:
            return Answer(text=UNKNOWN, evidence=[])
        kind, item, sub = hit
        if kind == "chain":
            return self._chain_answer(item, sub)
        if kind in ("pii", "crisis"):
            return Answer(text=REFUSAL, evidence=[])
        if kind == "emotional":
            item: EmotionalHardNegative
            turn = self.events.get(item.turn)
            text = turn.text if turn is not None else ""
            if not any(norm(x) in norm(text) for x in item.expected):
                text = f"{item.expected[0]}. {text}".strip()
            return Answer(text=text, evidence=[item.turn])
        if kind == "qa":
            item: QAItem
            if item.answer is None or item.category == 5:
                return Answer(text=NOT_MENTIONED, evidence=[])
            text = str(item.answer)
            if item.category == 3:
                # LoCoMo's official scorer keeps an open-domain gold only up to its first ';'
                # (the rest is the annotator's reasoning); the oracle gives the scored answer.
                text = text.split(";")[0].strip()
            return Answer(text=text, evidence=list(item.evidence))
        if kind == "draft":  # a draft text asked as a question: answer with its evidence
            return Answer(text=UNKNOWN, evidence=list(item.evidence))
        return Answer(text=UNKNOWN, evidence=[])

    @staticmethod
    def _chain_answer(chain: UpdateChain, q: ChainQuery) -> Answer:
        current = chain.current_states
        if q.kind == "history":
            states = chain.states
            if chain.family == "coexisting" or len(current) > 1:
                text = " and ".join(s.value for s in current) + " (both still hold)"
            else:
                # Newest first, each marked: "Z, changed from Y, changed from X".
                text = ", ".join([states[-1].value] + [f"changed from {s.value}"
                                                       for s in reversed(states[:-1])])
            ev = [t for s in states for t in s.turns]
            return Answer(text=text, evidence=ev)
        text = " and ".join(s.value for s in current)
        return Answer(text=text, evidence=[t for s in current for t in s.turns])

    def check_alignment(self, draft: str) -> Verdict:
        hit = self._lookup(draft)
        if hit is None or hit[0] != "draft":
            return Verdict(aligned=True, conflicts=[])
        d: Draft = hit[1]
        if d.gold_aligned:
            return Verdict(aligned=True, conflicts=[])
        return Verdict(aligned=False, conflicts=[Conflict(evidence=list(d.evidence),
                                                          rationale=d.rationale or "gold")])

    def resolve(self, tension_id: str) -> None:
        # Already answers with the current state; a resolution changes nothing it asserts.
        self.resolved.add(tension_id)

    def retrieve(self, query: str, k: int) -> list[ScoredMemory]:
        hit = self._lookup(query)
        if hit is None:
            return []
        kind, item, sub = hit
        if kind == "qa":
            ids = list(item.evidence)
        elif kind == "chain":
            ids = [t for s in item.current_states for t in s.turns]
        elif kind == "draft":
            ids = list(item.evidence)
        elif kind == "emotional":
            ids = [item.turn]
        else:
            ids = []
        ids = [i for i in dict.fromkeys(ids) if i in self.events][:k]
        return [ScoredMemory(id=i, score=1.0 - n * 1e-3) for n, i in enumerate(ids)]

    def lineage(self) -> list[LineageRecord]:
        return [LineageRecord(memory_id=e.id, sources=[e.id], raw=True, canonical=False,
                              text=e.text) for e in self.events.values()]
