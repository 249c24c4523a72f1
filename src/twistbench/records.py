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

from twistbench.errors import InputError, pydantic_to_input_error

MANIFEST = "manifest.json"
ITEMS = "items.jsonl"


class ItemError(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str = Field(description="exception | timeout | invalid_output | declined")
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
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            if torn and tolerate_torn_tail:
                return
            raise InputError(str(path), f"not valid JSON: {exc}", where=f"line {no}",
                             expected="one JSON object per line") from exc
        try:
            yield ItemRecord.model_validate(obj)
        except ValidationError as exc:
            raise pydantic_to_input_error(str(path), f"line {no}", exc) from exc


def read_manifest(run_dir: str | Path) -> dict[str, Any]:
    path = Path(run_dir) / MANIFEST
    if not path.exists():
        raise InputError(str(path), "no manifest: not a twistbench run folder",
                         expected="a folder written by `twist run`")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(str(path), f"not valid JSON: {exc}") from exc
    for fld in ("schema_version", "dataset", "system", "fingerprint"):
        if fld not in doc:
            raise InputError(str(path), "missing", field=fld, expected="a run manifest field")
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
    """Every record of a run folder's items.jsonl (a torn final line is left out)."""
    return list(iter_records(Path(run_dir) / ITEMS))
