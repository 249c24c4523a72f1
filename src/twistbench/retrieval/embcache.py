"""A content-addressed embedding cache on disk: sha256 of (model id, text) -> float32 vector.

One SQLite file shared by every dense retriever, every reference system and every run (and the
runs of other processes): a text is embedded once per model, ever, until the file is deleted.
The model id names the weights and the preprocessing (the dense module builds it from the
sha256 of the model and tokenizer files and the token limit), so a changed model never reads
another model's vectors.

Where: `TWIST_EMBED_CACHE` (a file path, or `off`), default `.twistbench-cache/embeddings.sqlite3`
beside the LLM response cache.

Concurrency: WAL journal (readers never block the writer), a busy timeout, a retry with
jittered backoff on SQLITE_BUSY / SQLITE_LOCKED the busy handler lets through, one connection
per thread and per process (a forked child opens its own). The first vector stored for a key
is kept (INSERT OR IGNORE): two processes that embed the same text at once store one row and
both use their own, equal, result. A row of the wrong size (a torn or foreign row) reads as a
miss. A cache that cannot be opened or written is dropped with one warning: embedding goes on
without it, never failing a run.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np

from twistbench.sqlite_wal import create_schema, open_wal, retry_busy

ENV_CACHE = "TWIST_EMBED_CACHE"
DEFAULT_CACHE = ".twistbench-cache/embeddings.sqlite3"
SCHEMA_VERSION = "1"
_SQL_VARS = 500  # keys per SELECT ... IN (...), below SQLite's smallest variable limit (999)
T = TypeVar("T")


def text_key(model_id: str, text: str) -> bytes:
    """The 32-byte key of a text under a model: sha256 of the model id's byte length, ':', the
    model id and the text (UTF-8). The length prefix keeps (model, text) pairs apart even when
    one of them contains the separator."""
    model = model_id.encode("utf-8")
    return hashlib.sha256(b"%d:" % len(model) + model + text.encode("utf-8")).digest()


def cache_path_from_env() -> Path | None:
    """The cache file named by TWIST_EMBED_CACHE (None for 'off'), else the default."""
    value = os.environ.get(ENV_CACHE, "").strip()
    if value.lower() in ("off", "0", "none", "false"):
        return None
    return Path(value or DEFAULT_CACHE)


class EmbeddingCache:
    """get_many / put_many of float32 vectors of one dimension, by (model id, text)."""

    def __init__(self, path: str | os.PathLike[str], dim: int, *, busy_timeout_s: float = 30.0,
                 busy_retries: int = 10, sleep: Callable[[float], None] = time.sleep) -> None:
        self.path = Path(path)
        self.dim = dim
        self.busy_timeout_s = busy_timeout_s
        self.busy_retries = busy_retries
        self._sleep = sleep
        self._local = threading.local()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._retrying(self._create_schema)

    def __repr__(self) -> str:
        return f"EmbeddingCache({str(self.path)!r}, dim={self.dim})"

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None or self._local.pid != os.getpid():  # a forked child opens its own
            conn = self._retrying(self._open)
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def _open(self) -> sqlite3.Connection:
        return open_wal(self.path, self.busy_timeout_s, "embedding cache")

    def _create_schema(self) -> None:
        create_schema(self._conn(), "CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, "
                      "vector BLOB NOT NULL) WITHOUT ROWID", SCHEMA_VERSION, self.path,
                      "embedding cache")

    def _retrying(self, op: Callable[[], T]) -> T:
        return retry_busy(op, self.busy_retries, self._sleep)

    def get_many(self, model_id: str, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of those texts that have one (text -> vector)."""
        keys = {text_key(model_id, t): t for t in dict.fromkeys(texts)}
        found: dict[str, np.ndarray] = {}
        nbytes = self.dim * 4
        key_list = list(keys)
        for start in range(0, len(key_list), _SQL_VARS):
            chunk = key_list[start:start + _SQL_VARS]
            sql = f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(chunk))})"
            rows = self._retrying(lambda sql=sql, chunk=chunk:
                                  self._conn().execute(sql, chunk).fetchall())
            for key, blob in rows:
                if len(blob) == nbytes:
                    found[keys[bytes(key)]] = np.frombuffer(blob, dtype=np.float32).copy()
        with self._lock:
            self.hits += len(found)
            self.misses += len(keys) - len(found)
        return found

    def put_many(self, model_id: str, texts: Sequence[str], vectors: np.ndarray) -> int:
        """Store vectors (one row each, float32) unless stored already; returns rows written."""
        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        if vecs.shape != (len(texts), self.dim):
            raise ValueError(f"vectors of shape {vecs.shape} for {len(texts)} texts of "
                             f"dimension {self.dim}")
        rows = [(text_key(model_id, t), vecs[i].tobytes()) for i, t in enumerate(texts)]

        def write() -> int:
            conn = self._conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                before = conn.total_changes
                conn.executemany("INSERT OR IGNORE INTO vectors (key, vector) VALUES (?, ?)",
                                 rows)
                written = conn.total_changes - before
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            return written

        written = self._retrying(write)
        with self._lock:
            self.writes += written
        return written

    def __len__(self) -> int:
        return self._retrying(
            lambda: self._conn().execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def stats(self) -> dict[str, object]:
        with self._lock:
            return {"path": str(self.path), "hits": self.hits, "misses": self.misses,
                    "writes": self.writes}


_shared: dict[tuple[str, int], EmbeddingCache | None] = {}
_shared_lock = threading.Lock()


def stored_dim(model_id: str, texts: Sequence[str]) -> int | None:
    """The dimension of a vector stored under model_id for one of these texts (the first
    _SQL_VARS looked up), from its size; None when none is stored, the cache is off or absent,
    or it cannot be read. Lets an endpoint whose dimension is not known yet read the cache
    before its first request (dense.embed); a row of another size then reads as a miss."""
    path = cache_path_from_env()
    if path is None or not path.is_file() or not texts:
        return None
    keys = [text_key(model_id, t) for t in list(dict.fromkeys(texts))[:_SQL_VARS]]
    try:
        conn = open_wal(path, 30.0, "embedding cache")
        try:
            row = conn.execute("SELECT length(vector) FROM vectors WHERE key IN "
                               f"({','.join('?' * len(keys))}) LIMIT 1", keys).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    if row is None or not row[0] or row[0] % 4:
        return None
    return int(row[0]) // 4


def shared_cache(dim: int) -> EmbeddingCache | None:
    """The process-wide cache for the file TWIST_EMBED_CACHE names (None when 'off', or when
    it cannot be opened: one warning, and embedding goes on without it)."""
    path = cache_path_from_env()
    if path is None:
        return None
    key = (str(path.resolve()), dim)
    with _shared_lock:
        if key not in _shared:
            try:
                _shared[key] = EmbeddingCache(path, dim)
            except (OSError, sqlite3.Error) as exc:
                warnings.warn(f"embedding cache {path} not used: {exc}", RuntimeWarning,
                              stacklevel=2)
                _shared[key] = None
        return _shared[key]


def drop_shared(dim: int) -> None:
    """Stop using the shared cache of this dimension in this process (after a write failed)."""
    path = cache_path_from_env()
    if path is not None:
        with _shared_lock:
            _shared[(str(path.resolve()), dim)] = None
