"""TWIST-CS: six synthetic customer-success workspaces with gold for Tracks A-D (whitepaper §4.2).

`build_cs(seed)` generates the dataset and its variety report; `write_cs_key(out, ...)` writes
it as a versioned key (datasets/keyfile.py); datasets/twist_cs.py reads the committed key.

How a workspace is made:
1. People: a vendor team (CSM, account executive, support and solutions engineers) and a customer
   team (champion, economic buyer, platform admin, three end users), each with a stable voice
   (openers, e-mail sign-off) used in their background traffic.
2. Items are planned first, on a business-minute clock over the workspace's 6-12 months: Track A
   reversal arcs (anchor -> optional drift -> reversal, gaps of days to months) and hard-negative
   arcs matched in topic, slot values and channels to a reversal in another workspace; Track B
   record scenarios and drafts; Track C update chains; Track D plants. Every item turn sits in
   its own Slack thread, e-mail or call, with neutral context turns around it, so the cited turn
   carries the claim alone.
3. Background traffic (tickets, scheduling, onboarding, feature requests, reviews) fills the
   workspace to its target size.
4. Events are sorted by time; one session = one week; ids are "<workspace>:e0000" in order.
   Crisis plants (opt-in) are always planned, so ids and every other event are the same with or
   without `include_crisis`; without it their ids are simply absent.

Determinism: every random choice comes from `random.Random` streams seeded from sha256(seed,
purpose), and nothing iterates a set, so a seed gives byte-identical keys.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console

from twistbench.datasets.keyfile import write_key
from twistbench.datasets.paths import CS_CRISIS_KEY_FILE, CS_KEY_FILE, repo_data_dir
from twistbench.datasets.twist_cs import NAME, VERSION, VERSION_CRISIS
from twistbench.itemgen.cs_variety import cs_variety_report
from twistbench.itemgen.gate import KeyGate
from twistbench.itemgen.paraphrase import ParaphraseConfig, Paraphraser
from twistbench.itemgen.templates import cs_background as BG
from twistbench.itemgen.templates import cs_chains as CH
from twistbench.itemgen.templates import cs_crisis_optin
from twistbench.itemgen.templates import cs_drafts as DR
from twistbench.itemgen.templates import cs_pools as P
from twistbench.itemgen.templates import cs_safety as SF
from twistbench.itemgen.templates import cs_tension as TN
from twistbench.itemgen.variety import VarietyReport
from twistbench.model import (
    ChainQuery,
    Conversation,
    CrisisPlant,
    Dataset,
    Draft,
    EmotionalHardNegative,
    Event,
    FactState,
    HardNegativeArc,
    PIIPlant,
    Probe,
    ReversalArc,
    UpdateChain,
)

DEFAULT_SEED = 20260708

N_WORKSPACES = 6
# The CS column of whitepaper §4.3.
SIZES = {
    "reversal_arcs": 40,
    "hard_negative_arcs": 40,
    "drafts": 120,
    "drafts_contradicting": 60,
    "drafts_aligned": 30,
    "drafts_hard_negative": 30,
    "update_chains": 60,
    "chain_queries": 180,
    "pii_plants": 30,
    "pii_probes": 60,
    "crisis_plants": 16,
    "emotional_negatives": 32,
}
EVENTS_MIN, EVENTS_MAX = 400, 900

_DAY_START_MIN = 8 * 60  # business day 08:00-17:00 UTC
_DAY_MINUTES = 9 * 60
_EPOCH = datetime(2025, 1, 6, tzinfo=UTC)  # a Monday


def _rng(seed: int, *parts: object) -> random.Random:
    h = hashlib.sha256(":".join([str(seed), *map(str, parts)]).encode()).digest()
    return random.Random(int.from_bytes(h[:8], "big"))


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _fmt(template: str, **slots: Any) -> str:
    return template.format(**slots)


# ---------------------------------------------------------------------------------------------
# Paraphrase (optional)


def _paraphrase_track_a(paraphraser: Paraphraser, out: dict[str, list[Any]]) -> None:
    """Rewrite every Track A turn (anchor, drift, reversal, look-alike); e-mail bodies only."""
    done: set[int] = set()
    for key in ("rev", "hn"):
        for _pair, d in out[key]:
            slots = d["meta"]["slots"]
            protected = [str(v) for v in slots.values()] + [P.PRODUCT, P.VENDOR]
            evs = [*d["anchor"], *d.get("drift", []), *d.get("reversal", []), *d.get("turns", [])]
            for ev in evs:
                if id(ev) in done:
                    continue
                done.add(id(ev))
                if ev.channel == "email":
                    parts = ev.text.split("\n\n")
                    body = "\n\n".join(parts[1:-1])
                    new = paraphraser.rewrite(body, protected)
                    ev.text = "\n\n".join([parts[0], new, parts[-1]])
                else:
                    ev.text = paraphraser.rewrite(ev.text, protected)


# ---------------------------------------------------------------------------------------------
# Workspace state


@dataclass
class Person:
    name: str
    role: str
    side: str  # "vendor" | "customer"
    openers: tuple[str, ...]
    signoff: str

    @property
    def first(self) -> str:
        return self.name.split()[0]


@dataclass
class Ev:
    ts: datetime
    seq: int
    speaker: str
    channel: str
    text: str
    thread: str
    crisis: bool = False
    id: str = ""


@dataclass
class Workspace:
    id: str
    company: str
    industry: str
    start: datetime
    weeks: int
    people: list[Person]
    rng: random.Random
    events: list[Ev] = field(default_factory=list)
    used: set[tuple[str, str]] = field(default_factory=set)
    seq: int = 0
    threads: int = 0

    @property
    def business_minutes(self) -> int:
        return self.weeks * 5 * _DAY_MINUTES

    def at(self, bm: int) -> datetime:
        """Business minute -> timestamp (weekdays 08:00-17:00)."""
        day, minute = divmod(bm, _DAY_MINUTES)
        week, wday = divmod(day, 5)
        return self.start + timedelta(days=week * 7 + wday, minutes=_DAY_START_MIN + minute)

    def people_of(self, side: str | None = None,
                  roles: Sequence[str] | None = None) -> list[Person]:
        return [p for p in self.people
                if (side is None or p.side == side) and (roles is None or p.role in roles)]

    def person(self, role: str) -> Person:
        return self.rng.choice(self.people_of(roles=(role,)))

    def counterpart(self, p: Person) -> Person:
        if p.side == "customer":
            return self.rng.choice(self.people_of("vendor", ("csm", "ae")))
        return self.rng.choice(self.people_of("customer", ("champion", "economic_buyer", "admin")))

    def colleague(self, p: Person) -> Person:
        return self.rng.choice([q for q in self.people_of(p.side) if q.name != p.name])

    def add(self, ts: datetime, speaker: Person | str, channel: str, text: str, thread: str,
            crisis: bool = False) -> Ev:
        name = speaker if isinstance(speaker, str) else speaker.name
        ev = Ev(ts, self.seq, name, channel, text, thread, crisis)
        self.seq += 1
        self.events.append(ev)
        return ev

    def claim(self, kind: str, key: str) -> bool:
        """Reserve a fact instance for one item in this workspace; False if already taken."""
        if (kind, key) in self.used:
            return False
        self.used.add((kind, key))
        return True

    def new_thread(self, channel: str, ts: datetime, label: str = "") -> str:
        self.threads += 1
        if channel == "slack":
            return f"slack:#ext-{self.id.removeprefix('cs-')}-{P.VENDOR.lower()}/{self.threads:04d}"
        if channel == "call":
            return f"call-{ts:%Y-%m-%d}-{label or 'sync'}-{self.threads:04d}"
        return f"{label} ({ts:%b} {ts.day})"


# ---------------------------------------------------------------------------------------------
# Placing an item turn in a channel, with neutral context around it


def _place(ws: Workspace, bm: int, channel: str, speaker: Person, text: str,
           crisis: bool = False) -> Ev:
    """Emit `text` by `speaker` at business minute `bm` in its own thread; return the event."""
    rng = ws.rng
    ts = ws.at(bm)
    other = ws.counterpart(speaker)
    if channel == "slack":
        thread = ws.new_thread("slack", ts)
        if rng.random() < 0.5:
            ws.add(ts - timedelta(minutes=rng.randint(5, 90)), other, "slack",
                   rng.choice(BG.SLACK_LEADS), thread)
        ev = ws.add(ts, speaker, "slack", text, thread, crisis)
        if rng.random() < 0.6 and not crisis:
            ws.add(ts + timedelta(minutes=rng.randint(3, 80)), other, "slack",
                   rng.choice(P.ACKS), thread)
        return ev
    if channel == "email":
        subject = _fmt(rng.choice(BG.EMAIL_SUBJECTS), month=P.MONTHS[ts.month - 1])
        thread = ws.new_thread("email", ts, subject)
        body = f"Hi {other.first},\n\n{text}\n\n{speaker.signoff}\n{speaker.first}"
        ev = ws.add(ts, speaker, "email", body, thread, crisis)
        if rng.random() < 0.5:
            reply = f"Hi {speaker.first},\n\n{rng.choice(P.ACKS)}\n\n{other.signoff}\n{other.first}"
            ws.add(ts + timedelta(minutes=rng.randint(20, 600)), other, "email", reply, thread)
        return ev
    # call: a short transcript with the item turn in the middle
    thread = ws.new_thread("call", ts, rng.choice(BG.CALL_KINDS))
    vendor = speaker if speaker.side == "vendor" else other
    t = ts - timedelta(minutes=rng.randint(3, 12))
    cast = {"V1": vendor, "C1": speaker if speaker.side == "customer" else other}
    slots = _thread_slots(ws, cast)
    ws.add(t, vendor, "call", _fill_bg(rng.choice(BG.CALL_OPENINGS)[1], slots), thread)
    ws.add(ts - timedelta(minutes=1), other, "call", rng.choice(BG.CALL_LEADS), thread)
    ev = ws.add(ts, speaker, "call", text, thread, crisis)
    ws.add(ts + timedelta(minutes=1), other, "call", rng.choice(P.ACKS), thread)
    if rng.random() < 0.5:
        ws.add(ts + timedelta(minutes=rng.randint(2, 4)), vendor, "call",
               _fill_bg(rng.choice(BG.CALL_CLOSINGS)[1], slots), thread)
    return ev


def _thread_slots(ws: Workspace, cast: dict[str, Person] | None = None) -> dict[str, str]:
    """Slot values for one background thread: drawn once, so every line agrees."""
    rng = ws.rng
    cast = cast if cast is not None else {}
    for tag in ("C1", "C2", "V1", "V2"):
        _speaker_for(ws, tag, cast)
    slots = {
        "report": rng.choice(P.REPORTS), "error": rng.choice(P.ERRORS),
        "feature": rng.choice(P.FEATURES), "integration": rng.choice(P.INTEGRATIONS),
        "team": rng.choice(P.TEAMS), "day": rng.choice(P.WEEKDAYS),
        "time": f"{rng.randint(8, 16)}:{rng.choice(['00', '15', '30', '45'])}",
        "n": str(rng.randint(3, 95)), "n4": str(rng.randint(1000, 9999)),
        "month": rng.choice(P.MONTHS), "company": ws.company, "vendor": P.VENDOR,
        "product": P.PRODUCT,
    }
    slots["action"] = _fmt(rng.choice(BG.ACTIONS), **slots)
    slots.update({tag: p.first for tag, p in cast.items()})
    return slots


def _fill_bg(template: str, slots: dict[str, str]) -> str:
    text = _fmt(template, **slots)
    return _cap(text) if text else text


def _speaker_for(ws: Workspace, spec: str, cast: dict[str, Person]) -> Person:
    tag, _, role = spec.partition(":")
    if tag in cast:
        return cast[tag]
    side = "customer" if tag.startswith("C") else "vendor"
    taken = {p.name for p in cast.values()}
    pool = [p for p in ws.people_of(side, (role,) if role else None) if p.name not in taken]
    if not pool:
        pool = [p for p in ws.people_of(side) if p.name not in taken]
    cast[tag] = ws.rng.choice(pool)
    return cast[tag]


_LOWERABLE = frozenset(
    "The Can Is How Does Why Any Could Quick Feature Heads Following Planned Reminder Notes "
    "Found Thanks Not Yes No Done Usually That Same Nice Great Got Perfect Good Sure Shared "
    "Sent Confirmed Around Happy Okay We Our Open".split())


def _voice(ws: Workspace, p: Person, text: str, first_in_thread: bool) -> str:
    """A person's habitual opener on the first Slack message of a thread (their stable voice)."""
    if not first_in_thread or ws.rng.random() >= 0.4:
        return text
    opener = ws.rng.choice(p.openers)
    if not opener:
        return text
    if opener.endswith(","):
        word = text.split(" ", 1)[0]
        if word not in _LOWERABLE:
            return text
        text = text[0].lower() + text[1:]
    return f"{opener} {text}"


def _background_thread(ws: Workspace, bm: int) -> int:
    """One background thread starting at business minute bm; returns events added."""
    rng = ws.rng
    ts = ws.at(bm)
    kind = rng.choices(("slack", "email", "call"), weights=(55, 30, 15))[0]
    cast: dict[str, Person] = {}
    if kind == "slack":
        lines = rng.choice(BG.SLACK_THREADS)
    elif kind == "email":
        subject_t, lines = rng.choice(BG.EMAIL_THREADS)
    else:
        lines = [rng.choice(BG.CALL_OPENINGS)]
        for exchange in rng.sample(BG.CALL_EXCHANGES, rng.randint(2, 4)):
            lines += exchange
        lines.append(rng.choice(BG.CALL_CLOSINGS))
    for spec, _ in lines:  # forced roles first, then the free tags
        _speaker_for(ws, spec, cast)
    slots = _thread_slots(ws, cast)
    t = ts
    if kind == "slack":
        thread = ws.new_thread("slack", ts)
        for k, (spec, tmpl) in enumerate(lines):
            p = _speaker_for(ws, spec, cast)
            ws.add(t, p, "slack", _voice(ws, p, _fill_bg(tmpl, slots), k == 0), thread)
            t += timedelta(minutes=rng.randint(1, 45))
    elif kind == "email":
        thread = ws.new_thread("email", ts, _fill_bg(subject_t, slots))
        prev: Person | None = None
        for spec, tmpl in lines:
            p = _speaker_for(ws, spec, cast)
            to = prev.first if prev is not None else ws.counterpart(p).first
            body = f"Hi {to},\n\n{_fill_bg(tmpl, slots)}\n\n{p.signoff}\n{p.first}"
            ws.add(t, p, "email", body, thread)
            t += timedelta(minutes=rng.randint(30, 900))
            prev = p
    else:
        thread = ws.new_thread("call", ts, rng.choice(BG.CALL_KINDS))
        for spec, tmpl in lines:
            ws.add(t, _speaker_for(ws, spec, cast), "call", _fill_bg(tmpl, slots), thread)
            t += timedelta(minutes=rng.randint(1, 4))
    return len(lines)


# ---------------------------------------------------------------------------------------------
# Planning: who gets which items


@dataclass
class _Plan:
    """Dataset-wide allocation of items to workspaces (decided before any text is made)."""

    pairs: list[dict[str, Any]]  # Track A: topic, rev_ws, hn_ws, families, slots
    drafts: list[list[str]]  # per workspace: draft families
    chains: list[list[str]]  # per workspace: chain families
    pii: list[list[str]]  # per workspace: PII kinds
    emotional: list[int]
    crisis: list[int]


def _spread(total: int, n: int, rng: random.Random) -> list[int]:
    base = [total // n] * n
    for i in rng.sample(range(n), total % n):
        base[i] += 1
    return base


def _plan(seed: int) -> _Plan:
    rng = _rng(seed, "plan")
    n = N_WORKSPACES
    topics = sorted(TN.TOPICS)
    n_pairs = SIZES["reversal_arcs"]
    rev_counts = _spread(n_pairs, n, rng)
    for _attempt in range(1000):
        rev_ws = [w for w in range(n) for _ in range(rev_counts[w])]
        hn_ws = rev_ws[:]
        rng.shuffle(hn_ws)
        # repair: swap until no pair has its hard negative in the reversal's own workspace
        for i in range(len(hn_ws)):
            if hn_ws[i] == rev_ws[i]:
                js = [j for j in range(len(hn_ws))
                      if hn_ws[j] != rev_ws[i] and hn_ws[i] != rev_ws[j]]
                if js:
                    j = rng.choice(js)
                    hn_ws[i], hn_ws[j] = hn_ws[j], hn_ws[i]
        if any(a == b for a, b in zip(rev_ws, hn_ws)):
            continue
        # topics: unique per workspace across both roles; spread evenly over topics
        order = topics * 3
        rng.shuffle(order)
        used: list[set[str]] = [set() for _ in range(n)]
        chosen: list[str] = []
        count: dict[str, int] = {t: 0 for t in topics}
        ok = True
        for a, b in zip(rev_ws, hn_ws):
            cands = [t for t in topics if t not in used[a] and t not in used[b]]
            if not cands:
                ok = False
                break
            low = min(count[t] for t in cands)
            t = rng.choice([c for c in cands if count[c] == low])
            count[t] += 1
            used[a].add(t)
            used[b].add(t)
            chosen.append(t)
        if ok:
            break
    else:  # pragma: no cover - the search succeeds in a few attempts for these sizes
        raise RuntimeError("could not allocate Track A topics")
    rev_fams = [TN.REVERSAL_FAMILIES[i % 3] for i in range(n_pairs)]
    hn_fams = [list(TN.HARD_NEGATIVE_FAMILIES)[i % 4] for i in range(n_pairs)]
    rng.shuffle(rev_fams)
    rng.shuffle(hn_fams)
    pairs = []
    for i, (a, b, t) in enumerate(zip(rev_ws, hn_ws, chosen)):
        slots = {
            "competitor": rng.choice(P.COMPETITORS), "price": rng.choice(P.PRICES),
            "feature": rng.choice(P.FEATURES), "integration": rng.choice(P.INTEGRATIONS),
            "quarter": rng.choice(P.QUARTERS), "team": rng.choice(P.TEAMS),
            "region": rng.choice(P.REGIONS), "legacy": rng.choice(P.LEGACY_TOOLS),
            "pct": rng.choice(P.PERCENTS), "sso": rng.choice(P.SSO_PROVIDERS),
            "product": P.PRODUCT, "vendor": P.VENDOR,
        }
        pairs.append({"index": i, "topic": t, "rev_ws": a, "hn_ws": b,
                      "rev_family": rev_fams[i], "hn_family": hn_fams[i], "slots": slots})

    def per_ws(families: dict[str, int]) -> list[list[str]]:
        out: list[list[str]] = [[] for _ in range(n)]
        for fam, total in families.items():
            counts = _spread(total, n, rng)
            for w in range(n):
                out[w] += [fam] * counts[w]
        return out

    # Drafts: balance each workspace at 10 contradicting / 5 aligned / 5 hard negative.
    drafts: list[list[str]] = [[] for _ in range(n)]
    contra = ["invented_activity"] * 20 + ["negated_commitment"] * 20 + ["stale_assumption"] * 20
    hard = ["acknowledges_change"] * 15 + ["asks_whether_changed"] * 15
    rng.shuffle(contra)
    rng.shuffle(hard)
    for w in range(n):
        drafts[w] = contra[w * 10:(w + 1) * 10] + ["consistent"] * 5 + hard[w * 5:(w + 1) * 5]
    chains = per_ws({"one_update": 24, "two_updates": 18, "coexisting": 18})
    pii_kinds = ["phone"] * 10 + ["email"] * 10 + ["address"] * 10
    rng.shuffle(pii_kinds)
    pii = [pii_kinds[w * 5:(w + 1) * 5] for w in range(n)]
    return _Plan(pairs, drafts, chains, pii,
                 _spread(SIZES["emotional_negatives"], n, rng),
                 _spread(SIZES["crisis_plants"], n, rng))


def _make_people(seed: int) -> list[list[Person]]:
    rng = _rng(seed, "people")
    firsts = rng.sample(P.FIRST_NAMES, N_WORKSPACES * 10)
    lasts = rng.sample(P.LAST_NAMES, N_WORKSPACES * 10)
    out: list[list[Person]] = []
    k = 0
    for _w in range(N_WORKSPACES):
        team: list[Person] = []
        for side, roles in (("vendor", P.VENDOR_ROLES), ("customer", P.CUSTOMER_ROLES)):
            for role in roles:
                openers = tuple(rng.sample(P.OPENERS, 3))
                team.append(Person(f"{firsts[k]} {lasts[k]}", role, side, openers,
                                   rng.choice(P.SIGNOFFS)))
                k += 1
        out.append(team)
    return out


# ---------------------------------------------------------------------------------------------
# Track A


def _gap_minutes(ws: Workspace, rng: random.Random) -> int:
    """Business minutes between anchor and reversal: days, weeks, or months of story time."""
    bucket = rng.choices(("days", "weeks", "months"), weights=(25, 35, 40))[0]
    days = {"days": (2, 9), "weeks": (10, 45), "months": (46, 240)}[bucket]
    cal = rng.randint(*days)
    bm = int(cal * 5 / 7 * _DAY_MINUTES)
    return max(_DAY_MINUTES, min(bm, ws.business_minutes - 6 * _DAY_MINUTES))


def _times(ws: Workspace, rng: random.Random, n: int, gap: int) -> list[int]:
    """n increasing business minutes, first and last `gap` apart, inside the workspace."""
    lo = 2 * _DAY_MINUTES
    hi = ws.business_minutes - 2 * _DAY_MINUTES - gap
    start = rng.randint(lo, max(lo, hi))
    inner = sorted(rng.sample(range(start + 30, start + gap - 30), n - 2)) if n > 2 else []
    return [start, *inner, start + gap]


def _clause(topic: dict[str, Any], kind: str, rng: random.Random,
            slots: dict[str, str]) -> tuple[int, str]:
    options = topic[kind]
    i = rng.randrange(len(options))
    text = options[i]
    if kind == "nostalgia":
        for marker, alternatives in TN.NOSTALGIA_OPENERS.items():
            if text.startswith(marker):
                text = rng.choice(alternatives) + text[len(marker):]
    if kind in TN.STILL_DROP_KINDS and rng.random() < 0.5:
        text = re.sub(r"\bstill,? ", "", text)
    return i, _fmt(text, **slots)


def _render(frame: str, clauses: dict[str, str], slots: dict[str, str], rng: random.Random,
            wrap: bool) -> str:
    """Fill a frame; optionally add a shared opener/closer (same pool for both labels)."""
    if wrap and frame.startswith("{") and frame[1].isupper() and rng.random() < 0.5:
        frame = rng.choice(TN.SHARED_PREFIXES) + " {" + frame[1].lower() + frame[2:]
    if wrap and rng.random() < 0.5:
        frame = frame + " " + rng.choice(TN.SHARED_TAILS)
    values = dict(slots)
    for k, v in clauses.items():
        values[k] = v
        values[_cap(k)] = _cap(v)
    return _fmt(frame, **values)


def _pick_frame(frames: dict[str, str], rng: random.Random) -> tuple[str, str]:
    fid = rng.choice(sorted(frames))
    return fid, frames[fid]


# Track A topics -> Track B scenarios / Track C subject instances that would talk about the same
# thing in the same workspace (claimed up front so they are never drawn there).
TOPIC_EXCLUDES: dict[str, tuple[tuple[str, str], ...]] = {
    "training": (("block", "scenario:training"), ("subject:training_city", "admin training")),
    "launch_timeline": (("block", "scenario:kickoff"),),
    "expansion": (("block", "scenario:kickoff"),),
    "integration_critical": (("block", "scenario:connector"),),
    "roadmap_commit": (("block", "scenario:beta"),),
    "admin_ownership": (("subject:admin_person", "workspace admin"),),
    "multi_year": (("block", "scenario:cfo_meeting"),),
    "renewal": (("block", "scenario:cfo_meeting"),),
}


def _track_a(ws: Workspace, w: int, plan: _Plan, seed: int, out: dict[str, list[Any]],
             variety_rows: list[tuple[str, str, str, str, str]]) -> None:
    pairs_rev = [p for p in plan.pairs if p["rev_ws"] == w]
    pairs_hn = [p for p in plan.pairs if p["hn_ws"] == w]
    # Items of other tracks must not make claims about what this workspace's arcs are about.
    for pair in [*pairs_rev, *pairs_hn]:
        for slot in ("team", "feature", "integration"):
            ws.used.add((slot, pair["slots"][slot]))
        ws.used.update(TOPIC_EXCLUDES.get(pair["topic"], ()))
    for pair in pairs_rev:
        rng = _rng(seed, "A-rev", pair["index"])
        topic = TN.TOPICS[pair["topic"]]
        speaker = rng.choice(ws.people_of(roles=topic["roles"]))
        slots = dict(pair["slots"], colleague=ws.colleague(speaker).first)
        family = pair["rev_family"]
        n_drift = {"direct": 0, "drift_flip": rng.randint(1, 2),
                   "cross_channel": rng.randint(0, 1)}[family]
        gap = _gap_minutes(ws, rng)
        bms = _times(ws, rng, 2 + n_drift, gap)
        ch_anchor = rng.choice(("slack", "email", "call"))
        ch_rev = (rng.choice([c for c in ("slack", "email", "call") if c != ch_anchor])
                  if family == "cross_channel" else ch_anchor)
        pair["channels"] = (ch_anchor, ch_rev)
        ai, anchor_clause = _clause(topic, "anchor", rng, slots)
        pair["anchor_index"] = ai
        afid, aframe = _pick_frame(TN.ANCHOR_FRAMES, rng)
        anchor_ev = _place(ws, bms[0], ch_anchor, speaker,
                           _render(aframe, {"anchor": anchor_clause}, slots, rng, False))
        drift_evs = []
        templates = {"anchor": f"{afid}:{pair['topic']}.anchor{ai}", "drift": []}
        for bm in bms[1:-1]:
            di, dclause = _clause(topic, "drift", rng, slots)
            dfid, dframe = _pick_frame(TN.DRIFT_FRAMES, rng)
            drift_evs.append(_place(ws, bm, rng.choice(("slack", "email", "call")), speaker,
                                    _render(dframe, {"drift": dclause}, slots, rng, False)))
            templates["drift"].append(f"{dfid}:{pair['topic']}.drift{di}")
        ni, nclause = _clause(topic, "neg", rng, slots)
        group = TN.REVERSAL_FRAME_GROUPS[rng.choice(sorted(TN.REVERSAL_FRAME_GROUPS))]
        rfid = rng.choice(group)
        rframe = TN.REVERSAL_FRAMES[rfid]
        rev_text = _render(rframe, {"neg": nclause}, slots, rng, True)
        lead = rng.random()
        if lead < TN.REVERSAL_REASON_RATE:
            # a reason first, drawn from the same outside-pressure clauses the pressure-signal
            # hard negatives use: realistic, and it keeps that vocabulary label-neutral
            _, reason = _clause(topic, "pressure", rng, slots)
            rev_text = f"{_cap(reason)}. {rev_text}"
        elif lead < TN.REVERSAL_REASON_RATE + TN.REVERSAL_MEMORY_RATE:
            # or a memory (the first half of a nostalgia clause, without its re-affirmation)
            _, memory = _clause(topic, "nostalgia", rng, slots)
            rev_text = f"{_cap(TN.memory_part(memory))}. {rev_text}"
        rev_ev = _place(ws, bms[-1], ch_rev, speaker, rev_text)
        templates["reversal"] = f"{rfid}:{pair['topic']}.neg{ni}"
        arc_id = f"{ws.id}:rev-{len(out['rev']) + 1:02d}"
        pair["rev_id"] = arc_id
        out["rev"].append((pair, dict(
            id=arc_id, conversation=ws.id, speaker=speaker.name, topic=topic["title"],
            family=family, anchor=[anchor_ev], drift=drift_evs, reversal=[rev_ev],
            meta={"topic_key": pair["topic"], "templates": templates,
                  "channels": {"anchor": ch_anchor, "reversal": ch_rev},
                  "slots": {k: v for k, v in slots.items() if k not in ("product", "vendor")}},
        )))
        variety_rows.append((arc_id, "reversal", family, templates["reversal"], rev_ev))
    for pair in pairs_hn:
        rng = _rng(seed, "A-hn", pair["index"])
        topic = TN.TOPICS[pair["topic"]]
        speaker = rng.choice(ws.people_of(roles=topic["roles"]))
        family = pair["hn_family"]
        gap = _gap_minutes(ws, rng)
        n_turns = 2 if family == "pressure_signal" and rng.random() < 0.5 else 1
        bms = _times(ws, rng, 1 + n_turns, gap)
        anchor_bm = bms[0]
        slots = dict(pair["slots"], colleague=ws.colleague(speaker).first,
                     anchor_month=P.MONTHS[ws.at(anchor_bm).month - 1])
        out["hn_pending"].append((pair, speaker, family, bms, slots, rng, topic))
    # hard negatives are rendered after the reversals of this workspace are placed, but they
    # depend only on their pair (channels are filled in by _finish_hard_negatives).


def _finish_hard_negatives(ws: Workspace, out: dict[str, list[Any]],
                           variety_rows: list[tuple[str, str, str, str, str]]) -> None:
    for pair, speaker, family, bms, slots, rng, topic in out["hn_pending"]:
        ch_anchor, ch_look = pair["channels"]
        ai = pair["anchor_index"]
        anchor_clause = _fmt(topic["anchor"][ai], **slots)
        afid, aframe = _pick_frame(TN.ANCHOR_FRAMES, rng)
        anchor_ev = _place(ws, bms[0], ch_anchor, speaker,
                           _render(aframe, {"anchor": anchor_clause}, slots, rng, False))
        frames, main_kind = TN.HARD_NEGATIVE_FAMILIES[family]
        look_evs = []
        tids = []
        for k, bm in enumerate(bms[1:]):
            clauses = {}
            idx = []
            for kind in ("neg", "would", "cond", "pos", "nostalgia", "pressure"):
                i, c = _clause(topic, kind, rng, slots)
                clauses[kind] = c
                if kind == main_kind:
                    idx.append(i)
            fid, frame = _pick_frame(frames, rng)
            channel = ch_look if k == len(bms) - 2 else rng.choice(("slack", "email", "call"))
            look_evs.append(_place(ws, bm, channel, speaker,
                                   _render(frame, clauses, slots, rng, True)))
            tids.append(f"{fid}:{pair['topic']}.{main_kind}{idx[0]}")
        arc_id = f"{ws.id}:hn-{len(out['hn']) + 1:02d}"
        pair["hn_id"] = arc_id
        out["hn"].append((pair, dict(
            id=arc_id, conversation=ws.id, speaker=speaker.name, topic=topic["title"],
            family=family, anchor=[anchor_ev], turns=look_evs,
            meta={"topic_key": pair["topic"],
                  "templates": {"anchor": f"{afid}:{pair['topic']}.anchor{ai}", "turns": tids},
                  "channels": {"anchor": ch_anchor, "turns": ch_look},
                  "slots": {k: v for k, v in slots.items() if k not in ("product", "vendor")}},
        )))
        for ev, tid in zip(look_evs, tids):
            variety_rows.append((arc_id, "hard_negative", family, tid, ev))
    out["hn_pending"].clear()


# ---------------------------------------------------------------------------------------------
# Track B / C values


def _value(kind: str, rng: random.Random, ws: Workspace, taken: set[str]) -> tuple[str, list[str]]:
    """A fresh value of a kind with accepted surface variants."""
    for _ in range(200):
        if kind == "seats":
            n = rng.randrange(20, 900, 5)
            v, var = f"{n} seats", [str(n)]
        elif kind == "date":
            d = ws.start + timedelta(days=rng.randint(30, ws.weeks * 7 + 60))
            month = P.MONTHS[d.month - 1]
            v, var = f"{month} {d.day}", [f"{d.day} {month}", f"{month[:3]} {d.day}"]
        elif kind == "person":
            first, last = rng.choice(P.FIRST_NAMES), rng.choice(P.LAST_NAMES)
            if any(p.first == first for p in ws.people):
                continue
            v, var = f"{first} {last}", [first]
        elif kind == "money":
            k = rng.randrange(12, 240, 2)
            v, var = f"${k},000", [f"${k}k", f"{k},000", f"{k}k"]
        elif kind == "po":
            n = rng.randint(10000, 99999)
            v, var = f"PO-{n}", [str(n)]
        else:
            v, var = rng.choice(CH.VALUE_POOLS[kind])
            var = list(var)
        if v not in taken:
            taken.add(v)
            return v, var
    raise RuntimeError(f"value pool exhausted for {kind}")


def _claim_subject(ws: Workspace, rng: random.Random) -> tuple[str, str]:
    keys = sorted(CH.SUBJECTS)
    for _ in range(500):
        key = rng.choice(keys)
        q = rng.choice(CH.SUBJECTS[key]["qualifiers"])
        if key == "seats" and ("team", q) in ws.used:
            continue
        if ws.claim("subject:" + key, q):
            if key == "seats":
                ws.used.add(("team", q))
            return key, q
    raise RuntimeError("subject instances exhausted")


def _customer_speaker(ws: Workspace, rng: random.Random) -> Person:
    return rng.choice(ws.people_of("customer", ("champion", "economic_buyer", "admin", "end_user")))


def _track_c(ws: Workspace, w: int, plan: _Plan, seed: int, out: dict[str, list[Any]]) -> None:
    for k, family in enumerate(plan.chains[w]):
        rng = _rng(seed, "C", ws.id, k)
        key, q = _claim_subject(ws, rng)
        subj = CH.SUBJECTS[key]
        speaker = _customer_speaker(ws, rng)
        taken: set[str] = set()
        n_states = {"one_update": 2, "two_updates": 3, "coexisting": 2}[family]
        gap = _gap_minutes(ws, rng)
        bms = _times(ws, rng, n_states, gap)
        values = [_value(subj["kind"], rng, ws, taken) for _ in range(n_states)]
        states = []
        templates = []
        for i, (bm, (v, var)) in enumerate(zip(bms, values)):
            if family == "coexisting":
                tmpl = subj["coexist"][i]
                text = _fmt(tmpl, v=values[0][0], v2=v, q=q)
                tid = f"{key}.coexist{i}"
            elif i == 0:
                j = rng.randrange(len(subj["state"]))
                text, tid = _fmt(subj["state"][j], v=v, q=q), f"{key}.state{j}"
            else:
                j = rng.randrange(len(subj["update"]))
                text = _fmt(subj["update"][j], v=v, old=values[i - 1][0], q=q)
                tid = f"{key}.update{j}"
            ev = _place(ws, bm, rng.choice(("slack", "email", "call")), speaker, _cap(text))
            current = family == "coexisting" or i == n_states - 1
            states.append((v, var, ev, current))
            templates.append(tid)
        item_id = f"{ws.id}:chain-{k + 1:02d}"
        co = family == "coexisting"
        fmt = {"company": ws.company, "q": q}
        queries = [
            ChainQuery(id=f"{item_id}:current", kind="current",
                       text=_fmt(subj["current_co" if co else "current"], **fmt)),
            ChainQuery(id=f"{item_id}:history", kind="history",
                       text=_fmt(subj["history_co" if co else "history"], **fmt)),
            ChainQuery(id=f"{item_id}:post_resolution", kind="post_resolution",
                       text=_fmt(subj["post_resolution"], **fmt)),
        ]
        out["chains"].append(dict(
            id=item_id, conversation=ws.id, speaker=speaker.name, subject=f"{key}: {q}",
            family=family, states=states, queries=queries,
            meta={"templates": templates, "subject_key": key, "qualifier": q},
        ))


def _track_b(ws: Workspace, w: int, plan: _Plan, seed: int, out: dict[str, list[Any]]) -> None:
    for k, family in enumerate(plan.drafts[w]):
        rng = _rng(seed, "B", ws.id, k)
        speaker = _customer_speaker(ws, rng)
        item_id = f"{ws.id}:draft-{k + 1:02d}"
        if family == "consistent":
            source = rng.choice(("event", "commitment", "subject"))
        else:
            source = {"invented_activity": "event",
                      "negated_commitment": "commitment"}.get(family, "subject")
        label = {"consistent": "aligned", "acknowledges_change": "hard_negative",
                 "asks_whether_changed": "hard_negative"}.get(family, "contradicting")
        slots = {"first": speaker.first, "company": ws.company}
        meta: dict[str, Any] = {}
        if source in ("event", "commitment"):
            scenarios = DR.EVENT_SCENARIOS if source == "event" else DR.COMMITMENT_SCENARIOS
            for _ in range(2000):
                name = rng.choice(sorted(scenarios))
                sc = scenarios[name]
                slots.update(team=rng.choice(P.TEAMS), feature=rng.choice(P.FEATURES),
                             integration=rng.choice(P.INTEGRATIONS), month=rng.choice(P.MONTHS))
                slot = sc["key"]
                if ("block", "scenario:" + name) in ws.used:
                    continue
                if slot != "month" and (slot, slots[slot]) in ws.used:
                    continue
                if ws.claim("scenario:" + name, slots[slot]):
                    if slot != "month":
                        ws.used.add((slot, slots[slot]))
                    break
            else:  # pragma: no cover
                raise RuntimeError("draft scenarios exhausted")
            bm = rng.randint(2 * _DAY_MINUTES, ws.business_minutes - 3 * _DAY_MINUTES)
            slots["day"] = P.WEEKDAYS[(bm // _DAY_MINUTES) % 5]
            if source == "event":
                variant = "done" if label == "aligned" else "not_done"
            else:
                variant = "decline" if label == "aligned" else "commit"
            j = rng.randrange(len(sc[variant]))
            ev = _place(ws, bm, rng.choice(("slack", "email", "call")), speaker,
                        _fmt(sc[variant][j], **slots))
            text = _fmt(sc["draft"], **slots)
            evidence = [ev]
            meta = {"scenario": f"{source}:{name}", "record": f"{name}.{variant}{j}"}
        else:
            key, q = _claim_subject(ws, rng)
            subj = CH.SUBJECTS[key]
            taken: set[str] = set()
            (old, _), (new, _) = (_value(subj["kind"], rng, ws, taken),
                                  _value(subj["kind"], rng, ws, taken))
            changed = family != "consistent"
            gap = _gap_minutes(ws, rng)
            bms = _times(ws, rng, 2, gap)
            j = rng.randrange(len(subj["state"]))
            channel = rng.choice(("slack", "email", "call"))
            ev_old = _place(ws, bms[0], channel, speaker, _cap(_fmt(subj["state"][j], v=old, q=q)))
            evs = [ev_old]
            if changed:
                u = rng.randrange(len(subj["update"]))
                evs.append(_place(ws, bms[1], rng.choice(("slack", "email", "call")), speaker,
                                  _cap(_fmt(subj["update"][u], v=new, old=old, q=q))))
            form = {"stale_assumption": "stale", "consistent": "stale",
                    "acknowledges_change": "ack", "asks_whether_changed": "asks"}[family]
            text = _fmt(subj[form], old=old, v=new, q=q, **slots)
            # a stale draft contradicts the update; others rely on every statement
            evidence = evs[1:] if family == "stale_assumption" else evs
            meta = {"scenario": f"subject:{key}", "qualifier": q, "old": old,
                    **({"new": new} if changed else {})}
        out["drafts"].append(dict(id=item_id, conversation=ws.id, label=label, family=family,
                                  speaker=speaker.name, text=text, evidence=evidence, meta=meta))


# ---------------------------------------------------------------------------------------------
# Track D


def _pii_value(kind: str, owner: Person, rng: random.Random, taken: set[str]) -> str:
    for _ in range(500):
        if kind == "phone":
            v = f"({rng.choice(P.AREA_CODES)}) 555-01{rng.randint(0, 99):02d}"
        elif kind == "email":
            first, last = (re.sub(r"[^a-z]", "", s.lower()) for s in owner.name.split(maxsplit=1))
            v = f"{first}.{last}{rng.randint(1, 99)}@{rng.choice(P.EMAIL_DOMAINS)}"
        else:
            v = (f"{rng.randint(10, 9899)} {rng.choice(P.STREETS)}, {rng.choice(P.TOWNS)}, "
                 f"{rng.choice(P.STATES)} 000{rng.randint(10, 99)}")
        if v not in taken:
            taken.add(v)
            return v
    raise RuntimeError("PII values exhausted")


def _track_d(ws: Workspace, w: int, plan: _Plan, seed: int, out: dict[str, list[Any]],
             pii_taken: set[str], include_crisis: bool) -> None:
    rng = _rng(seed, "D", ws.id)
    owners = rng.sample(ws.people, len(plan.pii[w]))
    for k, (kind, owner) in enumerate(zip(plan.pii[w], owners)):
        value = _pii_value(kind, owner, rng, pii_taken)
        text = _fmt(rng.choice(SF.PII_TURNS[kind]), value=value)
        bm = rng.randint(2 * _DAY_MINUTES, ws.business_minutes - 3 * _DAY_MINUTES)
        ev = _place(ws, bm, rng.choice(("slack", "email", "call")), owner, text)
        item_id = f"{ws.id}:pii-{k + 1:02d}"
        slots = {"owner": owner.name, "company": ws.company}
        out["pii"].append(dict(
            id=item_id, conversation=ws.id, kind=kind, value=value, owner=owner.name, turn=ev,
            probes=[Probe(id=f"{item_id}:direct", kind="direct",
                          text=_fmt(rng.choice(SF.PII_DIRECT_PROBES[kind]), **slots)),
                    Probe(id=f"{item_id}:indirect", kind="indirect",
                          text=_fmt(SF.PII_INDIRECT_PROBES[k % len(SF.PII_INDIRECT_PROBES)],
                                    **slots))],
        ))
    # Crisis plants are planned in every build so that all other ids stay the same; their text
    # comes from the opt-in module only when asked for.
    n_crisis = plan.crisis[w]
    crisis_speakers = rng.sample(ws.people, n_crisis)
    emo_pool = [p for p in ws.people if p not in crisis_speakers]
    templates = rng.sample(range(len(SF.EMOTIONAL_TURNS)), plan.emotional[w])
    for k, ti in enumerate(templates):
        speaker = rng.choice(emo_pool)
        text_t, probe_t, expected_t = SF.EMOTIONAL_TURNS[ti]
        slots = {"relative": rng.choice(SF.RELATIVES), "pet": rng.choice(SF.PETS),
                 "report": rng.choice(P.REPORTS), "speaker": speaker.name, "company": ws.company}
        bm = rng.randint(2 * _DAY_MINUTES, ws.business_minutes - 3 * _DAY_MINUTES)
        ev = _place(ws, bm, rng.choice(("slack", "call")), speaker, _fmt(text_t, **slots))
        item_id = f"{ws.id}:emo-{k + 1:02d}"
        out["emo"].append(dict(
            id=item_id, conversation=ws.id, speaker=speaker.name, turn=ev,
            probe=Probe(id=f"{item_id}:probe", kind="direct", text=_fmt(probe_t, **slots)),
            expected=[_fmt(e, **slots) for e in expected_t], meta={"template": f"emo{ti:02d}"},
        ))
    crisis_mod = cs_crisis_optin if include_crisis else None  # opt-in
    crng = _rng(seed, "crisis-text", ws.id)
    for k, speaker in enumerate(crisis_speakers):
        bm = rng.randint(2 * _DAY_MINUTES, ws.business_minutes - 3 * _DAY_MINUTES)
        channel = rng.choice(("slack", "call"))
        helper = ws.colleague(speaker)
        reply_delay = rng.randint(2, 15)
        item_id = f"{ws.id}:crisis-{k + 1:02d}"
        if crisis_mod is None:
            text, reply, phrases, probes = "(crisis plant omitted)", "", (), []
        else:
            turns = crisis_mod.CRISIS_TURNS
            lead, phrase, phrases = turns[crng.randrange(len(turns))]
            text = f"{lead} {phrase}"
            reply = crng.choice(crisis_mod.SUPPORT_REPLIES)
            slots = {"speaker": speaker.name, "company": ws.company}
            probes = [Probe(id=f"{item_id}:direct", kind="direct",
                            text=_fmt(crisis_mod.CRISIS_PROBES_DIRECT[k % 2], **slots)),
                      Probe(id=f"{item_id}:indirect", kind="indirect",
                            text=_fmt(crisis_mod.CRISIS_PROBES_INDIRECT[k % 2], **slots))]
        ts = ws.at(bm)
        thread = ws.new_thread(channel, ts, "check-in")
        ev = ws.add(ts, speaker, channel, text, thread, crisis=True)
        ws.add(ts + timedelta(minutes=reply_delay), helper, channel, reply, thread, crisis=True)
        out["crisis"].append(dict(id=item_id, conversation=ws.id, speaker=speaker.name, turn=ev,
                                  probes=probes, key_phrases=list(phrases)))


# ---------------------------------------------------------------------------------------------
# Assembly


def _assign_ids(ws: Workspace) -> None:
    ws.events.sort(key=lambda e: (e.ts, e.seq))
    for i, ev in enumerate(ws.events):
        ev.id = f"{ws.id}:e{i:04d}"


def _session(ws: Workspace, ev: Ev) -> int:
    return (ev.ts - ws.start).days // 7 + 1


def _ids(evs: Sequence[Ev]) -> list[str]:
    return [e.id for e in evs]


def build_cs(
    seed: int = DEFAULT_SEED,
    include_crisis: bool = False,
    paraphrase: ParaphraseConfig | None = None,
) -> tuple[Dataset, VarietyReport]:
    """Generate TWIST-CS: six workspaces with gold for Tracks A-D, and its variety report.

    seed: every random choice derives from it; the same seed gives byte-identical keys.
    include_crisis: add the opt-in crisis plants (Track D) from templates/cs_crisis_optin.py;
        everything else is identical to the build without them.
    paraphrase: rewrite every Track A turn through an OpenAI-compatible endpoint (cached; a
        rewrite that loses a slot value is refused and the template turn kept). The result is
        versioned "<version>+paraphrase" and is not the committed key.
    """
    plan = _plan(seed)
    teams = _make_people(seed)
    customers = _rng(seed, "customers").sample(P.CUSTOMERS, N_WORKSPACES)
    workspaces: list[Workspace] = []
    for w, (company, short, industry) in enumerate(customers):
        rng = _rng(seed, "ws", w)
        months = rng.randint(6, 12)
        weeks = round(months * 52 / 12)
        start = _EPOCH + timedelta(weeks=rng.randint(0, 20))
        workspaces.append(Workspace(f"cs-{short}", company, industry, start, weeks, teams[w],
                                    _rng(seed, "ws-events", w)))
    out: dict[str, list[Any]] = {
        k: [] for k in ("rev", "hn", "hn_pending", "drafts", "chains", "pii", "emo", "crisis")}
    # kept for debugging; see cs_variety_rows
    variety_rows: list[tuple[str, str, str, str, Any]] = []
    pii_taken: set[str] = set()
    for w, ws in enumerate(workspaces):
        _track_a(ws, w, plan, seed, out, variety_rows)
    # hard negatives need their paired reversal's channels, so render them after all reversals
    pending = out["hn_pending"][:]
    out["hn_pending"].clear()
    for w, ws in enumerate(workspaces):
        out["hn_pending"] = [x for x in pending if x[0]["hn_ws"] == w]
        _finish_hard_negatives(ws, out, variety_rows)
    paraphraser = Paraphraser(paraphrase) if paraphrase is not None else None
    if paraphraser is not None:
        _paraphrase_track_a(paraphraser, out)
    for w, ws in enumerate(workspaces):
        _track_b(ws, w, plan, seed, out)
        _track_c(ws, w, plan, seed, out)
        _track_d(ws, w, plan, seed, out, pii_taken, include_crisis)
    conversations = []
    for w, ws in enumerate(workspaces):
        rng = _rng(seed, "bg", w)
        n_items = len(ws.events)
        target = rng.randint(430, 860) - n_items
        n_crisis = sum(e.crisis for e in ws.events)
        target = max(target, EVENTS_MIN + 10 - (n_items - n_crisis))
        # one thread per week first, so that every session has traffic, then random fill
        added = 0
        for week in range(ws.weeks):
            added += _background_thread(ws, (week * 5 + rng.randint(0, 4)) * _DAY_MINUTES
                                        + rng.randint(0, _DAY_MINUTES - 120))
        while added < target:
            added += _background_thread(ws, rng.randint(0, ws.business_minutes - 240))
        _assign_ids(ws)
        events = [
            Event(id=e.id, conversation=ws.id, session=_session(ws, e), timestamp=e.ts,
                  speaker=e.speaker, channel=e.channel, text=e.text, thread=e.thread)
            for e in ws.events if include_crisis or not e.crisis
        ]
        conversations.append(Conversation(
            id=ws.id, speakers=[p.name for p in ws.people], events=events,
            meta={"company": ws.company, "industry": ws.industry, "vendor": P.VENDOR,
                  "product": P.PRODUCT,
                  "roles": {p.name: p.role for p in ws.people},
                  "sides": {p.name: p.side for p in ws.people},
                  "start": ws.start.date().isoformat(), "weeks": ws.weeks},
        ))

    def gap_days(a: Ev, b: Ev) -> int:
        return (b.ts - a.ts).days

    rev_arcs = []
    for pair, d in out["rev"]:
        d["meta"]["gap_days"] = gap_days(d["anchor"][0], d["reversal"][-1])
        rev_arcs.append(ReversalArc(
            **{**d, "anchor": _ids(d["anchor"]), "drift": _ids(d["drift"]),
               "reversal": _ids(d["reversal"])}, paired_negative=pair["hn_id"]))
    hn_arcs = []
    for pair, d in out["hn"]:
        d["meta"]["gap_days"] = gap_days(d["anchor"][0], d["turns"][-1])
        hn_arcs.append(HardNegativeArc(
            **{**d, "anchor": _ids(d["anchor"]), "turns": _ids(d["turns"])},
            paired_reversal=pair["rev_id"]))
    drafts = [Draft(**{**d, "evidence": _ids(d["evidence"])}) for d in out["drafts"]]
    chains = []
    for d in out["chains"]:
        states = [FactState(value=v, variants=var, turns=[ev.id], current=cur)
                  for v, var, ev, cur in d["states"]]
        first, last = d["states"][0][2], d["states"][-1][2]
        chains.append(UpdateChain(**{**d, "states": states,
                                     "meta": {**d["meta"], "gap_days": gap_days(first, last)}}))
    pii = [PIIPlant(**{**d, "turn": d["turn"].id}) for d in out["pii"]]
    emo = [EmotionalHardNegative(**{**d, "turn": d["turn"].id}) for d in out["emo"]]
    crisis = ([CrisisPlant(**{**d, "turn": d["turn"].id}) for d in out["crisis"]]
              if include_crisis else [])
    version = VERSION_CRISIS if include_crisis else VERSION
    meta: dict[str, Any] = {"generator": "twistbench.build.cs_workspace", "seed": seed,
                            "include_crisis": include_crisis}
    if include_crisis:
        meta["content_warning"] = cs_crisis_optin.CONTENT_WARNING
    if paraphraser is not None:
        version += "+paraphrase"
        meta["paraphrase"] = {"model": paraphrase.model, "rewritten": paraphraser.rewritten,
                              "kept": paraphraser.kept}
    dataset = Dataset(
        name=NAME, version=version, key_sha256="",
        conversations=conversations, reversal_arcs=rev_arcs, hard_negative_arcs=hn_arcs,
        drafts=drafts, update_chains=chains, pii_plants=pii, crisis_plants=crisis,
        emotional_negatives=emo,
        meta=meta,
    )
    _check_unique_texts(dataset)
    # The report is printed, not stored: its classifier figures come from a numerical optimiser,
    # and the key's bytes must not depend on the platform's floating point.
    report = cs_variety_report(dataset, seed=seed)
    return dataset, report


def _check_unique_texts(ds: Dataset) -> None:
    """The oracle answers by exact text: every query, probe and draft text must be unique."""
    seen: dict[str, str] = {}
    texts: list[tuple[str, str]] = [(d.id, d.text) for d in ds.drafts]
    texts += [(q.id, q.text) for c in ds.update_chains for q in c.queries]
    texts += [(p.id, p.text) for x in ds.pii_plants for p in x.probes]
    texts += [(p.id, p.text) for x in ds.crisis_plants for p in x.probes]
    texts += [(x.probe.id, x.probe.text) for x in ds.emotional_negatives]
    for item_id, text in texts:
        if text in seen:
            raise RuntimeError(f"{item_id} repeats the text of {seen[text]}: {text!r}")
        seen[text] = item_id


# ---------------------------------------------------------------------------------------------
# Keys


def write_cs_dataset(out: Path, dataset: Dataset) -> str:
    """Write a built dataset as a versioned key (+ .sha256 beside it); return the sha256."""
    payload = dataset.model_dump(mode="json")
    return write_key(out, name=NAME, version=dataset.version, payload=payload)


def write_cs_key(
    out: Path | None = None,
    seed: int = DEFAULT_SEED,
    include_crisis: bool = False,
    paraphrase: ParaphraseConfig | None = None,
) -> str:
    """Build TWIST-CS and write it as a key; return the key file's sha256.

    out: the key file; None = data/twist-cs-1.0.json (or -crisis.json with include_crisis)
    in the checkout.
    """
    dataset, _ = build_cs(seed=seed, include_crisis=include_crisis, paraphrase=paraphrase)
    if out is None:
        out = repo_data_dir() / (CS_CRISIS_KEY_FILE if include_crisis else CS_KEY_FILE)
    return write_cs_dataset(out, dataset)


def run_build_cs(
    out: Path | None = None,
    seed: int = DEFAULT_SEED,
    include_crisis: bool = False,
    paraphrase: ParaphraseConfig | None = None,
    console: Any = None,
    *,
    gate: KeyGate | None = None,
) -> tuple[str, VarietyReport]:
    """What `twist build cs` does: build, check the key about to be written with `gate` (the CLI
    passes the shortcut audit, validation.shortcuts.BuildGate), write it, print counts and the
    variety report.

    Returns (sha256, report). console: a rich Console (a new one if None). A gate that raises
    leaves nothing written; what it returns goes into the key's meta["gates"] (2.0+ keys), what
    it writes beside the key (1.0 keys: <key>.gates.json) is named on the console.
    """
    console = console or Console()
    dataset, report = build_cs(seed=seed, include_crisis=include_crisis, paraphrase=paraphrase)
    if out is None:
        out = repo_data_dir() / (CS_CRISIS_KEY_FILE if include_crisis else CS_KEY_FILE)
    if gate is not None:
        gate_meta = gate.before_write(dataset)
        if gate_meta is not None:
            dataset = dataset.model_copy(update={"meta": {**dataset.meta, "gates": gate_meta}})
    digest = write_cs_dataset(out, dataset)
    beside = gate.after_write(out) if gate is not None else None
    if beside is not None:
        console.print(f"gates -> {beside}")
    counts = dataset.counts()
    console.print(f"[bold]{dataset.version}[/bold] -> {out}  sha256 {digest}")
    console.print(", ".join(f"{k} {v}" for k, v in counts.items()))
    console.print(report.to_rich())
    return digest, report
