"""The run folder: manifest.json (atomic rewrite) and items.jsonl (append-only, one item a line).

A run folder holds one system's run on one dataset. A kill at any moment leaves at worst one torn
final line in items.jsonl (no newline yet); opening the folder again cuts it off, so the resume
never reads half a record. A damaged line anywhere else is an error naming the line.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from twistbench.datasets.keyfile import atomic_write_bytes
from twistbench.records import ITEMS, MANIFEST, ItemRecord, iter_records, read_manifest

_SECRET_NAME = re.compile(r"(api[_-]?key|token|secret|passw(or)?d|auth|credential|bearer|private)",
                          re.IGNORECASE)
REDACTED = "***redacted***"


class Redactor:
    """Scrubs secrets from everything written into a run folder.

    Secrets are option values whose name looks secret (api_key, token, password, ...) and the
    values of environment variables with such names. Redaction by value, not only by field, so
    a secret echoed back inside a system's answer is scrubbed too.
    """

    def __init__(self, options: dict[str, Any] | None = None,
                 environ: dict[str, str] | None = None):
        env = os.environ if environ is None else environ
        values = {str(v) for k, v in (options or {}).items() if _SECRET_NAME.search(k) and v}
        values |= {v for k, v in env.items() if _SECRET_NAME.search(k) and len(v) >= 6}
        # Longest first so a secret containing another is replaced whole.
        self.secrets = sorted((s for s in values if len(s) >= 4), key=len, reverse=True)

    def config(self, cfg: Any) -> Any:
        """Redact by field name and by value, recursively."""
        if isinstance(cfg, dict):
            return {k: (REDACTED if _SECRET_NAME.search(str(k)) and v not in (None, "")
                        else self.config(v)) for k, v in cfg.items()}
        if isinstance(cfg, (list, tuple)):
            return [self.config(v) for v in cfg]
        if isinstance(cfg, str):
            return self.text(cfg)
        return cfg

    def text(self, s: str) -> str:
        for secret in self.secrets:
            if secret in s:
                s = s.replace(secret, REDACTED)
        return s


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
        text = json.dumps(self.redactor.config(manifest), indent=2, sort_keys=True, default=str)
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
        line = json.dumps(record.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        data = (self.redactor.text(line) + "\n").encode("utf-8")
        self.path.mkdir(parents=True, exist_ok=True)
        # One write() on an O_APPEND descriptor: the line lands whole or (killed mid-call) torn at
        # the end, which repair_tail() removes.
        fd = os.open(self.items_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def records(self) -> list[ItemRecord]:
        return list(iter_records(self.items_path))

    def clear(self) -> None:
        for name in (ITEMS, MANIFEST):
            p = self.path / name
            if p.exists():
                p.unlink()
