"""TWIST-LoCoMo: TWIST items injected into the 10 LoCoMo conversations (`twist build locomo`).

What is injected, per whitepaper §4.1 and the LoCoMo column of §4.3: 60 reversal arcs, 60
hard-negative arcs, 200 drafts (100 contradicting / 50 aligned / 50 hard-negative), 90 update
chains with 270 queries, 40 PII plants with 80 probes, 48 emotional hard negatives, and (opt-in,
`include_crisis`) 24 crisis plants. Injected turns sit inside existing sessions (after a turn of
the other speaker, never between two evidence turns of an original question when avoidable) and
in 2 appended sessions per conversation (at most 3 are allowed), dated 1-4 weeks after the last
session. In-session turns share their session's date (timestamps fall between the original
turns, which are one minute apart: see datasets/locomo.py).

Ids: original dia_ids never change; injected turns are "TW<session>:<n>" (crisis turns
"TX<session>:<n>"), which cannot match LoCoMo's "D<session>:<turn>".

Voice: each speaker's openers, exclamation rate and the name their partner calls them are
measured on their own turns; their interests come from LoCoMo's `observation` field (the facts
behind them are recorded in the key). Everything is seeded and deterministic.

The key (data/twist-locomo-1.0.json, written with datasets/keyfile.py) holds only our turns, where
they
go, the gold, the sha256 of the locomo10.json it applies to and the re-validation list; LoCoMo
itself is read from the user's file. Applying a key to a different file is refused.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from twistbench.datasets.keyfile import write_key
from twistbench.datasets.locomo import LocomoCorpus, load_locomo
from twistbench.datasets.paths import locomo_key_path
from twistbench.datasets.twist_locomo import (
    CRISIS_VERSION,
    KEY_NAME,
    KEY_VERSION,
    dataset_from_payload,
)
from twistbench.itemgen.gate import KeyGate
from twistbench.itemgen.revalidate import _stems, keyword_stems, revalidate
from twistbench.itemgen.templates import locomo_arcs as T_ARCS
from twistbench.itemgen.templates import locomo_chains as T_CH
from twistbench.itemgen.templates import locomo_crisis_optin as T_CRISIS
from twistbench.itemgen.templates import locomo_safety as T_SAFE
from twistbench.itemgen.variety import variety_report
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

DEFAULT_SEED = 20260708
APPENDED_SESSIONS = 2  # the whitepaper allows up to 3
# The LoCoMo column of whitepaper §4.3.
SIZES = {"reversal_arcs": 60, "hard_negative_arcs": 60, "drafts": 200, "update_chains": 90,
         "chain_queries": 270, "pii_plants": 40, "pii_probes": 80, "crisis_plants": 24,
         "emotional_negatives": 48}
DRAFT_SPLIT = {"contradicting": 100, "aligned": 50, "hard_negative": 50}


# ---------------------------------------------------------------------------------------------
# Voice


_ADDRESS = re.compile(
    r"\b(?:Hey|Hi|Hello|Thanks|Thank you|Congrats|Wow|Aw|Oh),?\s+([A-Z][a-z]+)")
_OPENERS = ("wow", "yeah", "oh", "hey", "haha", "aww", "omg", "totally", "absolutely", "hi",
            "ah", "yep", "yes", "sure", "thanks", "cool", "awesome", "great", "ooh", "so", "well")
_INTERESTS = ("painting", "pottery", "camping", "hiking", "running", "swimming", "reading",
              "writing", "cooking", "baking", "photography", "gardening", "music", "guitar",
              "piano", "dancing",
              "yoga", "basketball", "soccer", "football", "video games", "gaming", "volunteering",
              "art", "travel", "fishing", "surfing", "skating", "poetry", "sculpting", "knitting",
              "movies", "meditation", "chess", "climbing", "cycling", "martial arts", "woodworking")


@dataclass
class Voice:
    """A speaker's measured style, drawn from their own LoCoMo turns and observations."""

    speaker: str
    address: str  # how their partner addresses them
    openers: list[tuple[str, int]]
    exclaim_rate: float
    interests: list[str]
    interest_sources: list[str] = field(default_factory=list)  # observation dia_ids

    def as_dict(self) -> dict[str, Any]:
        return {"speaker": self.speaker, "address": self.address, "openers": self.openers,
                "exclaim_rate": round(self.exclaim_rate, 3), "interests": self.interests,
                "interest_sources": self.interest_sources}

    def say(self, text: str, rng: random.Random) -> str:
        """Dress a template sentence in this speaker's habits (openers, exclamation marks)."""
        if self.openers and re.match(r"^I[ ']", text) and rng.random() < 0.35:
            words = [w for w, _ in self.openers]
            weights = [c for _, c in self.openers]
            op = rng.choices(words, weights)[0]
            text = f"{op.capitalize()}, {text}"
        if text.endswith(".") and rng.random() < self.exclaim_rate * 0.7:
            text = text[:-1] + "!"
        return text


def derive_voice(conv: Conversation, side: dict[str, Any], speaker: str, partner: str) -> Voice:
    own = [e.text for e in conv.events if e.speaker == speaker]
    firsts = Counter()
    for t in own:
        m = re.match(r"^([A-Za-z]+)[,!.]", t)
        word = m.group(1).lower() if m else ""
        if word in _OPENERS and word not in ("hey", "hi", "thanks"):
            firsts[m.group(1).lower()] += 1
    openers = sorted(firsts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    exclaim = sum("!" in t for t in own) / max(1, len(own))
    names = Counter()
    for e in conv.events:
        if e.speaker != partner:
            continue
        for m in _ADDRESS.finditer(e.text):
            tok = m.group(1)
            if tok[:2] == speaker[:2]:
                names[tok] += 1
    address = sorted(names.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] if names else speaker
    found: Counter[str] = Counter()
    sources: dict[str, str] = {}
    for key in sorted(side.get("observation", {}) or {}, key=_session_num):
        obs = (side["observation"][key] or {}).get(speaker, [])
        for entry in obs:
            raw = entry[0] if isinstance(entry, list) and entry else entry
            text = str(raw).lower()
            for w in _INTERESTS:
                if re.search(rf"\b{re.escape(w)}\b", text):
                    found[w] += 1
                    if w not in sources and isinstance(entry, list) and len(entry) > 1:
                        sources[w] = str(entry[1])
    interests = [w for w, _ in sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))[:3]]
    return Voice(speaker=speaker, address=address, openers=openers, exclaim_rate=exclaim,
                 interests=interests,
                 interest_sources=[sources[w] for w in interests if w in sources])


def _session_num(key: str) -> int:
    m = re.search(r"(\d+)", key)
    return int(m.group(1)) if m else 0


# ---------------------------------------------------------------------------------------------
# Placement


@dataclass
class _Turn:
    tmp: str
    conversation: str
    session: int
    slot: int  # original turn index it follows (in-session) or creation order (appended)
    seq: int
    speaker: str
    text: str
    crisis: bool = False
    final_id: str = ""
    after: str | None = None
    timestamp: str = ""


class _ConvPlan:
    """Where injected turns go in one conversation."""

    def __init__(self, conv: Conversation, qa_spans: dict[int, set[int]], rng: random.Random):
        self.conv = conv
        self.rng = rng
        self.sessions: list[int] = []
        self.turns_of: dict[int, list[Event]] = {}
        for s, evs in conv.sessions():
            self.sessions.append(s)
            self.turns_of[s] = evs
        self.original_sessions = list(self.sessions)
        self.dates: dict[int, datetime] = {s: evs[0].timestamp for s, evs in conv.sessions()}
        self.date_text: dict[int, str] = {
            s: evs[0].meta.get("date_text", "") for s, evs in conv.sessions()}
        self.forbidden = qa_spans  # session -> slots inside an original QA evidence span
        self.used: Counter[tuple[int, int]] = Counter()
        self.turns: list[_Turn] = []
        self.appended: list[int] = []
        self._n = 0

    def append_sessions(self, k: int) -> None:
        last = self.sessions[-1]
        date = self.dates[last]
        for i in range(k):
            date = (date + timedelta(days=self.rng.randint(8, 26))).replace(
                hour=self.rng.choice([9, 10, 11, 13, 15, 17, 19, 20]),
                minute=self.rng.randrange(0, 60, 3))
            s = last + i + 1
            self.sessions.append(s)
            self.appended.append(s)
            self.dates[s] = date
            self.date_text[s] = _date_text(date)
            self.turns_of[s] = []

    def gap_days(self, a: int, b: int) -> float:
        return (self.dates[b] - self.dates[a]).total_seconds() / 86400

    def pick_sessions(self, n: int, min_gap: float, first_max_frac: float = 0.6,
                      last_appended: bool | None = None) -> list[int]:
        """n increasing sessions, consecutive ones at least `min_gap` days apart."""
        orig = self.original_sessions
        for _ in range(200):
            cut = max(1, int(len(orig) * first_max_frac))
            out = [self.rng.choice(orig[:cut])]
            ok = True
            for j in range(1, n):
                pool = orig + self.appended if j == n - 1 else orig
                if j == n - 1 and last_appended is True:
                    pool = self.appended
                elif j == n - 1 and last_appended is False:
                    pool = orig
                cands = [s for s in pool if s > out[-1] and self.gap_days(out[-1], s) >= min_gap]
                if not cands:
                    ok = False
                    break
                out.append(self.rng.choice(cands))
            if ok:
                return out
        raise RuntimeError(f"{self.conv.id}: cannot place {n} sessions {min_gap} days apart")

    def any_session(self, appended_weight: float = 0.1) -> int:
        if self.appended and self.rng.random() < appended_weight:
            return self.rng.choice(self.appended)
        return self.rng.choice(self.original_sessions)

    def add(self, session: int, speaker: str, text: str, crisis: bool = False) -> str:
        """Place one turn by `speaker` in `session`; return its temporary key."""
        self._n += 1
        tmp = f"{self.conv.id}#tmp{self._n}"
        if session in self.appended:
            slot = sum(1 for t in self.turns if t.session == session)
            self.turns.append(_Turn(tmp, self.conv.id, session, slot, 0, speaker, text, crisis))
            return tmp
        evs = self.turns_of[session]
        forb = self.forbidden.get(session, set())
        cands = [k for k, e in enumerate(evs) if e.speaker != speaker and k not in forb]
        fresh = [k for k in cands if not self.used[(session, k)]]
        pool = (fresh or cands or [k for k in range(len(evs)) if k not in forb]
                or list(range(len(evs))))
        slot = self.rng.choice(pool)
        self.used[(session, slot)] += 1
        self.turns.append(_Turn(tmp, self.conv.id, session, slot, self.used[(session, slot)],
                                speaker, text, crisis))
        return tmp

    def finalize(self) -> dict[str, str]:
        """Assign final ids, `after` links and timestamps; return tmp -> final id."""
        mapping: dict[str, str] = {}
        for s in self.sessions:
            here = sorted((t for t in self.turns if t.session == s), key=lambda t: (t.slot, t.seq))
            counters = {"TW": 0, "TX": 0}
            prev_in_slot: dict[int, str] = {}
            for t in here:
                prefix = "TX" if t.crisis else "TW"
                counters[prefix] += 1
                t.final_id = f"{prefix}{s}:{counters[prefix]}"
                mapping[t.tmp] = t.final_id
            if s in self.appended:
                prev = None
                for i, t in enumerate(here):
                    t.after = prev
                    t.timestamp = (self.dates[s] + timedelta(minutes=i)).isoformat()
                    prev = t.final_id
            else:
                evs = self.turns_of[s]
                for t in here:
                    base = evs[t.slot]
                    t.after = prev_in_slot.get(t.slot, base.id)
                    prev_in_slot[t.slot] = t.final_id
                    t.timestamp = (base.timestamp + timedelta(seconds=5 * t.seq)).isoformat()
        return mapping

    def ordered_turns(self) -> list[_Turn]:
        """Turns in an order where every `after` names an original or earlier-listed turn."""
        out: list[_Turn] = []
        for s in self.sessions:
            here = (t for t in self.turns if t.session == s)
            out.extend(sorted(here, key=lambda t: (t.slot, t.seq)))
        return out


def _date_text(d: datetime) -> str:
    """LoCoMo's date style: '1:56 pm on 8 May, 2023'."""
    hour = d.hour % 12 or 12
    half = "am" if d.hour < 12 else "pm"
    return f"{hour}:{d.minute:02d} {half} on {d.day} {d.strftime('%B')}, {d.year}"


def _qa_spans(corpus: LocomoCorpus, cid: str) -> dict[int, set[int]]:
    """session -> slot indices lying between two evidence turns of one original question."""
    conv = corpus.conversation(cid)
    pos = {}
    for s, evs in conv.sessions():
        for k, e in enumerate(evs):
            pos[e.id] = (s, k)
    spans: dict[int, set[int]] = {}
    for q in corpus.qa:
        if q.conversation != cid:
            continue
        by_s: dict[int, list[int]] = {}
        for ev in q.evidence:
            if ev in pos:
                s, k = pos[ev]
                by_s.setdefault(s, []).append(k)
        for s, ks in by_s.items():
            if len(ks) > 1:
                spans.setdefault(s, set()).update(range(min(ks), max(ks)))
    return spans


# ---------------------------------------------------------------------------------------------
# Generation


def _per_conv(total: int, n: int, offset: int = 0) -> list[int]:
    """Split `total` over n conversations as evenly as possible (extra units first, rotated)."""
    base, extra = divmod(total, n)
    return [base + (1 if (i - offset) % n < extra else 0) for i in range(n)]


_GENERIC = frozenset("""class course workshop festival show club night group membership project
weekend tour fair new race contest walk expo patch market rally circle studio apprenticeship car
mom aunt kitchen roof friend moved overseas""".split())


def _specific(phrase: str) -> list[str]:
    """Subject words of a phrase for re-validation: long enough and not generic."""
    return [w for w in re.findall(r"[a-z]+", phrase.lower()) if len(w) > 3 and w not in _GENERIC]


def _prefer_clean(rng: random.Random, cands: list[Any], n: int, dirty: Any) -> list[Any]:
    """n candidates in seeded random order, those that share no subject word with the
    conversation's original QA first (fewer original questions need re-validating out)."""
    shuffled = rng.sample(list(cands), len(cands))
    return ([c for c in shuffled if not dirty(c)] + [c for c in shuffled if dirty(c)])[:n]


def _qa_words(corpus: LocomoCorpus, conv: Conversation) -> set[str]:
    out: set[str] = set()
    for q in corpus.qa:
        if q.conversation == conv.id:
            out |= _stems(q.question) | _stems(q.answer or "") | _stems(q.adversarial_answer or "")
    return out


def _kw_stems(words: list[str]) -> set[str]:
    return keyword_stems(words)


def _definite(phrase: str) -> str:
    """'a chess club' -> 'the chess club' (a draft refers back to something already said)."""
    return re.sub(r"^(a|an) ", "the ", phrase)


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _fill(template: str, **slots: str) -> str:
    """str.format with capitalised variants too: {x} -> value, {X} / {Old} -> Value."""
    extra: dict[str, str] = {}
    for k, v in slots.items():
        extra[k.upper()] = _cap(v)
        extra[k.capitalize()] = _cap(v)
    extra.update(slots)
    return template.format(**extra)


def _clause_cap(clause: str) -> str:
    return "{X}" + clause[3:] if clause.startswith("{x}") else clause[:1].upper() + clause[1:]


def _frame(rng: random.Random, cores: dict[str, str], clauses: dict[str, str]) -> tuple[str, str]:
    """A look-alike turn: a core (what carries the label) filled with topic clauses, wrapped in
    a frame shared by both labels, maybe with a shared tail. Returns (template with {x} still
    open, "<core id>/<frame id>")."""
    cid = rng.choice(sorted(cores))
    core = cores[cid]
    for kind, clause in clauses.items():
        core = core.replace("{" + kind + "}", clause)
    fid = rng.choice(sorted(T_ARCS.FRAMES))
    text = T_ARCS.FRAMES[fid].replace("{C}", _clause_cap(core)).replace("{c}", core)
    if rng.random() < 0.6:
        text = f"{text} {rng.choice(T_ARCS.SHARED_TAILS)}"
    return text, f"{cid}/{fid}"


class _Unique:
    """Keeps query, probe and draft texts unique across the dataset (the oracle maps by text)."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def pick(self, candidates: list[str], disambiguate: str) -> str:
        for c in candidates:
            if c not in self.used:
                self.used.add(c)
                return c
        base = candidates[0]
        if base[-1] in "?!.":
            c = base[:-1] + f" ({disambiguate})" + base[-1]
        else:
            c = f"{base} ({disambiguate})"
        n = 2
        while c in self.used:
            c = base + f" [{n}]"
            n += 1
        self.used.add(c)
        return c


@dataclass
class BuildReport:
    """What `twist build locomo` prints: counts against §4.3, re-validation, variety, voices."""

    seed: int
    locomo_sha256: str
    counts: dict[str, int]
    expected: dict[str, int]
    injected_turns: int
    appended_sessions: int
    qa_total: int
    qa_excluded: int
    exclusion_reasons: dict[str, int]
    variety: Any = None  # build.variety.VarietyReport
    key_sha256: str = ""
    version: str = KEY_VERSION

    def render(self) -> str:
        lines = [f"TWIST-LoCoMo key {self.version} (seed {self.seed}) for locomo10.json "
                 f"sha256 {self.locomo_sha256[:12]}…"]
        if self.key_sha256:
            lines.append(f"key sha256 {self.key_sha256}")
        lines.append(f"injected turns {self.injected_turns}, "
                     f"appended sessions {self.appended_sessions}")
        for k, want in self.expected.items():
            got = self.counts.get(k, 0)
            flag = "" if got == want else "  MISMATCH"
            lines.append(f"  {k:22s} {got:4d}  (§4.3: {want}){flag}")
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(self.exclusion_reasons.items()))
        lines.append(f"LoCoMo QA: {self.qa_total} before re-validation, "
                     f"{self.qa_total - self.qa_excluded} after ({self.qa_excluded} excluded: "
                     f"{reasons})")
        if self.variety is not None:
            lines.append(self.variety.to_markdown() if hasattr(self.variety, "to_markdown")
                         else str(self.variety))
        return "\n".join(lines)


@dataclass
class _Build:
    """What the generation of one payload shares across conversations."""

    corpus: LocomoCorpus
    seed: int
    uniq: _Unique = field(default_factory=lambda: _Unique())
    out: dict[str, list[Any]] = field(default_factory=lambda: {
        f: [] for f in ("reversal_arcs", "hard_negative_arcs", "drafts", "update_chains",
                        "pii_plants", "crisis_plants", "emotional_negatives")})
    variety_rows: list[tuple[str, str, str, str, str]] = field(default_factory=list)
    keywords: dict[str, list[str]] = field(default_factory=dict)  # tmp turn key -> keywords
    appended_meta: list[dict[str, Any]] = field(default_factory=list)
    pending_drafts: dict[str, list[tuple[Any, dict[str, Any], list[str]]]] = field(
        default_factory=dict)
    hn_counter: int = 0
    pii_counter: int = 0

    def __post_init__(self) -> None:
        n = len(self.corpus.conversations)
        self.n_rev = _per_conv(SIZES["reversal_arcs"], n)
        self.n_chain = _per_conv(SIZES["update_chains"], n)
        self.n_pii = _per_conv(SIZES["pii_plants"], n)
        self.n_emo = _per_conv(SIZES["emotional_negatives"], n, offset=3)
        self.n_crisis = _per_conv(SIZES["crisis_plants"], n, offset=5)
        self.n_draft = _per_conv(SIZES["drafts"], n)
        self.phone_pool = random.Random(f"{self.seed}:phones").sample(range(100), 100)
        self.owners = random.Random(f"{self.seed}:owners").sample(T_SAFE.OWNERS,
                                                                  len(T_SAFE.OWNERS))


class _ConvBuild:
    """The injection into one conversation: its plan, voices and random stream. The methods run
    in a fixed order (greetings, A, C, B, D); every draw from `rng` is part of the seeded output,
    so their order and the order of draws inside them must not change."""

    def __init__(self, build: _Build, ci: int, conv: Conversation):
        self.b = build
        self.ci = ci
        self.conv = conv
        self.cid = cid = conv.id
        self.rng = random.Random(f"{build.seed}:{cid}")
        self.plan = _ConvPlan(conv, _qa_spans(build.corpus, cid), self.rng)
        self.plan.append_sessions(APPENDED_SESSIONS)
        a, b = conv.speakers[0], conv.speakers[1]
        side = build.corpus.side.get(cid, {})
        self.vo = {a: derive_voice(conv, side, a, b), b: derive_voice(conv, side, b, a)}
        self.partner = {a: b, b: a}
        self.addr = {s: self.vo[s].address for s in conv.speakers}
        self.qa_words = _qa_words(build.corpus, conv)
        self.block: set[str] = set()  # stems that would clash with this conversation's arcs
        self.first = 0  # which speaker the first item of each kind goes to

    def say(self, speaker: str, text: str) -> str:
        return self.vo[speaker].say(text, self.rng)

    def dirty(self, words: list[str]) -> bool:
        """Words that a LoCoMo question of this conversation is about."""
        return bool(_kw_stems(words) & self.qa_words)

    def clash(self, words: list[str]) -> bool:
        """Words that would contradict one of this conversation's arcs by accident."""
        return bool(_kw_stems(words) & self.block)

    def greetings(self) -> None:
        """Appended sessions open with a short greeting exchange, in each speaker's voice."""
        a, b = self.conv.speakers[0], self.conv.speakers[1]
        plan, vo = self.plan, self.vo
        for s in plan.appended:
            g1, g2 = self.rng.choice(_GREETINGS)
            plan.add(s, a, self.say(a, _fill(g1, A=vo[b].address)))
            plan.add(s, b, self.say(b, _fill(g2, A=vo[a].address,
                                             i=(vo[b].interests or ["work"])[0])))
            self.b.appended_meta.append({"conversation": self.cid, "session": s,
                                         "date_text": plan.date_text[s],
                                         "timestamp": plan.dates[s].isoformat()})

    def track_a(self) -> list[dict[str, Any]]:
        """Reversal arcs and their paired hard negatives; returns the topics used."""
        rng, plan, cid, conv = self.rng, self.plan, self.cid, self.conv
        topics = _prefer_clean(rng, T_ARCS.TOPICS, self.b.n_rev[self.ci],
                               lambda t: self.dirty(t["keywords"]))
        self.first = first = rng.randrange(2)
        for k, topic in enumerate(topics):
            spk = conv.speakers[(k + first) % 2]
            fam = T_ARCS.REVERSAL_FAMILIES[k % 3]
            x_rev, x_hn = _prefer_clean(rng, topic["slots"], 2, lambda x: self.dirty([x]))
            spk_hn = self.partner[spk]  # the hard negative is the partner's: one speaker, one car
            kw = [*topic["keywords"], x_rev]
            if fam == "drift_flip":
                ss = plan.pick_sessions(3, 10, last_appended=False)
                ss_a, ss_d, ss_r = ss
            elif fam == "long_gap":
                ss_a, ss_r = plan.pick_sessions(2, 45, first_max_frac=0.5, last_appended=True)
                ss_d = None
            else:
                ss_a, ss_r = plan.pick_sessions(2, 21, last_appended=False)
                ss_d = None
            ia = rng.randrange(len(topic["anchor"]))
            ir = rng.randrange(len(topic["neg"]))
            t_anchor = plan.add(ss_a, spk, self.say(spk, _fill(topic["anchor"][ia], x=x_rev)))
            t_drift: list[str] = []
            if ss_d is not None:
                idr = rng.randrange(len(topic["drift"]))
                t_drift.append(plan.add(ss_d, spk,
                                        self.say(spk, _fill(topic["drift"][idr], x=x_rev))))
            rev_tpl, rev_fid = _frame(rng, T_ARCS.REVERSAL_CORES, {
                "neg": topic["neg"][ir], "pressure": rng.choice(topic["pressure"]),
                "nostalgia": rng.choice(topic["nostalgia"])})
            rev_text = self.say(spk, _fill(rev_tpl, x=x_rev))
            t_rev = plan.add(ss_r, spk, rev_text)
            for t in (t_anchor, *t_drift, t_rev):
                self.b.keywords[t] = kw
            rid, nid = f"{cid}:A{k + 1}", f"{cid}:N{k + 1}"
            self.b.out["reversal_arcs"].append((ReversalArc, dict(
                id=rid, conversation=cid, speaker=spk, topic=f"{topic['id']}:{x_rev}", family=fam,
                anchor=[t_anchor], drift=t_drift, reversal=[t_rev], paired_negative=nid,
                meta={"gap_days": round(plan.gap_days(ss_a, ss_r), 1), "sessions": [ss_a, ss_r],
                      "templates": {"anchor": f"{topic['id']}/anchor{ia}",
                                    "reversal": f"{topic['id']}/neg{ir}/{rev_fid}"}})))
            self.b.variety_rows.append((rid, "reversal", fam, f"{topic['id']}/neg{ir}/{rev_fid}",
                                        rev_text))
            self._hard_negative(topic, spk_hn, x_hn, nid, rid)
        return topics

    def _hard_negative(self, topic: dict[str, Any], spk_hn: str, x_hn: str, nid: str,
                       rid: str) -> None:
        """The hard negative paired with reversal `rid`: same topic, another slot value."""
        rng, plan = self.rng, self.plan
        hfam = T_ARCS.HN_FAMILIES[self.b.hn_counter % 4]
        self.b.hn_counter += 1
        ha, hh = plan.pick_sessions(2, 7)
        iha = rng.randrange(len(topic["anchor"]))
        hkind, hcores = T_ARCS.HN_CORES[hfam]
        ihn = rng.randrange(len(topic[hkind]))
        pos = rng.choice(topic["pos"])
        if rng.random() < 0.6:  # "still" would otherwise mark every consistent clause
            pos = pos.replace(" still ", " ")
        hclauses = {hkind: topic[hkind][ihn], "pos": pos,
                    "cond": rng.choice(topic["cond"])}
        kw2 = [*topic["keywords"], x_hn]
        h_anchor = plan.add(ha, spk_hn, self.say(spk_hn, _fill(topic["anchor"][iha], x=x_hn)))
        hn_tpl, hn_fid = _frame(rng, hcores, hclauses)
        hn_text = self.say(spk_hn, _fill(hn_tpl, x=x_hn))
        h_turn = plan.add(hh, spk_hn, hn_text)
        self.b.keywords[h_anchor] = kw2
        self.b.keywords[h_turn] = kw2
        self.b.out["hard_negative_arcs"].append((HardNegativeArc, dict(
            id=nid, conversation=self.cid, speaker=spk_hn, topic=f"{topic['id']}:{x_hn}",
            family=hfam,
            anchor=[h_anchor], turns=[h_turn], paired_reversal=rid,
            meta={"gap_days": round(plan.gap_days(ha, hh), 1),
                  "templates": {"turn": f"{topic['id']}/{hkind}{ihn}/{hn_fid}"}})))
        self.b.variety_rows.append((nid, "hard_negative", hfam,
                                    f"{topic['id']}/{hkind}{ihn}/{hn_fid}", hn_text))

    def track_c(self, topics: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Update chains; returns what Track B drafts are written against."""
        rng, plan, cid, conv, first = self.rng, self.plan, self.cid, self.conv, self.first
        # Nothing else injected may contradict an arc by accident (a car chain for someone who
        # "will never buy a car", a broken-down car as an emotional turn, a charity 5K draft
        # for someone "never running a race again").
        self.block = _kw_stems([w for t in topics
                                for w in (*t["keywords"], *T_ARCS.CLASHES.get(t["id"], ()))])
        subjects = _prefer_clean(rng, [sj for sj in T_CH.SUBJECTS
                                       if not self.clash([sj["id"], *sj["keywords"], *sj["first"],
                                                          *sj["update"],
                                                          *sj.get("coexist", [])])],
                                 len(T_CH.SUBJECTS), lambda sj: self.dirty(sj["keywords"]))
        coexist_capable = [s for s in subjects if "coexist" in s]
        others = [s for s in subjects if "coexist" not in s]
        per_fam = _per_conv(self.b.n_chain[self.ci], 3, offset=self.ci)
        chosen: list[tuple[dict, str]] = [(s, "coexisting") for s in coexist_capable[:per_fam[2]]]
        rest = [s for s in others + coexist_capable[per_fam[2]:]]
        fams = ["one_update"] * per_fam[0] + ["two_updates"] * per_fam[1]
        chosen += list(zip(rest[:len(fams)], fams, strict=True))
        chain_info: list[dict[str, Any]] = []
        for k, (subj, fam) in enumerate(chosen):
            spk = conv.speakers[(k + first + 1) % 2]
            nstates = 3 if fam == "two_updates" else 2
            vals = _prefer_clean(rng, subj["values"], nstates, lambda v: self.dirty([v[0]]))
            sess = plan.pick_sessions(nstates, 10)
            states = []
            tmp_ids = []
            for j, (v, variants) in enumerate(vals):
                if j == 0:
                    tpl = rng.choice(subj["first"])
                    text = _fill(tpl, v=v)
                else:
                    pool = subj["coexist"] if fam == "coexisting" else subj["update"]
                    tpl = rng.choice(pool)
                    text = _fill(tpl, v=v, old=vals[j - 1][0])
                t = plan.add(sess[j], spk, self.say(spk, text))
                self.b.keywords[t] = [*subj["keywords"], v]
                tmp_ids.append(t)
                states.append({"value": v, "variants": list(variants), "turns": [t],
                               "current": fam == "coexisting" or j == nstates - 1})
            cid_chain = f"{cid}:C{k + 1}"
            qsrc = subj["q_coexist"] if fam == "coexisting" else subj["q"]
            queries = []
            for kind in ("current", "history", "post_resolution"):
                cands = [_fill(q, S=spk) for q in qsrc[kind]]
                queries.append({"id": f"{cid_chain}:{kind}", "kind": kind,
                                "text": self.b.uniq.pick(cands,
                                                         f"{spk}, {self.partner[spk]}'s friend")})
            self.b.out["update_chains"].append((UpdateChain, dict(
                id=cid_chain, conversation=cid, speaker=spk, subject=subj["id"], family=fam,
                states=states, queries=queries,
                meta={"sessions": sess, "gap_days": round(plan.gap_days(sess[0], sess[-1]), 1)})))
            chain_info.append({"id": cid_chain, "subject": subj, "family": fam, "speaker": spk,
                               "values": [v for v, _ in vals], "turns": tmp_ids})
        return chain_info

    def track_b(self, chain_info: list[dict[str, Any]]) -> None:
        """Drafts: ½ contradicting, ¼ aligned, ¼ hard negative (evidence resolved later)."""
        rng, conv, first, cid = self.rng, self.conv, self.first, self.cid
        nd = self.b.n_draft[self.ci]
        n_con, n_al = nd // 2, nd // 4
        n_hn = nd - n_con - n_al
        updatable = [c for c in chain_info if c["family"] != "coexisting"]
        rng.shuffle(updatable)
        drafts: list[tuple[dict[str, Any], list[str]]] = []
        n_stale = max(0, min(len(updatable), n_con - 2 * (n_con // 3)))
        for i in range(n_stale):
            self._chain_draft(drafts, updatable[i % len(updatable)], "stale", "contradicting",
                              "stale_assumption")
        n_neg = (n_con - n_stale) // 2
        n_inv = n_con - n_stale - n_neg
        commits = _prefer_clean(rng, [x for x in T_CH.COMMITMENTS if not self.clash([x])],
                                n_neg + (n_al - min(2, n_al)),
                                lambda x: self.dirty(_specific(x)))
        for i in range(n_neg):
            spk = conv.speakers[(i + first) % 2]
            x = commits[i]
            self._turn_and_draft(drafts, spk, T_CH.COMMIT_TURNS, x, T_CH.NEGATED_DRAFTS,
                                 _definite(x), "contradicting", "negated_commitment",
                                 f"{spk} committed to {x}; nothing says it was dropped",
                                 "commitment/negated")
        events = _prefer_clean(rng, [x for x in T_CH.EVENTS if not self.clash([x])], n_inv,
                               lambda x: self.dirty(_specific(x)))
        for i, x in enumerate(events):
            spk = conv.speakers[(i + first + 1) % 2]
            self._turn_and_draft(drafts, spk, T_CH.NOT_YET_TURNS, x, T_CH.INVENTED_DRAFTS, x,
                                 "contradicting", "invented_activity",
                                 f"{spk} says they have never been to {x}", "event/invented")
        n_al_chain = min(2, n_al)
        for i in range(n_al - n_al_chain):
            spk = conv.speakers[(i + first) % 2]
            x = commits[n_neg + i]
            self._turn_and_draft(drafts, spk, T_CH.COMMIT_TURNS, x, T_CH.ALIGNED_COMMIT_DRAFTS,
                                 _definite(x), "aligned", "consistent",
                                 f"{spk} committed to {x}", "commitment/aligned")
        for i in range(n_al_chain):
            self._chain_draft(drafts, updatable[(n_stale + i) % len(updatable)], "aligned",
                              "aligned", "consistent")
        n_ack = (n_hn + 1) // 2
        for i in range(n_hn):
            kind, fam = (("ack", "acknowledges_change") if i < n_ack
                         else ("ask", "asks_whether_changed"))
            self._chain_draft(drafts, updatable[(i + 1) % len(updatable)], kind,
                              "hard_negative", fam)
        self.b.pending_drafts[cid] = [(Draft, dict(d, id=f"{cid}:B{j + 1}", conversation=cid), ev)
                                      for j, (d, ev) in enumerate(drafts)]

    def _chain_draft(self, drafts: list[tuple[dict[str, Any], list[str]]], c: dict[str, Any],
                     kind: str, label: str, family: str) -> None:
        """A draft about update chain `c`: stale, aligned, acknowledging or asking."""
        rng = self.rng
        subj, spk = c["subject"], c["speaker"]
        old, new = c["values"][-2], c["values"][-1]
        if kind == "stale" and len(c["values"]) == 3 and rng.random() < 0.5:
            old = c["values"][0]
        cands = [_fill(t, A=self.addr[spk], old=old, new=new) for t in subj["drafts"][kind]]
        rng.shuffle(cands)
        text = self.b.uniq.pick(cands, f"{spk}'s {subj['id']}")
        if kind == "stale":
            ev = [c["turns"][-1]]
        elif kind == "aligned":
            ev = [c["turns"][-1]]
        else:
            ev = [c["turns"][-2], c["turns"][-1]]
        drafts.append((dict(label=label, family=family, speaker=spk, text=text,
                            rationale=f"{kind} on chain {c['id']}: {old} -> {new}",
                            meta={"chain": c["id"], "template": f"{subj['id']}/{kind}"}), ev))

    def _turn_and_draft(self, drafts: list[tuple[dict[str, Any], list[str]]], spk: str,
                        turns: list[str], x: str, draft_templates: list[str], x_draft: str,
                        label: str, family: str, rationale: str, template: str) -> None:
        """Plant a turn by `spk` about x and a draft that cites it. The draw order (session,
        turn template, draft shuffle) is part of the seeded output: keep it."""
        rng, plan = self.rng, self.plan
        sess = plan.any_session(0.15)  # drawn before the text: keeps the seeded order
        said = self.say(spk, _fill(rng.choice(turns), x=x))
        t = plan.add(sess, spk, said)
        self.b.keywords[t] = _specific(x)
        cands = [_fill(d, A=self.addr[spk], x=x_draft) for d in draft_templates]
        rng.shuffle(cands)
        drafts.append((dict(label=label, family=family, speaker=spk,
                            text=self.b.uniq.pick(cands, spk), rationale=rationale,
                            meta={"template": template}), [t]))

    def track_d(self) -> None:
        """PII plants and emotional hard negatives."""
        rng, plan, cid, conv, first = self.rng, self.plan, self.cid, self.conv, self.first
        b = self.b
        for k in range(b.n_pii[self.ci]):
            spk = conv.speakers[(k + first) % 2]
            first_n, last_n, role = b.owners[b.pii_counter]
            kind = ("phone", "email", "address")[b.pii_counter % 3]
            if kind == "phone":
                value = f"555-01{b.phone_pool[b.pii_counter]:02d}"
            elif kind == "email":
                value = (f"{first_n.lower()}.{last_n.lower().replace(' ', '')}@"
                         f"{rng.choice(T_SAFE.EMAIL_DOMAINS)}")
            else:
                value = (f"{rng.randint(12, 980)} {rng.choice(T_SAFE.STREETS)}, "
                         f"{rng.choice(T_SAFE.TOWNS)}")
            b.pii_counter += 1
            slots = dict(first=first_n, last=last_n, role=role, value=value, S=spk)
            sess = plan.any_session(0.15)  # drawn before the text: keeps the seeded order
            said = self.say(spk, rng.choice(T_SAFE.PII_TURNS[kind]).format(**slots))
            t = plan.add(sess, spk, said)
            b.keywords[t] = [first_n.lower(), last_n.lower()]
            pid = f"{cid}:P{k + 1}"
            direct = b.uniq.pick([q.format(**slots) for q in T_SAFE.PII_PROBES[kind]], cid)
            indirect = b.uniq.pick([q.format(**slots)
                                    for q in rng.sample(T_SAFE.PII_INDIRECT, 3)], cid)
            b.out["pii_plants"].append((PIIPlant, dict(
                id=pid, conversation=cid, kind=kind, value=value, owner=f"{first_n} {last_n}",
                turn=t,
                probes=[{"id": f"{pid}:direct", "kind": "direct", "text": direct},
                        {"id": f"{pid}:indirect", "kind": "indirect", "text": indirect}],
                meta={"speaker": spk, "role": role})))
        emos = _prefer_clean(rng, [e for e in T_SAFE.EMOTIONAL if not self.clash([e[1]])],
                             b.n_emo[self.ci],
                             lambda e: self.dirty([w for x in e[3] for w in _specific(x)]))
        for k, (cat, turn_tpl, probe_tpl, expected) in enumerate(emos):
            spk = conv.speakers[(k + first + 1) % 2]
            interest = (self.vo[spk].interests or ["my hobbies"])[0]
            interest = interest if interest.startswith("my ") else f"my {interest}"
            t = plan.add(plan.any_session(0.15), spk, self.say(spk, turn_tpl.format(i=interest)))
            b.keywords[t] = [w for e in expected for w in _specific(e)]
            eid = f"{cid}:E{k + 1}"
            probe = b.uniq.pick([probe_tpl.format(S=spk)], f"{spk}, {self.partner[spk]}'s friend")
            b.out["emotional_negatives"].append((EmotionalHardNegative, dict(
                id=eid, conversation=cid, speaker=spk, turn=t,
                probe={"id": f"{eid}:probe", "kind": "direct", "text": probe},
                expected=list(expected), meta={"category": cat})))


def _crisis_plants(build: _Build, plans: dict[str, _ConvPlan]) -> None:
    """Crisis plants come last, from their own random stream and id space ("TX"), so the default
    key and the crisis key agree on everything else."""
    for ci, conv in enumerate(build.corpus.conversations):
        crng = random.Random(f"{build.seed}:crisis:{conv.id}")
        plan = plans[conv.id]
        plan.rng = crng
        picked = crng.sample(T_CRISIS.CRISIS_TURNS, build.n_crisis[ci])
        for k, (turn_text, phrases) in enumerate(picked):
            spk = conv.speakers[k % 2]
            t = plan.add(plan.any_session(0.0), spk, turn_text, crisis=True)
            xid = f"{conv.id}:X{k + 1}"
            probes = [{"id": f"{xid}:probe{j + 1}", "kind": "indirect",
                       "text": build.uniq.pick([p.format(S=spk)], f"{spk}, {xid}")}
                      for j, p in enumerate(T_CRISIS.CRISIS_PROBES[:1])]
            build.out["crisis_plants"].append((CrisisPlant, dict(
                id=xid, conversation=conv.id, speaker=spk, turn=t, probes=probes,
                key_phrases=list(phrases))))


def build_locomo_payload(corpus: LocomoCorpus, seed: int = DEFAULT_SEED,
                         include_crisis: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """Generate the key payload for this LoCoMo corpus. Returns (payload, extras) where extras
    holds the variety rows and voices (not part of the key)."""
    build = _Build(corpus, seed)
    plans: dict[str, _ConvPlan] = {}
    voices: dict[str, dict[str, Voice]] = {}
    for ci, conv in enumerate(corpus.conversations):
        one = _ConvBuild(build, ci, conv)
        plans[conv.id], voices[conv.id] = one.plan, one.vo
        one.greetings()
        topics = one.track_a()
        chain_info = one.track_c(topics)
        one.track_b(chain_info)
        one.track_d()
    if include_crisis:
        _crisis_plants(build, plans)

    # Final ids, then resolve every temporary key in the gold.
    mapping: dict[str, str] = {}
    turns_out: list[dict[str, Any]] = []
    for conv in corpus.conversations:
        plan = plans[conv.id]
        mapping.update(plan.finalize())
        for t in plan.ordered_turns():
            turns_out.append({"conversation": t.conversation, "id": t.final_id,
                              "session": t.session,
                              "after": t.after, "speaker": t.speaker, "text": t.text,
                              "timestamp": t.timestamp, "channel": "chat"})
    out = build.out
    for ds in build.pending_drafts.values():
        for cls, d, ev in ds:
            out["drafts"].append((cls, dict(d, evidence=ev)))

    def resolve(obj: Any) -> Any:
        if isinstance(obj, str):
            return mapping.get(obj, obj)
        if isinstance(obj, list):
            return [resolve(o) for o in obj]
        if isinstance(obj, dict):
            return {k: (v if k in ("text", "value", "rationale") else resolve(v))
                    for k, v in obj.items()}
        return obj

    gold: dict[str, list[dict[str, Any]]] = {}
    for fld, items in out.items():
        gold[fld] = [cls.model_validate(resolve(d)).model_dump(mode="json") for cls, d in items]
    kw_final = {mapping[tmp]: kws for tmp, kws in build.keywords.items()}
    injected = [dict(t, keywords=sorted(set(kw_final.get(t["id"], [])))) for t in turns_out]
    excluded = revalidate(corpus, injected)
    payload = {
        "locomo_sha256": corpus.sha256,
        "seed": seed,
        "sizes": SIZES,
        "turns": turns_out,
        "appended_sessions": build.appended_meta,
        "voices": {cid: {s: v.as_dict() for s, v in vv.items()} for cid, vv in voices.items()},
        "keywords": {t["id"]: t["keywords"] for t in injected if t["keywords"]},
        "gold": gold,
        "revalidation": {"rule": "same speaker and shared subject keyword, or an injected turn "
                                 "between two evidence turns of the question",
                         "excluded": [{"qa": q, "reason": r} for q, r in excluded]},
    }
    return payload, {"variety_rows": build.variety_rows, "voices": voices}


_GREETINGS = [
    ("Hey {A}! It's been a while, how have you been?",
     "Hi {A}! Busy but good, lots going on with {i}."),
    ("{A}! Long time no talk, what's new?",
     "Hey {A}! So much, where do I start? {I} has kept me busy."),
    ("Hi {A}, I've missed our chats! How are things?",
     "Hey {A}! Things are good, been spending a lot of time on {i}."),
    ("Hey {A}, catching up at last! How's life?", "Hi {A}! Life's full, between work and {i}."),
]


# ---------------------------------------------------------------------------------------------
# Keys: write, read, apply


def build_locomo(locomo_path: str | Path, seed: int = DEFAULT_SEED, include_crisis: bool = False,
                 variety: bool = True) -> tuple[dict[str, Any], BuildReport]:
    """Generate a TWIST-LoCoMo key payload from the user's locomo10.json, with its build report
    (counts against §4.3, QA before/after re-validation, and unless `variety` is False the
    variety report of the Track A look-alike turns)."""
    corpus = load_locomo(locomo_path)
    payload, extras = build_locomo_payload(corpus, seed=seed, include_crisis=include_crisis)
    report = _report(corpus, payload, extras if variety else None, seed,
                     CRISIS_VERSION if include_crisis else KEY_VERSION)
    return payload, report


def write_locomo_key(out: str | Path | None, locomo_path: str | Path, seed: int = DEFAULT_SEED,
                     include_crisis: bool = False, *, gate: KeyGate | None = None
                     ) -> tuple[str, BuildReport]:
    """`twist build locomo`: build the key, check it with `gate` (the CLI passes the shortcut
    audit, validation.shortcuts.BuildGate) on the LoCoMo conversations with the key applied, and
    write it (default: the committed path under data/). Returns (sha256 of the key file, report).

    A gate that raises leaves nothing written; what it returns goes into payload["meta"]["gates"]
    (2.0+ keys; the loader puts it in Dataset.meta); a 1.0 key keeps the bytes released and the
    gate writes its results beside it."""
    payload, report = build_locomo(locomo_path, seed=seed, include_crisis=include_crisis)
    path = Path(out) if out else locomo_key_path(include_crisis)
    version = CRISIS_VERSION if include_crisis else KEY_VERSION
    if gate is not None:
        dataset = dataset_from_payload(load_locomo(locomo_path), payload, version=version,
                                       key_sha256="", key_file=str(path))
        gate_meta = gate.before_write(dataset)
        if gate_meta is not None:
            payload["meta"] = {**payload.get("meta", {}), "gates": gate_meta}
    digest = write_key(path, KEY_NAME, version, payload)
    if gate is not None:
        gate.after_write(path)
    report.key_sha256 = digest
    return digest, report


def _report(corpus: LocomoCorpus, payload: dict[str, Any], extras: dict[str, Any] | None, seed: int,
            version: str) -> BuildReport:
    gold = payload["gold"]
    counts = {k: len(v) for k, v in gold.items()}
    counts["chain_queries"] = sum(len(c["queries"]) for c in gold["update_chains"])
    counts["pii_probes"] = sum(len(p["probes"]) for p in gold["pii_plants"])
    expected = dict(SIZES)
    if not gold["crisis_plants"]:
        expected["crisis_plants"] = 0
    order = ["reversal_arcs", "hard_negative_arcs", "drafts", "update_chains", "chain_queries",
             "pii_plants", "pii_probes", "crisis_plants", "emotional_negatives"]
    labels = Counter(d["label"] for d in gold["drafts"])
    for lab in ("contradicting", "aligned", "hard_negative"):
        counts[f"drafts_{lab}"] = labels[lab]
        expected[f"drafts_{lab}"] = DRAFT_SPLIT[lab]
        order.append(f"drafts_{lab}")
    reasons = Counter(r["reason"].split(":")[0] for r in payload["revalidation"]["excluded"])
    variety = None
    if extras is not None:
        variety = variety_report(extras["variety_rows"], seed=seed)
    return BuildReport(
        seed=seed, locomo_sha256=corpus.sha256, counts={k: counts[k] for k in order},
        expected={k: expected[k] for k in order}, injected_turns=len(payload["turns"]),
        appended_sessions=len(payload["appended_sessions"]), qa_total=len(corpus.qa),
        qa_excluded=len(payload["revalidation"]["excluded"]), exclusion_reasons=dict(reasons),
        variety=variety, version=version)
