"""The run folder: manifest.json (atomic rewrite) and items.jsonl (append-only, one item a line).

A run folder holds one system's run on one dataset. A kill at any moment leaves at worst one torn
final line in items.jsonl (no newline yet); opening the folder again cuts it off, so the resume
never reads half a record. A damaged line anywhere else is an error naming the line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from twistbench.datasets.keyfile import atomic_write_bytes
from twistbench.records import ITEMS, MANIFEST, ItemRecord, read_manifest, read_records
from twistbench.sanitize import REDACTED, Redactor

__all__ = ["REDACTED", "Redactor", "RunFolder", "json_safe", "write_all"]


class RunFolder:
    def __init__(self, path: str | Path, redactor: Redactor | None = None):
        self.path = Path(path)
        self.redactor = redactor or Redactor({}, {})

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    @property
    def items_path(self) -> Path:
        return self.path / ITEMS

    def exists(self) -> bool:
        return self.manifest_path.exists()

    # -- manifest -----------------------------------------------------------------------------

    def read_manifest(self) -> dict[str, Any]:
        return read_manifest(self.path)

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        # Redacted as a structure, string by string, never as serialized text: replacing inside
        # JSON text could cut into a number or a quote and corrupt the file.
        text = json.dumps(self.redactor.config(json_safe(manifest)), indent=2, sort_keys=True)
        atomic_write_bytes(self.manifest_path, (text + "\n").encode("utf-8"))

    # -- items --------------------------------------------------------------------------------

    def repair_tail(self) -> int:
        """Cut a torn final line (a kill mid-write). Returns the bytes removed."""
        p = self.items_path
        if not p.exists():
            return 0
        size = p.stat().st_size
        if size == 0:
            return 0
        with open(p, "rb+") as fh:
            fh.seek(max(0, size - 1))
            if fh.read(1) == b"\n":
                return 0
            # Find the last newline; everything after it is a partial record.
            block = 1 << 16
            pos = size
            cut = 0
            while pos > 0:
                start = max(0, pos - block)
                fh.seek(start)
                chunk = fh.read(pos - start)
                idx = chunk.rfind(b"\n")
                if idx >= 0:
                    cut = start + idx + 1
                    break
                pos = start
            fh.truncate(cut)
            return size - cut

    def append(self, record: ItemRecord) -> None:
        line = json.dumps(self.redactor.values(record.model_dump(mode="json")), sort_keys=True,
                          ensure_ascii=False)
        data = (line + "\n").encode("utf-8")
        self.path.mkdir(parents=True, exist_ok=True)
        # An O_APPEND descriptor: a kill mid-write leaves the line torn at the end, which
        # repair_tail() removes. A short write is continued until the line is whole; a write
        # that makes no progress is an OSError (a full disk), never a silently torn line that a
        # later append would bury in the middle of the file.
        fd = os.open(self.items_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            write_all(fd, data)
        finally:
            os.close(fd)

    def records(self) -> list[ItemRecord]:
        """The folder's records; InputError for a damaged line or a duplicated item id."""
        return read_records(self.path)

    def clear(self) -> None:
        for name in (ITEMS, MANIFEST):
            p = self.path / name
            if p.exists():
                p.unlink()


def write_all(fd: int, data: bytes) -> None:
    """os.write until every byte is written; OSError if a write makes no progress."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:
            raise OSError(f"write made no progress ({len(view)} of {len(data)} bytes left)")
        view = view[n:]


def json_safe(obj: Any) -> Any:
    """A JSON-like structure with every non-JSON value as its text (before redaction, so that
    text is redacted too)."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    return str(obj)
