"""The SQLite response cache: the key, WAL mode, and concurrent writers in threads and
processes."""

from __future__ import annotations

import hashlib
import multiprocessing
import sqlite3
import threading
from pathlib import Path

import pytest
from llm_helpers import cache_writer, user

from twistbench.llm.cache import ResponseCache, canonical_request, request_key

BODY = {"model": "m", "messages": user("When did Caroline move?"), "temperature": 0.0,
        "response_format": {"type": "json_object"}, "max_tokens": 64}


def test_key_is_sha256_of_the_canonical_request() -> None:
    canonical = canonical_request(BODY)
    # Keys sorted, no spaces, integral floats as integers; computed here independently.
    expected = ('{"max_tokens":64,"messages":[{"content":"When did Caroline move?",'
                '"role":"user"}],"model":"m","response_format":{"type":"json_object"},'
                '"temperature":0}')
    assert canonical == expected
    digest = hashlib.sha256(f"twistbench-llm-cache/v1\n\n{expected}".encode()).hexdigest()
    assert request_key(BODY) == digest


def test_key_ignores_order_float_form_and_transport_fields() -> None:
    reordered = dict(reversed(list(BODY.items())))
    assert request_key(reordered) == request_key(BODY)
    assert request_key({**BODY, "temperature": 0}) == request_key(BODY)
    assert request_key({**BODY, "stream": True,
                        "stream_options": {"include_usage": True}}) == request_key(BODY)


@pytest.mark.parametrize("change", [
    {"model": "other-model"},
    {"messages": user("When did Caroline move")},
    {"messages": [{"role": "system", "content": "x"}, *user("When did Caroline move?")]},
    {"temperature": 0.2},
    {"response_format": None},
    {"max_tokens": 65},
    {"seed": 1},
    {"top_p": 0.9},
    {"stop": ["\n"]},
])
def test_every_answer_changing_parameter_changes_the_key(change: dict) -> None:
    assert request_key({**BODY, **change}) != request_key(BODY)


def test_namespace_separates_endpoints_that_share_a_model_name() -> None:
    assert request_key(BODY, "vllm-a") != request_key(BODY)
    assert request_key(BODY, "vllm-a") == request_key(BODY, "vllm-a")


def test_put_get_counts_and_first_answer_kept(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite3") as cache:
        key = request_key(BODY)
        assert cache.get(key) is None
        assert cache.put(key, BODY, {"content": "first"}) is True
        assert cache.put(key, BODY, {"content": "second"}) is False
        assert cache.get(key) == {"content": "first"}
        assert cache.stats()["hits"] == 1 and cache.stats()["misses"] == 1
        assert cache.stats()["writes"] == 1
        assert len(cache) == 1


def test_wal_mode_and_a_second_instance_reads_what_the_first_wrote(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    first = ResponseCache(path)
    first.put("k", BODY, {"content": "x"})
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    second = ResponseCache(path)
    assert second.get("k") == {"content": "x"}
    first.close()
    second.close()


def test_many_threads_write_one_cache(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite3")
    errors: list[BaseException] = []

    def write(thread: int) -> None:
        try:
            for i in range(100):
                body = {"model": "m", "messages": user(f"{i % 50}")}  # half shared
                cache.put(request_key(body), body, {"content": str(i % 50)})
                assert cache.get(request_key(body)) == {"content": str(i % 50)}
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(cache) == 50
    assert cache.stats()["writes"] == 50
    cache.close()


def test_two_processes_with_threads_write_concurrently(tmp_path: Path) -> None:
    path = str(tmp_path / "c.sqlite3")
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Manager().Event()
    keys, threads = 150, 3
    with ctx.Pool(2) as pool:
        jobs = [pool.apply_async(cache_writer, (path, w, keys, threads, start))
                for w in range(2)]
        start.set()
        results = [job.get(timeout=120) for job in jobs]
    for result in results:
        assert result["errors"] == [] and result["mismatches"] == []
    with ResponseCache(path) as cache:
        # Odd i: one key shared by every thread of both processes; even i: one key per thread.
        shared, own = keys // 2, (keys - keys // 2) * threads * 2
        assert len(cache) == shared + own
    assert sum(r["stats"]["writes"] for r in results) == shared + own


def test_a_stored_row_holds_the_request_and_no_credentials(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    with ResponseCache(path) as cache:
        cache.put(request_key(BODY), BODY, {"content": "ok"})
    row = sqlite3.connect(path).execute("SELECT model, request FROM responses").fetchone()
    assert row == ("m", canonical_request(BODY))


def test_a_cache_of_another_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    ResponseCache(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE name = 'schema'")
    with pytest.raises(sqlite3.DatabaseError, match="schema 99"):
        ResponseCache(path)


def test_busy_database_is_retried_until_the_lock_goes(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    ResponseCache(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the write lock
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 3:
            holder.execute("COMMIT")

    cache = ResponseCache(path, busy_timeout_s=0.0, sleep=sleep)
    assert cache.put("k", BODY, {"content": "x"}) is True
    assert len(waits) == 3 and cache.stats()["busy_waits"] == 3
    assert all(0 <= w <= 1.0 for w in waits)
    cache.close()


def test_busy_beyond_the_retries_raises(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    ResponseCache(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    cache = ResponseCache(path, busy_timeout_s=0.0, busy_retries=2, sleep=lambda s: None)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        cache.put("k", BODY, {"content": "x"})
    holder.execute("ROLLBACK")
    cache.close()
