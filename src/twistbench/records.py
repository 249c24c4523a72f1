"""What a run writes and scoring reads: the per-item record, the error of a system call, and the
read side of a run folder (manifest.json and items.jsonl).

Below both runs/ (which writes run folders) and tracks/ and report/ (which score them), so that
scoring never needs the runner.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from twistbench.errors import InputError, load_json, pydantic_to_input_error, read_bytes

MANIFEST = "manifest.json"
ITEMS = "items.jsonl"


class ItemError(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str = Field(description="exception | timeout | invalid_output | declined | stopped "
                      "(conversation stopped after repeated timeouts) | ingest_failed (scoring: "
                      "the conversation's ingest failed)")
    call: str = Field(description="the system call that failed, e.g. check_alignment")
    message: str


class ItemRecord(BaseModel):
    """What one item produced. `error` set means: counted as an error, excluded from metrics."""

    model_config = ConfigDict(extra="forbid")

    item_id: str
    track: str = Field(description="ingest | A | B | C | D | locomo")
    kind: str = Field(description="item type within the track, e.g. draft, current, probe")
    conversation: str
    input_hash: str
    output: dict[str, Any] | None = None
    scores: dict[str, Any] = Field(default_factory=dict)
    error: ItemError | None = None
    latency_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


def charge_ingest_failures(records: Iterable[ItemRecord]) -> list[ItemRecord]:
    """The records as scoring must see them: every item of a conversation with a failed ingest
    is an error (kind "ingest_failed"), because the system never held the whole conversation.
    A score on such an item would measure the harness's failure to deliver the record, not the
    system. Ingest records themselves, and items that already failed, are left as they are."""
    records = list(records)
    failed: dict[str, ItemRecord] = {}
    for r in records:
        if r.track == "ingest" and not r.ok:
            failed.setdefault(r.conversation, r)
    if not failed:
        return records
    out = []
    for r in records:
        first = failed.get(r.conversation)
        if first is None or r.track == "ingest" or not r.ok:
            out.append(r)
            continue
        why = first.error.kind if first.error else "error"
        out.append(r.model_copy(update={"output": None, "scores": {}, "error": ItemError(
            kind="ingest_failed", call="ingest",
            message=f"{first.item_id} failed ({why}): the system never held the whole "
                    "conversation, so no item of it is scored")}))
    return out


def stable_hash(obj: Any) -> str:
    """sha256 of a canonical JSON encoding (sorted keys, no whitespace)."""
    data = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


class SystemCallError(Exception):
    """A system call raised, timed out, or returned output that failed validation."""

    def __init__(self, kind: str, call: str, message: str):
        super().__init__(f"{call}: {kind}: {message}")
        self.kind = kind
        self.call = call
        self.message = message


def iter_records(path: str | Path, *, tolerate_torn_tail: bool = True) -> Iterator[ItemRecord]:
    """Records of an items.jsonl; a bad line is an InputError naming the file and the line."""
    path = Path(path)
    if not path.exists():
        return
    with open(path, "rb") as fh:
        lines = fh.read().split(b"\n")
    last = len(lines) - 1
    for no, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        torn = no - 1 == last  # no newline after it
        try:
            obj = load_json(raw, str(path), where=f"line {no}",
                            expected="one JSON object per line")
        except InputError:
            if torn and tolerate_torn_tail:
                return
            raise
        try:
            yield ItemRecord.model_validate(obj)
        except ValidationError as exc:
            raise pydantic_to_input_error(str(path), f"line {no}", exc) from exc


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow")


class _Source(_Lenient):
    name: str | None = None
    locomo: str | None = None
    errata: str | None = None
    include_crisis: bool = False


class _ManifestDataset(_Lenient):
    name: str | None = None
    version: str | None = None
    sha256: str | None = None
    source: _Source | None = None


class _ManifestSystem(_Lenient):
    name: str | None = None
    capabilities: dict[str, bool] | None = None


class _ManifestConfig(_Lenient):
    conversations: list[str] | None = None


class _ManifestJudge(_Lenient):
    name: str | None = None


class ManifestShape(_Lenient):
    """The fields of manifest.json that readers use, with their types: a manifest edited into
    another shape is an InputError naming the field, not a crash deep in the report."""

    schema_version: str
    fingerprint: str | None
    dataset: _ManifestDataset
    system: _ManifestSystem
    config: _ManifestConfig | None = None
    judge: _ManifestJudge | None = None
    tracks: dict[str, str] | None = None


def read_manifest(run_dir: str | Path) -> dict[str, Any]:
    path = Path(run_dir) / MANIFEST
    if not path.is_file():
        raise InputError(str(path), "no manifest: not a twistbench run folder",
                         expected="a folder written by `twist run`")
    doc = load_json(read_bytes(path, "manifest"), str(path), expected="a run manifest (JSON)")
    if not isinstance(doc, dict):
        raise InputError(str(path), f"top level is a {type(doc).__name__}",
                         expected="a JSON object (a run manifest)")
    for fld in ("schema_version", "dataset", "system", "fingerprint"):
        if fld not in doc:
            raise InputError(str(path), "missing", field=fld, expected="a run manifest field")
    try:
        ManifestShape.model_validate(doc)
    except ValidationError as exc:
        raise pydantic_to_input_error(str(path), "manifest", exc) from None
    return doc


def find_run_folders(paths: Iterable[str | Path]) -> list[Path]:
    """Run folders named directly, or found one level below a named folder (a multi-system run)."""
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if (p / MANIFEST).exists():
            out.append(p)
            continue
        subs = sorted(d for d in p.iterdir() if (d / MANIFEST).exists()) if p.is_dir() else []
        if not subs:
            raise InputError(str(p), "no run folder here", expected="a folder with manifest.json, "
                             "or a folder of such folders")
        out.extend(subs)
    return out


def read_records(run_dir: str | Path) -> list[ItemRecord]:
    """Every record of a run folder's items.jsonl (a torn final line is left out).

    Raises InputError when an item id appears twice (two runs wrote the folder at once, or
    files were concatenated): which of the two lines counts would be a guess."""
    path = Path(run_dir) / ITEMS
    records = list(iter_records(path))
    seen: dict[str, int] = {}
    dupes: dict[str, list[int]] = {}
    for no, r in enumerate(records, start=1):
        if r.item_id in seen:
            dupes.setdefault(r.item_id, [seen[r.item_id]]).append(no)
        else:
            seen[r.item_id] = no
    if dupes:
        shown = "; ".join(f"{i} (records {', '.join(map(str, n))})"
                          for i, n in list(dupes.items())[:5])
        more = f" and {len(dupes) - 5} more" if len(dupes) > 5 else ""
        raise InputError(str(path), f"{len(dupes)} item ids appear more than once: {shown}{more}",
                         field="item_id", expected="one record per item (a folder written by "
                         "one run at a time; rerun with --force-new)")
    return records
