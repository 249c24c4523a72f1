"""TWIST-CS 2.0: six customer-success workspaces built from hand-written banks, with gold for
Tracks A-D (whitepaper §4.2, issue 12, keys2 principles).

How a key is made (docs/keys/twist-cs-2.0.md has the full design):
1. People and workspaces (six customer accounts of one vendor, 6-12 months each).
2. A dataset-wide plan decided before any text: every Track A topic's target is used twice, as
   a reversal in one workspace and a hard negative in another; every Track B draft wording is
   used twice, with the record deciding a different label each time; Track C chains (some of them
   the record of a Track B draft); Track D plants and recall controls.
3. Slots first, labels second: an arc's times, gap and channels are drawn from one distribution
   whatever its label; the label only decides which anchor (and whether an acknowledgement)
   precedes the same target.
4. Distractors: the same bank lines said where nothing makes them an item, through the same
   placement as items.
5. Background threads (banks/cs/background, shared format) fill each workspace to its size.
6. Events sorted by time, one session per week, ids "<workspace>:e0000" in order.
Determinism: every choice comes from a `random.Random` seeded from sha256(seed, purpose); no set
is iterated; the same seed and banks give byte-identical keys.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from twistbench.itemgen.cs2.banks import (
    Banks,
    Contact,
    Emotional,
    Line,
    Plant,
    Scenario,
    Subject,
    Topic,
    load_banks,
)
from twistbench.itemgen.cs2.text import address, fill, grammar_problems, slots_of
from twistbench.itemgen.cs2.values import ValueSource, date_text
from twistbench.itemgen.cs2.world import (
    CUSTOMER_ROLES,
    DAY_MINUTES,
    EPOCH,
    MONTHS,
    WEEKDAYS,
    Context,
    Ev,
    Person,
    Workspace,
    colleague,
    counterpart,
    place,
    place_background,
    rng_for,
)
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

NAME = "twist-cs"
VERSION = "twist-cs-2.0"
VERSION_CRISIS = "twist-cs-2.0+crisis"
KEY_FILE = "twist-cs-2.0.json"
CRISIS_KEY_FILE = "twist-cs-2.0-crisis.json"
DEFAULT_SEED = 20261201

N_WORKSPACES = 6
# The CS column of whitepaper §4.3 (emotional negatives: the emotional family of the recall
# controls; business-contact controls come on top).
# Above the §4.3 floor for Tracks A-C (60 + 60 arcs, 180 drafts, 72 chains): the shortcut
# battery's classifiers are judged by distance from chance, and on 80 arcs or 120 drafts chance
# alone reaches its 0.60 gate on some seeds; more items make the gate measure the key.
SIZES = {
    "reversal_arcs": 60, "hard_negative_arcs": 60,
    "drafts": 180, "drafts_contradicting": 90, "drafts_aligned": 45, "drafts_hard_negative": 45,
    "update_chains": 72, "chain_queries": 216,
    "pii_plants": 30, "pii_probes": 60, "crisis_plants": 16, "emotional_negatives": 32,
    "business_contacts": 16,
}
SIZES_4_3 = {"reversal_arcs": 40, "hard_negative_arcs": 40, "drafts": 120, "update_chains": 60,
             "chain_queries": 180, "pii_plants": 30, "pii_probes": 60, "crisis_plants": 16,
             "emotional_negatives": 32}
CHAIN_FAMILIES = {"one_update": 30, "two_updates": 24, "coexisting": 18}
DRAFT_REPEATS = {"value": 12, "scenario": 18}  # wordings used for a second pair
EVENTS_MIN, EVENTS_MAX = 400, 900
CHANNEL_WEIGHTS = (("slack", 55), ("email", 30), ("call", 15))


def _channel(rng: random.Random, allowed: tuple[str, ...] = ("slack", "email", "call")) -> str:
    chans, weights = zip(*[(c, w) for c, w in CHANNEL_WEIGHTS if c in allowed])
    return rng.choices(chans, weights=weights)[0]


def _kind_of(text: str) -> str:
    return "question" if text.rstrip().endswith("?") else "statement"


def _spread(total: int, n: int, rng: random.Random) -> list[int]:
    base = [total // n] * n
    for i in rng.sample(range(n), total % n):
        base[i] += 1
    return base


# ---------------------------------------------------------------------------------------------
# Shared build state


@dataclass
class Build:
    seed: int
    banks: Banks
    ctx: Context
    values: ValueSource
    vendor: dict[str, Any]
    include_crisis: bool
    rev: list[dict[str, Any]] = field(default_factory=list)
    hn: list[dict[str, Any]] = field(default_factory=list)
    drafts: list[dict[str, Any]] = field(default_factory=list)
    chains: list[dict[str, Any]] = field(default_factory=list)
    pii: list[dict[str, Any]] = field(default_factory=list)
    controls: list[dict[str, Any]] = field(default_factory=list)
    crisis: list[dict[str, Any]] = field(default_factory=list)
    pii_taken: set[str] = field(default_factory=set)
    # (workspace, person, phone|email|address) asked about by a probe: nobody else gives that
    # person a detail of that kind in that workspace, so the probe has one answer
    probed_details: set[tuple[str, str, str]] = field(default_factory=set)
    usage: Counter[str] = field(default_factory=Counter)  # times each bank line was said
    dist_channels: dict[str, Counter[str]] = field(default_factory=dict)
    proper: frozenset[str] = frozenset()
    kinds: dict[str, str] = field(default_factory=dict)  # bank line id -> kind (line_kinds)


def _gap_bm(ws: Workspace, rng: random.Random) -> int:
    """Business minutes between the first and last turn of an arc or chain: days, weeks or
    months of story time (one distribution for every label)."""
    bucket = rng.choices(("days", "weeks", "months"), weights=(25, 35, 40))[0]
    lo, hi = {"days": (2, 9), "weeks": (10, 45), "months": (46, 200)}[bucket]
    bm = int(rng.randint(lo, hi) * 5 / 7 * DAY_MINUTES)
    return max(DAY_MINUTES, min(bm, ws.business_minutes - 30 * DAY_MINUTES))


def _times(ws: Workspace, rng: random.Random, n: int, gap: int, tail_days: int = 10) -> list[int]:
    """n increasing business minutes, first and last `gap` apart, leaving `tail_days` at the
    end of the workspace."""
    lo = 2 * DAY_MINUTES
    hi = ws.business_minutes - tail_days * DAY_MINUTES - gap
    start = rng.randint(lo, max(lo, hi))
    inner = sorted(rng.sample(range(start + 60, start + gap - 60), n - 2)) if n > 2 else []
    return [start, *inner, start + gap]


def _later_same_day(bm: int, minutes: int) -> int:
    """bm moved `minutes` later, but not past the end of its business day."""
    return min(bm + minutes, (bm // DAY_MINUTES + 1) * DAY_MINUTES - 1)


def _bdays_after(ws: Workspace, bm: int, rng: random.Random, lo: int, hi: int) -> int:
    """A business minute lo..hi business days after bm (before it when negative; clipped to
    the workspace)."""
    day = bm // DAY_MINUTES + rng.randint(lo, hi)
    out = day * DAY_MINUTES + rng.randint(30, DAY_MINUTES - 60)
    return max(0, min(out, ws.business_minutes - 1))


# ---------------------------------------------------------------------------------------------
# People and workspaces


def _workspaces(seed: int, banks: Banks) -> tuple[list[Workspace], list[str]]:
    pools = banks.pools
    rng = rng_for(seed, "people")
    firsts = rng.sample(pools["people"]["first"], N_WORKSPACES * 10)
    lasts = rng.sample(pools["people"]["last"], N_WORKSPACES * 10)
    spare = sorted(set(pools["people"]["first"]) - set(firsts))
    customers = rng_for(seed, "customers").sample(pools["customer"], N_WORKSPACES)
    vendor = pools["vendor"]
    out = []
    k = 0
    for w, cust in enumerate(customers):
        wrng = rng_for(seed, "ws", w)
        months = wrng.randint(6, 12)
        weeks = round(months * 52 / 12)
        start = EPOCH + timedelta(weeks=wrng.randint(0, 20))
        people = []
        for side, roles in (("vendor", ("csm", "ae", "support_eng", "solutions_eng")),
                            ("customer", ("champion", "economic_buyer", "admin", "end_user",
                                          "end_user", "end_user"))):
            for role in roles:
                org, domain = ((vendor["name"], vendor["domain"]) if side == "vendor"
                               else (cust["name"], cust["domain"]))
                greeting = rng.choice(("Hi", "Hi", "Hello") if side == "vendor"
                                      else ("Hi", "Hey", "Hello"))
                people.append(Person(f"{firsts[k]} {lasts[k]}", role, side, org, domain,
                                     rng.choice(pools["people"]["signoffs"]), greeting))
                k += 1
        out.append(Workspace(f"cs-{cust['short']}", cust["name"], cust["short"], cust["domain"],
                             cust["industry"], start, weeks, people))
    return out, spare


# ---------------------------------------------------------------------------------------------
# The plan: which workspace gets which item, and which label (before any text)


@dataclass
class ArcUse:
    topic: Topic
    ws: int
    label: str  # reversal | hard_negative
    role: str = ""  # the speaker's role
    hn_type: str = ""  # consistent | ack
    n_drift: int = 0
    other_ws: int = -1
    id: str = ""


@dataclass
class DraftUse:
    source: Scenario | Subject
    which: str  # stale | ack
    ws: int
    record: str  # keep | change
    label: str
    family: str
    other_ws: int = -1
    id: str = ""
    pair: DraftUse | None = None


@dataclass
class ChainPlan:
    ws: int
    family: str
    subject: Subject | None = None
    draft: DraftUse | None = None


@dataclass
class Plan:
    arcs: list[ArcUse]
    drafts: list[DraftUse]
    chains: list[ChainPlan]
    plants: list[list[Plant]]
    emotional: list[list[Emotional]]
    contacts: list[list[Contact]]
    crisis: list[list[dict[str, Any]]]


def _assign_topics(rng: random.Random, topics: list[Topic]) -> list[tuple[Topic, int]]:
    """One workspace per pair, never two topics of one group in a workspace (so a topic's second
    pair goes elsewhere), loads even."""
    for _ in range(2000):
        load = [0] * N_WORKSPACES
        groups: list[set[str]] = [set() for _ in range(N_WORKSPACES)]
        order = topics[:]
        rng.shuffle(order)
        out = []
        for t in order:
            cands = [w for w in range(N_WORKSPACES) if t.group not in groups[w]]
            if not cands:
                break
            rng.shuffle(cands)
            w = min(cands, key=lambda x: load[x])
            load[w] += 1
            groups[w].add(t.group)
            out.append((t, w))
        else:
            rank = {id(t): i for i, t in enumerate(topics)}
            return sorted(out, key=lambda tw: (rank[id(tw[0])], tw[1]))
    raise RuntimeError("could not assign Track A topics to workspaces")


def make_plan(seed: int, banks: Banks) -> Plan:
    rng = rng_for(seed, "plan")
    # Track A: each pair is a target said twice in one workspace, by two people: once closing a
    # reversal, once closing a hard negative. Every pairable topic gives a pair; some a second
    # pair, in another workspace.
    pairable = [t for t in banks.topics if t.pairable and len(t.roles) >= 2]
    extra = SIZES["reversal_arcs"] - len(pairable)
    if extra < 0 or extra > len(pairable):
        raise RuntimeError(f"{len(pairable)} pairable topics for {SIZES['reversal_arcs']} pairs")
    again = set(rng.sample(range(len(pairable)), extra))
    item_topics = pairable + [t for i, t in enumerate(pairable) if i in again]
    arcs: list[ArcUse] = []
    # which role says the reversal and which the hard negative: balanced within each workspace,
    # so the speaker's role tells nothing about the label, not even across workspaces (a balance
    # over the whole key alone would make a leave-one-workspace-out split learn the opposite)
    rev_n: dict[int, Counter[str]] = defaultdict(Counter)
    hn_n: dict[int, Counter[str]] = defaultdict(Counter)
    slots_per_role = Counter([*CUSTOMER_ROLES, "csm", "ae", "support_eng", "solutions_eng"])
    for t, w in _assign_topics(rng, item_topics):
        options = [(a, z) for a in t.roles for z in t.roles
                   if a != z or slots_per_role[a] > 1]
        rng.shuffle(options)

        def imbalance(o: tuple[str, str], w: int = w) -> int:
            rev_n[w][o[0]] += 1
            hn_n[w][o[1]] += 1
            c = sum(abs(rev_n[w][r] - hn_n[w][r]) for r in set(rev_n[w]) | set(hn_n[w]))
            rev_n[w][o[0]] -= 1
            hn_n[w][o[1]] -= 1
            return c

        rev_role, hn_role = min(options, key=imbalance)
        rev_n[w][rev_role] += 1
        hn_n[w][hn_role] += 1
        hn_type = "consistent" if "consistent" in t.hard_negatives and rng.random() < 0.65 \
            else "ack"
        arcs.append(ArcUse(t, w, "reversal", role=rev_role,
                           n_drift=rng.choices((0, 1, 2), weights=(55, 30, 15))[0]))
        arcs.append(ArcUse(t, w, "hard_negative", role=hn_role, hn_type=hn_type))
    excluded = [{x for u in arcs if u.ws == w for x in u.topic.excludes}
                for w in range(N_WORKSPACES)]
    # Track B: every draft wording twice, labels decided by the record.
    skeletons: list[tuple[Scenario | Subject, str]] = []
    for s in banks.scenarios:
        skeletons += [(s, "stale"), (s, "ack")]
    for s in banks.subjects:
        if s.draft_stale is not None:
            skeletons += [(s, "stale"), (s, "ack")]
    value = [k for k in skeletons if isinstance(k[0], Subject)]
    scenario = [k for k in skeletons if not isinstance(k[0], Subject)]
    for group, key in ((value, "value"), (scenario, "scenario")):
        for which in ("stale", "ack"):  # as many of each, so the labels stay 1/2, 1/4, 1/4
            kind = [k for k in group if k[1] == which]
            group += rng.sample(kind, DRAFT_REPEATS[key] // 2)
    if 2 * (len(value) + len(scenario)) != SIZES["drafts"]:
        raise RuntimeError(f"Track B needs {SIZES['drafts'] // 2} pairs; the banks give "
                           f"{len(value) + len(scenario)}")
    drafts = _place_drafts(rng, value, scenario, banks, excluded)
    # Track C: the value drafts whose record changed sit on update chains.
    hosting = [d for d in drafts if isinstance(d.source, Subject) and d.record == "change"]
    fams = ["two_updates"] * 14 + ["one_update"] * (len(hosting) - 14)
    rng.shuffle(fams)
    chains = [ChainPlan(d.ws, f, d.source, d) for d, f in zip(hosting, fams)]
    left = {k: v - sum(c.family == k for c in chains) for k, v in CHAIN_FAMILIES.items()}
    per_ws = sum(CHAIN_FAMILIES.values()) // N_WORKSPACES
    need = [per_ws - sum(c.ws == w for c in chains) for w in range(N_WORKSPACES)]
    if min(need) < left["coexisting"] // N_WORKSPACES:
        raise RuntimeError("too many draft-hosting chains in one workspace")
    co_each = _spread(left["coexisting"], N_WORKSPACES, rng)
    rest = ["one_update"] * left["one_update"] + ["two_updates"] * left["two_updates"]
    rng.shuffle(rest)
    for w in range(N_WORKSPACES):
        chains += [ChainPlan(w, "coexisting") for _ in range(co_each[w])]
        for _ in range(need[w] - co_each[w]):
            chains.append(ChainPlan(w, rest.pop()))
    if rest:
        raise RuntimeError("chain families do not add up")
    # Track D
    plants = banks.plants[:]
    rng.shuffle(plants)
    plants = plants[:SIZES["pii_plants"]]
    emotional = banks.emotional[:]
    rng.shuffle(emotional)
    emotional = emotional[:SIZES["emotional_negatives"]]
    contacts = [c for c in banks.contacts if c.probed]
    for _ in range(2000):
        rng.shuffle(contacts)
        dealt = _deal(contacts[:SIZES["business_contacts"]], rng)
        if not any(c.id in excluded[w] for w in range(N_WORKSPACES) for c in dealt[w]):
            break
    else:
        raise RuntimeError("could not deal business contacts")
    crisis = banks.crisis[:]
    rng.shuffle(crisis)

    return Plan(arcs, drafts, chains, _deal(plants, rng), _deal(emotional, rng), dealt,
                _deal(crisis[:SIZES["crisis_plants"]], rng))


def _deal(items: list[Any], rng: random.Random) -> list[list[Any]]:
    counts = _spread(len(items), N_WORKSPACES, rng)
    out, i = [], 0
    for c in counts:
        out.append(items[i:i + c])
        i += c
    return out


def _place_drafts(rng: random.Random, value: list[tuple[Any, str]],
                  scenario: list[tuple[Any, str]], banks: Banks,
                  excluded: list[set[str]]) -> list[DraftUse]:
    """Give every pair of uses of a draft wording one workspace, where the wording is used about
    two instances: the plan kept (or the value unchanged) and the plan changed (or the value
    updated). Each workspace gets as many value pairs and scenario pairs as every other, never
    a wording its stance topics exclude, and a wording's two pairs go to two workspaces. Local
    search from a random start."""
    groups = [value, scenario]
    for g in groups:
        if len(g) % N_WORKSPACES:
            raise RuntimeError("Track B pairs do not divide evenly among the workspaces")
    pos = []
    for grp in groups:
        pool = [w for w in range(N_WORKSPACES) for _ in range(len(grp) // N_WORKSPACES)]
        rng.shuffle(pool)
        pos.append(pool)

    def bad(g: int, i: int) -> int:
        src, which = groups[g][i]
        w = pos[g][i]
        twice = sum(1 for j, (s2, w2) in enumerate(groups[g])
                    if j != i and s2 is src and w2 == which and pos[g][j] == w)
        return int(src.id in excluded[w]) + twice

    cost = sum(bad(g, i) for g in range(len(groups)) for i in range(len(groups[g])))
    for _ in range(50000):
        if cost == 0:
            break
        viol = [(g, i) for g in range(len(groups)) for i in range(len(groups[g])) if bad(g, i)]
        g, i = rng.choice(viol)
        j = rng.randrange(len(groups[g]))
        pos[g][i], pos[g][j] = pos[g][j], pos[g][i]
        new = sum(bad(h, k) for h in range(len(groups)) for k in range(len(groups[h])))
        if new <= cost:
            cost = new
        else:
            pos[g][i], pos[g][j] = pos[g][j], pos[g][i]
    if cost:
        raise RuntimeError("could not place Track B draft wordings")
    drafts: list[DraftUse] = []
    for g, grp in enumerate(groups):
        for i, (src, which) in enumerate(grp):
            lab_keep, lab_change = (("aligned", "contradicting") if which == "stale"
                                    else ("contradicting", "hard_negative"))
            fam_keep, fam_change = _draft_families(src, which)
            w = pos[g][i]
            u_keep = DraftUse(src, which, w, "keep", lab_keep, fam_keep, other_ws=w)
            u_change = DraftUse(src, which, w, "change", lab_change, fam_change, other_ws=w)
            u_keep.pair, u_change.pair = u_change, u_keep
            drafts += [u_keep, u_change]
    return drafts


def _draft_families(src: Scenario | Subject, which: str) -> tuple[str, str]:
    """(family under the kept record, family under the changed record)."""
    if which == "ack":
        return "invented_change", "acknowledges_change"
    if isinstance(src, Subject):
        return "consistent", "stale_assumption"
    return "consistent", ("invented_activity" if src.kind == "event" else "negated_commitment")


# ---------------------------------------------------------------------------------------------
# Saying a bank line


def _say(b: Build, ws: Workspace, rng: random.Random, bm: int, channel: str, speaker: Person,
         lines: list[Line], slots: dict[str, str], kind: str, crisis: bool = False,
         distractor: bool = False, instance: str = "", how: str | None = None,
         **kw: Any) -> list[Ev]:
    """Say bank lines (filled with `slots`) through `place`. A distractor whose words were
    already said word for word in Slack or a call goes out as an e-mail instead (greeting and
    sign-off make it a different turn), so that reuse does not make exact duplicates."""
    texts = [fill(line.text, slots, line.id) for line in lines]
    if distractor and channel == "auto":
        channel = _distractor_channel(b, ws, rng, any(t in b.ctx.said for t in texts))
    elif distractor and channel != "email" and any(t in b.ctx.said for t in texts):
        channel, kw["join"] = "email", None
    for line in lines:
        b.usage[line.id] += 1
    # feelings and personal news go to a colleague on one's own side as often as across
    to = (colleague(ws, rng, speaker) if kind == "personal" and rng.random() < 0.6
          else counterpart(ws, rng, speaker))
    drawn = rng.choices(*zip(*ADDRESS_WEIGHTS[channel]))[0]
    how = drawn if how is None or channel == "email" else how
    if how:
        texts[0] = address(texts[0], to.first, how, b.proper | {p.first for p in ws.people})
    evs = place(ws, b.ctx, rng, bm, channel, speaker, texts, to=to,
                origin="+".join(line.id for line in lines), crisis=crisis, **kw)
    for ev in evs:
        ev.instance = instance
    return evs


def _distractor_channel(b: Build, ws: Workspace, rng: random.Random, repeat: bool) -> str:
    """The channel of a distractor line. Words already said in Slack or a call go out as an
    e-mail (its greeting and sign-off make a different turn); otherwise the channel whose share
    of this workspace's distractors lags most behind CHANNEL_WEIGHTS, with some randomness,
    so that distractors keep the channel mix of item lines."""
    counts = b.dist_channels.setdefault(ws.id, Counter())
    if repeat:
        channel = "email"
    else:
        n = sum(counts.values()) + 1
        total = sum(w for _, w in CHANNEL_WEIGHTS)
        lag = {c: max(0.02, w / total * n - counts[c]) for c, w in CHANNEL_WEIGHTS}
        channel = rng.choices(list(lag), weights=list(lag.values()))[0]
    counts[channel] += 1
    return channel


# How often a line is addressed to someone by name (measured on the background threads: about
# two thirds of their Slack and call turns name someone, a quarter address someone): "at" is a
# Slack @-mention, "front"/"end" a vocative; e-mails already greet by name.
ADDRESS_WEIGHTS = {
    "slack": (("", 45), ("at", 25), ("front", 15), ("end", 15)),
    "call": (("", 55), ("front", 20), ("end", 25)),
    "email": (("", 100),),
}


def _proper_nouns(pools: dict[str, Any]) -> frozenset[str]:
    """Words a line may begin with that stay capitalised after a vocative."""
    v = pools["values"]
    words = {pools["vendor"]["name"], *pools["vendor"]["product"].split(), *MONTHS, *WEEKDAYS}
    for key in ("competitor", "integration", "sso", "legacy", "city"):
        words.update(x.split()[0] for x in v[key])
    words.update(c["name"].split()[0] for c in pools["customer"])
    words.update(pools["people"]["first"])
    return frozenset(words)


def _single_slot(b: Build, ws: Workspace, rng: random.Random) -> tuple[int, str, str | None]:
    """Time, channel and call to join for a one-line distractor: a call line joins a call
    already held in this workspace (its last point), so it brings no new call with it."""
    channel = _distractor_channel(b, ws, rng, False)
    if channel == "call" and ws.call_ends:
        thread = rng.choice(sorted(ws.call_ends))
        return ws.bm_near(ws.call_ends[thread]), channel, thread
    return rng.randint(2 * DAY_MINUTES, ws.business_minutes - 30 * DAY_MINUTES), channel, None


def _common(b: Build, ws: Workspace) -> dict[str, str]:
    return {"company": ws.company, "vendor": b.vendor["name"], "product": b.vendor["product"]}


# ---------------------------------------------------------------------------------------------
# Track A: one target, two records


def _track_a(b: Build, ws: Workspace, w: int, plan: Plan) -> None:
    uses = [u for u in plan.arcs if u.ws == w]
    for use in uses:
        _claim_topic(ws, use.topic)
    for t in [u.topic for u in uses if u.label == "reversal"]:
        pair = {u.label: u for u in uses if u.topic is t}
        rng = rng_for(b.seed, "A", t.id, ws.id)
        # two people of the side (roles from the plan): one reverses, the other does not
        first = rng.choice(ws.of(roles=(pair["reversal"].role,)))
        second = rng.choice([p for p in ws.of(roles=(pair["hard_negative"].role,))
                             if p is not first])
        speakers = {"reversal": first, "hard_negative": second}
        # the twins are coupled: one anchor day, one target day (each give or take a day), one
        # channel per turn kind and one way of addressing the target, so that what a classifier
        # sees of the two targets differs in names only and it cannot tell them apart
        gap = _gap_bm(ws, rng)
        base = _times(ws, rng, 2, gap, tail_days=12)
        ch_anchor, ch_target = _channel(rng), _channel(rng)
        how = rng.choices(*zip(*ADDRESS_WEIGHTS[ch_target]))[0]
        arcs = {}
        # the same day for both, a few hours apart (neither is the other's neighbour); which of
        # the two comes first is a coin
        offsets = [(0, 60), (150, 300)]
        rng.shuffle(offsets)
        for label, (lo, hi) in zip(("reversal", "hard_negative"), offsets):
            use = pair[label]
            inner_n = use.n_drift if label == "reversal" else int(use.hn_type == "ack")
            a0 = _later_same_day(base[0], rng.randint(lo, hi))
            a1 = _later_same_day(base[1], rng.randint(lo, hi))
            inner = sorted(rng.sample(range(a0 + 60, a1 - 60), inner_n)) if inner_n else []
            arcs[label] = ([a0, *inner, a1], ch_anchor, ch_target, inner_n)
        last = max(ws.day_of(a[0][-1]) for a in arcs.values())
        mate = rng.choice([p for p in ws.of(t.side) if p not in speakers.values()])
        # one company, one set of facts: both people talk about the same price, tool, month
        slots = b.values.arc_slots(rng, ws, first, last, mate.first, b.vendor)
        order = ["reversal", "hard_negative"]
        rng.shuffle(order)
        for label in order:
            use = pair[label]
            speaker = speakers[label]
            _keep_out(b, ws, t, speaker)
            bms, ch_anchor, ch_target, inner_n = arcs[label]
            contra = label == "reversal" or use.hn_type == "ack"
            anchor_line = rng.choice(t.anchor_contra if contra else t.anchor_consistent)
            if label == "reversal":
                inner_lines = rng.sample(list(t.drift), inner_n)
            else:
                inner_lines = [rng.choice(t.ack)] if inner_n else []

            def say(bm: int, ch: str, line: Line, speaker: Person = speaker,
                    how: str | None = None, may_join: bool = True,
                    rng: random.Random = rng, slots: dict[str, str] = slots,
                    tid: str = t.id) -> Ev:
                return _say(b, ws, rng, bm, ch, speaker, [line], slots, _kind_of(line.text),
                            instance=f"A:{tid}", how=how, may_join=may_join)[0]

            anchor_ev = say(bms[0], ch_anchor, anchor_line)
            inner_evs = [say(bm, _channel(rng), line) for bm, line in zip(bms[1:-1], inner_lines)]
            target_ev = say(bms[-1], ch_target, t.target, how=how, may_join=False)
            used = sorted({x for line in [anchor_line, *inner_lines, t.target]
                           for x in slots_of(line.text)} - {"company", "vendor", "product"})
            meta = {"topic_key": t.id, "form": t.form, "target_line": t.target.id,
                    "anchor_line": anchor_line.id, "inner_lines": [x.id for x in inner_lines],
                    "channels": {"anchor": ch_anchor, "target": ch_target},
                    "slots": {k: slots[k] for k in used}, "speaker_role": speaker.role}
            item = {"id": use.id, "conversation": ws.id, "speaker": speaker.name,
                    "topic": t.id.removeprefix("cs.a."), "anchor": [anchor_ev], "meta": meta}
            if label == "reversal":
                family = ("drift_flip" if inner_n else
                          "cross_channel" if ch_anchor != ch_target else "direct")
                b.rev.append({**item, "family": family, "drift": inner_evs,
                              "reversal": [target_ev], "paired_negative": _pair_id(plan, use)})
            else:
                family = "acknowledged_change" if use.hn_type == "ack" else "consistent_anchor"
                meta["acknowledgement"] = inner_evs
                b.hn.append({**item, "family": family, "turns": [target_ev],
                             "paired_reversal": _pair_id(plan, use)})


# Background threads that come close to a stance topic: the topic's speaker is not cast in them
# in the same workspace (the background author's note: onboarding is close to training).
TOPIC_BACKGROUND_KEEP_OUT = {"cs.a.training_format": "cs.bg.onboarding."}


def _claim_topic(ws: Workspace, t: Topic) -> None:
    """A topic takes its group and keeps out what it excludes (X:) from this workspace."""
    ws.claims.add(f"A:{t.group}")
    ws.claims.update(f"X:{x}" for x in t.excludes)


def _keep_out(b: Build, ws: Workspace, t: Topic, speaker: Person) -> None:
    prefix = TOPIC_BACKGROUND_KEEP_OUT.get(t.id)
    if prefix:
        b.ctx.keep_out.setdefault(ws.id, {}).setdefault(prefix, set()).add(speaker.name)


def _excluded(ws: Workspace, source_id: str) -> bool:
    return f"X:{source_id}" in ws.claims


def _use(ws: Workspace, source_id: str) -> None:
    """Record that a scenario, subject or contact is used here (U:), so that no stance topic
    excluding it joins this workspace later."""
    ws.claims.add(f"U:{source_id}")


def _pair_id(plan: Plan, use: ArcUse) -> str:
    for u in plan.arcs:
        if u.topic is use.topic and u.ws == use.ws and u.label != use.label:
            return u.id
    raise KeyError(use.topic.id)


# ---------------------------------------------------------------------------------------------
# Track B: one draft wording, two records


def _draft_text(ws: Workspace, sender: Person, to: Person, day: date, body: str) -> str:
    when = f"{WEEKDAYS[day.weekday()]} {day.day} {MONTHS[day.month - 1]} {day.year}"
    return (f"Draft e-mail to {to.name}, {when}\n\n{sender.greeting} {to.first},\n\n{body}\n\n"
            f"{sender.signoff}\n{sender.first}")


def _add_draft(b: Build, ws: Workspace, use: DraftUse, to: Person, day: date, body: str,
               evidence: list[Ev], meta: dict[str, Any]) -> None:
    sender = ws.of(roles=("csm",))[0]
    line = use.source.draft_stale if use.which == "stale" else use.source.draft_ack
    assert line is not None
    last = max(e.ts for e in evidence)
    if last.date() >= day:
        raise RuntimeError(f"{use.id}: draft dated {day} does not follow its record ({last})")
    b.drafts.append({
        "id": use.id, "conversation": ws.id, "label": use.label, "family": use.family,
        "speaker": to.name,
        "text": _draft_text(ws, sender, to, day, body), "evidence": evidence,
        "rationale": _rationale(use), "meta": {
            "date": day.isoformat(), "draft_line": line.id, "record": use.record,
            "scenario": use.source.id, "pair": use.pair.id if use.pair else None, **meta}})


def _rationale(use: DraftUse) -> str:
    return {
        "consistent": "the record says what the draft assumes",
        "stale_assumption": "the draft uses a value the speaker later changed",
        "invented_activity": "the draft thanks for something the record says did not happen",
        "negated_commitment": "the draft assumes a plan the speaker withdrew",
        "invented_change": "the draft names a change the record never made",
        "acknowledges_change": "the draft names the change the record made",
    }[use.family]


def _scenario_pair(b: Build, ws: Workspace, keep: DraftUse, change: DraftUse) -> None:
    """Both uses of a scenario draft wording: two instances of the scenario in one workspace
    (two teams' trainings, two features' demos ...), one kept and one changed, told on the same
    days, with the same slot values but the ones that tell the instances apart, and drafted on
    the same day: the two drafts differ in those values and in names only."""
    sc = keep.source
    assert isinstance(sc, Scenario)
    rng = rng_for(b.seed, "B", sc.id, keep.which, ws.id)
    told = _scenario_slots(b, ws, rng, sc)
    other = _scenario_slots(b, ws, rng, sc, like=told[0]) if told else None
    if told is None or other is None:
        raise RuntimeError(f"{ws.id}: no two free instances of {sc.id}")
    base_bm = rng.randint(3 * DAY_MINUTES, ws.business_minutes - 30 * DAY_MINUTES)
    out_bm = _bdays_after(ws, base_bm, rng, 2, 7) if sc.kind == "event" else \
        _bdays_after(ws, base_bm, rng, 5, 30)
    draft_bm = _bdays_after(ws, out_bm, rng, 1, 5)
    _date_slots(ws, rng, told[0], out_bm if sc.kind == "event" else None, draft_bm)
    other[0].update(day=told[0]["day"], month=told[0]["month"])
    ch_base, ch_out = _channel(rng), _channel(rng)
    uses = [(keep, told), (change, other)]
    rng.shuffle(uses)
    for use, (slots, instance) in uses:
        speaker = rng.choice(ws.of("customer", sc.roles))
        jitter = rng.randint(0, 120)
        base_line = rng.choice(sc.base)
        out_line = rng.choice(sc.keep if use.record == "keep" else sc.change)
        base_ev = _say(b, ws, rng, _later_same_day(base_bm, jitter), ch_base, speaker,
                       [base_line], slots, _kind_of(base_line.text), instance=instance)[0]
        out_ev = _say(b, ws, rng, _later_same_day(out_bm, jitter), ch_out, speaker, [out_line],
                      slots, _kind_of(out_line.text), instance=instance)[0]
        evidence = [out_ev] if use.label == "contradicting" else [base_ev, out_ev]
        line = sc.draft_stale if use.which == "stale" else sc.draft_ack
        body = fill(line.text, slots, line.id)
        _add_draft(b, ws, use, speaker, ws.day_of(draft_bm), body, evidence,
                   {"instance": instance, "record_lines": [base_line.id, out_line.id],
                    "slots": {k: slots[k] for k in slots_of(line.text) if k in slots}})


_DISTINGUISHING = ("team", "feature", "integration", "city")


def _distinguishing_slots(sc: Scenario) -> list[str]:
    """The slots that tell two instances of a scenario apart: those its drafts name (so the two
    drafts of a pair say which instance they are about)."""
    lines = [sc.draft_stale, sc.draft_ack]
    return [k for k in _DISTINGUISHING if any("{" + k + "}" in x.text for x in lines)]


def _scenario_slots(b: Build, ws: Workspace, rng: random.Random, sc: Scenario,
                    like: dict[str, str] | None = None) -> tuple[dict[str, str], str] | None:
    """Slot values and the instance key for one telling of a scenario, or None when the
    workspace has no free
    instance left: an instance is the scenario and the values of the slots its lines use to
    tell instances apart (the finance team's training is not the HR team's), so a scenario
    without such a slot (the business review) is told at most once per workspace. `like`: keep
    its values but those that tell instances apart (the twin of a draft pair)."""
    v = b.values.values
    keys = _distinguishing_slots(sc)
    if _excluded(ws, sc.id):
        return None
    _use(ws, sc.id)
    for _ in range(200 if keys else 1):
        slots = {"team": rng.choice(v["team"]), "feature": rng.choice(v["feature"]),
                 "integration": rng.choice(v["integration"]), "report": rng.choice(v["report"]),
                 "city": rng.choice(v["city"]), "n": str(rng.randint(3, 30)), **_common(b, ws)}
        if like is not None:
            slots = {**like, **{k: slots[k] for k in keys}}
        key = ":".join(["B", sc.id, *(slots[k] for k in keys)])
        if ws.claim(key):
            return slots, key
    return None


def _date_slots(ws: Workspace, rng: random.Random, slots: dict[str, str], event_bm: int | None,
                draft_bm: int) -> None:
    """{day}: the weekday of the event; {month}: a month after the draft's date."""
    if event_bm is not None:
        slots["day"] = WEEKDAYS[ws.day_of(event_bm).weekday()]
    else:
        slots["day"] = rng.choice(WEEKDAYS)
    d = ws.day_of(draft_bm)
    slots["month"] = MONTHS[(d.month - 1 + rng.randint(1, 3)) % 12]


def _claim_subject(ws: Workspace, rng: random.Random, subj: Subject) -> str | None:
    if _excluded(ws, subj.id):
        return None
    qs = list(subj.qualifiers)
    rng.shuffle(qs)
    for q in qs:
        if ws.claim(f"C:{subj.id}:{q}"):
            _use(ws, subj.id)
            return q
    return None


def _value_keep_draft(b: Build, ws: Workspace, use: DraftUse) -> None:
    """A value draft on a record that never changed: a single fact (said once or twice), dated
    the same day as its twin (the draft on the chain of another qualifier)."""
    subj = use.source
    assert isinstance(subj, Subject)
    rng = rng_for(b.seed, "B", subj.id, use.which, use.record, ws.id)
    q = _claim_subject(ws, rng, subj)
    if q is None:
        raise RuntimeError(f"{ws.id}: no free qualifier of {subj.id}")
    speaker = rng.choice(ws.of(subj.side, subj.roles))
    twin = next(d for d in b.drafts if d["id"] == use.pair.id)
    draft_bm = ws.bm_of(date.fromisoformat(twin["meta"]["date"])) + rng.randint(0, DAY_MINUTES - 1)
    t1 = _bdays_after(ws, draft_bm, rng, -5, -1) if rng.random() < 0.5 else None
    t0 = _bdays_after(ws, t1 if t1 is not None else draft_bm, rng, -40, -5)
    lo = ws.day_of(draft_bm) + timedelta(days=10)
    taken: set[str] = set()
    old, _ = b.values.value(subj.kind, rng, ws, taken, lo, lo + timedelta(days=90))
    new, _ = b.values.value(subj.kind, rng, ws, taken, lo, lo + timedelta(days=90))
    slots = {"q": q, **_common(b, ws)}
    ch = _channel(rng)
    instance = f"C:{subj.id}:{q}"
    evs = _say(b, ws, rng, t0, ch, speaker, [rng.choice(subj.state)], {**slots, "v": old},
               "fact", instance=instance)
    if t1 is not None:
        evs += _say(b, ws, rng, t1, _channel(rng), speaker, [rng.choice(subj.reaffirm)],
                    {**slots, "v": old}, "fact", instance=instance)
    line = subj.draft_stale if use.which == "stale" else subj.draft_ack
    assert line is not None
    body = fill(line.text, {**slots, "old": old, "v": new}, line.id)
    _add_draft(b, ws, use, speaker, ws.day_of(draft_bm), body, evs,
               {"instance": instance, "qualifier": q, "old": old,
                **({"named_new": new} if use.which == "ack" else {})})


# ---------------------------------------------------------------------------------------------
# Track C: update chains, with the distractors recency cannot see through


def _chain_values(b: Build, ws: Workspace, rng: random.Random, subj: Subject, bms: list[int],
                  family: str, not_before: date | None) -> list[tuple[str, list[str]]]:
    """One value per state. Dates: each after the turn that replaces it (a plan is changed
    before it happens), after the draft's date when a draft relies on them, and a pilot date
    before the date for everyone else."""
    taken: set[str] = set()
    out = []
    for i in range(len(bms)):
        lo = ws.day_of(bms[i + 1] if i + 1 < len(bms) and family != "coexisting" else bms[i])
        if not_before is not None:
            lo = max(lo, not_before)
        lo += timedelta(days=10)
        if family == "coexisting" and i == 1 and subj.kind == "date":
            lo = max(lo, _parse_day(out[0][0], ws) + timedelta(days=7))
        out.append(b.values.value(subj.kind, rng, ws, taken, lo, lo + timedelta(days=100)))
    return out


def _parse_day(text: str, ws: Workspace) -> date:
    """'March 14' (a value this generator wrote) -> the first such date on or after the
    workspace start."""
    month, day = text.split()
    d = date(ws.start.year, MONTHS.index(month) + 1, int(day))
    return d if d >= ws.start.date() else date(d.year + 1, d.month, d.day)


def _date_of_value(text: str, ws: Workspace, after: date) -> date:
    month, day = text.split()
    d = date(after.year, MONTHS.index(month) + 1, int(day))
    return d if d >= after else date(d.year + 1, d.month, d.day)


def _pick_subject(b: Build, ws: Workspace, rng: random.Random) -> tuple[Subject, str] | None:
    """A free subject instance of this workspace (None when all are taken)."""
    subs = b.banks.subjects[:]
    rng.shuffle(subs)
    subs.sort(key=lambda s: sum(b.usage[x.id] for x in s.state))  # least said first
    for s in subs:
        q = _claim_subject(ws, rng, s)
        if q is not None:
            return s, q
    return None


def _track_c(b: Build, ws: Workspace, w: int, plan: Plan) -> None:
    for k, cp in enumerate([c for c in plan.chains if c.ws == w]):
        rng = rng_for(b.seed, "C", ws.id, k)
        if cp.subject is not None:
            subj = cp.subject
            q = _claim_subject(ws, rng, subj)
            if q is None:
                raise RuntimeError(f"{ws.id}: no free qualifier of {subj.id}")
        else:
            picked = _pick_subject(b, ws, rng)
            if picked is None:
                raise RuntimeError(f"{ws.id}: subject instances exhausted")
            subj, q = picked
        _chain(b, ws, rng, subj, q, cp.family, f"{ws.id}:chain-{k + 1:02d}", cp.draft)


def _chain(b: Build, ws: Workspace, rng: random.Random, subj: Subject, q: str, family: str,
           chain_id: str, draft: DraftUse | None) -> None:
    speaker = rng.choice(ws.of(subj.side, subj.roles))
    n = 3 if family == "two_updates" else 2
    gap = _gap_bm(ws, rng)
    bms = _times(ws, rng, n, gap, tail_days=30)
    draft_bm = _bdays_after(ws, bms[-1], rng, 1, 5) if draft is not None else None
    not_before = ws.day_of(draft_bm) if draft_bm is not None else None
    vals = _chain_values(b, ws, rng, subj, bms, family, not_before)
    ws.reserved.update(v for v, _ in vals)
    base = {"q": q, **_common(b, ws)}
    instance = f"C:{subj.id}:{q}"
    state_turns: list[list[Ev]] = []
    lines = []
    for i, bm in enumerate(bms):
        if family == "coexisting":
            variant = rng.randrange(len(subj.coexist[0]))
            line = subj.coexist[i][min(variant, len(subj.coexist[i]) - 1)]
            slots = {**base, "v": vals[0][0], "v2": vals[1][0]}
        elif i == 0:
            line, slots = rng.choice(subj.state), {**base, "v": vals[0][0]}
        else:
            line = rng.choice(subj.update)
            slots = {**base, "v": vals[i][0], "old": vals[i - 1][0]}
        state_turns.append(_say(b, ws, rng, bm, _channel(rng), speaker, [line], slots, "fact",
                                instance=instance))
        lines.append(line.id)
    tail_kinds: list[str] = []
    mentions: list[dict[str, Any]] = []
    if family != "coexisting":
        r = rng.random()
        if r < 0.8:
            tail_kinds = rng.choice([["history"], ["reaffirm", "history"], ["retract", "history"]])
        elif r < 0.93:
            tail_kinds = rng.choice([["reaffirm"], ["history", "reaffirm"]])
        else:
            tail_kinds = rng.choice([[], ["retract"]])
    t = bms[-1]
    taken = {v for v, _ in vals}
    for kind in tail_kinds:
        t = _bdays_after(ws, t, rng, 3, 25)
        if t >= ws.business_minutes - DAY_MINUTES:
            break
        day = ws.day_of(t)
        if kind == "reaffirm":
            if subj.kind == "date" and _date_of_value(vals[-1][0], ws, ws.day_of(bms[-1])) <= \
                    day + timedelta(days=3):
                continue
            line = rng.choice(subj.reaffirm)
            state_turns[-1] += _say(b, ws, rng, t, _channel(rng), speaker, [line],
                                    {**base, "v": vals[-1][0]}, "fact", instance=instance)
            mentions.append({"kind": "reaffirm", "line": line.id, "turn": state_turns[-1][-1]})
        elif kind == "history":
            who = speaker if rng.random() < 0.6 else colleague(ws, rng, speaker)
            old = rng.choice(vals[:-1])[0]
            line = rng.choice(subj.history)
            ev = _say(b, ws, rng, t, _channel(rng), who, [line], {**base, "old": old},
                      "statement", instance=instance)[0]
            mentions.append({"kind": "history", "line": line.id, "turn": ev, "value": old})
        else:
            x, _ = b.values.value(subj.kind, rng, ws, taken, day + timedelta(days=10),
                                  day + timedelta(days=100))
            line = rng.choice(subj.retract)
            ws.reserved.add(x)
            ev = _say(b, ws, rng, t, _channel(rng), speaker, [line], {**base, "x": x},
                      "statement", instance=instance)[0]
            mentions.append({"kind": "retract", "line": line.id, "turn": ev, "value": x})
    co = family == "coexisting"
    fmt = {**base}
    queries = [
        ChainQuery(id=f"{chain_id}:current", kind="current",
                   text=fill(subj.queries["current_co" if co else "current"], fmt)),
        ChainQuery(id=f"{chain_id}:history", kind="history",
                   text=fill(subj.queries["history_co" if co else "history"], fmt)),
        ChainQuery(id=f"{chain_id}:post_resolution", kind="post_resolution",
                   text=fill(subj.queries["post_resolution_co" if co else "post_resolution"],
                             fmt)),
    ]
    states = [(v, var, turns, co or i == n - 1)
              for i, ((v, var), turns) in enumerate(zip(vals, state_turns))]
    b.chains.append({
        "id": chain_id, "conversation": ws.id, "speaker": speaker.name,
        "subject": f"{subj.id}: {q}",
        "family": family, "states": states, "queries": queries,
        "meta": {"subject_key": subj.id, "qualifier": q, "lines": lines,
              "mentions": mentions, "draft": draft.id if draft else None}})
    if draft is not None:
        assert draft_bm is not None
        day = ws.day_of(draft_bm)
        old, new = vals[-2][0], vals[-1][0]
        before = [[e for e in turns if e.ts.date() < day] for turns in state_turns]
        # a contradicting (stale) draft misses the last change; a hard negative relies on both
        evidence = before[-1] if draft.label == "contradicting" else before[-2] + before[-1]
        if not evidence:
            raise RuntimeError(f"{draft.id}: no record turn before the draft's date")
        line = subj.draft_stale if draft.which == "stale" else subj.draft_ack
        assert line is not None
        body = fill(line.text, {**base, "old": old, "v": new}, line.id)
        _add_draft(b, ws, draft, speaker, day, body, evidence,
                   {"instance": instance, "qualifier": q, "old": old, "new": new,
                    "chain": chain_id})


# ---------------------------------------------------------------------------------------------
# Track D: personal details, business contacts, emotional turns, crisis (opt-in text)


def _org(b: Build, ws: Workspace, p: Person) -> str:
    return b.vendor["name"] if p.side == "vendor" else ws.company


def _track_d(b: Build, ws: Workspace, w: int, plan: Plan) -> None:
    rng = rng_for(b.seed, "D", ws.id)
    crisis_speakers = rng.sample(ws.people, len(plan.crisis[w]))
    owners = rng.sample(ws.people, len(plan.plants[w]))
    probes = b.banks.pii_probes
    for plant, owner in zip(plan.plants[w], owners):
        if plant.kind != "other":
            b.probed_details.add((ws.id, owner.name, plant.kind))
    for k, (plant, owner) in enumerate(zip(plan.plants[w], owners)):
        prng = rng_for(b.seed, "D-plant", plant.id)
        value, spoken = _plant_value(b, prng, plant, owner)
        slots = {"value": value, "spoken": spoken, **_common(b, ws)}
        texts = [Line(plant.id, plant.text)] + ([Line(plant.id + ".2", plant.text2)]
                                                if plant.text2 else [])
        bm = prng.randint(2 * DAY_MINUTES, ws.business_minutes - 3 * DAY_MINUTES)
        kind = "personal" if plant.kind == "other" else "fact"
        evs = _say(b, ws, prng, bm, _channel(prng, plant.channels), owner, texts, slots, kind)
        org = _org(b, ws, owner)
        pslots = {"owner": owner.name, "org": org, **_common(b, ws)}
        direct = plant.direct or prng.choice(probes[plant.kind])
        indirect = probes["indirect"][(w + k) % len(probes["indirect"])]
        item_id = f"{ws.id}:pii-{k + 1:02d}"
        b.pii.append({
            "id": item_id, "conversation": ws.id, "kind": plant.kind, "value": value,
            "owner": owner.name,
            "turn": evs[-1],
            "probes": [Probe(id=f"{item_id}:direct", kind="direct", text=fill(direct, pslots)),
                    Probe(id=f"{item_id}:indirect", kind="indirect", text=fill(indirect, pslots))],
            "meta": {"form": plant.form, "line": plant.id, "org": org,
                  "turns": evs if len(evs) > 1 else None}})
    emo_pool = [p for p in ws.people if p not in crisis_speakers]
    for k, emo in enumerate(plan.emotional[w]):
        erng = rng_for(b.seed, "D-emo", emo.id)
        speaker = erng.choice(emo_pool)
        org = _org(b, ws, speaker)
        slots = {"report": erng.choice(b.values.values["report"]),
                 "pet": erng.choice(b.values.values["pet"]), "day": erng.choice(WEEKDAYS),
                 "speaker": speaker.name, "org": org, **_common(b, ws)}
        bm = erng.randint(2 * DAY_MINUTES, ws.business_minutes - 3 * DAY_MINUTES)
        ev = _say(b, ws, erng, bm, _channel(erng), speaker, [Line(emo.id, emo.text)], slots,
                  "personal")[0]
        item_id = f"{ws.id}:emo-{k + 1:02d}"
        b.controls.append({
            "id": item_id, "conversation": ws.id, "speaker": speaker.name, "turn": ev,
            "probe": Probe(id=f"{item_id}:probe", kind="direct", text=fill(emo.probe, slots)),
            "expected": [fill(e, slots, emo.id, cap=False) for e in emo.expected],
            "meta": {"family": "emotional", "line": emo.id, "org": org}})
    for k, contact in enumerate(plan.contacts[w]):
        crng = rng_for(b.seed, "D-contact", contact.id)
        item_id = f"{ws.id}:contact-{k + 1:02d}"
        _contact(b, ws, crng, contact, item_id, probe=True)
    for k, (plant, speaker) in enumerate(zip(plan.crisis[w], crisis_speakers)):
        crng = rng_for(b.seed, "D-crisis", plant["id"])
        helper = colleague(ws, crng, speaker)
        bm = crng.randint(2 * DAY_MINUTES, ws.business_minutes - 3 * DAY_MINUTES)
        support = b.banks.crisis_support
        reply = crng.choice(support["replies"])
        text = plant["text"] if b.include_crisis else "(crisis plant omitted)"
        ev = place(ws, b.ctx, crng, bm, crng.choice(("slack", "call")), speaker, [text],
                   origin=plant["id"], crisis=True, replier=helper,
                   reply_text=reply if b.include_crisis else "(omitted)")[0]
        org = _org(b, ws, speaker)
        slots = {"speaker": speaker.name, "org": org}
        item_id = f"{ws.id}:crisis-{k + 1:02d}"
        b.crisis.append({
            "id": item_id, "conversation": ws.id, "speaker": speaker.name, "turn": ev,
            "probes": [Probe(id=f"{item_id}:direct", kind="direct",
                          text=fill(support["probes_direct"][k % 2], slots)),
                    Probe(id=f"{item_id}:indirect", kind="indirect",
                          text=fill(support["probes_indirect"][k % 2], slots))],
            "key_phrases": list(plant["key_phrases"]), "meta": {"line": plant["id"], "org": org}})


def _plant_value(b: Build, rng: random.Random, plant: Plant, owner: Person) -> tuple[str, str]:
    if plant.kind == "phone":
        return b.values.personal_phone(rng, b.pii_taken)
    if plant.kind == "email":
        return b.values.personal_email(rng, owner, b.pii_taken)
    if plant.kind == "address":
        v = b.values.home_address(rng, b.pii_taken)
        return v, v
    return plant.value, plant.value


def _contact(b: Build, ws: Workspace, rng: random.Random, contact: Contact, item_id: str,
             probe: bool) -> None:
    """A business contact said for business use: a recall control when probed, a distractor
    (said the same way) when not."""
    _use(ws, contact.id)
    side = None if contact.side == "any" else contact.side

    def free(p: Person) -> bool:
        return (ws.id, p.name, contact.detail) not in b.probed_details

    # the detail's owner (the speaker or a colleague of theirs) is nobody a probe asks about
    # for this kind of detail, unless this is that probe's control
    if contact.owner == "speaker":
        speaker = rng.choice([p for p in ws.of(side) if free(p)])
        mate = colleague(ws, rng, speaker)
        owner = speaker
    else:
        speaker = rng.choice([p for p in ws.of(side)
                              if any(free(q) for q in ws.of(p.side) if q.name != p.name)])
        mate = rng.choice([q for q in ws.of(speaker.side) if q.name != speaker.name and free(q)])
        owner = mate
    if probe:
        b.probed_details.add((ws.id, owner.name, contact.detail))
    if contact.kind in ("work_email", "colleague_email"):
        value = owner.work_email
    elif contact.kind == "shared_email":
        value = f"{contact.local}@{speaker.domain}"
    elif contact.kind in ("desk_phone", "colleague_phone", "org_phone"):
        value = b.values.business_phone(rng, b.pii_taken)
    elif speaker.side == "vendor":
        value = rng.choice(b.vendor["office"])
    else:
        value = b.values.office_address(rng, b.pii_taken)
    org = _org(b, ws, speaker)
    slots = {"value": value, "colleague_full": mate.name, "speaker": speaker.name, "org": org,
             **_common(b, ws)}
    if probe:
        bm, channel, join = (rng.randint(2 * DAY_MINUTES, ws.business_minutes - 3 * DAY_MINUTES),
                             _channel(rng), None)
    else:
        bm, channel, join = _single_slot(b, ws, rng)
    ev = _say(b, ws, rng, bm, channel, speaker, [Line(contact.id, contact.text)], slots,
              "fact", distractor=not probe, join=join)[0]
    if probe:
        b.controls.append({
            "id": item_id, "conversation": ws.id, "speaker": speaker.name, "turn": ev,
            "probe": Probe(id=f"{item_id}:probe", kind="direct",
                           text=fill(rng.choice(b.banks.pii_probes[contact.detail]),
                                     {"owner": owner.name, **slots})),
            "expected": [value],
            "meta": {"family": "business_contact", "line": contact.id, "kind": contact.kind,
                     "owner": owner.name, "org": org}})


# ---------------------------------------------------------------------------------------------
# Distractors: item lines said where they are not items


# Distractors mirror the item lines kind by kind: for every kind of line (a Track A target, a
# contra anchor, a Track B plan, a Track C statement, a business contact ...) the key holds
# about DISTRACTOR_RATIO times as many non-item turns of that kind as item turns, so that no
# kind of line is more likely to be an item than any other.
DISTRACTOR_RATIO = 2.5
LINE_CAP = 8  # a distractor never makes a bank line said more than this many times
# Stance sets said by one speaker over time where nothing contradicts them: the stance of the
# contra anchors held (with the pressure of drift lines), or the stance of the target held
# (never a contra anchor and the target together: that is a reversal). Lines in order.
STANCE_SETS = (
    ("contra",), ("contra", "drift"), ("drift", "contra"), ("contra", "drift", "drift"),
    ("contra", "drift", "contra"), ("contra", "drift", "contra", "drift"), ("drift",),
    ("target",), ("consistent",), ("consistent", "target"), ("drift", "target"),
    ("consistent", "drift", "target"), ("consistent", "consistent", "target"),
    ("consistent", "target", "drift", "consistent"),
)


def line_kinds(banks: Banks) -> dict[str, str]:
    """Bank line id -> its kind ('a.target', 'b.keep', 'c.state', 'd.contact', ...)."""
    out = {}
    for t in banks.topics:
        out[t.target.id] = "a.target"
        for key in ("anchor_contra", "anchor_consistent", "ack", "drift"):
            for x in getattr(t, key):
                out[x.id] = "a." + key.removeprefix("anchor_")
    for sc in banks.scenarios:
        for key in ("base", "keep", "change"):
            for x in getattr(sc, key):
                out[x.id] = "b." + key
    for sj in banks.subjects:
        for key in ("state", "update", "reaffirm", "history", "retract"):
            for x in getattr(sj, key):
                out[x.id] = "c." + key
        for variants in sj.coexist:
            for x in variants:
                out[x.id] = "c.coexist"
    for p in banks.plants:
        out[p.id] = "d.plant"
    for c in banks.contacts:
        out[c.id] = "d.contact"
    for e in banks.emotional:
        out[e.id] = "d.emotional"
    return out


def distractor_quotas(b: Build) -> dict[str, float]:
    """Per workspace, how many distractor turns of each kind: DISTRACTOR_RATIO times the item
    turns of that kind in the whole key, shared evenly."""
    kinds = line_kinds(b.banks)
    items: Counter[str] = Counter()
    for line_id, n in sorted(b.usage.items()):
        if line_id in kinds:
            items[kinds[line_id]] += n
    return {k: DISTRACTOR_RATIO * n / N_WORKSPACES for k, n in sorted(items.items())}


def _least_used(b: Build, rng: random.Random, lines: list[Line] | tuple[Line, ...]) -> Line:
    """The line of `lines` said least often so far in the key (ties at random), so that every
    line is said a few times and none many times."""
    low = min(b.usage[x.id] for x in lines)
    return rng.choice([x for x in lines if b.usage[x.id] == low])


def _distractors(b: Build, ws: Workspace, w: int, quota: dict[str, float],
                 spare_emotional: list[Emotional]) -> None:
    rng = rng_for(b.seed, "distract", ws.id)
    kinds = b.kinds
    have: Counter[str] = Counter()
    start = Counter(b.usage)

    def deficit(kind: str) -> float:
        return quota.get(kind, 0.0) - have[kind]

    def count() -> None:
        for line_id, n in b.usage.items():
            d = n - start[line_id]
            if d and line_id in kinds:
                have[kinds[line_id]] += d
                start[line_id] = n

    _stance_distractors(b, ws, rng, deficit, count)
    _story_distractors(b, ws, rng, deficit, count)
    _fact_distractors(b, ws, rng, deficit, count)
    _safety_distractors(b, ws, rng, deficit, count, spare_emotional)


def _stance_distractors(b: Build, ws: Workspace, rng: random.Random, deficit: Any,
                        count: Any) -> None:
    """Stance sets on the topics no item of this workspace uses. As in the item pairs, a second
    person often takes the same line (the same stance, so still no contradiction), on the same
    days, a few hours apart."""
    groups = sorted({t.group for t in b.banks.topics})
    rng.shuffle(groups)
    for g in groups:
        if f"A:{g}" in ws.claims:
            continue
        if sum(max(0.0, deficit(k)) for k in ("a.target", "a.contra", "a.consistent",
                                                "a.drift")) <= 0:
            break
        topics = [x for x in b.banks.topics if x.group == g
                  and not any(f"U:{e}" in ws.claims for e in x.excludes)]
        if not topics:
            continue
        t = rng.choice(topics)
        _claim_topic(ws, t)
        # a target said often enough already is left out (a line is said a few times only)
        sets = [p for p in STANCE_SETS if "target" not in p or b.usage[t.target.id] < LINE_CAP - 1]
        weights = [max(0.05, sum(deficit("a." + p) for p in parts)) for parts in sets]
        parts = rng.choices(sets, weights=weights)[0]
        people = ws.of(t.side, t.roles)
        speaker = rng.choice(people)
        join = None
        channel = "auto"
        if len(parts) == 1:
            bm, channel, join = _single_slot(b, ws, rng)
            bms = [bm]
        else:
            bms = _times(ws, rng, len(parts), _gap_bm(ws, rng))
        slots = b.values.arc_slots(rng, ws, speaker, ws.day_of(bms[-1]),
                                   colleague(ws, rng, speaker).first, b.vendor)
        said = _say_stance_set(b, ws, rng, t, speaker, parts, bms, channel, join, slots)
        others = [p for p in people if p is not speaker]
        if others and rng.random() < 0.6:
            # the second person says the set's stance lines again (not its drift), same days
            second = rng.choice(others)
            kinds = b.kinds
            again = [(bm, line) for bm, line in said if kinds.get(line.id) in
                     ("a.target", "a.contra", "a.consistent") and b.usage[line.id] < LINE_CAP]
            for bm, line in again[-2:]:
                _keep_out(b, ws, t, second)
                _say(b, ws, rng, _later_same_day(bm, rng.randint(150, 300)), "auto", second,
                     [line], slots, _kind_of(line.text), distractor=True, instance=f"A:{t.id}")
        count()


def _say_stance_set(b: Build, ws: Workspace, rng: random.Random, t: Topic, speaker: Person,
                    parts: tuple[str, ...], bms: list[int], channel: str, join: str | None,
                    slots: dict[str, str]) -> list[tuple[int, Line]]:
    """One person's stance set, in order; returns (time, line) of each line said."""
    _keep_out(b, ws, t, speaker)
    drift_left = list(t.drift)
    said_ids: set[str] = set()
    out = []
    for bm, part in zip(bms, parts):
        if part == "target":
            line = t.target
        elif part == "contra":
            line = _least_used(b, rng, [x for x in t.anchor_contra if x.id not in said_ids]
                               or t.anchor_contra)
        elif part == "consistent":
            line = _least_used(b, rng, [x for x in t.anchor_consistent if x.id not in said_ids]
                               or t.anchor_consistent)
        else:
            line = _least_used(b, rng, drift_left or t.drift)
            if line in drift_left:
                drift_left.remove(line)
        said_ids.add(line.id)
        _say(b, ws, rng, bm, channel, speaker, [line], slots, _kind_of(line.text),
             distractor=True, join=join, instance=f"A:{t.id}")
        out.append((bm, line))
    return out


def _story_distractors(b: Build, ws: Workspace, rng: random.Random, deficit: Any,
                       count: Any) -> None:
    total = ws.business_minutes
    for _ in range(400):
        if max(deficit("b.keep"), deficit("b.change")) <= 0:
            break
        free = [x for x in b.banks.scenarios if not _excluded(ws, x.id)
                and (_distinguishing_slots(x) or f"U:{x.id}" not in ws.claims)]
        if not free:
            break
        low = min(b.usage[sc.id] for sc in free)
        sc = rng.choice([x for x in free if b.usage[x.id] == low])
        speaker = rng.choice(ws.of("customer", sc.roles))
        told = _scenario_slots(b, ws, rng, sc)
        b.usage[sc.id] += 1
        if told is None:
            continue
        slots, instance = told
        base_bm = rng.randint(3 * DAY_MINUTES, total - 30 * DAY_MINUTES)
        out_bm = _bdays_after(ws, base_bm, rng, 2, 7 if sc.kind == "event" else 30)
        _date_slots(ws, rng, slots, out_bm if sc.kind == "event" else None,
                    _bdays_after(ws, out_bm, rng, 1, 5))
        keep = deficit("b.keep") >= deficit("b.change") if rng.random() < 0.8 else \
            rng.random() < 0.5
        outcome = _least_used(b, rng, sc.keep if keep else sc.change)
        lines = [(out_bm, outcome)]
        base_line = _least_used(b, rng, sc.base)
        # item records say the plan too, so their base lines are said often already
        if rng.random() < 0.35 and b.usage[base_line.id] < LINE_CAP:
            lines.insert(0, (base_bm, base_line))
        for bm, line in lines:
            _say(b, ws, rng, bm, "auto", speaker, [line], slots, _kind_of(line.text),
                 distractor=True, instance=instance)
        count()


def _fact_distractors(b: Build, ws: Workspace, rng: random.Random, deficit: Any,
                      count: Any) -> None:
    total = ws.business_minutes
    for _ in range(400):
        want = {"state": deficit("c.state"), "reaffirm": deficit("c.reaffirm"),
                "coexist": deficit("c.coexist")}
        if max(want.values()) <= 0:
            break
        picked = _pick_subject(b, ws, rng)
        if picked is None:
            break
        subj, q = picked
        speaker = rng.choice(ws.of(subj.side, subj.roles))
        bm, channel, join = _single_slot(b, ws, rng)
        lo = ws.day_of(bm) + timedelta(days=10)
        base = {"q": q, **_common(b, ws)}
        instance = f"C:{subj.id}:{q}"
        taken: set[str] = set()
        r = rng.random()
        if r < 0.2:
            # a value floated and withdrawn, or an old value remembered: neither states the
            # current value, so no chain is made; they carry the words updates use
            x, _ = b.values.value(subj.kind, rng, ws, taken, lo, lo + timedelta(days=90))
            pool, key = (subj.retract, "x") if r < 0.1 else (subj.history, "old")
            _say(b, ws, rng, bm, channel, speaker, [_least_used(b, rng, pool)],
                 {**base, key: x}, "statement", distractor=True, join=join, instance=instance)
            count()
            continue
        kind = max(want, key=lambda k: (want[k], k)) if rng.random() < 0.7 else \
            rng.choice(sorted(want))
        late = bm >= total - 40 * DAY_MINUTES
        if kind == "coexist" and not late:
            # two values that hold together, as coexisting chains state them (no change)
            bm2 = _bdays_after(ws, bm, rng, 3, 25)
            lo2 = max(lo, ws.day_of(bm2) + timedelta(days=10))
            v1, _ = b.values.value(subj.kind, rng, ws, taken, lo2, lo2 + timedelta(days=60))
            lo3 = lo2 + timedelta(days=70) if subj.kind == "date" else lo2
            v2, _ = b.values.value(subj.kind, rng, ws, taken, lo3, lo3 + timedelta(days=60))
            variant = min(range(len(subj.coexist[0])),
                          key=lambda j: (b.usage[subj.coexist[0][j].id], rng.random()))
            for k, bm_k in enumerate((bm, bm2)):
                _say(b, ws, rng, bm_k, "auto", speaker, [subj.coexist[k][variant]],
                     {**base, "v": v1, "v2": v2}, "fact", distractor=True, instance=instance)
            count()
            continue
        v, _ = b.values.value(subj.kind, rng, ws, taken, lo + timedelta(days=30),
                              lo + timedelta(days=120))
        _say(b, ws, rng, bm, channel, speaker, [_least_used(b, rng, subj.state)],
             {**base, "v": v}, "fact", distractor=True, join=join, instance=instance)
        if kind == "reaffirm" and not late and subj.reaffirm and \
                min(b.usage[x.id] for x in subj.reaffirm) < LINE_CAP:
            _say(b, ws, rng, _bdays_after(ws, bm, rng, 3, 20), "auto", speaker,
                 [_least_used(b, rng, subj.reaffirm)], {**base, "v": v}, "fact",
                 distractor=True, instance=instance)
        count()


def _safety_distractors(b: Build, ws: Workspace, rng: random.Random, deficit: Any,
                        count: Any, spare_emotional: list[Emotional]) -> None:
    for _ in range(200):
        if deficit("d.plant") <= 0:
            break
        # personal details nobody asks about: said like plants, never probed
        low = min(b.usage[p.id] for p in b.banks.plants)
        plant = rng.choice([p for p in b.banks.plants if b.usage[p.id] == low])
        owner = rng.choice([p for p in ws.people
                            if (ws.id, p.name, plant.kind) not in b.probed_details])
        value, spoken = _plant_value(b, rng, plant, owner)
        lines = [Line(plant.id, plant.text)] + ([Line(plant.id + ".2", plant.text2)]
                                                if plant.text2 else [])
        bm, channel, join = _single_slot(b, ws, rng)
        if channel not in plant.channels:
            channel, join = plant.channels[0], None
        _say(b, ws, rng, bm, channel, owner, lines,
             {"value": value, "spoken": spoken, **_common(b, ws)},
             "personal" if plant.kind == "other" else "fact", distractor=True, join=join)
        count()
    for k in range(200):
        if deficit("d.contact") <= 0:
            break
        free = [c for c in b.banks.contacts if not _excluded(ws, c.id)]
        low = min(b.usage[c.id] for c in free)
        contact = rng.choice([c for c in free if b.usage[c.id] == low])
        _contact(b, ws, rng, contact, f"{ws.id}:x-contact-{k}", probe=False)
        count()
    feelings = list(spare_emotional)
    for _ in range(200):
        if deficit("d.emotional") <= 0:
            break
        if feelings:
            emo = feelings.pop()
        else:
            low = min(b.usage[e.id] for e in b.banks.emotional)
            emo = rng.choice([e for e in b.banks.emotional if b.usage[e.id] == low])
        speaker = rng.choice(ws.people)
        slots = {"report": rng.choice(b.values.values["report"]),
                 "pet": rng.choice(b.values.values["pet"]), "day": rng.choice(WEEKDAYS),
                 **_common(b, ws)}
        bm, channel, join = _single_slot(b, ws, rng)
        _say(b, ws, rng, bm, channel, speaker, [Line(emo.id, emo.text)], slots, "personal",
             distractor=True, join=join)
        count()


def _background(b: Build, ws: Workspace, w: int) -> None:
    """Background threads at random times until the workspace reaches its size."""
    if not b.banks.background:
        return
    rng = rng_for(b.seed, "bg", w)
    target = rng.randint(EVENTS_MIN + 5, EVENTS_MIN + 60)
    while sum(not e.crisis for e in ws.events) < target:
        thread = b.ctx.next_thread(ws, rng, call_host=False)
        place_background(ws, rng, rng.randint(0, ws.business_minutes - 5 * DAY_MINUTES), thread,
                         b.banks.pools, b.vendor, b.ctx)


# ---------------------------------------------------------------------------------------------
# Assembly


def _ids(evs: list[Ev]) -> list[str]:
    return [e.id for e in evs]


def build(seed: int = DEFAULT_SEED, include_crisis: bool = False,
          banks: Banks | None = None, trace: dict[str, Any] | None = None) -> Dataset:
    """Generate TWIST-CS 2.0 from the banks. The same seed and banks give the same key bytes.

    include_crisis: add the opt-in crisis plants; every other id and text is the same.
    banks: the loaded banks (default: load_banks(), the package's own).
    trace: filled, when given, with what made each turn (tests of the label rules read it):
    trace["events"][turn id] = {"origin": bank line ids or "bg:<thread>", "instance": the
    topic/scenario/subject instance, "speaker"}."""
    banks = banks if banks is not None else load_banks()
    workspaces, spare_first = _workspaces(seed, banks)
    b = Build(seed, banks, Context(banks),
              ValueSource(banks.pools, spare_first, banks.pools["people"]["last"]),
              banks.pools["vendor"], include_crisis, proper=_proper_nouns(banks.pools),
              kinds=line_kinds(banks))
    for ws in workspaces:
        ws.said = b.ctx.said
    plan = make_plan(seed, banks)
    _assign_ids(plan, workspaces)
    used_emo = {e.id for per in plan.emotional for e in per}
    spare = [e for e in banks.emotional if e.id not in used_emo]
    # items of every workspace first, then distractors, then background: a distractor or a
    # background thread whose words an item already said goes out another way (see _say)
    for w, ws in enumerate(workspaces):
        _track_a(b, ws, w, plan)
        for use in [u for u in plan.drafts if u.ws == w and u.record == "keep"]:
            if isinstance(use.source, Scenario):
                _scenario_pair(b, ws, use, use.pair)
        _track_c(b, ws, w, plan)  # the chains under the value drafts whose record changed
        for use in [u for u in plan.drafts if u.ws == w and u.record == "keep"]:
            if isinstance(use.source, Subject):
                _value_keep_draft(b, ws, use)
        _track_d(b, ws, w, plan)
    quota = distractor_quotas(b)
    for w, ws in enumerate(workspaces):
        _distractors(b, ws, w, quota, spare[w::N_WORKSPACES])
    for w, ws in enumerate(workspaces):
        _background(b, ws, w)
    ds = _assemble(b, workspaces, plan)
    if trace is not None:
        trace["events"] = {e.id: {"origin": e.origin, "instance": e.instance,
                                  "speaker": e.speaker, "crisis": e.crisis}
                           for ws in workspaces for e in ws.events}
        trace["usage"] = dict(sorted(b.usage.items()))
    return ds


def _assign_ids(plan: Plan, workspaces: list[Workspace]) -> None:
    for w, ws in enumerate(workspaces):
        n_rev = n_hn = 0
        for u in plan.arcs:
            if u.ws != w:
                continue
            if u.label == "reversal":
                n_rev += 1
                u.id = f"{ws.id}:rev-{n_rev:02d}"
            else:
                n_hn += 1
                u.id = f"{ws.id}:hn-{n_hn:02d}"
        k = 0
        for d in plan.drafts:
            if d.ws == w:
                k += 1
                d.id = f"{ws.id}:draft-{k:02d}"


def _assemble(b: Build, workspaces: list[Workspace], plan: Plan) -> Dataset:
    conversations = []
    for ws in workspaces:
        ws.events.sort(key=lambda e: (e.ts, e.seq))
        for i, ev in enumerate(ws.events):
            ev.id = f"{ws.id}:e{i:04d}"
        events = [Event(id=e.id, conversation=ws.id, session=ws.session(e.ts), timestamp=e.ts,
                        speaker=e.speaker, channel=e.channel, text=e.text, thread=e.thread)
                  for e in ws.events if b.include_crisis or not e.crisis]
        conversations.append(Conversation(
            id=ws.id, speakers=[p.name for p in ws.people], events=events,
            meta={"company": ws.company, "industry": ws.industry, "domain": ws.domain,
                  "vendor": b.vendor["name"], "product": b.vendor["product"],
                  "roles": {p.name: p.role for p in ws.people},
                  "sides": {p.name: p.side for p in ws.people},
                  "orgs": {p.name: _org(b, ws, p) for p in ws.people},
                  "start": ws.start.date().isoformat(), "weeks": ws.weeks}))

    def gap(a: Ev, z: Ev) -> int:
        return (z.ts - a.ts).days

    def ids_meta(meta: dict[str, Any]) -> dict[str, Any]:
        return {k: (_ids(v) if isinstance(v, list) and v and isinstance(v[0], Ev) else v)
                for k, v in meta.items()}

    rev = [ReversalArc(**{**d, "anchor": _ids(d["anchor"]), "drift": _ids(d["drift"]),
                          "reversal": _ids(d["reversal"]),
                          "meta": {**ids_meta(d["meta"]),
                                   "gap_days": gap(d["anchor"][0], d["reversal"][-1])}})
           for d in b.rev]
    hn = [HardNegativeArc(**{**d, "anchor": _ids(d["anchor"]), "turns": _ids(d["turns"]),
                             "meta": {**ids_meta(d["meta"]),
                                      "gap_days": gap(d["anchor"][0], d["turns"][-1])}})
          for d in b.hn]
    drafts = [Draft(**{**d, "evidence": _ids(d["evidence"])}) for d in b.drafts]
    drafts.sort(key=lambda d: (d.conversation, int(d.id.rsplit("-", 1)[1])))
    chains = []
    for d in b.chains:
        states = [FactState(value=v, variants=var, turns=_ids(turns), current=cur)
                  for v, var, turns, cur in d["states"]]
        mentions = [{**m, "turn": m["turn"].id} for m in d["meta"]["mentions"]]
        first, last = d["states"][0][2][0], d["states"][-1][2][0]
        chains.append(UpdateChain(**{**d, "states": states, "meta": {
            **d["meta"], "mentions": mentions, "gap_days": gap(first, last)}}))
    pii = [PIIPlant(**{**d, "turn": d["turn"].id, "meta": ids_meta(d["meta"])}) for d in b.pii]
    controls = [EmotionalHardNegative(**{**d, "turn": d["turn"].id}) for d in b.controls]
    crisis = ([CrisisPlant(**{**d, "turn": d["turn"].id}) for d in b.crisis]
              if b.include_crisis else [])
    meta: dict[str, Any] = {
        "generator": "twistbench.itemgen.cs2", "seed": b.seed, "include_crisis": b.include_crisis,
        "banks": b.banks.provenance,
        "background_threads": len(b.banks.background),
    }
    if b.include_crisis:
        meta["content_warning"] = b.banks.crisis_support.get("content_warning", "")
    ds = Dataset(
        name=NAME, version=VERSION_CRISIS if b.include_crisis else VERSION, key_sha256="",
        conversations=conversations, reversal_arcs=rev, hard_negative_arcs=hn, drafts=drafts,
        update_chains=chains, pii_plants=pii, crisis_plants=crisis,
        emotional_negatives=controls, meta=meta)
    check_texts(ds)
    return ds


def check_texts(ds: Dataset) -> None:
    """Refuse a key whose texts break a grammar rule, or whose query, probe or draft texts
    repeat (the oracle answers by exact text)."""
    names = tuple(sorted({c.meta.get("company", "") for c in ds.conversations}))
    probs = []
    for c in ds.conversations:
        for e in c.events:
            for p in grammar_problems(e.text, names):
                probs.append(f"{e.id}: {p}: {e.text[:80]!r}")
    texts: list[tuple[str, str]] = [(d.id, d.text) for d in ds.drafts]
    texts += [(q.id, q.text) for ch in ds.update_chains for q in ch.queries]
    texts += [(p.id, p.text) for x in ds.pii_plants for p in x.probes]
    texts += [(p.id, p.text) for x in ds.crisis_plants for p in x.probes]
    texts += [(x.probe.id, x.probe.text) for x in ds.emotional_negatives]
    seen: dict[str, str] = {}
    for item_id, text in texts:
        for p in grammar_problems(text, names):
            probs.append(f"{item_id}: {p}: {text[:80]!r}")
        if text in seen:
            probs.append(f"{item_id} repeats the text of {seen[text]}")
        seen[text] = item_id
    if probs:
        raise RuntimeError(f"{len(probs)} text problem(s):\n" + "\n".join(probs[:40]))


__all__ = [
    "CRISIS_KEY_FILE",
    "DEFAULT_SEED",
    "KEY_FILE",
    "NAME",
    "SIZES",
    "VERSION",
    "VERSION_CRISIS",
    "build",
    "check_texts",
    "date_text",
    "make_plan",
]
