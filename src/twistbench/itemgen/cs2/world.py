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

from twistbench.itemgen import cs_workspace
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
class Ev(cs_workspace.Ev):
    """A 1.0 workspace event, plus where it came from (kept out of the key)."""

    origin: str = ""  # what made it (bank line ids, or bg:<thread id>)
    instance: str = ""  # the topic, scenario or subject instance it is about


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
    call_ends: dict[str, datetime] = field(default_factory=dict)  # call thread -> its last turn
    reserved: set[str] = field(default_factory=set)  # values held by this workspace's chains

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

    def bm_near(self, ts: datetime) -> int:
        """The business minute of a timestamp (clipped to its business day)."""
        minute = min(max(ts.hour * 60 + ts.minute - DAY_START_MIN, 0), DAY_MINUTES - 1)
        return min(self.bm_of(ts) + minute, self.business_minutes - 1)

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
        if channel == "call" and (thread not in self.call_ends or ts > self.call_ends[thread]):
            self.call_ends[thread] = ts
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
    """E-mail subjects and call kinds (context.toml), background threads for calls and fill, and
    the record of what was said (for the exact-duplicate guard)."""

    def __init__(self, banks: Banks):
        ctx = banks.context
        self.subjects = ctx["email"]["subjects"]
        self.call_kinds = ctx["email"]["call_kinds"]
        self.pools = banks.pools
        self.background = banks.background
        self.vendor = banks.pools["vendor"]
        # real calls that item and distractor lines can close (short background call threads)
        self.call_hosts = [t for t in banks.background
                           if "call" in t.channels and 2 <= len(t.turns) <= 3]
        self._order: dict[str, list[int]] = {}
        self._used: dict[str, set[int]] = {}
        self.said: set[str] = set()  # texts already said in Slack or a call (exact-duplicate guard)
        self.keep_out: dict[str, dict[str, set[str]]] = {}  # ws -> thread id prefix -> names

    def next_thread(self, ws: Workspace, rng: random.Random, call_host: bool) -> BgThread:
        """The next background thread for this workspace, each thread at most once per
        workspace (the background author's rule) until the bank runs out; a call host is the
        next unused thread that can be a short call."""
        pool = self.background
        order = self._order.get(ws.id)
        used = self._used.setdefault(ws.id, set())
        if order is None:
            order = list(range(len(pool)))
            rng.shuffle(order)
            self._order[ws.id] = order
        for i in order:
            t = pool[i]
            if i in used or (call_host and not ("call" in t.channels and 2 <= len(t.turns) <= 3)):
                continue
            used.add(i)
            return t
        used.clear()  # the bank is spent for this workspace: start another pass
        return self.next_thread(ws, rng, call_host)


def place(ws: Workspace, ctx: Context, rng: random.Random, bm: int, channel: str,
          speaker: Person, texts: Sequence[str], origin: str = "", crisis: bool = False,
          replier: Person | None = None, reply_text: str | None = None,
          to: Person | None = None, join: str | None = None, may_join: bool = True) -> list[Ev]:
    """Say `texts` (one turn each, in order) as `speaker` at business minute `bm` in `channel`;
    return their turns. Item lines and distractor lines go through here alike.

    Slack and e-mail: a new thread (an e-mail gets the speaker's greeting and sign-off, to a
    person of the other side). A call: the end of a real call, a short background call thread
    said just before, so the line comes up as the call's last point, as things do in calls.
    `replier`/`reply_text`: someone answers in the same thread (crisis plants: a colleague's
    reply). A call line joins a call already held that day (most of the time) unless
    `may_join` is False (the two targets of a Track A pair each get their own call). `join`: a
    call thread of this workspace to add the line to, after its last turn (a call covers
    several points), instead of a new call."""
    ts = ws.at(bm)
    out: list[Ev] = []
    if channel == "call" and reply_text is None and join is None and may_join:
        # a call already held that day takes the point (a call covers several), else a new one
        same_day = sorted((abs((end - ts).total_seconds()), th)
                          for th, end in ws.call_ends.items() if end.date() == ts.date())
        if same_day and rng.random() < 0.7:
            join = same_day[0][1]
    if channel == "call" and join is not None:
        t = ws.call_ends[join] + timedelta(minutes=rng.randint(1, 3))
        for text in texts:
            out.append(ws.add(t, speaker, "call", text, join, origin, crisis))
            t += timedelta(minutes=1)
        return out
    if channel == "call" and ctx.call_hosts and reply_text is None:
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
        t = last + timedelta(minutes=rng.randint(1, 3))
        for text in texts:
            out.append(ws.add(t, speaker, "call", text, thread, origin, crisis))
            t += timedelta(minutes=1)
        return out
    thread = ws.new_thread(channel, ts, rng.choice(ctx.call_kinds) if channel == "call"
                           else rng.choice(ctx.subjects) if channel == "email" else "")
    other = replier or to or counterpart(ws, rng, speaker)
    t = ts
    for text in texts:
        body = email_text(speaker, other, text) if channel == "email" else text
        out.append(ws.add(t, speaker, channel, body, thread, origin, crisis))
        t += timedelta(minutes=rng.randint(3, 40) if channel == "email" else rng.randint(1, 4))
    if reply_text is not None:
        body = email_text(other, speaker, reply_text) if channel == "email" else reply_text
        ws.add(t + timedelta(minutes=rng.randint(2, 15)), other, channel, body, thread,
               "ctx:reply", crisis)
    return out


# ---------------------------------------------------------------------------------------------
# Background threads (shared format)


def cast_thread(ws: Workspace, rng: random.Random, thread: BgThread,
                keep_out: set[str] = frozenset()) -> dict[str, Person]:
    """Who plays C1, C2, V1, V2: forced roles first, then free tags; distinct people. A customer
    tag that does not speak is never the economic buyer (the bank places such a person "in
    procurement" or "on my team"); people in `keep_out` are not cast."""
    cast: dict[str, Person] = {}
    speaking = {t.speaker.split(":")[0] for t in thread.turns}
    specs = sorted({t.speaker for t in thread.turns}, key=lambda s: (":" not in s, s))
    for spec in specs:
        tag, _, role = spec.partition(":")
        if tag in cast:
            continue
        side = "customer" if tag.startswith("C") else "vendor"
        taken = {p.name for p in cast.values()} | set(keep_out)
        pool = [p for p in ws.of(side, (role,) if role else None) if p.name not in taken]
        if not pool:
            pool = [p for p in ws.of(side) if p.name not in taken]
        cast[tag] = rng.choice(pool)
    for tag in ("C1", "C2", "V1", "V2"):
        if tag not in cast:
            side = "customer" if tag.startswith("C") else "vendor"
            taken = {p.name for p in cast.values()} | set(keep_out)
            pool = [p for p in ws.of(side) if p.name not in taken
                    and not (tag not in speaking and p.role == "economic_buyer")]
            cast[tag] = rng.choice(pool)
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
        "month": MONTHS[later.month - 1], "n": str(rng.randint(3, 95)),
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
    keep = ctx.keep_out.get(ws.id, {})
    cast = cast_thread(ws, rng, thread, {n for pre, names in keep.items()
                                         if thread.id.startswith(pre) for n in names})
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
