"""Reading what an annotator sends back, against the coordinator's manifest.

Accepted: the form's download (`.json`, format twist-annotation-answers/1), a CSV with the
columns packet, annotator, key_version, key_sha256, code, answer (note optional; packet.csv with
its answer column filled is one), or packet.jsonl with answers filled (`.jsonl`).

Refused, each with one clear InputError (exit 2): answers for another packet or another key
version (or sha256); an annotator the packet does not have; a code of another annotator's
packet (their shuffle, e.g. a file renamed or mixed up); a code the packet does not have; a
duplicate item; an answer that is not one of the item's choices; any item left unanswered.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twistbench.annotate.packet import ANSWERS_FORMAT, MANIFEST_FORMAT, PACKET_FORMAT
from twistbench.errors import InputError

CSV_REQUIRED = ("packet", "annotator", "key_version", "key_sha256", "code", "answer")


@dataclass
class RaterAnswers:
    """One annotator's answers, by key item id."""

    annotator: str
    path: str
    choices: dict[str, str] = field(default_factory=dict)  # item id -> choice code
    categories: dict[str, str] = field(default_factory=dict)  # item id -> category
    notes: dict[str, str] = field(default_factory=dict)


def load_manifest(path: str | Path) -> dict[str, Any]:
    """The manifest of an export folder (or the manifest file itself)."""
    path = Path(path)
    if path.is_dir():
        path = path / "manifest.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(str(path), f"cannot read the packet manifest: {exc}",
                         expected="manifest.json written by `twist annotate export`") from exc
    if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT:
        raise InputError(str(path), "not a packet manifest", field="format",
                         expected=repr(MANIFEST_FORMAT))
    return doc


def _rows(path: Path) -> tuple[dict[str, Any], Iterator[tuple[str, dict[str, Any]]]]:
    """(file-level fields, iterator of (where, row)) for the three accepted formats."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(str(path), f"cannot read the answers: {exc}") from exc
    suffix = path.suffix.lower()
    if suffix == ".csv":
        reader = csv.DictReader(text.splitlines(keepends=True))
        missing = [c for c in CSV_REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(str(path), f"missing columns {missing}", where="header row",
                             expected="columns " + ", ".join(CSV_REQUIRED) + " (note optional)")
        return {}, ((f"row {i + 1}", row) for i, row in enumerate(reader))
    if suffix == ".json":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(str(path), f"not valid JSON: {exc}") from exc
        if not isinstance(doc, dict) or doc.get("format") != ANSWERS_FORMAT:
            raise InputError(str(path), "not an answers file", field="format",
                             expected=repr(ANSWERS_FORMAT))
        answers = doc.get("answers")
        if not isinstance(answers, list):
            raise InputError(str(path), "not a list", field="answers",
                             expected="a list of {code, answer, note}")
        top = {k: doc.get(k) for k in ("packet", "annotator", "key_version", "key_sha256")}
        return top, ((f"answers[{i}]", a if isinstance(a, dict) else {})
                     for i, a in enumerate(answers))
    if suffix == ".jsonl":
        lines = [(i + 1, ln) for i, ln in enumerate(text.splitlines()) if ln.strip()]
        try:
            parsed = [(n, json.loads(ln)) for n, ln in lines]
        except json.JSONDecodeError as exc:
            raise InputError(str(path), f"not JSON lines: {exc}") from exc
        if not parsed or parsed[0][1].get("format") != PACKET_FORMAT:
            raise InputError(str(path), "the first line is not a packet header", where="line 1",
                             field="format", expected=repr(PACKET_FORMAT))
        head = parsed[0][1]
        key = head.get("key") or {}
        top = {"packet": head.get("packet"), "annotator": head.get("annotator"),
               "key_version": key.get("version"), "key_sha256": key.get("sha256")}
        return top, ((f"line {n}", row) for n, row in parsed[1:])
    raise InputError(str(path), f"unknown answers format {suffix!r}",
                     expected=".json (from form.html), .csv or .jsonl")


def read_answers(path: str | Path, manifest: dict[str, Any]) -> RaterAnswers:
    """One annotator's answers, checked against the manifest (module docstring)."""
    path = Path(path)
    top, rows = _rows(path)
    key = manifest["key"]
    annotators: dict[str, dict[str, Any]] = manifest["annotators"]
    owner_of = {code: aid for aid, a in annotators.items() for code in a["codes"]}
    who: str | None = None
    out: RaterAnswers | None = None
    seen: dict[str, str] = {}
    for where, raw in rows:
        row = {**{k: v for k, v in top.items() if v is not None}, **raw}
        if str(row.get("packet", "")) != manifest["packet"]:
            raise InputError(str(path), f"answers for packet {row.get('packet')!r}, this "
                             f"manifest is packet {manifest['packet']}", where=where,
                             field="packet", expected="answers to this packet")
        if (row.get("key_version"), row.get("key_sha256")) != (key["version"], key["sha256"]):
            raise InputError(str(path), f"answered for key {row.get('key_version')} (sha256 "
                             f"{row.get('key_sha256')}), the packet is for key {key['version']} "
                             f"(sha256 {key['sha256']})", where=where, field="key_version",
                             expected="answers to this key version")
        aid = str(row.get("annotator", ""))
        if aid not in annotators:
            raise InputError(str(path), f"unknown annotator {aid!r}", where=where,
                             field="annotator", expected=" | ".join(annotators))
        if who is None:
            who = aid
            out = RaterAnswers(annotator=aid, path=str(path))
        elif aid != who:
            raise InputError(str(path), f"answers of annotator {aid} after answers of {who}",
                             where=where, field="annotator", expected="one annotator per file")
        code = str(row.get("code", "")).strip()
        owner = owner_of.get(code)
        if owner is None:
            raise InputError(str(path), f"code {code!r} is not in this packet", where=where,
                             field="code", expected="a code of the packet, unchanged")
        if owner != aid:
            raise InputError(str(path), f"code {code} is from annotator {owner}'s packet, but "
                             f"the file says annotator {aid}: answers for another annotator's "
                             "shuffle", where=where, field="code",
                             expected=f"the codes of annotator {aid}'s packet")
        if code in seen:
            raise InputError(str(path), f"code {code} answered twice (first at {seen[code]})",
                             where=where, field="code", expected="one answer per item")
        seen[code] = where
        item = annotators[aid]["codes"][code]
        answer = str(row.get("answer") or "").strip()
        allowed = manifest["items"][item]["choices"]
        if answer and answer not in allowed:
            raise InputError(str(path), f"unknown answer {answer!r}", where=where,
                             field="answer", expected=" | ".join(allowed))
        assert out is not None
        if answer:
            out.choices[item] = answer
            out.categories[item] = allowed[answer]
        note = str(row.get("note") or "").strip()
        if note:
            out.notes[item] = note
    if out is None:
        raise InputError(str(path), "no answers", expected="one answer per item of the packet")
    mine = annotators[out.annotator]
    codes = [(c, mine["codes"][c]) for c in mine["order"]]
    missing = [(i + 1, c) for i, (c, item) in enumerate(codes) if item not in out.categories]
    if missing:
        first = ", ".join(f"item {s} (code {c})" for s, c in missing[:3])
        raise InputError(str(path), f"{len(missing)} of {len(codes)} items have no answer: "
                         f"{first}{' ...' if len(missing) > 3 else ''}", field="answer",
                         expected="an answer for every item (cannot_tell when undecidable)")
    return out
