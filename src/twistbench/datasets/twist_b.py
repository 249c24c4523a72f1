"""The public TWIST-v1.0 Track B key (`track_b_v1.0_test.jsonl`, CC BY 4.0, 161 drafts).

Each line: {id, conv, speaker, type, family, draft, evidence, contradicted_quote, rationale,
history_turns}; evidence ids are LoCoMo dia_ids of the conversation `conv` (= sample_id). The key
runs through Track B unchanged against the original LoCoMo conversations, which the user supplies.
Mapping: type -> Draft.label, family/speaker/rationale kept, draft -> text; contradicted_quote and
history_turns go to Draft.meta.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from twistbench.datasets.keyfile import sha256_file
from twistbench.datasets.locomo import load_locomo
from twistbench.errors import (
    InputError,
    decode_utf8,
    load_json,
    pydantic_to_input_error,
    read_bytes,
)
from twistbench.model import Dataset, Draft

TWIST_B_V1_SHA256 = "a824a7834586ecb163e2f227766435fe8575834c5e6be342acfa47dd842a11d6"
LABELS = ("contradicting", "aligned", "hard_negative")
_REQUIRED = ("id", "conv", "type", "draft")


def read_twist_b(key_path: str | Path) -> list[Draft]:
    """Drafts of a Track B jsonl key; InputError names the line and field of a malformed line."""
    key_path = Path(key_path)
    lines = decode_utf8(read_bytes(key_path, "Track B key"), str(key_path)).splitlines()
    drafts: list[Draft] = []
    seen: set[str] = set()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"line {n}"
        row: Any = load_json(line, str(key_path), where, expected="one JSON object per line")
        if not isinstance(row, dict):
            raise InputError(str(key_path), "not an object", where=where, expected="a JSON object")
        for fld in _REQUIRED:
            if not isinstance(row.get(fld), str) or not row[fld].strip():
                raise InputError(str(key_path), "missing or empty", where=where, field=fld,
                                 expected="a non-empty string")
        if row["type"] not in LABELS:
            raise InputError(str(key_path), f"unknown type {row['type']!r}", where=where,
                             field="type", expected=" | ".join(LABELS))
        ev = row.get("evidence", [])
        if not isinstance(ev, list) or not all(isinstance(x, str) for x in ev):
            raise InputError(str(key_path), "not a list of turn ids", where=where, field="evidence",
                             expected='a list like ["D19:1"]')
        if row["id"] in seen:
            raise InputError(str(key_path), f"duplicate id {row['id']!r}", where=where, field="id",
                             expected="unique ids")
        seen.add(row["id"])
        meta = {k: row[k] for k in ("contradicted_quote", "history_turns") if k in row}
        try:
            drafts.append(Draft(id=row["id"], conversation=row["conv"], label=row["type"],
                                family=str(row.get("family", "")),
                                speaker=str(row.get("speaker", "")), text=row["draft"],
                                evidence=list(ev), rationale=str(row.get("rationale", "")),
                                meta=meta))
        except ValidationError as exc:
            raise pydantic_to_input_error(str(key_path), where, exc) from None
    if not drafts:
        raise InputError(str(key_path), "no drafts", expected="at least one JSON line")
    return drafts


def load_twist_b(key_path: str | Path, locomo_path: str | Path) -> Dataset:
    """The public Track B key as a Dataset over the original LoCoMo conversations.

    name "twist-b", version "twist-b-v1.0" (the released file) or "twist-b-<sha12>" for any other
    file; key_sha256 = sha256 of the jsonl. An evidence id naming no turn of its conversation, or a
    conversation absent from the LoCoMo file, is an InputError naming the line.
    """
    key_path = Path(key_path)
    drafts = read_twist_b(key_path)
    corpus = load_locomo(locomo_path)
    turns = {c.id: set(c.event_index()) for c in corpus.conversations}
    for d in drafts:
        if d.conversation not in turns:
            raise InputError(str(key_path), f"conversation {d.conversation!r} is not in "
                             f"{Path(locomo_path).name}", where=f"item {d.id}", field="conv",
                             expected="a LoCoMo sample_id")
        missing = [e for e in d.evidence if e not in turns[d.conversation]]
        if missing:
            raise InputError(str(key_path), f"evidence {missing} names no turn of {d.conversation}",
                             where=f"item {d.id}", field="evidence",
                             expected="dia_ids of the LoCoMo conversation")
    digest = sha256_file(key_path)
    version = "twist-b-v1.0" if digest == TWIST_B_V1_SHA256 else f"twist-b-{digest[:12]}"
    return Dataset(name="twist-b", version=version, key_sha256=digest,
                   conversations=corpus.conversations, drafts=drafts,
                   meta={"locomo_report": corpus.report.as_dict(),
                         "locomo_sha256": corpus.sha256})
