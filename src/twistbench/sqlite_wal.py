"""SQLite files shared by threads and processes: the response cache (llm/cache.py) and the
embedding cache (retrieval/embcache.py) open, set up and retry them the same way.

WAL journal mode (readers never block the writer), a busy timeout, one schema row written in the
same transaction as the tables (another process never sees tables without it), and a jittered
backoff on the SQLITE_BUSY / SQLITE_LOCKED errors the busy handler lets through (WAL recovery,
snapshot upgrades)."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from os import PathLike
from typing import TypeVar

T = TypeVar("T")

_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def open_wal(path: str | PathLike[str], busy_timeout_s: float, what: str) -> sqlite3.Connection:
    """A connection in WAL mode with a busy timeout; `what` names the file in errors."""
    conn = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None,
                           check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise sqlite3.OperationalError(
                f"{path}: the {what} needs WAL journal mode, SQLite gave {mode!r}")
        conn.execute("PRAGMA synchronous = NORMAL")
    except BaseException:
        conn.close()
        raise
    return conn


def create_schema(conn: sqlite3.Connection, table_ddl: str, version: str, path: str | PathLike[str],
                  what: str) -> None:
    """Create the data table and the `meta` table with its schema row, then check the row."""
    # Read first: opening an existing file takes no write lock.
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
        conn.execute("BEGIN IMMEDIATE")  # the tables and their schema row appear together
        try:
            conn.execute(table_ddl)
            conn.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)")
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (version,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    found = conn.execute("SELECT value FROM meta WHERE name = 'schema'").fetchone()
    if found is None or found[0] != version:
        raise sqlite3.DatabaseError(
            f"{path}: {what} schema {found[0] if found else 'unknown'}, this version reads "
            f"{version}; use another {what} file")


def is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _BUSY_CODES
    return "locked" in str(exc) or "busy" in str(exc)


def retry_busy(op: Callable[[], T], retries: int, sleep: Callable[[float], None],
               on_wait: Callable[[], None] | None = None) -> T:
    """Run `op`, retrying busy/locked errors up to `retries` times with jittered backoff;
    `on_wait` is told of each wait (the response cache counts them)."""
    for attempt in range(retries + 1):
        try:
            return op()
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or attempt == retries:
                raise
            if on_wait is not None:
                on_wait()
            sleep(random.uniform(0, min(1.0, 0.01 * 2 ** attempt)))
    raise AssertionError("unreachable")
