"""Key versions and errata: how an answer key is corrected without rewriting history.

Whitepaper §6.1: the key is versioned (v1.0, v1.1, ...) with a public errata process, and scores
cite the key version. Two ways a correction reaches a score:

- **Errata log, applied at load time.** An accepted dispute is one numbered entry in
  `<version>.errata.json` beside the key file (`twist errata add`), e.g.
  `data/twist-cs-2.0.errata.json`; it serves every file of that version (the crisis variant
  too). Loading `NAME+errata` applies every entry, `NAME+errata-N` the first N; the dataset's
  version becomes `<version>+errata-N` and its sha256 covers the key file and those N entries,
  so a report names exactly which corrections its scores include.
- **Next key version.** `twist errata apply` and `twist annotate adjudicate` write version
  X.(Y+1) (`bump_version`) with the pending errata folded in, a changelog entry and (after
  adjudication) the agreement figures in the key's metadata. The new version's errata log starts
  empty. Key files are never edited in place.

Every change is one of: `drop` (remove the item; a paired arc loses its partner reference),
`relabel` (a Track B draft's label, optionally with new evidence: the only label the key stores
as a field; any other wrong label means the item is dropped and re-authored), `fix` (set fields
of an item, e.g. a LoCoMo answer and its evidence; datasets/errata.py uses it for the LoCoMo
audit). One function applies them (`apply_changes`), to a key payload or to a loaded Dataset.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import ValidationError

from twistbench.datasets.keyfile import atomic_write_bytes, read_key, sha256_bytes, write_key
from twistbench.datasets.paths import data_dir
from twistbench.errors import InputError, pydantic_to_input_error
from twistbench.model import Dataset, DraftLabel

ERRATA_FORMAT = "twist-errata/1"
Action = Literal["drop", "relabel", "fix"]
ACTIONS: tuple[str, ...] = get_args(Action)
DRAFT_LABELS: tuple[str, ...] = get_args(DraftLabel)
_VERSION = re.compile(r"^(?P<head>.*?)(?P<major>\d+)\.(?P<minor>\d+)(?P<tail>(\+.*)?)$")
_ERRATA_SUFFIX = re.compile(r"^(?P<base>.+)\+errata(?:-(?P<n>\d+))?$")
# fields that identify an item or its place; a `fix` may not change them
_FIXED_FIELDS = frozenset({"id", "conversation"})


# ---------------------------------------------------------------------------------------------
# Versions


def base_version(version: str) -> str:
    """The key version an errata log belongs to: 'twist-cs-2.0+crisis' -> 'twist-cs-2.0'."""
    return version.split("+", 1)[0]


def bump_version(version: str) -> str:
    """The next minor version: 'twist-cs-2.0' -> 'twist-cs-2.1' ('+crisis' is kept)."""
    m = _VERSION.match(version)
    if not m:
        raise InputError(version, "cannot tell the next version of this key",
                         expected="a version ending in <major>.<minor>, e.g. twist-cs-2.0")
    return f"{m['head']}{m['major']}.{int(m['minor']) + 1}{m['tail']}"


def split_errata_name(name: str) -> tuple[str, int | None] | None:
    """'twist-cs-2.0+errata-3' -> ('twist-cs-2.0', 3); '...+errata' -> (..., None) (all
    entries); a name without the suffix -> None."""
    m = _ERRATA_SUFFIX.match(name)
    if not m:
        return None
    return m["base"], (int(m["n"]) if m["n"] is not None else None)


def resolve_key_file(name_or_path: str | Path) -> Path:
    """A key file by path, or a committed key by its version name ('twist-cs-2.0' ->
    data/twist-cs-2.0.json)."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    committed = data_dir() / f"{name_or_path}.json"
    if committed.is_file():
        return committed
    raise InputError(str(name_or_path), "no such key file",
                     expected="a key file (.json) or the version name of a committed key")


# ---------------------------------------------------------------------------------------------
# Changes to items


@dataclass
class Change:
    """One correction of one item. `why` says where it comes from (an erratum, an
    adjudication decision, the agreement threshold) and ends up in the changelog."""

    item: str
    action: Action
    why: str
    label: str | None = None  # relabel: the draft's new label
    evidence: list[str] | None = None  # relabel: new evidence turn ids (None keeps them)
    fields: dict[str, Any] | None = None  # fix: field -> new value


@dataclass
class ChangeReport:
    dropped: list[dict[str, str]] = field(default_factory=list)
    relabelled: list[dict[str, Any]] = field(default_factory=list)
    fixed: list[dict[str, Any]] = field(default_factory=list)
    unpaired: list[str] = field(default_factory=list)  # arcs whose partner was dropped
    not_found: list[str] = field(default_factory=list)  # items not in this key (other variant)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def changed(self) -> int:
        return len(self.dropped) + len(self.relabelled) + len(self.fixed)


def item_lists(payload: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The item lists of a key payload: a Dataset payload holds them at its top level, a
    TWIST-LoCoMo payload under "gold" (its QA come from the user's LoCoMo file)."""
    holder = payload["gold"] if isinstance(payload.get("gold"), dict) else payload
    return {f: holder[f] for f in Dataset.ITEM_FIELDS if isinstance(holder.get(f), list)}


def _item_type(fld: str) -> type:
    return get_args(Dataset.model_fields[fld].annotation)[0]


def find_item(lists: Mapping[str, list[dict[str, Any]]], item_id: str
              ) -> tuple[str, int] | None:
    for fld, items in lists.items():
        for i, it in enumerate(items):
            if it is not None and it.get("id") == item_id:  # None: dropped by apply_changes
                return fld, i
    return None


def check_change(change: Change, fld: str, item: dict[str, Any], where: str,
                 turns: Mapping[str, set[str]] | None = None) -> None:
    """InputError unless the change can apply to this item (named by `where`)."""
    if change.action not in ACTIONS:
        raise InputError(where, f"unknown action {change.action!r}", field="action",
                         expected=" | ".join(ACTIONS))
    if change.action == "relabel":
        if fld != "drafts":
            raise InputError(where, f"item {change.item} is in {fld}: only a Track B draft's "
                             "label is a field of the key", field="action",
                             expected="drop (and re-author the item) for other tracks")
        if change.label not in DRAFT_LABELS:
            raise InputError(where, f"unknown draft label {change.label!r}", field="label",
                             expected=" | ".join(DRAFT_LABELS))
        evidence = change.evidence if change.evidence is not None else item.get("evidence", [])
        if change.label == "contradicting" and not evidence:
            raise InputError(where, f"{change.item}: a contradicting draft needs the turns it "
                             "contradicts", field="evidence", expected="one or more turn ids")
        if change.evidence and turns is not None:
            known = turns.get(item["conversation"], set())
            bad = [t for t in change.evidence if t not in known]
            if bad:
                raise InputError(where, f"turn ids {bad} are not in {item['conversation']}",
                                 field="evidence", expected="turn ids of the item's conversation")
    if change.action == "fix":
        if not change.fields:
            raise InputError(where, "a fix sets no field", field="fields",
                             expected="field -> new value")
        bad = sorted(set(change.fields) & _FIXED_FIELDS)
        if bad:
            raise InputError(where, f"a fix cannot change {bad}", field="fields",
                             expected="fields other than id and conversation")


def apply_changes(lists: Mapping[str, list[dict[str, Any]]], changes: Sequence[Change],
                  where: str, turns: Mapping[str, set[str]] | None = None,
                  missing_ok: bool = False) -> tuple[dict[str, list[dict[str, Any]]],
                                                     ChangeReport]:
    """New item lists (the input is not modified) with the changes applied, in order.

    Every changed item is re-validated against its record type. An item no list holds is an
    InputError, or (missing_ok, e.g. a crisis item's erratum on the key without crisis plants)
    listed under not_found. `turns` (conversation -> turn ids) checks new evidence ids.
    """
    out = {f: [dict(it) for it in items] for f, items in lists.items()}
    rep = ChangeReport()
    dropped: set[str] = set()
    for ch in changes:
        loc = find_item(out, ch.item)
        if loc is None or ch.item in dropped:
            if missing_ok and ch.item not in dropped:
                rep.not_found.append(ch.item)
                continue
            raise InputError(where, f"no item {ch.item!r} in this key", field="item",
                             expected="an item id of the key" if ch.item not in dropped
                             else "one change per item (it was dropped before)")
        fld, i = loc
        item = out[fld][i]
        check_change(ch, fld, item, where, turns)
        if ch.action == "drop":
            dropped.add(ch.item)
            out[fld][i] = None  # type: ignore[call-overload]
            rep.dropped.append({"item": ch.item, "why": ch.why})
            continue
        if ch.action == "relabel":
            new = dict(item, label=ch.label)
            if ch.evidence is not None:
                new["evidence"] = list(ch.evidence)
            rep.relabelled.append({"item": ch.item, "from": item.get("label"), "to": ch.label,
                                   "why": ch.why})
        else:
            new = dict(item, **(ch.fields or {}))
            rep.fixed.append({"item": ch.item, "fields": sorted(ch.fields or {}),
                              "why": ch.why})
        try:
            _item_type(fld).model_validate(new)
        except ValidationError as exc:
            raise pydantic_to_input_error(where, f"{fld} item {ch.item}", exc) from exc
        out[fld][i] = new
    for fld in out:
        out[fld] = [it for it in out[fld] if it is not None]
    # a matched pair loses a partner that is gone: the reference would name no item
    for fld, ref in (("reversal_arcs", "paired_negative"), ("hard_negative_arcs",
                                                            "paired_reversal")):
        for it in out.get(fld, []):
            if it.get(ref) in dropped:
                rep.unpaired.append(it["id"])
                it[ref] = None
    return out, rep


def apply_to_dataset(dataset: Dataset, changes: Sequence[Change], where: str,
                     missing_ok: bool = False) -> tuple[Dataset, ChangeReport]:
    """The dataset with the changes applied (version and sha256 unchanged: callers name the
    new version)."""
    lists = {f: [it.model_dump(mode="json") for it in getattr(dataset, f)]
             for f in Dataset.ITEM_FIELDS}
    turns = {c.id: set(c.event_index()) for c in dataset.conversations}
    new, rep = apply_changes(lists, changes, where, turns, missing_ok=missing_ok)
    touched = {f for f in new if new[f] != lists[f]}
    update = {f: [_item_type(f).model_validate(it) for it in new[f]] for f in touched}
    return dataset.model_copy(update=update), rep


# ---------------------------------------------------------------------------------------------
# The errata log


@dataclass
class Erratum:
    """An accepted dispute of one item, numbered within its key version."""

    n: int
    item: str
    action: Action
    reason: str
    date: str
    by: str = ""
    label: str | None = None
    evidence: list[str] | None = None
    fields: dict[str, Any] | None = None

    def change(self) -> Change:
        return Change(item=self.item, action=self.action, why=f"erratum {self.n}: {self.reason}",
                      label=self.label, evidence=self.evidence, fields=self.fields)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class ErrataLog:
    key: str  # the key's name, e.g. "twist-cs"
    version: str  # the version the entries correct, e.g. "twist-cs-2.0"
    entries: list[Erratum] = field(default_factory=list)

    def upto(self, n: int | None) -> list[Erratum]:
        return list(self.entries) if n is None else self.entries[:n]

    def digest(self, n: int | None = None) -> str:
        """sha256 of the first n entries (all when None), independent of file formatting."""
        body = json.dumps([e.as_dict() for e in self.upto(n)], sort_keys=True,
                          ensure_ascii=False)
        return sha256_bytes(body.encode("utf-8"))

    def encode(self) -> bytes:
        doc = {"format": ERRATA_FORMAT, "key": self.key, "version": self.version,
               "entries": [e.as_dict() for e in self.entries]}
        return (json.dumps(doc, sort_keys=True, ensure_ascii=False, indent=1) + "\n").encode()


def errata_path(key_path: str | Path, version: str) -> Path:
    """Where the errata of a key version live: beside the key file, named by the version."""
    return Path(key_path).with_name(f"{base_version(version)}.errata.json")


def read_errata_log(path: str | Path, key: str, version: str) -> ErrataLog:
    """The errata log at `path` (an empty log when there is no file). InputError on a file
    that is not an errata log of this key version, or a malformed entry."""
    path = Path(path)
    version = base_version(version)
    if not path.exists():
        return ErrataLog(key=key, version=version)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(str(path), f"cannot read errata: {exc}",
                         expected=f"a {ERRATA_FORMAT} JSON file") from exc
    if not isinstance(doc, dict) or doc.get("format") != ERRATA_FORMAT:
        raise InputError(str(path), "not an errata log", field="format",
                         expected=repr(ERRATA_FORMAT))
    if doc.get("version") != version or doc.get("key") != key:
        raise InputError(str(path), f"errata of {doc.get('key')} {doc.get('version')}",
                         field="version", expected=f"errata of {key} {version}")
    entries = doc.get("entries")
    if not isinstance(entries, list):
        raise InputError(str(path), "not a list", field="entries", expected="a list of errata")
    out: list[Erratum] = []
    for i, raw in enumerate(entries):
        where = f"entries[{i}]"
        if not isinstance(raw, dict):
            raise InputError(str(path), "not an object", where=where, expected="an erratum")
        try:
            e = Erratum(**raw)
        except TypeError as exc:
            raise InputError(str(path), str(exc), where=where,
                             expected="n, item, action, reason, date (by, label, evidence, "
                             "fields)") from exc
        if e.n != i + 1:
            raise InputError(str(path), f"entry number {e.n}", where=where, field="n",
                             expected=f"{i + 1} (entries are numbered 1, 2, ... in order)")
        if e.action not in ACTIONS:
            raise InputError(str(path), f"unknown action {e.action!r}", where=where,
                             field="action", expected=" | ".join(ACTIONS))
        if not str(e.reason).strip():
            raise InputError(str(path), "empty", where=where, field="reason",
                             expected="why the item is wrong")
        out.append(e)
    return ErrataLog(key=key, version=version, entries=out)


def add_erratum(key_path: str | Path, item: str, reason: str, action: Action = "drop",
                label: str | None = None, evidence: list[str] | None = None, by: str = "",
                on: date | None = None) -> tuple[Erratum, Path]:
    """Record an accepted dispute of `item` in the key's errata log. The item must exist in the
    key and the change must apply to it; an item already corrected by an earlier erratum is
    refused (one erratum per item and version)."""
    doc, _ = read_key(key_path)
    if not reason.strip():
        raise InputError("--reason", "empty", expected="why the item is wrong")
    path = errata_path(key_path, doc["version"])
    log = read_errata_log(path, doc["name"], doc["version"])
    lists = item_lists(doc["payload"])
    loc = find_item(lists, item)
    if loc is None:
        raise InputError(str(key_path), f"no item {item!r} in this key", field="--item",
                         expected="an item id of the key")
    for e in log.entries:
        if e.item == item:
            raise InputError(str(path), f"item {item} already has erratum {e.n} ({e.action})",
                             field="--item", expected="one erratum per item and key version")
    entry = Erratum(n=len(log.entries) + 1, item=item, action=action, reason=reason.strip(),
                    date=(on or date.today()).isoformat(), by=by, label=label,
                    evidence=evidence)
    fld, i = loc
    check_change(entry.change(), fld, lists[fld][i], "--item", _payload_turns(doc["payload"]))
    log.entries.append(entry)
    atomic_write_bytes(path, log.encode())
    return entry, path


def _payload_turns(payload: dict[str, Any]) -> dict[str, set[str]] | None:
    convs = payload.get("conversations")
    if not isinstance(convs, list):
        return None  # TWIST-LoCoMo: turns come from the user's LoCoMo file
    return {c["id"]: {e["id"] for e in c.get("events", [])} for c in convs}


def apply_errata_log(dataset: Dataset, log: ErrataLog, upto: int | None = None,
                     where: str = "errata") -> Dataset:
    """The dataset with the first `upto` errata (all when None) applied, as version
    `<version>+errata-N` with a sha256 covering the key and those entries."""
    entries = log.upto(upto)
    if upto is not None and upto > len(log.entries):
        raise InputError(where, f"errata-{upto} asked for, the log has {len(log.entries)} "
                         "entries", expected=f"a number from 0 to {len(log.entries)}")
    ds, rep = apply_to_dataset(dataset, [e.change() for e in entries], where, missing_ok=True)
    n = len(entries)
    meta = dict(ds.meta, errata_log={"version": log.version, "applied": n,
                                     "digest": log.digest(n), "report": rep.as_dict()})
    return ds.model_copy(update={
        "version": f"{dataset.version}+errata-{n}",
        "key_sha256": sha256_bytes(f"{dataset.key_sha256}+{log.digest(n)}".encode()),
        "meta": meta,
    })


# ---------------------------------------------------------------------------------------------
# Writing the next key version


@dataclass
class Release:
    path: Path
    version: str
    sha256: str
    report: ChangeReport
    errata: list[int]


def default_next_path(key_path: str | Path, version: str, new_version: str) -> Path:
    """data/twist-cs-2.0.json -> data/twist-cs-2.1.json (the version in the file name is
    replaced; a name without it gets the new version appended)."""
    key_path = Path(key_path)
    old, new = base_version(version), base_version(new_version)
    name = key_path.name
    if old in name:
        return key_path.with_name(name.replace(old, new))
    return key_path.with_name(f"{key_path.stem}-{new}{key_path.suffix}")


def release_next_version(key_path: str | Path, changes: Sequence[Change], *, why: str,
                         out: str | Path | None = None, meta: Mapping[str, Any] | None = None,
                         on: date | None = None) -> Release:
    """Write the next version of the key at `key_path`: the pending errata of its version and
    then `changes` applied, a changelog entry, and `meta` (e.g. the agreement figures of an
    annotation round) merged into the key's metadata under the new version. Returns where it
    went. The input key is never modified; an existing output file is refused."""
    doc, digest = read_key(key_path)
    version = str(doc["version"])
    new_version = bump_version(version)
    out = Path(out) if out else default_next_path(key_path, version, new_version)
    if out.resolve() == Path(key_path).resolve() or out.exists():
        raise InputError(str(out), "exists already", field="-o",
                         expected="a new file for the next key version")
    log = read_errata_log(errata_path(key_path, version), doc["name"], version)
    payload = json.loads(json.dumps(doc["payload"]))  # deep copy
    lists = item_lists(payload)
    all_changes = [e.change() for e in log.entries] + list(changes)
    new_lists, rep = apply_changes(lists, all_changes, str(key_path), _payload_turns(payload),
                                   missing_ok=False)
    holder = payload["gold"] if isinstance(payload.get("gold"), dict) else payload
    holder.update(new_lists)
    if "version" in payload:
        payload["version"] = new_version
    key_meta = payload.setdefault("meta", {})
    entry = {"version": new_version, "from": version, "from_sha256": digest,
             "date": (on or date.today()).isoformat(), "why": why,
             "errata": [e.n for e in log.entries], **rep.as_dict()}
    entry.pop("not_found")
    key_meta["changelog"] = [*key_meta.get("changelog", []), entry]
    for k, v in (meta or {}).items():
        key_meta[k] = {**key_meta.get(k, {}), new_version: v}
    sha = write_key(out, doc["name"], new_version, payload)
    return Release(path=out, version=new_version, sha256=sha, report=rep,
                   errata=[e.n for e in log.entries])
