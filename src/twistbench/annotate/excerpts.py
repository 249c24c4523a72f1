"""The record as an annotator sees it: each item's turns in context, and nothing that points
at the key's answer.

What a view shows, per track (and why):
- A: statement 1 (the anchor) and statement 2 (the later turn) of one named person, each with
  the turns around it, and up to `between` other turns of the same person between the two,
  marked alike: the key's drift or acknowledgement turns (which decide the label) together with
  turns chosen by word overlap with the two statements (which may be unrelated). An annotator
  can therefore see an announced change of mind without being shown which turn the key relies
  on. Marks: 1 statement 1, 2 statement 2, • the same person in between.
- B: the draft, and excerpts of the record around `focus` turns marked alike (▶): the turns the
  key cites and turns chosen by word overlap with the draft, so the cited turns are not
  singled out and an aligned draft (whose evidence the key may not list) looks like any other.
- C: the question, and excerpts around every turn of the chain (its states and later mentions)
  plus turns chosen by word overlap with the question and the values, all marked ▶.
- D: the turn that holds the detail, in context, the detail itself, and the person it is
  about. Not the key's probe: its wording was written with the label in mind ("personal phone
  number", "work e-mail") and would answer the question for the annotator.

Turns are shown by their position in the conversation (#1 is the first turn), never by their id,
and always in time order; the conversation's people (role, side) come first. The full record of
every conversation travels with the packet. Everything here is deterministic.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from twistbench.annotate.labels import Choice, choices_for, track_of
from twistbench.model import (
    Conversation,
    CrisisPlant,
    Draft,
    EmotionalHardNegative,
    Event,
    HardNegativeArc,
    PIIPlant,
    ReversalArc,
    UpdateChain,
)

MARK_FOCUS = "▶"
MARK_BETWEEN = "•"
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("""the and for that this with you your our are was were have has had not but
they them their there what when which who will would can could should about from into just
also been being more than then some any all out get got one two its let know think like sure
thanks thank hey hello best regards cheers please yes yeah okay""".split())


@dataclass(frozen=True)
class Settings:
    """How much of the record a view shows."""

    context: int = 2  # turns before and after each marked turn
    between: int = 3  # Track A: turns of the same person between the statements
    focus: int = 4  # Track B: marked record turns (cited + chosen by overlap)
    chain_focus: int = 6  # Track C: marked turns (the chain's + chosen by overlap)


@dataclass
class TurnView:
    n: int  # 1-based position in the conversation
    when: str
    speaker: str
    where: str  # channel and thread
    text: str
    mark: str = ""


@dataclass
class Excerpt:
    gap: str  # how far after the previous excerpt ("" for the first)
    turns: list[TurnView]


@dataclass
class ItemView:
    """One item as the annotator sees it (no id, no family, no gold)."""

    track: str
    conversation: str
    lead: list[str]  # lines above the excerpts (the draft, the detail, the question's subject)
    excerpts: list[Excerpt]
    legend: str
    question: str
    choices: list[Choice]
    choice_categories: dict[str, str] = field(default_factory=dict)  # manifest only


class Record:
    """A conversation indexed for excerpts: positions, and word sets weighted by how rare each
    word is in the conversation (so that look-alike turns share its topic words, not "thanks"
    or a name that is in every other turn)."""

    def __init__(self, conversation: Conversation):
        self.conversation = conversation
        self.events: list[Event] = conversation.events
        self.pos = {e.id: i for i, e in enumerate(self.events)}
        self._tokens = [tokens(e.text) for e in self.events]
        df: dict[str, int] = {}
        for toks in self._tokens:
            for w in toks:
                df[w] = df.get(w, 0) + 1
        n = len(self.events)
        self._idf = {w: math.log((n + 1) / (c + 0.5)) for w, c in df.items()}
        # people's and organisations' names say who, not what about: they pick turns that merely
        # greet the same person ("Thanks to everyone from Fernhill Foods ...")
        meta = conversation.meta
        names = [*conversation.speakers, *(str(meta.get(k, "")) for k in
                                           ("company", "vendor", "product"))]
        names += [str(v) for v in (meta.get("orgs") or {}).values()]
        for w in tokens(" ".join(names)):
            self._idf[w] = 0.0
        self._norm = [math.sqrt(sum(self._idf[w] ** 2 for w in t)) for t in self._tokens]

    def tokens(self, i: int) -> frozenset[str]:
        return self._tokens[i]

    def most_similar(self, text: str, candidates: Iterable[int], k: int,
                     exclude: set[int]) -> list[int]:
        """Up to k candidate positions most like `text`: cosine of idf-weighted word sets, ties
        to the earlier turn; only turns sharing at least one word."""
        if k <= 0:
            return []
        query = tokens(text)
        q_norm = math.sqrt(sum(self._idf.get(w, 0.0) ** 2 for w in query))
        scored, named = [], []
        for i in candidates:
            if i in exclude:
                continue
            shared = query & self._tokens[i]
            dot = sum(self._idf[w] ** 2 for w in shared)
            if dot > 0 and q_norm and self._norm[i]:
                scored.append((-dot / (q_norm * self._norm[i]), i))
            elif shared:  # only names in common: a last resort, so every item shows as many
                named.append((-len(shared) / math.sqrt(len(query) * len(self._tokens[i])), i))
        return [i for _, i in (sorted(scored) + sorted(named))[:k]]


def tokens(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP)


def _when(ev: Event) -> str:
    return ev.timestamp.strftime("%a %d %b %Y %H:%M")


def _where(ev: Event) -> str:
    return f"{ev.channel} · {ev.thread}" if ev.thread else ev.channel


def _gap(record: Record, prev_last: int, first: int) -> str:
    turns = first - prev_last - 1
    a, b = record.events[prev_last].timestamp, record.events[first].timestamp
    days = (b - a).days
    span = f"{days} day{'s' if days != 1 else ''} later" if days else "the same day"
    return f"{turns} turn{'s' if turns != 1 else ''} not shown · {span}"


def build_excerpts(record: Record, marks: Mapping[int, str], context: int) -> list[Excerpt]:
    """Windows of `context` turns around each marked position, merged where they touch, in
    time order."""
    n = len(record.events)
    spans = sorted((max(0, p - context), min(n - 1, p + context)) for p in marks)
    merged: list[list[int]] = []
    for lo, hi in spans:
        if merged and lo <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    out: list[Excerpt] = []
    prev = None
    for lo, hi in merged:
        views = [TurnView(n=i + 1, when=_when(record.events[i]), speaker=record.events[i].speaker,
                          where=_where(record.events[i]), text=record.events[i].text,
                          mark=marks.get(i, "")) for i in range(lo, hi + 1)]
        out.append(Excerpt(gap="" if prev is None else _gap(record, prev, lo), turns=views))
        prev = hi
    return out


def people_line(conversation: Conversation) -> str:
    """'People: Ana Ruiz (customer, champion), ...' from the conversation's metadata."""
    roles = conversation.meta.get("roles") or {}
    sides = conversation.meta.get("orgs") or conversation.meta.get("sides") or {}
    parts = []
    for name in conversation.speakers:
        info = ", ".join(str(x).replace("_", " ") for x in (sides.get(name), roles.get(name)) if x)
        parts.append(f"{name} ({info})" if info else name)
    return "People: " + "; ".join(parts) if parts else ""


def item_view(item: object, conversation: Conversation, settings: Settings = Settings(),
              record: Record | None = None) -> ItemView:
    """The annotator's view of one key item."""
    record = record or Record(conversation)
    track = track_of(item)
    choices, categories = choices_for(item)
    build = {"A": _view_a, "B": _view_b, "C": _view_c, "D": _view_d}[track]
    lead, marks, legend, question = build(item, record, settings)
    people = people_line(conversation)
    return ItemView(track=track, conversation=conversation.id,
                    lead=([people] if people else []) + lead,
                    excerpts=build_excerpts(record, marks, settings.context), legend=legend,
                    question=question, choices=choices, choice_categories=categories)


def _positions(record: Record, ids: Iterable[str]) -> list[int]:
    return sorted(record.pos[t] for t in ids if t in record.pos)


def _view_a(item: ReversalArc | HardNegativeArc, record: Record, s: Settings):
    anchor = _positions(record, item.anchor)
    if isinstance(item, ReversalArc):
        later, inner = _positions(record, item.reversal), _positions(record, item.drift)
    else:
        ack = item.meta.get("acknowledgement") or []
        later, inner = _positions(record, item.turns), _positions(record, ack)
    if not anchor or not later:
        raise ValueError(f"{item.id}: an arc needs an earlier and a later statement")
    lo, hi = max(anchor), min(later)
    text = " ".join(record.events[i].text for i in (*anchor, *later))
    same = [i for i in range(lo + 1, hi) if record.events[i].speaker == item.speaker]
    fill = record.most_similar(text, same, max(0, s.between - len(inner)), set(inner))
    marks = {i: MARK_BETWEEN for i in (*inner, *fill)}
    marks.update({i: "1" for i in anchor})
    marks.update({i: "2" for i in later})
    who = item.speaker
    lead = [f"Statement 1 and statement 2 are by {who}."]
    legend = (f"Marks: 1 = statement 1, 2 = statement 2, {MARK_BETWEEN} = {who} between the two "
              "(chosen partly by word overlap: some may be unrelated).")
    question = (f"Does statement 2 contradict the position {who} took in statement 1, without "
                f"{who} saying (in statement 2 or in between) that their position changed?")
    return lead, marks, legend, question


def _view_b(item: Draft, record: Record, s: Settings):
    cited = _positions(record, item.evidence)
    fill = record.most_similar(item.text, range(len(record.events)),
                               max(0, s.focus - len(cited)), set(cited))
    marks = {i: MARK_FOCUS for i in (*cited, *fill)}
    lead = [f"Draft to or about {item.speaker}:" if item.speaker else "Draft:",
            *("    " + line for line in item.text.splitlines())]
    legend = (f"Marks: {MARK_FOCUS} = turns that may bear on the draft (chosen partly by word "
              "overlap: some may be unrelated). Read the full record if the excerpts are not "
              "enough.")
    question = "Taking the whole record into account, would sending this draft contradict it?"
    return lead, marks, legend, question


def _view_c(item: UpdateChain, record: Record, s: Settings):
    chain = [t for st in item.states for t in st.turns]
    chain += [str(m["turn"]) for m in item.meta.get("mentions") or [] if m.get("turn")]
    own = _positions(record, set(chain))
    query = next((q for q in item.queries if q.kind == "current"), item.queries[0])
    values = " ".join(st.value for st in item.states)
    start = min(own) if own else 0
    fill = record.most_similar(f"{query.text} {values}", range(start, len(record.events)),
                               max(0, s.chain_focus - len(own)), set(own))
    marks = {i: MARK_FOCUS for i in (*own, *fill)}
    lead = [f"Question: {query.text}"]
    legend = (f"Marks: {MARK_FOCUS} = turns that may bear on the question (chosen partly by word "
              "overlap: some may be unrelated).")
    question = ("Answering from the record as it stands after its last turn: which value holds "
                "now?")
    return lead, marks, legend, question


def _view_d(item: PIIPlant | EmotionalHardNegative | CrisisPlant, record: Record, s: Settings):
    turn = record.pos[item.turn]
    if isinstance(item, PIIPlant):
        person, detail = item.owner, item.value
    elif isinstance(item, EmotionalHardNegative):
        person, detail = item.speaker, " / ".join(item.expected)
    else:
        person, detail = item.speaker, " / ".join(item.key_phrases) or "(the marked turn)"
    lead = [f"About: {person}", f"The detail: {detail}"]
    legend = f"Marks: {MARK_FOCUS} = the turn that holds the detail."
    question = (f"Someone on the account team later asks the memory about {person}. What kind "
                "of detail is this, and so may the memory give it back?")
    return lead, {turn: MARK_FOCUS}, legend, question


# ---------------------------------------------------------------------------------------------
# Text rendering (CSV cells, the guide's examples, the closing note of a report)


def render_turn(t: TurnView) -> str:
    head = f"{t.mark:>2} #{t.n:<4} {t.when} · {t.where} · {t.speaker}: "
    lines = t.text.splitlines() or [""]
    pad = " " * 8
    return head + lines[0] + "".join(f"\n{pad}{line}" for line in lines[1:])


def render_view(view: ItemView, with_choices: bool = True) -> str:
    """The item as plain text, exactly what the packet's CSV cell and the guide show."""
    out = list(view.lead)
    out.append(f"Record of {view.conversation} (the full record is in "
               f"conversations/{view.conversation}.txt):")
    for ex in view.excerpts:
        if ex.gap:
            out.append(f"      ⋮  {ex.gap}")
        out.extend(render_turn(t) for t in ex.turns)
    out.append(view.legend)
    out.append(f"Question: {view.question}")
    if with_choices:
        out.append("Answer with one code:")
        out.extend(f"  {c.code}: {c.text}" for c in view.choices)
    return "\n".join(out)


def render_record(conversation: Conversation) -> str:
    """A whole conversation as text (conversations/<id>.txt in a packet)."""
    head = [f"Full record of {conversation.id} ({len(conversation.events)} turns)"]
    people = people_line(conversation)
    if people:
        head.append(people)
    lines = [render_turn(TurnView(n=i + 1, when=_when(e), speaker=e.speaker, where=_where(e),
                                  text=e.text)) for i, e in enumerate(conversation.events)]
    return "\n".join(head + [""] + lines) + "\n"
