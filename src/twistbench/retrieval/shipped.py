"""Shipped vectors: the embeddings of a built-in key, committed beside it, read-only.

A key's text is fixed data; its vectors under the built-in model are derived data that ship
with it (`data/embeddings/<key>.<model>.npz`, written by `scripts/ship_key_vectors.py`), so the
default run embeds nothing and its dense rankings are the same on every machine (onnxruntime's
kernels differ in the last bits between CPUs). `dense.embed` looks a text up in its in-process
cache, then here, then in the disk cache (`embcache`), and only then runs the model.

A file is one uncompressed .npz: `format`, `model_id` (the full id of the embedder that wrote
it), `key_files` and `key_sha256s` (the keys whose default runs it was written from: TWIST-CS
2.0's plain key and its crisis variant share one file, the crisis run adding 96 texts), `keys`
(n x 32 bytes: the disk cache's `text_key` of each text, sorted) and `vectors` (n x dim
float32, as the embedder returned them). Nothing is read until an embedding is asked for; then
the header, and the keys and vectors (one read of 13.7 MB for TWIST-CS 2.0, about 10 ms) only
for the model and a key the file was written for.

The CLI offers a key's file when it loads that key (`offer`, with the sha256 of the key it
loaded); the offer is kept in TWIST_SHIPPED_VECTOR_FILES so that a spawned child (`--isolate
process`) sees it too. A file is used only when its model id is the active embedder's, in
full (`onnx:` and `openai:` embedders, or a changed model, never read it), and one of its key
sha256s is the loaded key's: a re-recorded key is warned about once and computes as if no file
shipped, never uses stale vectors. TWIST_SHIPPED_VECTORS=0 turns the tier off (to measure the
cold path).
"""

from __future__ import annotations

import json
import os
import threading
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from twistbench.retrieval.embcache import text_key

ENV_SWITCH = "TWIST_SHIPPED_VECTORS"
ENV_FILES = "TWIST_SHIPPED_VECTOR_FILES"
FORMAT = "twist-shipped-vectors/1"
_KEY_BYTES = 32


def enabled() -> bool:
    """False when TWIST_SHIPPED_VECTORS says 0 / off / false / no."""
    return os.environ.get(ENV_SWITCH, "").strip().lower() not in ("0", "off", "false", "no")


class ShippedVectors:
    """One shipped file, read on first use: its header (format, model id, key sha256s) when an
    embedding is first asked for, its keys and vectors only when the model and the key match.
    `get_many` answers only for the model and key it was written for."""

    def __init__(self, path: str | os.PathLike[str], key_sha256: str) -> None:
        self.path = Path(path)
        self.expected_key_sha256 = key_sha256
        self._lock = threading.Lock()
        self._state = "new"  # -> "header" (model id known) -> "ready" | "unusable"
        self.model_id = ""
        self.key_sha256s: list[str] = []
        self._rows: dict[bytes, int] = {}
        self._vectors = np.zeros((0, 0), dtype=np.float32)

    def _unusable(self, why: object) -> None:
        self._state = "unusable"
        warnings.warn(f"shipped vectors {self.path} not used: {why}", RuntimeWarning,
                      stacklevel=5)

    def _read_header(self) -> None:
        try:
            with np.load(self.path, allow_pickle=False) as npz:
                if str(npz["format"]) != FORMAT:
                    return self._unusable(f"format {str(npz['format'])!r}, expected {FORMAT!r}")
                self.model_id = str(npz["model_id"])
                self.key_sha256s = [str(x) for x in npz["key_sha256s"]]
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
            return self._unusable(exc)
        self._state = "header"

    def _read_vectors(self) -> None:
        if self.expected_key_sha256 not in self.key_sha256s:
            return self._unusable(
                f"written for the key(s) with sha256 {', '.join(self.key_sha256s)}, but the key "
                f"loaded has {self.expected_key_sha256} (rewrite it with "
                "scripts/ship_key_vectors.py)")
        try:
            with np.load(self.path, allow_pickle=False) as npz:
                keys, vectors = npz["keys"], npz["vectors"]
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
            return self._unusable(exc)
        if (keys.dtype != np.uint8 or keys.ndim != 2 or keys.shape[1] != _KEY_BYTES
                or vectors.dtype != np.float32 or vectors.ndim != 2
                or vectors.shape[0] != keys.shape[0]):
            return self._unusable(f"keys {keys.shape} {keys.dtype}, vectors {vectors.shape} "
                                  f"{vectors.dtype}")
        self._rows = {row.tobytes(): i for i, row in enumerate(keys)}
        vectors.setflags(write=False)  # rows are handed out as views: nobody may change them
        self._vectors = vectors
        self._state = "ready"

    def get_many(self, model_id: str, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The shipped vectors of those texts that have one (text -> vector); nothing when the
        file was written by another model (its vectors are then never read) or for another
        key (one warning)."""
        with self._lock:
            if self._state == "new":
                self._read_header()
            if self._state == "header" and model_id == self.model_id:
                self._read_vectors()
        if self._state != "ready" or model_id != self.model_id:
            return {}
        found: dict[str, np.ndarray] = {}
        for t in texts:
            row = self._rows.get(text_key(model_id, t))
            if row is not None:
                found[t] = self._vectors[row]
        return found

    @property
    def vectors_read(self) -> bool:
        return self._state == "ready"


def recorded_key_sha256s(path: str | os.PathLike[str]) -> list[str]:
    """The sha256s of the keys a shipped file was written from (reads its header only); none
    for a file that cannot be read as one."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            return [str(x) for x in npz["key_sha256s"]]
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return []


_files: dict[tuple[str, str], ShippedVectors] = {}
_files_lock = threading.Lock()
hits = 0  # texts answered from shipped vectors in this process
misses = 0  # texts asked for while a file was offered and not found there (computed or cached)


def offer(path: str | os.PathLike[str], key_sha256: str) -> None:
    """Make the shipped file of a loaded key available to `dense.embed` in this process and its
    spawned children (key_sha256: the sha256 of the key file that was loaded)."""
    offered = _offered()
    entry = [str(Path(path).resolve()), key_sha256]
    if entry not in offered:
        os.environ[ENV_FILES] = json.dumps(offered + [entry])


def withdraw() -> None:
    """Forget every offered file (tests; a process that loads another key)."""
    os.environ.pop(ENV_FILES, None)
    with _files_lock:
        _files.clear()


def _offered() -> list[list[str]]:
    raw = os.environ.get(ENV_FILES, "").strip()
    if not raw:
        return []
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return []
    return [list(map(str, e)) for e in value if isinstance(e, list) and len(e) == 2]


def get_many(model_id: str, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Vectors of `texts` under `model_id` from every offered file (text -> vector); empty when
    the tier is off or nothing is offered. Counts hits and misses."""
    global hits, misses
    offered = _offered() if enabled() else []
    if not offered:
        return {}
    found: dict[str, np.ndarray] = {}
    for path, key_sha in offered:
        with _files_lock:
            file = _files.get((path, key_sha))
            if file is None:
                file = _files[(path, key_sha)] = ShippedVectors(path, key_sha)
        wanted = [t for t in texts if t not in found]
        if not wanted:
            break
        found.update(file.get_many(model_id, wanted))
    with _files_lock:
        hits += len(found)
        misses += len(set(texts)) - len(found)
    return found


def write(path: str | os.PathLike[str], *, model_id: str, key_files: Sequence[str],
          key_sha256s: Sequence[str], texts: Sequence[str], vectors: np.ndarray) -> Path:
    """Write a shipped file: rows sorted by text key, every zip entry dated 1980-01-01, so the
    same texts and vectors give the same bytes. Written beside and renamed into place."""
    if not key_files or len(key_files) != len(key_sha256s):
        raise ValueError(f"{len(key_files)} key files for {len(key_sha256s)} sha256s")
    vecs = np.ascontiguousarray(vectors, dtype=np.float32)
    if vecs.ndim != 2 or vecs.shape[0] != len(texts):
        raise ValueError(f"vectors of shape {vecs.shape} for {len(texts)} texts")
    keys = {text_key(model_id, t): i for i, t in enumerate(texts)}
    if len(keys) != len(texts):
        raise ValueError("texts repeat: one row per distinct text")
    order = sorted(keys)
    members = {
        "format": np.array(FORMAT),
        "model_id": np.array(model_id),
        "key_files": np.array(list(key_files), dtype=str),
        "key_sha256s": np.array(list(key_sha256s), dtype=str),
        "keys": np.frombuffer(b"".join(order), dtype=np.uint8).reshape(len(order), _KEY_BYTES),
        "vectors": vecs[[keys[k] for k in order]] if order else vecs,
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, array in members.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            with zf.open(info, "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, array, allow_pickle=False)
    os.replace(tmp, path)
    return path
