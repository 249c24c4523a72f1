"""Records of the TWIST specification, shared by every part of twistbench.

Three groups:
- the corpus: Event, Conversation;
- gold items, one model per item type of the four tracks plus LoCoMo QA (whitepaper §3, §4);
- what a system under test returns: Tension, Verdict, Answer, IngestResult (whitepaper §7),
  and for the retrieval audit ScoredMemory and LineageRecord (TIAP §3.1).

Turn ids (Event.id) are unique within a conversation; every evidence list names turns of the
item's own conversation. This module imports nothing of ours.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_serializer,
    model_validator,
)

SCHEMA_VERSION = "1"


class _Record(BaseModel):
    # Unknown fields are refused so that a typo in a key file is an error, not silently dropped.
    model_config = ConfigDict(extra="forbid")


class _Output(BaseModel):
    # System outputs tolerate extra fields: systems may attach diagnostics; we keep only ours.
    model_config = ConfigDict(extra="ignore")


# ---------------------------------------------------------------------------------------------
# Corpus


Channel = Literal["chat", "slack", "email", "call"]


class Event(_Record):
    """One turn: a chat message, a Slack post, an email, or one speaker turn of a call."""

    id: str = Field(min_length=1, description="turn id, unique within its conversation")
    conversation: str = Field(min_length=1)
    session: int = Field(ge=1, description="1-based session index; ingest goes session by session")
    timestamp: datetime
    speaker: str = Field(min_length=1)
    channel: Channel = "chat"
    text: str
    thread: str | None = Field(default=None, description="Slack thread, email subject or call id")
    meta: dict[str, Any] = Field(default_factory=dict)


class Conversation(_Record):
    """A LoCoMo conversation or a TWIST-CS workspace: events in ingest order."""

    id: str = Field(min_length=1)
    speakers: list[str] = Field(default_factory=list)
    events: list[Event]
    meta: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check_events(self) -> Conversation:
        seen: set[str] = set()
        last_session = 0
        for pos, ev in enumerate(self.events):
            if ev.conversation != self.id:
                raise ValueError(f"events[{pos}] ({ev.id}) names conversation {ev.conversation!r}")
            if ev.id in seen:
                raise ValueError(f"events[{pos}]: duplicate turn id {ev.id!r}")
            if ev.session < last_session:
                raise ValueError(
                    f"events[{pos}] ({ev.id}): session {ev.session} after {last_session}")
            seen.add(ev.id)
            last_session = ev.session
        return self

    def sessions(self) -> list[tuple[int, list[Event]]]:
        """Events grouped by session index, in order."""
        out: list[tuple[int, list[Event]]] = []
        for ev in self.events:
            if not out or out[-1][0] != ev.session:
                out.append((ev.session, []))
            out[-1][1].append(ev)
        return out

    def event_index(self) -> dict[str, Event]:
        return {ev.id: ev for ev in self.events}


# ---------------------------------------------------------------------------------------------
# Gold items


class _Item(_Record):
    id: str = Field(min_length=1, description="unique within the dataset")
    conversation: str = Field(min_length=1)
    meta: dict[str, Any] = Field(default_factory=dict)


class ReversalArc(_Item):
    """Track A positive: an anchor stance, optional drift, then a within-speaker reversal."""

    speaker: str
    topic: str = ""
    family: str = Field(description="direct | drift_flip | cross_channel (LoCoMo may add others)")
    anchor: list[str] = Field(min_length=1, description="turn ids stating the original stance")
    drift: list[str] = Field(default_factory=list, description="turn ids of drift signals")
    reversal: list[str] = Field(min_length=1, description="turn ids that reverse the anchor")
    paired_negative: str | None = Field(default=None, description="id of the matched hard negative")


class HardNegativeArc(_Item):
    """Track A negative: looks like a reversal (same topic and surface form) but is consistent."""

    speaker: str
    topic: str = ""
    family: str = Field(
        description="nostalgia | acknowledged_change | hypothetical | pressure_signal"
    )
    anchor: list[str] = Field(default_factory=list, description="the earlier statement, if any")
    turns: list[str] = Field(
        min_length=1,
        description="the look-alike turns; flagging them as new evidence is a false flag"
    )
    paired_reversal: str | None = None


DraftLabel = Literal["contradicting", "aligned", "hard_negative"]


class Draft(_Item):
    """Track B: a proposed outgoing message; gold verdict is aligned unless label=contradicting."""

    label: DraftLabel
    family: str = ""
    speaker: str = Field(default="", description="the person the draft is about or addressed to")
    text: str = Field(min_length=1)
    evidence: list[str] = Field(
        default_factory=list, description="turns the draft contradicts (contradicting) or relies on"
    )
    rationale: str = ""

    @property
    def gold_aligned(self) -> bool:
        return self.label != "contradicting"


class FactState(_Record):
    """One state of an update chain: its value, accepted surface variants and stating turns."""

    value: str = Field(min_length=1)
    variants: list[str] = Field(default_factory=list)
    turns: list[str] = Field(min_length=1)
    current: bool = Field(description="true for the latest state; coexisting facts are all current")

    def surface_forms(self) -> list[str]:
        return [self.value, *self.variants]


QueryKind = Literal["current", "history", "post_resolution"]


class ChainQuery(_Record):
    id: str = Field(min_length=1)
    kind: QueryKind
    text: str = Field(min_length=1)


class UpdateChain(_Item):
    """Track C: a fact stated, later superseded (once or twice), or two coexisting facts."""

    speaker: str
    subject: str = ""
    family: str = Field(description="one_update | two_updates | coexisting")
    states: list[FactState] = Field(min_length=2)
    queries: list[ChainQuery] = Field(min_length=1)

    @model_validator(mode="after")
    def _check_current(self) -> UpdateChain:
        if not any(s.current for s in self.states):
            raise ValueError("no state is marked current")
        return self

    @property
    def current_states(self) -> list[FactState]:
        return [s for s in self.states if s.current]

    @property
    def superseded_states(self) -> list[FactState]:
        return [s for s in self.states if not s.current]


ProbeKind = Literal["direct", "indirect"]


class Probe(_Record):
    id: str = Field(min_length=1)
    kind: ProbeKind
    text: str = Field(min_length=1)


PIIKind = Literal["email", "phone", "address", "other"]


class PIIPlant(_Item):
    """Track D: a planted PII value in a natural turn; probes must never return it."""

    kind: PIIKind
    value: str = Field(min_length=1)
    owner: str
    turn: str
    probes: list[Probe] = Field(min_length=1)
    turns: list[str] = Field(
        default_factory=list, description="every turn holding part of the value when it is "
        "given across several turns (`turn` is the first); empty when `turn` holds it all")
    parts: list[str] = Field(
        default_factory=list, description="the parts of a value given across turns; an answer "
        "returning every part leaks it even when they are not written together")

    @model_serializer(mode="wrap")
    def _drop_unused(self, handler: Any) -> dict[str, Any]:
        # Added in key 2.0: left out when unused, so 1.0 keys serialise to the same bytes.
        return _without_defaults(handler(self), {"turns": [], "parts": []})


class CrisisPlant(_Item):
    """Track D (opt-in): a self-harm-adjacent turn; must not be recallable, must be referred."""

    speaker: str
    turn: str
    probes: list[Probe] = Field(default_factory=list)
    key_phrases: list[str] = Field(
        default_factory=list,
        description="phrases whose return in an answer means the content leaked"
    )


class EmotionalHardNegative(_Item):
    """Track D over-blocking control: content that must stay recallable. `family` "emotional"
    (grief, stress, frustration that is not a crisis) or "business_contact" (contact details
    given for business use: a company line, a work e-mail; the business contact policy)."""

    speaker: str
    turn: str
    probe: Probe
    expected: list[str] = Field(min_length=1, description="surface forms, any one shows recall")
    family: Literal["emotional", "business_contact"] = "emotional"

    @model_serializer(mode="wrap")
    def _drop_default_family(self, handler: Any) -> dict[str, Any]:
        # Added in key 2.0: left out when "emotional", so 1.0 keys serialise to the same bytes.
        return _without_defaults(handler(self), {"family": "emotional"})


def _without_defaults(data: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if not (k in defaults and v == defaults[k])}


class QAItem(_Item):
    """LoCoMo QA. category: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial."""

    question: str
    answer: str | None = None
    category: int = Field(ge=1, le=5)
    evidence: list[str] = Field(default_factory=list)
    adversarial_answer: str | None = None
    excluded: str | None = Field(
        default=None, description="why the item is out of the score (re-validation), else null"
    )


class QADecoy(_Record):
    """A deliberately wrong answer to a LoCoMo question and the gold it is judged against: a
    judge that accepts it is lenient (judge calibration, whitepaper §6.2)."""

    id: str = Field(min_length=1, description="the question's id, e.g. locomo_0_qa3")
    style: str = Field(min_length=1, description="e.g. specific_but_wrong, vague_but_topical")
    question: str
    gold: str
    answer: str = Field(description="the decoy answer")
    category: int = Field(ge=1, le=4)


class Dataset(_Record):
    """An assembled item set: conversations plus gold for every track it covers."""

    name: str
    version: str
    key_sha256: str = Field(description="sha256 of the key file(s) the dataset was assembled from")
    conversations: list[Conversation]
    reversal_arcs: list[ReversalArc] = Field(default_factory=list)
    hard_negative_arcs: list[HardNegativeArc] = Field(default_factory=list)
    drafts: list[Draft] = Field(default_factory=list)
    update_chains: list[UpdateChain] = Field(default_factory=list)
    pii_plants: list[PIIPlant] = Field(default_factory=list)
    crisis_plants: list[CrisisPlant] = Field(default_factory=list)
    emotional_negatives: list[EmotionalHardNegative] = Field(default_factory=list)
    qa: list[QAItem] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)

    ITEM_FIELDS: ClassVar[tuple[str, ...]] = (
        "reversal_arcs",
        "hard_negative_arcs",
        "drafts",
        "update_chains",
        "pii_plants",
        "crisis_plants",
        "emotional_negatives",
        "qa",
    )

    @model_validator(mode="after")
    def _check_references(self) -> Dataset:
        """Every item names a known conversation and only turn ids that exist in it."""
        turns = {c.id: set(c.event_index()) for c in self.conversations}
        if len(turns) != len(self.conversations):
            raise ValueError("duplicate conversation ids")
        ids: set[str] = set()
        for fld in self.ITEM_FIELDS:
            for pos, item in enumerate(getattr(self, fld)):
                where = f"{fld}[{pos}] ({item.id})"
                if item.id in ids:
                    raise ValueError(f"{where}: duplicate item id")
                ids.add(item.id)
                if item.conversation not in turns:
                    raise ValueError(f"{where}: unknown conversation {item.conversation!r}")
                if fld == "qa":
                    continue  # LoCoMo evidence has known defects; datasets/locomo.py reports them
                known = turns[item.conversation]
                for ref in _turn_refs(item):
                    if ref not in known:
                        raise ValueError(f"{where}: turn id {ref!r} is not in {item.conversation}")
        return self

    def conversation(self, conversation_id: str) -> Conversation:
        for c in self.conversations:
            if c.id == conversation_id:
                return c
        raise KeyError(conversation_id)

    def items_of(self, conversation_id: str, field: str) -> list[Any]:
        return [it for it in getattr(self, field) if it.conversation == conversation_id]

    def counts(self) -> dict[str, int]:
        out = {"conversations": len(self.conversations)}
        out["events"] = sum(len(c.events) for c in self.conversations)
        for fld in self.ITEM_FIELDS:
            out[fld] = len(getattr(self, fld))
        return out


def _turn_refs(item: BaseModel) -> list[str]:
    """All turn ids an item cites, for reference checking."""
    if isinstance(item, ReversalArc):
        return [*item.anchor, *item.drift, *item.reversal]
    if isinstance(item, HardNegativeArc):
        return [*item.anchor, *item.turns]
    if isinstance(item, Draft):
        return list(item.evidence)
    if isinstance(item, UpdateChain):
        return [t for s in item.states for t in s.turns]
    if isinstance(item, PIIPlant):
        return list(dict.fromkeys([item.turn, *item.turns]))
    if isinstance(item, (CrisisPlant, EmotionalHardNegative)):
        return [item.turn]
    return []


# ---------------------------------------------------------------------------------------------
# System outputs


class Tension(_Output):
    """An unprompted contradiction flag: earlier claim turns against new turns (whitepaper §3A)."""

    id: str = Field(min_length=1)
    claim_evidence: list[str] = Field(min_length=1)
    new_evidence: list[str] = Field(min_length=1)
    rationale: str = ""


class Conflict(_Output):
    evidence: list[str] = Field(default_factory=list)
    rationale: str = ""


class Verdict(_Output):
    aligned: bool
    conflicts: list[Conflict] = Field(default_factory=list)


class Memory(_Output):
    """One memory a system retrieved for a question: its id in the system's store, its text,
    the turn ids it derives from, and the system's score for it. `timestamp`, when the system
    knows it, is when the memory's content was said; answerers show it as the memory's date."""

    id: str = Field(min_length=1)
    text: str
    sources: list[str] = Field(default_factory=list, description="source turn ids")
    score: float | None = None
    timestamp: datetime | None = None


class Memories(_Output):
    """What a memory layer returns from recall when it retrieves rather than answers: the
    harness turns it into an Answer with the run's answerer (answerers/)."""

    memories: list[Memory]


class Answer(_Output):
    text: str
    evidence: list[str] = Field(default_factory=list)
    # Set by the harness when the system returned Memories: what it retrieved, and which
    # answerer wrote `text` (the answerer's identity is in the run's manifest).
    retrieved: list[Memory] | None = None
    answered_by: str | None = None


class Referral(_Output):
    """A crisis referral emitted at ingest for one turn."""

    turn: str
    kind: str = "crisis"
    message: str = ""


class AuditRecord(_Output):
    """A governance action taken at write time. It must not carry the governed content."""

    turn: str
    category: str = Field(description="pii | crisis | other")
    action: str = Field(description="redacted | suppressed | stored | ...")
    note: str = ""


class IngestResult(_Output):
    tensions: list[Tension] = Field(default_factory=list)
    referrals: list[Referral] = Field(default_factory=list)
    audit_records: list[AuditRecord] = Field(default_factory=list)


class ScoredMemory(_Output):
    """One retrieved memory id with its score (retrieval audit)."""

    id: str
    score: float


class LineageRecord(_Output):
    """A stored memory id and the source turn(s) it derives from (TIAP lineage contract)."""

    memory_id: str
    sources: list[str] = Field(min_length=1)
    raw: bool
    canonical: bool
    text: str = ""


# ---------------------------------------------------------------------------------------------
# Retrieval audit (TIAP): gold queries and store lineage, and a benchmark read for the audit


class LineageRow(LineageRecord):
    """A LineageRecord with the conversation (store) it belongs to."""

    model_config = ConfigDict(extra="forbid")
    conversation: str = ""


class GoldQuery(BaseModel):
    """A benchmark query's source evidence s(q) and what the semantic audit needs."""

    model_config = ConfigDict(extra="forbid")

    query_id: str = Field(min_length=1)
    conversation: str = ""
    anchors: list[str] = Field(default_factory=list)
    category: str = ""
    question: str = ""
    answer: str = ""
    anchor_texts: dict[str, str] = Field(default_factory=dict)

    @field_validator("category", "answer", mode="before")
    @classmethod
    def _to_str(cls, v: Any) -> Any:
        # LoCoMo has integer categories and 6 integer answers.
        if v is None:
            return ""
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return str(v)
        return v


@dataclass
class AuditCorpus:
    """Conversations plus the queries to trace (gold), from any benchmark loader."""

    name: str
    version: str
    conversations: list[Conversation]
    queries: list[GoldQuery]
    # {"query_id", "conversation", "reason"}: queries that cannot be scored, reported
    skipped: list[dict[str, str]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


# The corpus a dataset's QA items come from, by dataset name; every other dataset with QA is
# LoCoMo-based (locomo, TWIST-LoCoMo, TWIST-B) or LoCoMo-shaped (the built-in demo). The QA
# track's title and the run notes name it.
_QA_CORPUS = {"longmemeval": "LongMemEval-S", "beam": "BEAM"}


def qa_corpus(dataset_name: str) -> str:
    """The corpus the dataset's QA questions come from: 'LoCoMo', 'LongMemEval-S' or 'BEAM'."""
    return _QA_CORPUS.get(dataset_name, "LoCoMo")


def json_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schema of every record, for users writing keys or systems in other languages."""
    models: list[type[BaseModel]] = [
        Event, Conversation, ReversalArc, HardNegativeArc, Draft, UpdateChain, PIIPlant,
        CrisisPlant, EmotionalHardNegative, QAItem, Dataset, Tension, Verdict, Answer,
        Memory, Memories, IngestResult, ScoredMemory, LineageRecord,
    ]
    return {m.__name__: m.model_json_schema() for m in models}


def dump_json_schemas() -> str:
    return json.dumps(json_schemas(), indent=2, sort_keys=True)
