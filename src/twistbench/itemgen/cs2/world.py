"""Workspaces, people, the business clock, and how a line becomes turns in a channel.

Every line (item or not) is said through `place`: a Slack thread, an e-mail, or a call, with the
other side's lead-in and reply drawn from one pool per reply kind. The same function places item
lines and distractor lines, so a turn's surroundings say nothing about its role.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from twistbench.itemgen.cs2.banks import Banks, BgThread
from twistbench.itemgen.cs2.text import fill

DAY_START_MIN = 8 * 60  # business day 08:00-17:00 UTC
DAY_MINUTES = 9 * 60
EPOCH = datetime(2025, 1, 6, tzinfo=UTC)  # a Monday
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
VENDOR_ROLES = ("csm", "ae", "support_eng", "solutions_eng")
CUSTOMER_ROLES = ("champion", "economic_buyer", "admin", "end_user", "end_user", "end_user")


def rng_for(seed: int, *parts: object) -> random.Random:
    """An independent stream per purpose: sha256(seed, parts) seeds it (never hash())."""
    h = hashlib.sha256(":".join([str(seed), *map(str, parts)]).encode()).digest()
    return random.Random(int.from_bytes(h[:8], "big"))


@dataclass
class Person:
    name: str
    role: str
    side: str  # vendor | customer
    org: str  # the company the person works for
    domain: str
    signoff: str
    greeting: str

    @property
    def first(self) -> str:
        return self.name.split()[0]

    @property
    def work_email(self) -> str:
        first, last = (re.sub(r"[^a-z]", "", s.lower()) for s in self.name.split(maxsplit=1))
        return f"{first}.{last}@{self.domain}"


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
    origin: str = ""  # what made it (bank line id or context kind); kept out of the key


@dataclass
class Workspace:
    id: str
    company: str
    short: str
    domain: str
    industry: str
    start: datetime
    weeks: int
    people: list[Person]
    events: list[Ev] = field(default_factory=list)
    claims: set[str] = field(default_factory=set)
    seq: int = 0
    threads: int = 0
    said: set[str] | None = None  # shared with the Context: every text said outside e-mail

    @property
    def business_minutes(self) -> int:
        return self.weeks * 5 * DAY_MINUTES

    @property
    def end(self) -> datetime:
        return self.at(self.business_minutes - 1)

    def at(self, bm: int) -> datetime:
        """Business minute -> timestamp (weekdays 08:00-17:00 UTC)."""
        day, minute = divmod(bm, DAY_MINUTES)
        week, wday = divmod(day, 5)
        return self.start + timedelta(days=week * 7 + wday, minutes=DAY_START_MIN + minute)

    def bm_of(self, when: datetime | date) -> int:
        """The first business minute on or after the day of `when`."""
        d = when.date() if isinstance(when, datetime) else when
        days = (d - self.start.date()).days
        week, wday = divmod(days, 7)
        if wday >= 5:
            week, wday = week + 1, 0
        return (week * 5 + wday) * DAY_MINUTES

    def day_of(self, bm: int) -> date:
        return self.at(bm).date()

    def session(self, ts: datetime) -> int:
        return (ts - self.start).days // 7 + 1

    def claim(self, key: str) -> bool:
        """Reserve a topic, subject or scenario instance in this workspace; False if taken."""
        if key in self.claims:
            return False
        self.claims.add(key)
        return True

    def of(self, side: str | None = None, roles: Sequence[str] | None = None) -> list[Person]:
        return [p for p in self.people
                if (side is None or p.side == side) and (roles is None or p.role in roles)]

    def add(self, ts: datetime, speaker: Person, channel: str, text: str, thread: str,
            origin: str = "", crisis: bool = False) -> Ev:
        if self.said is not None and channel != "email":
            self.said.add(text)
        ev = Ev(ts, self.seq, speaker.name, channel, text, thread, crisis, origin=origin)
        self.seq += 1
        self.events.append(ev)
        return ev

    def new_thread(self, channel: str, ts: datetime, label: str) -> str:
        self.threads += 1
        if channel == "slack":
            return f"slack:#ext-{self.short}-brightwell/{self.threads:04d}"
        if channel == "call":
            return f"call-{ts:%Y-%m-%d}-{label}-{self.threads:04d}"
        return f"{label} ({ts:%b} {ts.day})"


# ---------------------------------------------------------------------------------------------
# Placing lines


_COUNTERPART_WEIGHTS = {
    "customer": (("csm", 50), ("ae", 20), ("support_eng", 15), ("solutions_eng", 15)),
    "vendor": (("champion", 40), ("admin", 25), ("economic_buyer", 20), ("end_user", 15)),
}


def counterpart(ws: Workspace, rng: random.Random, p: Person) -> Person:
    roles, weights = zip(*_COUNTERPART_WEIGHTS[p.side])
    role = rng.choices(roles, weights=weights)[0]
    return rng.choice(ws.of(roles=(role,)))


def colleague(ws: Workspace, rng: random.Random, p: Person) -> Person:
    return rng.choice([q for q in ws.of(p.side) if q.name != p.name])


def email_text(sender: Person, to: Person, body: str) -> str:
    return f"{sender.greeting} {to.first},\n\n{body}\n\n{sender.signoff}\n{sender.first}"


def email_body(text: str) -> str:
    """The words of an e-mail turn without its greeting and sign-off."""
    parts = text.split("\n\n")
    return "\n\n".join(parts[1:-1]) if len(parts) >= 3 else text


class Context:
    """Lead-ins, replies, call openings and closings, e-mail subjects (context.toml)."""

    def __init__(self, banks: Banks):
        ctx = banks.context
        self.leads = ctx.get("lead", [])
        self.replies = ctx.get("reply", [])
        self.openings = ctx.get("opening", [])
        self.closings = ctx.get("closing", [])
        self.subjects = ctx["email"]["subjects"]
        self.call_kinds = ctx["email"]["call_kinds"]
        self.pools = banks.pools
        self.background = banks.background
        self.vendor = banks.pools["vendor"]
        # real calls that item and distractor lines can close (short background call threads)
        self.call_hosts = [t for t in banks.background
                           if "call" in t.channels and 2 <= len(t.turns) <= 3]
        self._order: dict[tuple[str, bool], tuple[list[int], int]] = {}
        self.said: set[str] = set()  # texts already said in Slack or a call (exact-duplicate guard)

    def next_thread(self, ws: Workspace, rng: random.Random, call_host: bool) -> BgThread:
        """The next background thread for this workspace: a shuffled pass through the bank
        before any thread comes back, so a workspace repeats nothing until the bank runs out."""
        pool = self.call_hosts if call_host else self.background
        key = (ws.id, call_host)
        order, i = self._order.get(key, ([], 0))
        if i >= len(order):
            order, i = list(range(len(pool))), 0
            rng.shuffle(order)
        self._order[key] = (order, i + 1)
        return pool[order[i]]

    def lead(self, rng: random.Random, side: str, channel: str) -> dict[str, Any] | None:
        pool = [x for x in self.leads if x["side"] == side and channel in x["channels"]]
        return rng.choice(pool) if pool else None

    def reply(self, rng: random.Random, side: str, kind: str) -> dict[str, Any] | None:
        pool = [x for x in self.replies if x["side"] == side and kind in x["kinds"]]
        return rng.choice(pool) if pool else None


def _ctx_slots(rng: random.Random, name: str, other: str) -> dict[str, str]:
    return {"name": name, "other": other, "day": rng.choice(WEEKDAYS)}


def place(ws: Workspace, ctx: Context, rng: random.Random, bm: int, channel: str,
          speaker: Person, texts: Sequence[str], kind: str, origin: str = "",
          crisis: bool = False, replier: Person | None = None,
          reply_text: str | None = None, context: bool = False) -> list[Ev]:
    """Say `texts` (one turn each, in order) as `speaker` at business minute `bm` in `channel`.
    Returns the turns of `texts`.

    Slack and e-mail: a new thread. A call: the end of a real call transcript (a background
    call thread of the bank said just before, so the line comes up as the call's last item, as
    things do in calls). With `context`, the other side adds a lead-in and a reply from the
    context pools (kind: statement, question, fact, personal); `replier` and `reply_text`
    override them (crisis plants: a colleague's reply)."""
    ts = ws.at(bm)
    if channel == "call" and ctx.call_hosts and not context and reply_text is None:
        hosted = None
        for _ in range(20):
            host = ctx.next_thread(ws, rng, call_host=True)
            start = ts - timedelta(minutes=4 * len(host.turns) + 2)
            hosted = place_background_at(ws, rng, start, host, ctx, "call", keep_channel=True)
            if hosted is not None:
                break
        if hosted is None:
            hosted = (ts - timedelta(minutes=2),
                      ws.new_thread("call", ts, rng.choice(ctx.call_kinds)))
        last, thread = hosted
        out = []
        t = last + timedelta(minutes=rng.randint(1, 3))
        for text in texts:
            out.append(ws.add(t, speaker, "call", text, thread, origin, crisis))
            t += timedelta(minutes=1)
        return out
    if not context and reply_text is None:
        thread = ws.new_thread(channel, ts, rng.choice(ctx.call_kinds) if channel == "call"
                               else rng.choice(ctx.subjects) if channel == "email" else "")
        out, t = [], ts
        other = counterpart(ws, rng, speaker)
        for text in texts:
            body = email_text(speaker, other, text) if channel == "email" else text
            out.append(ws.add(t, speaker, channel, body, thread, origin, crisis))
            t += timedelta(minutes=rng.randint(1, 4) if channel != "email" else rng.randint(3, 40))
        return out
    other = replier or counterpart(ws, rng, speaker)
    out: list[Ev] = []

    def reply_line() -> str | None:
        if reply_text is not None:
            return reply_text
        r = ctx.reply(rng, other.side, kind)
        if r is None:
            return None
        mate = colleague(ws, rng, other).first
        return fill(r["text"], _ctx_slots(rng, speaker.first, mate), r["id"])

    if channel == "slack":
        thread = ws.new_thread("slack", ts, "")
        lead = ctx.lead(rng, other.side, "slack")
        if lead is not None and rng.random() < 0.35 and reply_text is None:
            ws.add(ts - timedelta(minutes=rng.randint(5, 90)), other, "slack",
                   fill(lead["text"], _ctx_slots(rng, speaker.first, ""), lead["id"]), thread,
                   "ctx:lead")
        t = ts
        for text in texts:
            out.append(ws.add(t, speaker, "slack", text, thread, origin, crisis))
            t += timedelta(minutes=rng.randint(1, 4))
        if reply_text is not None or rng.random() < 0.7:
            r = reply_line()
            if r:
                ws.add(t + timedelta(minutes=rng.randint(2, 110)), other, "slack", r, thread,
                       "ctx:reply", crisis)
        return out
    if channel == "email":
        thread = ws.new_thread("email", ts, rng.choice(ctx.subjects))
        t = ts
        for text in texts:
            out.append(ws.add(t, speaker, "email", email_text(speaker, other, text), thread,
                              origin, crisis))
            t += timedelta(minutes=rng.randint(3, 40))
        if reply_text is not None or rng.random() < 0.5:
            r = reply_line()
            if r:
                ws.add(t + timedelta(minutes=rng.randint(20, 600)), other, "email",
                       email_text(other, speaker, r), thread, "ctx:reply", crisis)
        return out
    # call: a short stretch of a transcript
    host = speaker if speaker.side == "vendor" else (
        other if other.side == "vendor" else ws.of(roles=("csm",))[0])
    thread = ws.new_thread("call", ts, rng.choice(ctx.call_kinds))
    slots = _ctx_slots(rng, speaker.first, "")
    if rng.random() < 0.6 and not crisis:
        op = rng.choice(ctx.openings)
        mate = colleague(ws, rng, host)
        ws.add(ts - timedelta(minutes=rng.randint(4, 12)), host, "call",
               fill(op["text"], {**slots, "name": mate.first}, op["id"]), thread, "ctx:opening")
    lead = ctx.lead(rng, other.side, "call")
    if lead is not None and rng.random() < 0.5 and reply_text is None:
        ws.add(ts - timedelta(minutes=1), other, "call", fill(lead["text"], slots, lead["id"]),
               thread, "ctx:lead")
    t = ts
    for text in texts:
        out.append(ws.add(t, speaker, "call", text, thread, origin, crisis))
        t += timedelta(minutes=1)
    if reply_text is not None or rng.random() < 0.75:
        r = reply_line()
        if r:
            ws.add(t + timedelta(minutes=1), other, "call", r, thread, "ctx:reply", crisis)
    if rng.random() < 0.35 and not crisis:
        cl = rng.choice(ctx.closings)
        ws.add(t + timedelta(minutes=rng.randint(3, 6)), host, "call",
               fill(cl["text"], slots, cl["id"]), thread, "ctx:closing")
    return out


# ---------------------------------------------------------------------------------------------
# Background threads (shared format)


def cast_thread(ws: Workspace, rng: random.Random, thread: BgThread) -> dict[str, Person]:
    """Who plays C1, C2, V1, V2: forced roles first, then free tags; distinct people."""
    cast: dict[str, Person] = {}
    specs = sorted({t.speaker for t in thread.turns}, key=lambda s: (":" not in s, s))
    for spec in specs:
        tag, _, role = spec.partition(":")
        if tag in cast:
            continue
        side = "customer" if tag.startswith("C") else "vendor"
        taken = {p.name for p in cast.values()}
        pool = [p for p in ws.of(side, (role,) if role else None) if p.name not in taken]
        if not pool:
            pool = [p for p in ws.of(side) if p.name not in taken]
        cast[tag] = rng.choice(pool)
    for tag in ("C1", "C2", "V1", "V2"):
        if tag not in cast:
            side = "customer" if tag.startswith("C") else "vendor"
            taken = {p.name for p in cast.values()}
            cast[tag] = rng.choice([p for p in ws.of(side) if p.name not in taken])
    return cast


def background_slots(ws: Workspace, rng: random.Random, pools: dict[str, Any], ts: datetime,
                     cast: dict[str, Person], vendor: dict[str, str]) -> dict[str, str]:
    """Values for one background thread, drawn once so every turn agrees."""
    v = pools["values"]
    soon = ts.date() + timedelta(days=rng.randint(3, 24))
    later = ts.date() + timedelta(days=rng.randint(35, 80))
    slots = {
        "company": ws.company, "vendor": vendor["name"], "product": vendor["product"],
        "report": rng.choice(v["report"]), "feature": rng.choice(v["feature"]),
        "integration": rng.choice(v["integration"]), "team": rng.choice(v["team"]),
        "day": rng.choice(WEEKDAYS), "date": f"{MONTHS[soon.month - 1]} {soon.day}",
        "time": f"{rng.randint(8, 16)}:{rng.choice(['00', '15', '30', '45'])}",
        "month": MONTHS[later.month - 1], "n": str(rng.randint(2, 48)),
        "ticket": f"SUP-{rng.randint(1000, 9999)}",
    }
    slots.update({tag: p.first for tag, p in cast.items()})
    return slots


def place_background(ws: Workspace, rng: random.Random, bm: int, thread: BgThread,
                     pools: dict[str, Any], vendor: dict[str, str], ctx: Context) -> int:
    """One background thread starting at business minute bm; returns the turns added."""
    place_background_at(ws, rng, ws.at(bm), thread, ctx, rng.choice(thread.channels))
    return len(thread.turns)


def place_background_at(ws: Workspace, rng: random.Random, ts: datetime, thread: BgThread,
                        ctx: Context, channel: str, keep_channel: bool = False
                        ) -> tuple[datetime, str] | None:
    """Say a background thread from `ts` in `channel`; returns (time of its last turn, thread).
    A thread one of whose turns was already said word for word goes out as e-mails (greeting
    and sign-off make them different turns), or, with keep_channel, is not said (None)."""
    cast = cast_thread(ws, rng, thread)
    slots = background_slots(ws, rng, ctx.pools, ts, cast, ctx.vendor)
    if channel != "email" and any(fill(t.text, slots, thread.id) in ctx.said for t in thread.turns):
        if keep_channel:
            return None
        channel = "email"
    origin = f"bg:{thread.id}"
    t = ts
    last = ts
    if channel == "slack":
        tid = ws.new_thread("slack", ts, "")
        for turn in thread.turns:
            last = t
            ws.add(t, cast[turn.speaker.split(":")[0]], "slack",
                   fill(turn.text, slots, thread.id), tid, origin)
            t += timedelta(minutes=rng.randint(1, 45))
    elif channel == "email":
        subject = fill(thread.subject, slots, thread.id) if thread.subject else \
            rng.choice(ctx.subjects)
        tid = ws.new_thread("email", ts, subject)
        prev: Person | None = None
        for turn in thread.turns:
            p = cast[turn.speaker.split(":")[0]]
            to = prev if prev is not None and prev.name != p.name else counterpart(ws, rng, p)
            last = t
            ws.add(t, p, "email", email_text(p, to, fill(turn.text, slots, thread.id)), tid,
                   origin)
            t += timedelta(minutes=rng.randint(30, 900))
            prev = p
    else:
        tid = ws.new_thread("call", ts, rng.choice(ctx.call_kinds))
        for turn in thread.turns:
            last = t
            ws.add(t, cast[turn.speaker.split(":")[0]], "call",
                   fill(turn.text, slots, thread.id), tid, origin)
            t += timedelta(minutes=rng.randint(1, 4))
    return last, tid
