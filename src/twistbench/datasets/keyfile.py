"""Versioned, hashed key files.

A key file is UTF-8 JSON: {"format": "twist-key/1", "name", "version", "payload": {...}}, written
with sorted keys and a trailing newline so the same content always gives the same bytes. Its
sha256 sits beside it in `<file>.sha256` ("<hex>  <filename>"); loading checks it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from twistbench.errors import InputError, decode_utf8, load_json, read_bytes

KEY_FORMAT = "twist-key/1"


def encode_key(name: str, version: str, payload: dict[str, Any]) -> bytes:
    doc = {"format": KEY_FORMAT, "name": name, "version": version, "payload": payload}
    return (json.dumps(doc, sort_keys=True, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and rename: never a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates 0600; give the file the permissions a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_key(path: str | Path, name: str, version: str, payload: dict[str, Any]) -> str:
    """Write the key and its .sha256; return the sha256."""
    data = encode_key(name, version, payload)
    digest = sha256_bytes(data)
    path = Path(path)
    atomic_write_bytes(path, data)
    atomic_write_bytes(path.with_name(path.name + ".sha256"), f"{digest}  {path.name}\n".encode())
    return digest


def read_key(path: str | Path, *, check_sha: bool = True) -> tuple[dict[str, Any], str]:
    """Return (document, sha256). Refuses a file whose .sha256 companion disagrees."""
    path = Path(path)
    data = read_bytes(path, "key file")
    digest = sha256_bytes(data)
    side = path.with_name(path.name + ".sha256")
    if check_sha and side.is_file():
        text = decode_utf8(read_bytes(side, "sha256 file"), str(side)).split()
        want = text[0] if text else ""
        if want != digest:
            raise InputError(str(path), f"sha256 is {digest}, but {side.name} says {want!r}",
                             expected="the key file exactly as released")
    doc = load_json(data, str(path), expected="a twistbench key (JSON)")
    if not isinstance(doc, dict) or doc.get("format") != KEY_FORMAT:
        raise InputError(str(path), "not a twistbench key", field="format",
                         expected=f"{KEY_FORMAT!r}")
    for fld in ("name", "version", "payload"):
        if fld not in doc:
            raise InputError(str(path), "missing", field=fld, expected="a value")
    for fld in ("name", "version"):
        if not isinstance(doc[fld], str):
            raise InputError(str(path), f"is a {type(doc[fld]).__name__}", field=fld,
                             expected="a string")
    if not isinstance(doc["payload"], dict):
        raise InputError(str(path), f"is a {type(doc['payload']).__name__}", field="payload",
                         expected="a JSON object (the dataset)")
    return doc, digest
