"""A response cache for chat completions: one SQLite file, safe for many threads and processes.

Key: sha256 of the canonical request body: the model name, the messages, temperature,
response format, max tokens, seed, stop and every other parameter sent, with JSON keys sorted
and integral floats written as integers (0.0 and 0 ask the same thing). Fields that change
only how the reply travels (`stream`, `stream_options`) are left out. The base URL and the key
are never part of it: the same model behind another host or port reuses its answers. Give a
`namespace` when two endpoints serve different weights under one model name.

Concurrency: WAL journal (readers never block the writer), a busy timeout, one statement per
transaction (a write holds the lock for one INSERT), and a retry with jittered backoff on
SQLITE_BUSY / SQLITE_LOCKED that the busy handler does not cover (WAL recovery, snapshot
upgrades, setting the journal mode while another process opens the file). Each thread and
each process gets its own connection. The first answer stored for a key is kept
(INSERT OR IGNORE), so a reader never sees an entry change under it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Self, TypeVar

from twistbench.sqlite_wal import create_schema, open_wal, retry_busy

SCHEMA_VERSION = "1"
TRANSPORT_ONLY_FIELDS = frozenset({"stream", "stream_options"})
T = TypeVar("T")


def canonical_request(body: Mapping[str, Any]) -> str:
    """The request as one canonical JSON string (what the cache key hashes)."""
    kept = {k: v for k, v in body.items() if k not in TRANSPORT_ONLY_FIELDS}
    return json.dumps(_normalise(kept), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False, allow_nan=False)


def request_key(body: Mapping[str, Any], namespace: str = "") -> str:
    """sha256 hex of the canonical request (and the namespace, when one is set)."""
    text = f"twistbench-llm-cache/v{SCHEMA_VERSION}\n{namespace}\n{canonical_request(body)}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _normalise(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): _normalise(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalise(v) for v in value]
    return value


class ResponseCache:
    """get/put of JSON-able replies by request key; counts hits, misses and writes."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_s: float = 30.0,
                 busy_retries: int = 10, sleep: Callable[[float], None] = time.sleep):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.busy_timeout_s = busy_timeout_s
        self.busy_retries = busy_retries
        self._sleep = sleep
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[tuple[int, sqlite3.Connection]] = []
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self.busy_waits = 0
        self._retrying(self._create_schema)

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"

    # -- connections ------------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        # A forked child must not share its parent's connection: open its own.
        if conn is None or self._local.pid != os.getpid():
            conn = self._retrying(self._open)
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def _open(self) -> sqlite3.Connection:
        conn = open_wal(self.path, self.busy_timeout_s, "cache")
        with self._lock:
            self._connections.append((os.getpid(), conn))
        return conn

    def _create_schema(self) -> None:
        create_schema(self._conn(),
                      "CREATE TABLE IF NOT EXISTS responses ("
                      " key TEXT PRIMARY KEY, model TEXT NOT NULL, request TEXT NOT NULL,"
                      " response TEXT NOT NULL, created_at REAL NOT NULL)",
                      SCHEMA_VERSION, self.path, "cache")

    def _retrying(self, op: Callable[[], T]) -> T:
        """Run `op`, retrying SQLITE_BUSY/LOCKED errors the busy handler let through."""
        return retry_busy(op, self.busy_retries, self._sleep, on_wait=self._count_wait)

    def _count_wait(self) -> None:
        with self._lock:
            self.busy_waits += 1

    # -- the cache --------------------------------------------------------------------------

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply for `key`, or None (counted as a miss)."""
        row = self._retrying(lambda: self._conn().execute(
            "SELECT response FROM responses WHERE key = ?", (key,)).fetchone())
        with self._lock:
            if row is None:
                self.misses += 1
            else:
                self.hits += 1
        return None if row is None else json.loads(row[0])

    def put(self, key: str, body: Mapping[str, Any], response: Mapping[str, Any]) -> bool:
        """Store a reply unless one is stored already; True when this call stored it."""
        request_text = canonical_request(body)
        response_text = json.dumps(response, sort_keys=True, ensure_ascii=False)
        model = str(body.get("model", ""))
        cursor = self._retrying(lambda: self._conn().execute(
            "INSERT OR IGNORE INTO responses (key, model, request, response, created_at)"
            " VALUES (?, ?, ?, ?, ?)", (key, model, request_text, response_text, time.time())))
        stored = cursor.rowcount == 1
        if stored:
            with self._lock:
                self.writes += 1
        return stored

    def __len__(self) -> int:
        return self._retrying(
            lambda: self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def stats(self) -> dict[str, Any]:
        with self._lock:
            looked_up = self.hits + self.misses
            return {"path": str(self.path), "hits": self.hits, "misses": self.misses,
                    "writes": self.writes, "busy_waits": self.busy_waits,
                    "hit_rate": self.hits / looked_up if looked_up else None}

    def close(self) -> None:
        """Close every connection this object opened in this process (call it when no thread
        uses the cache any more). A forked child leaves its parent's connections alone."""
        with self._lock:
            connections, self._connections = self._connections, []
        for pid, conn in connections:
            if pid != os.getpid():
                continue
            try:
                conn.close()
            except sqlite3.Error:
                pass
        self._local = threading.local()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
