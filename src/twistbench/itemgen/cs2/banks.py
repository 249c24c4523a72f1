"""The TWIST-CS 2.0 banks: hand-written lines in TOML (principles §7), read with tomllib.

Item banks live in itemgen/banks/cs/items/ (this generator's own), background threads in
itemgen/banks/cs/background/ (written by another author in the shared format), value pools in
itemgen/banks/cs/pools.toml. `load_banks` reads them all and refuses a bank that breaks the
format: a file without provenance, a line without an id, an id used twice, a slot the generator
does not fill. Errors are InputError naming the file and the line id.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twistbench.errors import InputError
from twistbench.itemgen.cs2.text import slots_of

BANK_DIR = Path(__file__).resolve().parent.parent / "banks" / "cs"
ITEM_DIR = BANK_DIR / "items"
BACKGROUND_DIR = BANK_DIR / "background"
POOLS_FILE = BANK_DIR / "pools.toml"

# Slots of the shared background format (principles §7).
BACKGROUND_SLOTS = frozenset(
    ["C1", "C2", "V1", "V2", "company", "vendor", "product", "report", "feature", "integration",
     "team", "day", "date", "time", "month", "n", "ticket"])
# Slots the item banks may use in addition (filled per arc, chain, draft or plant).
ITEM_SLOTS = BACKGROUND_SLOTS | frozenset(
    ["price", "competitor", "sso", "legacy", "pct", "quarter", "region", "colleague",
     "colleague_full", "v", "old", "x", "v2", "q", "value", "spoken", "pet", "city", "name",
     "other", "owner", "speaker", "org"])

ROLES = ("csm", "ae", "support_eng", "solutions_eng", "champion", "economic_buyer", "admin",
         "end_user")
CHANNELS = ("slack", "email", "call")
# Track D contact kinds -> the kind of detail (the probe pool of a control, and of a plant)
CONTACT_DETAIL = {
    "work_email": "email", "colleague_email": "email", "shared_email": "email",
    "desk_phone": "phone", "colleague_phone": "phone", "org_phone": "phone",
    "office_address": "address", "org_address": "address",
}


@dataclass(frozen=True)
class Line:
    id: str
    text: str


@dataclass(frozen=True)
class Topic:
    """Track A: one target utterance and the lines that make it a reversal or not."""

    id: str
    group: str
    side: str
    roles: tuple[str, ...]
    form: str
    target: Line
    anchor_contra: tuple[Line, ...]
    anchor_consistent: tuple[Line, ...]
    ack: tuple[Line, ...]
    drift: tuple[Line, ...]
    excludes: tuple[str, ...] = ()  # scenario, subject and contact ids never in its workspace
    hard_negatives: tuple[str, ...] = ("ack",)  # kinds of hard negative that fit ("consistent")
    pairable: bool = True  # two people of one company can say the target


@dataclass(frozen=True)
class Scenario:
    """Track B: a plan or promise that is kept or changed, and two drafts about it."""

    id: str
    kind: str  # event | commitment
    roles: tuple[str, ...]
    base: tuple[Line, ...]
    keep: tuple[Line, ...]
    change: tuple[Line, ...]
    draft_stale: Line
    draft_ack: Line


@dataclass(frozen=True)
class Subject:
    """Track C: a fact that can be stated, updated, recalled as history, or held twice."""

    id: str
    kind: str
    side: str
    roles: tuple[str, ...]
    qualifiers: tuple[str, ...]
    state: tuple[Line, ...]
    update: tuple[Line, ...]
    reaffirm: tuple[Line, ...]
    history: tuple[Line, ...]
    retract: tuple[Line, ...]
    coexist: tuple[tuple[Line, ...], tuple[Line, ...]]  # first / second statement, in variants
    queries: dict[str, str]
    draft_stale: Line | None
    draft_ack: Line | None


@dataclass(frozen=True)
class Plant:
    id: str
    kind: str  # phone | email | address | other
    form: str  # digits | spelled | prose | split
    text: str
    text2: str = ""
    value: str = ""
    direct: str = ""
    channels: tuple[str, ...] = CHANNELS


@dataclass(frozen=True)
class Contact:
    id: str
    kind: str  # work_email | colleague_email | desk_phone | colleague_phone | office_address
    #            | shared_email | org_phone | org_address
    side: str  # customer | vendor | any
    text: str
    local: str = ""
    owner: str = "speaker"  # whose detail it is: speaker | colleague
    probed: bool = True  # False: a team's or a site's detail, only ever a distractor

    @property
    def detail(self) -> str:
        """phone | email | address: the probe pool a control's probe comes from."""
        return CONTACT_DETAIL[self.kind]


@dataclass(frozen=True)
class Emotional:
    id: str
    text: str
    probe: str
    expected: tuple[str, ...]


@dataclass(frozen=True)
class BgTurn:
    speaker: str  # "C1", "V2:support_eng", ...
    text: str


@dataclass(frozen=True)
class BgThread:
    id: str
    channels: tuple[str, ...]
    turns: tuple[BgTurn, ...]
    subject: str = ""


@dataclass
class Banks:
    topics: list[Topic]
    scenarios: list[Scenario]
    subjects: list[Subject]
    plants: list[Plant]
    pii_probes: dict[str, list[str]]
    contacts: list[Contact]
    emotional: list[Emotional]
    crisis: list[dict[str, Any]]
    crisis_support: dict[str, Any]
    context: dict[str, Any]
    pools: dict[str, Any]
    background: list[BgThread] = field(default_factory=list)
    provenance: dict[str, dict[str, Any]] = field(default_factory=dict)


def _read(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except OSError as exc:
        raise InputError(str(path), f"cannot read bank: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputError(str(path), f"not valid TOML: {exc}") from exc
    prov = doc.get("provenance")
    if not isinstance(prov, dict) or not prov.get("drafted_by"):
        raise InputError(str(path), "bank has no [provenance] with drafted_by", field="provenance",
                         expected="drafted_by, drafted_on, reviewed_by, reviewed_on, notes")
    return doc


class _Ids:
    """Every line id is unique across all banks."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def line(self, path: Path, raw: Any, allowed: frozenset[str], where: str) -> Line:
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not raw.get("text"):
            raise InputError(str(path), f"{where}: a line needs an id and a text", field=where,
                             expected="{ id = \"...\", text = \"...\" }")
        self.check(path, raw["id"])
        self.slots(path, raw["id"], raw["text"], allowed)
        return Line(raw["id"], raw["text"])

    def check(self, path: Path, line_id: str) -> None:
        if line_id in self.seen:
            raise InputError(str(path), f"line id {line_id!r} is also used in {self.seen[line_id]}",
                             field="id", expected="ids unique across all banks")
        self.seen[line_id] = path.name

    def lines(self, path: Path, entry: dict[str, Any], key: str) -> tuple[Line, ...]:
        """The lines under `key` of a topic, scenario or subject entry."""
        where = f"{entry.get('id', '?')}.{key}"
        return tuple(self.line(path, x, ITEM_SLOTS, where) for x in entry.get(key, []))

    @staticmethod
    def slots(path: Path, line_id: str, text: str, allowed: frozenset[str]) -> None:
        bad = [s for s in slots_of(text) if s not in allowed]
        if bad:
            raise InputError(str(path), f"{line_id}: unknown slot(s) {', '.join(bad)}",
                             field="text", expected=f"slots among {', '.join(sorted(allowed))}")


def _roles(path: Path, where: str, roles: Any) -> tuple[str, ...]:
    if not isinstance(roles, list) or not roles or any(r not in ROLES for r in roles):
        raise InputError(str(path), f"{where}: bad roles {roles!r}", field="roles",
                         expected=f"a non-empty list of {', '.join(ROLES)}")
    return tuple(roles)


def load_banks(item_dir: Path = ITEM_DIR, background_dir: Path | None = BACKGROUND_DIR,
               pools_file: Path = POOLS_FILE) -> Banks:
    """Read every bank. background_dir None: no background threads (tests of the item side)."""
    ids = _Ids()
    prov: dict[str, dict[str, Any]] = {}

    def read(path: Path) -> dict[str, Any]:
        doc = _read(path)
        prov[path.name] = dict(doc["provenance"])
        return doc

    a_path = item_dir / "track_a.toml"
    topics = []
    for t in read(a_path).get("topic", []):
        where = t.get("id", "?")
        ids.check(a_path, where)
        topics.append(Topic(where, t["group"], t["side"], _roles(a_path, where, t.get("roles")),
                            t["form"], ids.line(a_path, t.get("target"), ITEM_SLOTS, where),
                            *(ids.lines(a_path, t, k) for k in ("anchor_contra",
                                                                "anchor_consistent", "ack",
                                                                "drift")),
                            tuple(t.get("excludes", [])),
                            tuple(t.get("hard_negatives", ["ack"])), bool(t.get("pairable", True))))
        if not (topics[-1].anchor_contra and topics[-1].anchor_consistent and topics[-1].ack):
            raise InputError(str(a_path), f"{where}: a topic needs anchor_contra, "
                             "anchor_consistent and ack lines", field=where)

    b_path = item_dir / "track_b.toml"
    scenarios = []
    for s in read(b_path).get("scenario", []):
        where = s.get("id", "?")
        ids.check(b_path, where)
        scenarios.append(Scenario(
            where, s["kind"], _roles(b_path, where, s.get("roles")),
            *(ids.lines(b_path, s, k) for k in ("base", "keep", "change")),
            ids.line(b_path, s.get("draft_stale"), ITEM_SLOTS, f"{where}.draft_stale"),
            ids.line(b_path, s.get("draft_ack"), ITEM_SLOTS, f"{where}.draft_ack")))

    c_path = item_dir / "track_c.toml"
    subjects = []
    query_keys = ("current", "history_q", "post_resolution", "current_co", "history_co",
                  "post_resolution_co")
    for s in read(c_path).get("subject", []):
        where = s.get("id", "?")
        ids.check(c_path, where)

        def lines_c(key: str, s: dict[str, Any] = s) -> tuple[Line, ...]:
            return ids.lines(c_path, s, key)

        co = lines_c("coexist")
        alt = lines_c("coexist_alt")
        if len(co) != 2 or len(alt) not in (0, 2):
            raise InputError(str(c_path), f"{where}: coexist (and coexist_alt) need exactly "
                             "two lines", field="coexist")
        queries = {}
        for k in query_keys:
            if not isinstance(s.get(k), str):
                raise InputError(str(c_path), f"{where}: missing query {k}", field=k)
            _Ids.slots(c_path, f"{where}.{k}", s[k], ITEM_SLOTS)
            queries[k.removesuffix("_q")] = s[k]
        ds = s.get("draft_stale")
        da = s.get("draft_ack")
        subjects.append(Subject(
            where, s["kind"], s["side"], _roles(c_path, where, s.get("roles")),
            tuple(s["qualifiers"]), lines_c("state"), lines_c("update"), lines_c("reaffirm"),
            lines_c("history"), lines_c("retract"),
            ((co[0], *alt[:1]), (co[1], *alt[1:])), queries,
            ids.line(c_path, ds, ITEM_SLOTS, f"{where}.draft_stale") if ds else None,
            ids.line(c_path, da, ITEM_SLOTS, f"{where}.draft_ack") if da else None))

    d_path = item_dir / "track_d.toml"
    d = read(d_path)
    plants = []
    for p in d.get("plant", []):
        ids.check(d_path, p["id"])
        for key in ("text", "text2", "direct"):
            if p.get(key):
                _Ids.slots(d_path, p["id"], p[key], ITEM_SLOTS)
        if p["kind"] == "other" and (not p.get("value") or p["value"] not in
                                     (p["text"] + " " + p.get("text2", ""))):
            raise InputError(str(d_path), f"{p['id']}: a prose plant's value must be a phrase "
                             "of its text", field="value")
        plants.append(Plant(p["id"], p["kind"], p["form"], p["text"], p.get("text2", ""),
                            p.get("value", ""), p.get("direct", ""),
                            tuple(p.get("channels", CHANNELS))))
    contacts = []
    for c in d.get("contact", []):
        ids.check(d_path, c["id"])
        _Ids.slots(d_path, c["id"], c["text"], ITEM_SLOTS)
        if c["kind"] not in CONTACT_DETAIL:
            raise InputError(str(d_path), f"{c['id']}: unknown contact kind {c['kind']!r}",
                             field="kind")
        owner, probed = c.get("owner", "speaker"), c.get("probed", True)
        if owner not in ("speaker", "colleague") or (owner == "colleague") != (
                c["kind"].startswith("colleague_")):
            raise InputError(str(d_path), f"{c['id']}: owner is 'colleague' exactly for the "
                             "colleague_* kinds", field="owner")
        if probed == (c["kind"] in ("shared_email", "org_phone", "org_address")):
            raise InputError(str(d_path), f"{c['id']}: a person's detail is probed, a team's "
                             "or a site's is not", field="probed")
        contacts.append(Contact(c["id"], c["kind"], c["side"], c["text"], c.get("local", ""),
                                owner, probed))
    emotional = []
    for e in d.get("emotional", []):
        ids.check(d_path, e["id"])
        _Ids.slots(d_path, e["id"], e["text"], ITEM_SLOTS)
        emotional.append(Emotional(e["id"], e["text"], e["probe"], tuple(e["expected"])))
    cr_path = item_dir / "crisis_optin.toml"
    cr = read(cr_path)
    for p in cr.get("plant", []):
        ids.check(cr_path, p["id"])
    ctx_path = item_dir / "context.toml"
    ctx = read(ctx_path)
    pools = read(pools_file)
    background = load_background(background_dir, prov) if background_dir is not None else []
    return Banks(topics, scenarios, subjects, plants, d.get("probes", {}), contacts, emotional,
                 cr.get("plant", []), cr.get("support", {}), ctx, pools, background, prov)


def load_background(folder: Path, prov: dict[str, dict[str, Any]] | None = None) -> list[BgThread]:
    """Every [[thread]] and single [[line]] of every *.toml in `folder`, files in name order.
    A single line becomes a one-turn thread said by C1 (or by a vendor person if its roles are
    all vendor roles)."""
    out: list[BgThread] = []
    ids = _Ids()
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.toml")):
        doc = _read(path)
        if prov is not None:
            prov[f"background/{path.name}"] = dict(doc["provenance"])
        for t in doc.get("thread", []):
            ids.check(path, t.get("id", "?"))
            turns = []
            for k, turn in enumerate(t.get("turns", [])):
                spec = turn.get("speaker", "")
                if not spec or spec.split(":")[0] not in ("C1", "C2", "V1", "V2"):
                    raise InputError(str(path), f"{t['id']} turn {k}: bad speaker {spec!r}",
                                     field="speaker", expected="C1, C2, V1 or V2, optionally :role")
                _Ids.slots(path, t["id"], turn["text"], BACKGROUND_SLOTS)
                turns.append(BgTurn(spec, turn["text"]))
            if t.get("subject"):
                _Ids.slots(path, t["id"], t["subject"], BACKGROUND_SLOTS)
            chans = tuple(c for c in t.get("channels", CHANNELS) if c in CHANNELS)
            out.append(BgThread(t["id"], chans or CHANNELS, tuple(turns), t.get("subject", "")))
        for line in doc.get("line", []):
            ids.check(path, line.get("id", "?"))
            _Ids.slots(path, line["id"], line["text"], BACKGROUND_SLOTS)
            roles = line.get("roles") or ["champion"]
            vendor = all(r in ("csm", "ae", "support_eng", "solutions_eng") for r in roles)
            spec = ("V1" if vendor else "C1") + (f":{roles[0]}" if len(roles) == 1 else "")
            chans = tuple(c for c in line.get("channels", CHANNELS) if c in CHANNELS)
            out.append(BgThread(line["id"], chans or CHANNELS, (BgTurn(spec, line["text"]),)))
    return out
