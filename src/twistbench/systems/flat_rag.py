"""flat-rag: the "embed + retrieve + answer" baseline (whitepaper §6.3, §9).

Stores every raw turn as "Speaker: text" in one retriever. `recall` answers extractively with the
top retrieved turn(s) and cites them. It has no notion of contradiction, currency or safety:
- no tensions (neither online nor batch: it declines both);
- `check_alignment` answers aligned for every draft, because without an LLM endpoint it has no
  mechanism to judge a draft (the LLM variant belongs to the LLM issue);
- no write-time governance (Track D is N/A).

Separability probe (`probe=True`, used by `twist validate`): the same store, plus the only
"detector" flat retrieval can offer: a new turn whose nearest earlier-session turn of the same
speaker has cosine >= `probe_sim` is flagged as a tension against it, and a draft whose nearest
turn has cosine >= `probe_sim` is judged contradicting, citing its nearest turns. No stance,
negation or value check. An item this probe gets right is solvable by similarity alone
(whitepaper §6.3), so the audit lists it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from twistbench.contract import BaseSystem, Capabilities
from twistbench.model import (
    Answer,
    Conflict,
    Event,
    IngestResult,
    LineageRecord,
    ScoredMemory,
    Tension,
    Verdict,
)
from twistbench.retrieval import RETRIEVERS, Retriever, make_retriever, turn_text
from twistbench.retrieval.dense import embed

NO_ANSWER = "I don't know."


def check_retriever(name: str) -> str:
    if name not in RETRIEVERS:
        raise ValueError(f"retriever must be one of {', '.join(RETRIEVERS)}, not {name!r}")
    return name


class FlatRAG(BaseSystem):
    """Raw turns in a retriever; recall = the top turn(s), verbatim, with their ids."""

    name = "flat-rag"
    capabilities = Capabilities(recall=True, check_alignment=True, retrieve=True, lineage=True)

    def __init__(self, retriever: str = "dense", k: int = 5, answer_turns: int = 1,
                 probe: bool = False, probe_sim: float = 0.6) -> None:
        self.retriever_name = check_retriever(retriever)
        if k < 1 or answer_turns < 1:
            raise ValueError("k and answer_turns must be >= 1")
        self.k = k
        self.answer_turns = answer_turns
        self.probe = probe
        self.probe_sim = probe_sim
        if probe:
            self.capabilities = Capabilities(online_tensions=True, batch_tensions=True,
                                             recall=True, check_alignment=True, retrieve=True,
                                             lineage=True)
        self.reset("")

    def config(self) -> dict[str, Any]:
        cfg: dict[str, Any] = {"retriever": self.retriever_name, "k": self.k,
                               "answer_turns": self.answer_turns}
        if self.probe:
            cfg.update(probe=True, probe_sim=self.probe_sim,
                       alignment="similarity-only probe: nearest turn cos >= probe_sim",
                       tensions="similarity-only probe: nearest earlier same-speaker turn")
        else:
            cfg["alignment"] = "always aligned: no LLM endpoint configured, no mechanism"
        return cfg

    def reset(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.events: dict[str, Event] = {}
        self.index: Retriever = make_retriever(self.retriever_name)
        self._vecs: list[np.ndarray] = []  # probe only: one vector per stored turn
        self._claimed: set[str] = set()
        self._tensions: list[Tension] = []

    def ingest(self, events: Sequence[Event]) -> IngestResult:
        new = [e for e in events if e.id not in self.events]
        self.index.add([e.id for e in new], [turn_text(e) for e in new])
        out = IngestResult()
        if self.probe and new:
            # Same text as the dense index embeds, so these are cache hits.
            vecs = embed([turn_text(e) for e in new])
            out.tensions = self._probe_tensions(new, vecs)
            self._vecs.extend(vecs)
        for e in new:
            self.events[e.id] = e
        return out

    def _probe_tensions(self, new: list[Event], vecs: np.ndarray) -> list[Tension]:
        olds = list(self.events.values())
        if not olds:
            return []
        m = np.stack(self._vecs)
        found: list[Tension] = []
        for e, v in zip(new, vecs):
            rows = [i for i, o in enumerate(olds) if o.speaker == e.speaker
                    and o.session < e.session and o.id not in self._claimed]
            if not rows:
                continue
            sims = m[rows] @ v
            j = int(np.argmax(sims))
            if sims[j] >= self.probe_sim:
                old = olds[rows[j]]
                self._claimed.add(old.id)
                t = Tension(id=f"p{len(self._tensions) + 1}", claim_evidence=[old.id],
                            new_evidence=[e.id], rationale=f"similar (cos {sims[j]:.2f})")
                self._tensions.append(t)
                found.append(t)
        return found

    def flag_tensions(self) -> list[Tension]:
        if not self.probe:
            raise NotImplementedError("flat-rag declines flag_tensions (no mechanism)")
        return list(self._tensions)

    def recall(self, query: str) -> Answer:
        hits = self.index.search(query, max(self.k, self.answer_turns))[: self.answer_turns]
        if not hits:
            return Answer(text=NO_ANSWER, evidence=[])
        used = [self.events[i] for i, _ in hits]
        return Answer(text=" / ".join(turn_text(e) for e in used), evidence=[e.id for e in used])

    def check_alignment(self, draft: str) -> Verdict:
        if not self.probe or not self._vecs:
            return Verdict(aligned=True, conflicts=[])
        ids = list(self.events)
        sims = np.stack(self._vecs) @ embed([draft])[0]
        order = sorted(range(len(ids)), key=lambda i: (-sims[i], i))[:3]
        if sims[order[0]] < self.probe_sim:
            return Verdict(aligned=True, conflicts=[])
        return Verdict(aligned=False, conflicts=[Conflict(
            evidence=[ids[i] for i in order], rationale="similar to the record (probe)")])

    def retrieve(self, query: str, k: int) -> list[ScoredMemory]:
        return [ScoredMemory(id=i, score=s) for i, s in self.index.search(query, k)]

    def lineage(self) -> list[LineageRecord]:
        return [LineageRecord(memory_id=e.id, sources=[e.id], raw=True, canonical=False,
                              text=turn_text(e)) for e in self.events.values()]
