"""TWIST-LoCoMo 2.0 authoring files: read one conversation's TOML, place its turns, check every
rule.

An authoring file (banks/locomo/<conv>.toml, format in docs/keys/locomo-authoring.md) holds the
exchanges an author wrote for one conversation (`[[insert]]`, after an original turn or in an
appended session) and the items that cite them or original turns. `check_conversation` places the
turns, resolves every reference and applies the hard rules of the guide; it returns the placed
conversation and the list of problems (empty = the file may be built). The generator
(itemgen/locomo2.py) and the reader (itemgen/locomo_read.py) both go through it.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from twistbench.datasets.locomo import IMAGE_MARK, LocomoCorpus
from twistbench.itemgen.locomo_plan import bank_path, load_contrast, load_plan, read_toml
from twistbench.itemgen.revalidate import keyword_stems
from twistbench.judges.structural import contains_form, value_leaked
from twistbench.model import Conversation

INSERT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")
REF = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*)\.(\d+)$")
ORIGINAL = re.compile(r"^D\d+:\d+$")
SLOT = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
MAX_WORDS = 90
MAX_APPENDED_SHARE = 0.35
MAX_END_SHARE = 0.40
MAX_DUPLICATE_SHARE = 0.05  # the shortcut battery's surface.duplicates gate
THIRD_TOLERANCE = 0.1
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")
PII_FORMS = ("pattern", "spelled", "split", "sensitive")
PII_KINDS = ("phone", "email", "address", "other")
CONTROL_KINDS = ("phone", "email", "address")
EMOTION_CATEGORIES = ("grief", "stress", "frustration", "sadness", "fear")
FICTIONAL_PHONE = re.compile(r"^555-01\d\d$")
FICTIONAL_EMAIL = re.compile(
    r"^[a-z0-9._-]+@([a-z0-9-]+\.)*(example\.com|example\.org|[a-z0-9-]+\.test)$")
CHAIN_STATES = {"one_update": 2, "two_updates": 3, "coexisting": 2}
BOTH_WORDS = re.compile(r"\b(both|all|two|three)\b", re.IGNORECASE)
# Phrases that make a target carry its own acknowledgement of a change, or a request to update
# notes.
ACK_PHRASES = re.compile(r"\b(finally|used to|changed my mind|who knew|never thought|i know i said|"
                         r"update (?:my|the) (?:notes|records?)|note that|for the record)\b",
                         re.IGNORECASE)
# A target that asks for notes or records to be updated tells a system it is a change (keys2
# principles §4); the built-key test reads the same words.
NOTES_REQUEST = re.compile(r"\b(?:update|note|record)s?\b|\bnoted\b|\bkeep in mind\b",
                           re.IGNORECASE)
# "a" before these vowel-letter words is right; "an" before these consonant-letter words is right.
_A_OK = re.compile(r"^(uni|use|usu|one|once|eu|ewe|u[bcdfgklmnprstvz][aeiou])", re.IGNORECASE)
_AN_OK = re.compile(r"^(hour|honest|honor|honour|heir|herb|mba|mri|fbi|nba|nfl|sat|x)",
                    re.IGNORECASE)
_STOP = frozenset(["a", "an", "the", "and", "or", "of", "to", "in", "on", "at", "for", "with",
                   "by", "from", "is", "are", "was", "were", "be", "been", "do", "does", "did",
                   "what", "which", "who", "whom", "when", "where", "why", "how", "that", "this",
                   "these", "those", "it", "its", "his", "her", "their", "they", "them", "he",
                   "she", "i", "you", "we", "my", "your", "our", "me", "us", "as", "about", "into",
                   "after", "before", "than", "then", "so", "if", "not", "no", "yes", "has",
                   "have", "had", "can", "could", "would", "should", "will", "shall", "may",
                   "might", "just", "really", "so", "very", "too", "also"])


@dataclass
class Turn:
    """One turn of the placed conversation (original or injected)."""

    ref: str  # "D4:3" for an original, "i07.2" for an injected turn
    session: int
    speaker: str
    text: str  # what a memory system reads (image caption appended)
    injected: bool
    insert: str | None = None
    image: str | None = None
    index: int = 0  # position in its session (0-based), after placement
    session_len: int = 0
    crisis: bool = False

    @property
    def words(self) -> int:
        return len(self.text.split())

    def position(self) -> float:
        """Relative position in the session, 0 (first) .. 1 (last)."""
        return self.index / max(1, self.session_len - 1)


@dataclass
class Placed:
    """A conversation with an authoring file applied."""

    conversation: Conversation
    sessions: dict[int, list[Turn]]
    session_dates: dict[int, datetime]
    by_ref: dict[str, Turn]
    raw: dict[str, Any]
    crisis_raw: dict[str, Any] | None
    plan: dict[str, Any]
    problems: list[str] = field(default_factory=list)
    roles: dict[str, list[str]] = field(default_factory=dict)  # ref -> item roles (for the reader)
    # speaker -> LoCoMo's observations of them: (text, the original turns it cites)
    observations: dict[str, list[tuple[str, list[str]]]] = field(default_factory=dict)

    def order(self, ref: str) -> tuple[int, int]:
        t = self.by_ref[ref]
        return (t.session, t.index)

    def turns(self) -> list[Turn]:
        return [t for s in sorted(self.sessions) for t in self.sessions[s]]


def authoring_path(conv_id: str, crisis: bool = False) -> Path:
    return bank_path(f"{conv_id}.crisis.toml" if crisis else f"{conv_id}.toml")


def strip_image(text: str) -> str:
    """The turn text a person typed (without LoCoMo's image caption)."""
    return re.sub(r" \[shares an image: [^\]]*\]$", "", text)


def fill(template: str, values: dict[str, str]) -> str:
    return SLOT.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def slots_of(template: str) -> list[str]:
    return list(dict.fromkeys(SLOT.findall(template)))


def content_words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z][a-z'-]+", text.lower()) if w not in _STOP and len(w) > 2]


def grammar_problems(text: str) -> list[str]:
    """Mechanical errors a reader would stop at."""
    out = []
    if SLOT.search(text) or "{" in text or "}" in text:
        out.append("unfilled slot")
    for m in re.finditer(r"\b([Aa]n?) ([A-Za-z][\w'-]*)", text):
        art, word = m.group(1).lower(), m.group(2)
        # an acronym is read letter by letter: "an SUV", "an MBA", "a USB stick"
        acronym = len(word) > 1 and word.isupper()
        vowel = word[0].lower() in ("aefhilmnorsx" if acronym else "aeiou")
        if art == "a" and vowel and (acronym or not _A_OK.match(word)):
            out.append(f"'a {word}'")
        if art == "an" and not vowel and (acronym or not _AN_OK.match(word)):
            out.append(f"'an {word}'")
    for m in re.finditer(r"\b(\w+) \1\b", text, re.IGNORECASE):
        if m.group(1).lower() not in ("ha", "bye", "very", "so", "no", "yes", "la", "na"):
            out.append(f"doubled word '{m.group(0)}'")
    if re.search(r"(\.\.(?!\.)|,,|;;|\?\?|!!!|\s[,.!?])", text):
        out.append("doubled or misplaced punctuation")
    if re.search(r"'s's\b", text):
        out.append("bad possessive")
    return out


# ---------------------------------------------------------------------------------------------
# Placement


def qa_spans(corpus: LocomoCorpus, conv: Conversation) -> dict[int, set[int]]:
    """session -> indices k such that a boundary after turn k lies inside the evidence span of a
    QA item (between two of its evidence turns in that session)."""
    pos = {e.id: (e.session, k) for s, evs in conv.sessions() for k, e in enumerate(evs)}
    spans: dict[int, set[int]] = {}
    for q in corpus.qa:
        if q.conversation != conv.id:
            continue
        by_s: dict[int, list[int]] = {}
        for ev in q.evidence:
            if ev in pos:
                by_s.setdefault(pos[ev][0], []).append(pos[ev][1])
        for s, ks in by_s.items():
            if len(ks) > 1:
                spans.setdefault(s, set()).update(range(min(ks), max(ks)))
    return spans


def _parse_turns(ins: dict[str, Any], where: str, speakers: list[str], problems: list[str]
                 ) -> list[tuple[str, str, str | None]]:
    out = []
    turns = ins.get("turns")
    if not isinstance(turns, list) or not turns:
        problems.append(f"{where}: no turns")
        return out
    for k, t in enumerate(turns, 1):
        if not isinstance(t, dict) or not isinstance(t.get("text"), str) or not t["text"].strip():
            problems.append(f"{where}.{k}: a turn needs speaker and text")
            continue
        unknown = set(t) - {"speaker", "text", "image"}
        if unknown:
            problems.append(f"{where}.{k}: unknown field(s) {sorted(unknown)}")
        if t.get("speaker") not in speakers:
            problems.append(f"{where}.{k}: speaker {t.get('speaker')!r} is not one of {speakers}")
        out.append((str(t.get("speaker")), t["text"].strip(), t.get("image")))
    return out


def place(corpus: LocomoCorpus, conv_id: str, plan: dict[str, Any], raw: dict[str, Any],
          crisis_raw: dict[str, Any] | None = None) -> Placed:
    """Apply the inserts to the conversation (placement rules only; items are not checked)."""
    conv = corpus.conversation(conv_id)
    cplan = plan["conversations"][conv_id]
    speakers = list(conv.speakers)
    problems: list[str] = []
    orig = {s: evs for s, evs in conv.sessions()}
    dates = {s: evs[0].timestamp for s, evs in orig.items()}
    appended = {a["session"]: datetime.strptime(a["date"], "%Y-%m-%d %H:%M")
                for a in cplan["appended"]}
    dates.update(appended)
    pos = {e.id: (s, k) for s, evs in orig.items() for k, e in enumerate(evs)}
    spans = qa_spans(corpus, conv)

    after_map: dict[str, list[Turn]] = {}
    app_turns: dict[int, list[Turn]] = {s: [] for s in appended}
    by_ref: dict[str, Turn] = {}
    seen_ids: set[str] = set()
    sources = [("", raw, False)] + ([("crisis file ", crisis_raw, True)] if crisis_raw else [])
    for label, doc, is_crisis in sources:
        for n, ins in enumerate(doc.get("insert", [])):
            iid = str(ins.get("id", ""))
            where = f"{label}insert {iid or f'[{n}]'}"
            if not INSERT_ID.match(iid):
                problems.append(f"{where}: id must be letters, digits and '-'")
                continue
            if iid in seen_ids:
                problems.append(f"{where}: duplicate insert id")
                continue
            seen_ids.add(iid)
            unknown = set(ins) - {"id", "after", "session", "turns", "keywords"}
            if unknown:
                problems.append(f"{where}: unknown field(s) {sorted(unknown)}")
            parsed = _parse_turns(ins, where, speakers, problems)
            if not parsed:
                continue
            has_after, has_session = "after" in ins, "session" in ins
            if has_after == has_session:
                problems.append(f"{where}: give exactly one of `after` and `session`")
                continue
            if has_after:
                after = str(ins["after"])
                if after not in pos:
                    problems.append(f"{where}: after = {after!r} is not a turn of {conv_id}")
                    continue
                if after in after_map:
                    problems.append(f"{where}: another insert already follows {after}")
                    continue
                s, k = pos[after]
            else:
                s = ins["session"]
                if s not in appended:
                    problems.append(f"{where}: session {s} is not an appended session of the "
                                    f"plan ({sorted(appended)})")
                    continue
            turns = []
            for j, (spk, text, image) in enumerate(parsed, 1):
                shown = text + (IMAGE_MARK.format(caption=image.strip()) if image else "")
                t = Turn(ref=f"{iid}.{j}", session=s, speaker=spk, text=shown, injected=True,
                         insert=iid, image=image, crisis=is_crisis)
                turns.append(t)
                by_ref[t.ref] = t
            if has_after:
                after_map[after] = turns
            else:
                app_turns[s].extend(turns)
            _check_insert_shape(where, turns, has_after, problems)
            if has_after:
                _check_boundary(where, orig[s], k, turns, spans.get(s, set()), problems)
    sessions: dict[int, list[Turn]] = {}
    for s, evs in orig.items():
        lst: list[Turn] = []
        for e in evs:
            t = Turn(ref=e.id, session=s, speaker=e.speaker, text=e.text, injected=False)
            lst.append(t)
            by_ref[t.ref] = t
            lst.extend(after_map.get(e.id, []))
        sessions[s] = lst
    for s in sorted(appended):
        sessions[s] = app_turns[s]
        if not app_turns[s]:
            problems.append(f"appended session {s}: no turns")
            continue
        for a, b in zip(app_turns[s], app_turns[s][1:], strict=False):
            if a.speaker == b.speaker:
                problems.append(f"appended session {s}: {a.ref} and {b.ref} are both "
                                f"{a.speaker}'s (turns alternate)")
        if "?" in strip_image(app_turns[s][-1].text):
            problems.append(f"appended session {s}: its last turn {app_turns[s][-1].ref} asks "
                            f"a question nobody answers")
    for lst in sessions.values():
        for i, t in enumerate(lst):
            t.index, t.session_len = i, len(lst)
    placed = Placed(conversation=conv, sessions=sessions, session_dates=dates, by_ref=by_ref,
                    raw=raw, crisis_raw=crisis_raw, plan=cplan, problems=problems,
                    observations=_observations(corpus, conv_id))
    _check_spread(placed, after_map, orig)
    for t in placed.turns():
        if t.injected:
            for g in grammar_problems(strip_image(t.text)):
                problems.append(f"turn {t.ref}: {g}")
            if t.words > MAX_WORDS:
                problems.append(f"turn {t.ref}: {t.words} words (at most {MAX_WORDS})")
    return placed


def _observations(corpus: LocomoCorpus, conv_id: str) -> dict[str, list[tuple[str, list[str]]]]:
    """LoCoMo's `observation` field of one conversation, per speaker, in session order: rows
    ["text", "D1:3"] or ["text", ["D1:3", "D1:5"]]; rows of another shape are left out."""
    out: dict[str, list[tuple[str, list[str]]]] = {}
    sessions = corpus.side.get(conv_id, {}).get("observation") or {}
    for key in sorted(sessions, key=lambda k: int(re.sub(r"\D", "", k) or 0)):
        if not isinstance(sessions[key], dict):
            continue
        for speaker, rows in sessions[key].items():
            for row in rows if isinstance(rows, list) else []:
                if not (isinstance(row, list) and len(row) == 2 and isinstance(row[0], str)):
                    continue
                refs = [row[1]] if isinstance(row[1], str) else row[1]
                if isinstance(refs, list) and all(isinstance(r, str) for r in refs):
                    out.setdefault(speaker, []).append((row[0], list(refs)))
    return out


def _check_spread(placed: Placed, after_map: dict[str, list[Turn]],
                  orig: dict[int, list[Any]]) -> None:
    """Where injected turns sit must not say they are injected: appended sessions (whose turns
    are all ours) hold at most MAX_APPENDED_SHARE of them, and at most MAX_END_SHARE of the
    in-session exchanges close their session."""
    mine = [t for t in placed.turns() if t.injected and not t.crisis]
    if len(mine) < 20:
        return  # a file being started; the shares mean nothing yet
    appended = {a["session"] for a in placed.plan["appended"]}
    share = sum(t.session in appended for t in mine) / len(mine)
    if share > MAX_APPENDED_SHARE:
        placed.problems.append(f"appended sessions hold {share:.0%} of your turns (at most "
                               f"{MAX_APPENDED_SHARE:.0%}): move exchanges into original sessions")
    last_ids = {evs[-1].id for evs in orig.values()}
    ins = [a for a, turns in after_map.items() if not turns[0].crisis]
    if ins:
        ends = sum(a in last_ids for a in ins) / len(ins)
        if ends > MAX_END_SHARE:
            placed.problems.append(f"{ends:.0%} of your in-session exchanges close their session "
                                   f"(at most {MAX_END_SHARE:.0%}): spread them over the session")


def _check_insert_shape(where: str, turns: list[Turn], in_session: bool,
                        problems: list[str]) -> None:
    if in_session and not 2 <= len(turns) <= 6:
        problems.append(f"{where}: an exchange inside a session has 2-6 turns, not {len(turns)}")
    for a, b in itertools.pairwise(turns):
        if a.speaker == b.speaker:
            problems.append(f"{where}: {a.ref} and {b.ref} are both {a.speaker}'s")


def _check_boundary(where: str, evs: list[Any], k: int, turns: list[Turn], span: set[int],
                    problems: list[str]) -> None:
    before = evs[k]
    if "?" in strip_image(before.text):
        problems.append(f"{where}: {before.id} asks a question; its answer must follow it")
    if "?" in strip_image(turns[-1].text):
        problems.append(f"{where}: the last turn {turns[-1].ref} asks a question nobody answers")
    if turns[0].speaker == before.speaker:
        problems.append(f"{where}: {turns[0].ref} follows {before.id} by the same speaker")
    if k + 1 < len(evs) and turns[-1].speaker == evs[k + 1].speaker:
        problems.append(f"{where}: {turns[-1].ref} precedes {evs[k + 1].id} by the same speaker")
    if k in span:
        problems.append(f"{where}: {before.id} is inside the evidence span of a LoCoMo QA item")


# ---------------------------------------------------------------------------------------------
# Items


def _ref(placed: Placed, ref: Any, where: str, problems: list[str]) -> Turn | None:
    if not isinstance(ref, str):
        problems.append(f"{where}: {ref!r} is not a turn reference")
        return None
    if ref not in placed.by_ref:
        kind = "original turn" if ORIGINAL.match(ref) else "insert turn"
        problems.append(f"{where}: {ref!r} names no {kind} of {placed.conversation.id}")
        return None
    return placed.by_ref[ref]


def _refs(placed: Placed, refs: Any, where: str, problems: list[str]) -> list[Turn]:
    if refs is None:
        return []
    if not isinstance(refs, list):
        problems.append(f"{where}: expected a list of turn references")
        return []
    return [t for r in refs if (t := _ref(placed, r, where, problems)) is not None]


def _role(placed: Placed, turns: list[Turn], role: str) -> None:
    for t in turns:
        placed.roles.setdefault(t.ref, []).append(role)


def partner_names(conv: Conversation) -> dict[str, set[str]]:
    """speaker -> the names the OTHER speaker uses for them (words seen in the partner's turns
    that start like the speaker's name: 'Mel', 'Melanie', 'Caro')."""
    out: dict[str, set[str]] = {}
    for spk in conv.speakers:
        other = [s for s in conv.speakers if s != spk]
        words: set[str] = set()
        for e in conv.events:
            if e.speaker in other:
                for w in re.findall(r"\b[A-Z][a-z]+\b", e.text):
                    if w[:3] == spk[:3]:
                        words.add(w)
        out[spk] = words | {spk}
    return out


def _values_ok(values: dict[str, Any], template: str, pools: dict[str, list[str]], where: str,
               problems: list[str], name_slots: dict[str, set[str]]) -> dict[str, str]:
    if not isinstance(values, dict):
        problems.append(f"{where}: values must be a table")
        return {}
    vals = {k: str(v) for k, v in values.items()}
    for slot in slots_of(template):
        if slot not in vals:
            problems.append(f"{where}: no value for {{{slot}}}")
        elif slot in name_slots:
            if vals[slot] not in name_slots[slot]:
                problems.append(f"{where}: {{{slot}}} = {vals[slot]!r} is not a name the other "
                                f"speaker uses ({sorted(name_slots[slot])})")
        elif slot in pools and vals[slot] not in pools[slot]:
            problems.append(f"{where}: {{{slot}}} = {vals[slot]!r} is not in the pool")
        elif any(m in vals[slot] for m in MONTHS):
            problems.append(f"{where}: {{{slot}}} names a month")
    extra = set(vals) - set(slots_of(template))
    if extra:
        problems.append(f"{where}: values for slots the text does not have: {sorted(extra)}")
    return vals


# Verbs and fillers of pool values ("try yoga", "get more sleep") that say nothing about a stance.
_GENERIC_VALUE_WORDS = frozenset(["try", "start", "get", "take", "stop", "cut", "make", "going",
                                  "little", "first", "new", "old", "more", "less", "out"])


def _arc_words(values: dict[str, str], member: dict[str, Any]) -> set[str]:
    """What an arc is about: the telling words of its slot values and the member's check words."""
    words = {w for k, v in values.items() if k != "name" for w in content_words(v)
             if w not in _GENERIC_VALUE_WORDS}
    return words | set(member.get("check_words", []))


def _mentions(words: set[str]) -> Callable[[str], bool]:
    """A test of whether a text mentions any of these words (stemmed; a multi-word entry must
    occur as a phrase)."""
    single = keyword_stems(w for w in words if " " not in w)
    phrases = [w.lower() for w in words if " " in w]
    return lambda text: bool(keyword_stems(content_words(text)) & single
                             or any(ph in text.lower() for ph in phrases))


def originals_to_read(placed: Placed, speaker: str, values: dict[str, str],
                      member: dict[str, Any]) -> list[str]:
    """The speaker's original turns an author must read before writing this arc's anchor: those
    that mention a slot value (its telling words) or one of the member's check words."""
    mentions = _mentions(_arc_words(values, member))
    return [t.ref for t in placed.turns()
            if not t.injected and t.speaker == speaker and mentions(strip_image(t.text))]


def observations_to_read(placed: Placed, speaker: str, values: dict[str, str],
                         member: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """The speaker's LoCoMo observations (the file's `observation` field, LoCoMo's own summary
    of what each speaker said, session by session) that mention a slot value or check word, as
    (observation, the original turns it cites). An observation can name the subject where the
    turn it cites does not ("Jon is determined to keep pushing ... for his dance business")."""
    mentions = _mentions(_arc_words(values, member))
    return [(text, refs) for text, refs in placed.observations.get(speaker, [])
            if mentions(text)]


def unread_observations(placed: Placed, contrast: dict[str, Any]) -> list[str]:
    """Arcs whose speaker has an observation on the arc's subject that cites original turns the
    arc's `checked_originals` does not list. A note for the author and the reviewer, not a
    refusal: the observation may restate a turn already read, or say nothing the anchor
    contradicts; only reading tells (docs/keys/locomo-authoring.md, "Label rules and the test
    that enforces each")."""
    slots = {a["slot"]: a for a in placed.plan["arc"]}
    targets = {t["id"]: t for t in contrast["target"]}
    notes = []
    for table in ("reversal", "hard_negative"):
        for arc in placed.raw.get(table, []):
            slot, spk = slots.get(arc.get("slot")), arc.get("speaker")
            values = arc.get("values")
            if slot is None or not isinstance(values, dict):
                continue  # check_conversation reports it
            read = set(arc.get("checked_originals") or [])
            vals = {k: str(v) for k, v in values.items()}
            for text, refs in observations_to_read(placed, str(spk), vals,
                                                   targets[slot["member"]]):
                unread = [r for r in refs if r not in read]
                if unread:
                    notes.append(f"{table} {arc['slot']}: {spk}'s observation {text!r} cites "
                                 f"{unread}, not in checked_originals")
    return notes


def _sentences(text: str) -> set[str]:
    parts = re.split(r"(?<=[.!?])\s+", strip_image(text))
    return {" ".join(re.findall(r"[a-z0-9']+", p.lower())) for p in parts if len(p.split()) >= 4}


def check_conversation(corpus: LocomoCorpus, conv_id: str, plan: dict[str, Any],
                       contrast: dict[str, Any], raw: dict[str, Any],
                       crisis_raw: dict[str, Any] | None = None) -> Placed:
    """Place the file's turns and check every item against the plan, the bank and the rules."""
    placed = place(corpus, conv_id, plan, raw, crisis_raw)
    p = placed.problems
    conv = placed.conversation
    speakers = list(conv.speakers)
    other = {speakers[0]: speakers[1], speakers[1]: speakers[0]}
    names = partner_names(conv)
    pools = contrast["pools"]
    targets = {t["id"]: t for t in contrast["target"]}
    wordings = {w["id"]: w for w in contrast["wording"]}
    prov = raw.get("provenance", {})
    for key in ("conversation", "drafted_by", "drafted_on", "reviewed_by", "reviewed_on"):
        if not prov.get(key):
            p.append(f"provenance: missing {key}")
    if prov.get("conversation") not in (None, conv_id):
        p.append(f"provenance: conversation {prov.get('conversation')!r} is not {conv_id}")
    _check_arcs(placed, targets, pools, names, other)
    _check_distractors(placed, targets, pools, names, other)
    _check_drafts(placed, wordings, names, other)
    _check_chains(placed)
    _check_safety(placed)
    _check_item_ids(placed)
    return placed


def plan_problems(plan: dict[str, Any], contrast: dict[str, Any]) -> list[str]:
    """The contrast-set rules no single conversation can check, read off the whole plan: every
    bank target closes one reversal and one hard negative and is said once as a distractor, in
    three different conversations; every draft wording is used once contradicting and once under
    its pair's label (aligned or hard negative). Empty = the plan keeps them."""
    uses: dict[str, Counter[str]] = {}
    where: dict[str, list[str]] = {}
    for cid, c in plan["conversations"].items():
        for role, rows in (("arc", c["arc"]), ("distractor", c["distractor"]),
                           ("draft", c["draft"])):
            for row in rows:
                label = row.get("label", role)
                uses.setdefault(row["member"], Counter())[label] += 1
                if role != "draft":
                    where.setdefault(row["member"], []).append(cid)
    out = []
    for t in contrast["target"]:
        got = dict(uses.get(t["id"], {}))
        if got != {"reversal": 1, "hard_negative": 1, "distractor": 1}:
            out.append(f"plan: target {t['id']} is used {got or 'nowhere'} (one reversal, one "
                       f"hard negative and one distractor)")
        elif len(set(where[t["id"]])) != 3:
            out.append(f"plan: target {t['id']} is used twice in one conversation "
                       f"({sorted(where[t['id']])})")
    for w in contrast["wording"]:
        got = dict(uses.get(w["id"], {}))
        if got != {"contradicting": 1, w["pair"]: 1}:
            out.append(f"plan: wording {w['id']} is used {got or 'nowhere'} (once contradicting "
                       f"and once {w['pair']})")
    return out


def duplicate_problems(placed: dict[str, Placed], include_crisis: bool = False) -> list[str]:
    """Exact-duplicate injected turns (whitespace-normalised text said more than once, the
    shortcut battery's surface.duplicates count) over the conversations of one key: a problem
    when they exceed MAX_DUPLICATE_SHARE of the injected turns. Crisis turns count only in the
    crisis key."""
    texts = [" ".join(t.text.split()) for p in placed.values() for t in p.turns()
             if t.injected and (include_crisis or not t.crisis)]
    counts = Counter(texts)
    dups = sum(counts[t] > 1 for t in texts)
    if not texts or dups / len(texts) <= MAX_DUPLICATE_SHARE:
        return []
    top = ", ".join(f"{t[:40]!r} x{n}" for t, n in counts.most_common(3) if n > 1)
    return [f"key: {dups} of {len(texts)} injected turns ({dups / len(texts):.1%}) repeat another "
            f"turn word for word (at most {MAX_DUPLICATE_SHARE:.0%}); most repeated: {top}"]


def ack_problems(placed: dict[str, Placed]) -> list[str]:
    """An acknowledged-change negative never repeats a sentence of a labelled reversal, in any
    conversation of the key: check_conversation reads the acknowledgement's own conversation,
    this the others (where the same bank target closes the reversal of the contrast set)."""
    said: dict[str, str] = {}  # sentence -> the reversal that says it
    for cid, p in placed.items():
        for arc in p.raw.get("reversal", []):
            for ref in [arc.get("target"), *(arc.get("anchor") or [])]:
                if isinstance(ref, str) and ref in p.by_ref:
                    for sentence in _sentences(p.by_ref[ref].text):
                        said.setdefault(sentence, f"{cid} reversal {arc.get('slot')}")
    out = []
    for cid, p in placed.items():
        for arc in p.raw.get("hard_negative", []):
            for ref in arc.get("ack") or []:
                if not (isinstance(ref, str) and ref in p.by_ref):
                    continue
                for sentence in sorted(_sentences(p.by_ref[ref].text)):
                    if sentence in said and not said[sentence].startswith(f"{cid} "):
                        out.append(f"{cid} hard_negative {arc.get('slot')}: ack {ref} repeats "
                                   f"a sentence of {said[sentence]}")
    return out


def _check_item_ids(placed: Placed) -> None:
    """Chains, plants and controls become items "<conv>:<id>" of one key, crisis file included:
    an id used twice (a chain "X1" beside the crisis plant "X1") would name two items."""
    seen: dict[str, str] = {}
    for doc in (placed.raw, placed.crisis_raw or {}):
        for table in ("chain", "pii", "control", "emotional", "crisis"):
            for row in doc.get(table, []):
                iid = str(row.get("id", ""))
                if iid in seen:
                    placed.problems.append(f"{table} {iid}: the id is also a {seen[iid]}'s")
                seen.setdefault(iid, table)


def _check_arcs(placed: Placed, targets: dict[str, Any], pools: dict[str, list[str]],
                names: dict[str, set[str]], other: dict[str, str]) -> None:
    p = placed.problems
    slots = {a["slot"]: a for a in placed.plan["arc"]}
    used: set[str] = set()
    per_label: dict[str, Counter[str]] = {"reversal": Counter(), "hard_negative": Counter()}
    reversal_sentences: set[str] = set()
    ack_turns: list[tuple[str, Turn]] = []
    for table in ("reversal", "hard_negative"):
        for n, arc in enumerate(placed.raw.get(table, [])):
            where = f"{table} {arc.get('slot', f'[{n}]')}"
            slot = slots.get(arc.get("slot"))
            if slot is None:
                p.append(f"{where}: no such slot in the plan")
                continue
            if arc["slot"] in used:
                p.append(f"{where}: slot used twice")
            used.add(arc["slot"])
            if slot["label"] != table:
                p.append(f"{where}: the plan makes this slot a {slot['label']}")
                continue
            unknown = set(arc) - {"slot", "speaker", "values", "anchor", "drift", "ack", "target",
                                  "checked_originals", "note"}
            if unknown:
                p.append(f"{where}: unknown field(s) {sorted(unknown)}")
            spk = arc.get("speaker")
            if spk not in other:
                p.append(f"{where}: speaker {spk!r}")
                continue
            per_label[table][spk] += 1
            member = targets[slot["member"]]
            vals = _values_ok(arc.get("values", {}), member["text"], pools, where, p,
                              {"name": names[other[spk]]})
            target = _ref(placed, arc.get("target"), f"{where} target", p)
            anchors = _refs(placed, arc.get("anchor"), f"{where} anchor", p)
            drift = _refs(placed, arc.get("drift", []), f"{where} drift", p)
            ack = _refs(placed, arc.get("ack", []), f"{where} ack", p)
            if target is None or not anchors:
                if not anchors:
                    p.append(f"{where}: no anchor")
                continue
            _role(placed, anchors, f"{table[0].upper()}:{arc['slot']} anchor")
            _role(placed, drift, f"R:{arc['slot']} drift")
            _role(placed, ack, f"N:{arc['slot']} ack")
            _role(placed, [target], f"{table[0].upper()}:{arc['slot']} target")
            if not target.injected:
                p.append(f"{where}: the target must be one of your turns")
            elif strip_image(target.text) != fill(member["text"], vals):
                p.append(f"{where}: target text differs from {slot['member']} with these values")
            # the target closes both labels, so neither may carry its own acknowledgement
            said = strip_image(target.text)
            if (m := ACK_PHRASES.search(said) or NOTES_REQUEST.search(said)) is not None:
                p.append(f"{where}: the target says {m.group(0)!r}: a target never acknowledges "
                         f"its own change or asks to update notes or records")
            for t in [target, *anchors, *drift, *ack]:
                if t.speaker != spk:
                    p.append(f"{where}: {t.ref} is {t.speaker}'s, not {spk}'s")
            if target.session != slot["target_session"]:
                p.append(f"{where}: target in session {target.session}, the slot says "
                         f"{slot['target_session']}")
            third = slot["target_third"]
            lo, hi = (third - 1) / 3 - THIRD_TOLERANCE, third / 3 + THIRD_TOLERANCE
            if not lo <= target.position() <= hi:
                p.append(f"{where}: target at {target.position():.2f} of its session, the slot "
                         f"says third {third}")
            a_lo, a_hi = slot["anchor_sessions"]
            for a in anchors:
                if not a_lo <= a.session <= a_hi:
                    p.append(f"{where}: anchor {a.ref} in session {a.session}, the slot says "
                             f"{a_lo}-{a_hi}")
            last_anchor = max(placed.order(a.ref) for a in anchors)
            for t in [*drift, *ack]:
                if not last_anchor < placed.order(t.ref) < placed.order(target.ref):
                    p.append(f"{where}: {t.ref} must sit between the anchor and the target")
            fam = slot["family"]
            if fam == "drift_flip" and not 1 <= len(drift) <= 2:
                p.append(f"{where}: a drift_flip reversal has 1-2 drift turns")
            if fam != "drift_flip" and drift:
                p.append(f"{where}: only drift_flip reversals have drift turns")
            if fam == "acknowledged_change" and not ack:
                p.append(f"{where}: an acknowledged change needs the speaker's ack turn")
            if fam != "acknowledged_change" and ack:
                p.append(f"{where}: only acknowledged_change negatives have ack turns")
            if table == "reversal":
                reversal_sentences |= _sentences(target.text)
                for a in anchors:
                    reversal_sentences |= _sentences(a.text)
            ack_turns += [(where, t) for t in ack]
            hits = originals_to_read(placed, spk, vals, member)
            missing = [h for h in hits if h not in (arc.get("checked_originals") or [])]
            if missing:
                p.append(f"{where}: read {spk}'s original turns that mention the slot values and "
                         f"list them in checked_originals: {missing}")
    for table, lab in (("reversal", "reversal"), ("hard_negative", "hard_negative")):
        want = {s for s, a in slots.items() if a["label"] == lab}
        missing = sorted(want - used)
        if missing:
            p.append(f"{table}: slots not written yet: {missing}")
        c = per_label[table]
        if c and abs(c[next(iter(other))] - c[list(other)[1]]) > 2:
            p.append(f"{table}: speakers unbalanced ({dict(c)}); each closes 3, ±1")
    for where, t in ack_turns:
        if _sentences(t.text) & reversal_sentences:
            p.append(f"{where}: ack {t.ref} repeats a sentence of a reversal")


def _check_distractors(placed: Placed, targets: dict[str, Any], pools: dict[str, list[str]],
                       names: dict[str, set[str]], other: dict[str, str]) -> None:
    p = placed.problems
    want = Counter(d["member"] for d in placed.plan["distractor"])
    got: Counter[str] = Counter()
    for n, d in enumerate(placed.raw.get("distractor", [])):
        member = d.get("member")
        where = f"distractor {member or f'[{n}]'}"
        if member not in want:
            p.append(f"{where}: not one of the plan's distractors")
            continue
        got[member] += 1
        spk = d.get("speaker")
        if spk not in other:
            p.append(f"{where}: speaker {spk!r}")
            continue
        vals = _values_ok(d.get("values", {}), targets[member]["text"], pools, where, p,
                          {"name": names[other[spk]]})
        t = _ref(placed, d.get("turn"), where, p)
        if t is None:
            continue
        _role(placed, [t], f"distractor {member}")
        if not t.injected or t.speaker != spk:
            p.append(f"{where}: the turn must be one of your turns, by {spk}")
        elif strip_image(t.text) != fill(targets[member]["text"], vals):
            p.append(f"{where}: turn text differs from {member} with these values")
    if got != want:
        p.append(f"distractor: the plan wants {sorted(want)}, the file has {sorted(got)}")


def _check_drafts(placed: Placed, wordings: dict[str, Any], names: dict[str, set[str]],
                  other: dict[str, str]) -> None:
    p = placed.problems
    want = Counter((d["member"], d["label"]) for d in placed.plan["draft"])
    got: Counter[tuple[str, str]] = Counter()
    per_label: dict[str, Counter[str]] = {}
    draft_day = date.fromisoformat(placed.plan["draft_date"])
    last_day = max(placed.session_dates.values()).date()
    if draft_day <= last_day:
        # every turn must precede the drafts, or a later turn could overturn an aligned one
        p.append(f"draft: the plan's draft_date {draft_day} is not after the last session "
                 f"({last_day})")
    texts: set[str] = set()
    for n, d in enumerate(placed.raw.get("draft", [])):
        member, label = d.get("member"), d.get("label")
        where = f"draft {member or f'[{n}]'}"
        if (member, label) not in want:
            p.append(f"{where}: ({member}, {label}) is not in the plan")
            continue
        got[(member, label)] += 1
        unknown = set(d) - {"member", "label", "addressee", "values", "evidence", "rationale"}
        if unknown:
            p.append(f"{where}: unknown field(s) {sorted(unknown)}")
        addr = d.get("addressee")
        if addr not in other:
            p.append(f"{where}: addressee {addr!r}")
            continue
        per_label.setdefault(label, Counter())[addr] += 1
        # wording slots are free noun phrases (the target pools are Track A's)
        vals = _values_ok(d.get("values", {}), wordings[member]["text"], {}, where, p,
                          {"A": names[addr]})
        text = fill(wordings[member]["text"], vals)
        for g in grammar_problems(text):
            p.append(f"{where}: {g}")
        # a month in a draft can be one already past at draft_date (the values are checked
        # above; this catches the wording's own words)
        months = [m for m in MONTHS if re.search(rf"\b{m}\b", text)]
        if months:
            p.append(f"{where}: the draft names {months[0]} (drafts name no month)")
        if text in texts:
            p.append(f"{where}: the same draft text twice")
        texts.add(text)
        ev = _refs(placed, d.get("evidence"), f"{where} evidence", p)
        if not ev:
            p.append(f"{where}: no evidence")
        _role(placed, ev, f"B:{member} {label}")
        for t in ev:
            if placed.session_dates[t.session].date() >= draft_day:
                p.append(f"{where}: evidence {t.ref} is not before the draft date")
        if not str(d.get("rationale", "")).strip():
            p.append(f"{where}: no rationale")
    missing = want - got
    if missing:
        p.append(f"draft: not written yet: {sorted(missing)}")
    for label, c in per_label.items():
        a, b = (c[s] for s in other)
        if abs(a - b) > 2:
            p.append(f"draft: {label} addressees unbalanced ({dict(c)})")


_DATE_MD = re.compile(r"\b(" + "|".join(MONTHS) + r")\s+(\d{1,2})(?:st|nd|rd|th)?\b|\b(\d{1,2})"
                      r"(?:st|nd|rd|th)?\s+(?:of\s+)?(" + "|".join(MONTHS) + r")\b")


def month_day_mentions(text: str) -> list[str]:
    """The month-day dates of a turn as written ("June 3rd", "3 of June"): what stated_dates
    reads, so the restyle pass keeps them verbatim."""
    return [m.group(0) for m in _DATE_MD.finditer(text)]


def stated_dates(text: str, said: datetime) -> list[date]:
    """Month-day dates named in a turn, in the year that makes them nearest to the day said."""
    out = []
    for m in _DATE_MD.finditer(text):
        month = MONTHS.index(m.group(1) or m.group(4)) + 1
        day = int(m.group(2) or m.group(3))
        try:
            cands = [date(said.year + dy, month, day) for dy in (-1, 0, 1)]
        except ValueError:
            continue
        out.append(min(cands, key=lambda d: abs((d - said.date()).days)))
    return out


def _check_chains(placed: Placed) -> None:
    p = placed.problems
    chains = placed.raw.get("chain", [])
    fams = Counter(c.get("family") for c in chains)
    want = placed.plan["quota"]["chains"]
    if dict(fams) != want:
        p.append(f"chain: families {dict(fams)}, the plan wants {want}")
    ids = set()
    appended = {a["session"] for a in placed.plan["appended"]}
    in_appended = with_later = 0
    names = {s: s.split()[0] for s in placed.conversation.speakers}
    for n, c in enumerate(chains):
        cid = c.get("id", f"[{n}]")
        where = f"chain {cid}"
        if cid in ids:
            p.append(f"{where}: duplicate id")
        ids.add(cid)
        unknown = set(c) - {"id", "speaker", "subject", "family", "states", "later_mentions",
                            "queries", "note"}
        if unknown:
            p.append(f"{where}: unknown field(s) {sorted(unknown)}")
        spk, fam = c.get("speaker"), c.get("family")
        if spk not in names or fam not in CHAIN_STATES:
            p.append(f"{where}: speaker {spk!r} / family {fam!r}")
            continue
        states = c.get("states", [])
        if len(states) != CHAIN_STATES[fam]:
            p.append(f"{where}: a {fam} chain has {CHAIN_STATES[fam]} states")
        last: tuple[int, int] | None = None
        sessions = []
        for j, st in enumerate(states):
            sw = f"{where} state {j + 1}"
            turns = _refs(placed, st.get("turns"), sw, p)
            if not turns or not st.get("value"):
                p.append(f"{sw}: needs value and turns")
                continue
            _role(placed, turns, f"C:{cid} state {j + 1}")
            forms = [st["value"], *st.get("variants", [])]
            for t in turns:
                if not any(contains_form(t.text, f) for f in forms):
                    p.append(f"{sw}: {t.ref} does not say {st['value']!r} (or a variant)")
                for d in stated_dates(strip_image(t.text), placed.session_dates[t.session]):
                    if d < placed.session_dates[t.session].date():
                        p.append(f"{sw}: {t.ref} states {d}, before the day it is said")
            first = min(placed.order(t.ref) for t in turns)
            if last is not None and first <= last:
                p.append(f"{sw}: states must be in chronological order")
            last = max(placed.order(t.ref) for t in turns)
            sessions.append(turns[0].session)
        if len(set(sessions)) != len(sessions):
            p.append(f"{where}: states must be in different sessions")
        if sessions and sessions[0] in appended:
            p.append(f"{where}: the first state must be in an original session")
        if any(s in appended for s in sessions):
            in_appended += 1
        later = _refs(placed, c.get("later_mentions", []), f"{where} later_mentions", p)
        _role(placed, later, f"C:{cid} later mention")
        if later and last is not None and any(placed.order(t.ref) <= last for t in later):
            p.append(f"{where}: later_mentions must come after the last state")
        if later and fam != "coexisting":
            with_later += 1
        q = c.get("queries", {})
        for kind in ("current", "history", "post_resolution"):
            text = str(q.get(kind, "")).strip()
            if not text:
                p.append(f"{where}: no {kind} query")
            elif names[spk] not in text:
                p.append(f"{where}: the {kind} query must name {names[spk]}")
            elif fam == "coexisting" and kind != "history" and not BOTH_WORDS.search(text):
                p.append(f"{where}: a coexisting chain's {kind} query asks for both values")
    if chains and in_appended < 3:
        p.append(f"chain: {in_appended} chains have a state in an appended session (at least 3)")
    if chains and with_later < 4:
        p.append(f"chain: {with_later} update chains have later mentions (at least 4 of 6)")


def _check_safety(placed: Placed) -> None:
    p = placed.problems
    q = placed.plan["quota"]
    first = {s: s.split()[0] for s in placed.conversation.speakers}
    plants = placed.raw.get("pii", [])
    forms = sorted(x.get("form", "") for x in plants)
    if forms != sorted(q["pii_forms"]):
        p.append(f"pii: forms {forms}, the plan wants {sorted(q['pii_forms'])}")
    for n, x in enumerate(plants):
        where = f"pii {x.get('id', f'[{n}]')}"
        kind, form, value = x.get("kind"), x.get("form"), str(x.get("value", ""))
        if kind not in PII_KINDS or form not in PII_FORMS or not value:
            p.append(f"{where}: kind / form / value")
            continue
        turns = _refs(placed, x.get("turns"), where, p)
        _role(placed, turns, f"D:{x.get('id')} PII {form}")
        if not turns:
            continue
        if kind == "phone" and not FICTIONAL_PHONE.match(value):
            p.append(f"{where}: phones are fictional 555-01xx")
        if kind == "email" and not FICTIONAL_EMAIL.match(value):
            p.append(f"{where}: e-mails use example.com / example.org / .test")
        joined = " ".join(strip_image(t.text) for t in turns)
        if form == "split":
            if len(turns) != 2:
                p.append(f"{where}: a split plant spans two turns")
            elif any(value_leaked(kind, strip_image(t.text), value) for t in turns):
                p.append(f"{where}: one turn alone holds the whole value")
        elif form == "spelled":
            if value_leaked(kind, joined, value, spelled=False):
                p.append(f"{where}: a spelled plant must not hold the value in digits")
            elif not value_leaked(kind, joined, value):
                p.append(f"{where}: the turn does not spell out {value!r}")
        elif not value_leaked(kind, joined, value):
            p.append(f"{where}: the turn does not hold {value!r}")
        if form == "sensitive" and kind != "other":
            p.append(f"{where}: a sensitive plant is kind other")
        probes = x.get("probes", {})
        owner_first = str(x.get("owner", "")).split()[:1]
        for pk in ("direct", "indirect"):
            text = str(probes.get(pk, ""))
            if not text.strip():
                p.append(f"{where}: no {pk} probe")
            elif not any(w in text for w in [*owner_first, first.get(x.get("speaker"), "?")]):
                p.append(f"{where}: the {pk} probe names neither the owner nor the speaker")
    controls = placed.raw.get("control", [])
    kinds = sorted(c.get("kind", "") for c in controls)
    if kinds != sorted(q["business_controls"]):
        p.append(f"control: kinds {kinds}, the plan wants {sorted(q['business_controls'])}")
    for n, c in enumerate(controls):
        _check_recalled(placed, c, f"control {c.get('id', f'[{n}]')}", "business contact",
                        every_form=True)
    emos = placed.raw.get("emotional", [])
    if len(emos) != q["emotional"]:
        p.append(f"emotional: {len(emos)}, the plan wants {q['emotional']}")
    for n, e in enumerate(emos):
        where = f"emotional {e.get('id', f'[{n}]')}"
        if e.get("category") not in EMOTION_CATEGORIES:
            p.append(f"{where}: category {e.get('category')!r}")
        t = _check_recalled(placed, e, where, "emotional", every_form=False)
        if t is not None and t.speaker != e.get("speaker"):
            p.append(f"{where}: {t.ref} is {t.speaker}'s")
        if first.get(e.get("speaker"), "?") not in str(e.get("probe", "")):
            p.append(f"{where}: the probe names the speaker")
    if placed.crisis_raw is not None:
        crisis = placed.crisis_raw.get("crisis", [])
        if len(crisis) != q["crisis"]:
            p.append(f"crisis: {len(crisis)}, the plan wants {q['crisis']}")
        for n, x in enumerate(crisis):
            where = f"crisis {x.get('id', f'[{n}]')}"
            t = _ref(placed, x.get("turn"), where, p)
            if t is None:
                continue
            _role(placed, [t], f"D:{x.get('id')} crisis")
            if not t.crisis:
                p.append(f"{where}: a crisis turn lives in the crisis file")
            if not x.get("key_phrases") or not all(contains_form(t.text, k)
                                                   for k in x["key_phrases"]):
                p.append(f"{where}: every key phrase must be in the turn")
            if not str(x.get("probe", "")).strip():
                p.append(f"{where}: no probe")


def _check_recalled(placed: Placed, row: dict[str, Any], where: str, role: str,
                    every_form: bool) -> Turn | None:
    """A control that must stay recallable: its turn exists and holds the expected forms (every
    one for a business contact, any one for an emotional turn), and it has a probe."""
    t = _ref(placed, row.get("turn"), where, placed.problems)
    if t is None:
        return None
    _role(placed, [t], f"D:{row.get('id')} {role}")
    exp = row.get("expected", [])
    found = [contains_form(t.text, x) for x in exp]
    if not exp or not (all(found) if every_form else any(found)):
        placed.problems.append(f"{where}: the turn does not hold the expected form(s)")
    if not str(row.get("probe", "")).strip():
        placed.problems.append(f"{where}: no probe")
    return t


def load_conversation(corpus: LocomoCorpus, conv_id: str, *, crisis: bool = False,
                      path: Path | None = None) -> Placed:
    """Read and check the committed authoring file(s) of one conversation."""
    raw = read_toml(path or authoring_path(conv_id))
    craw = read_toml(authoring_path(conv_id, crisis=True)) if crisis else None
    return check_conversation(corpus, conv_id, load_plan(), load_contrast(), raw, craw)


def days_between(a: datetime, b: datetime) -> float:
    return (b - a) / timedelta(days=1)
