"""Helpers shared by the LLM tests, importable by name (spawned worker processes need that)."""

from __future__ import annotations

import asyncio

SECRET = "sk-test-6f1c2b9a7e4d4f0b8a1e3c5d7f9b0a2c"


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


class RecordingSleep:
    """Stands in for asyncio.sleep: records each requested wait and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        await asyncio.sleep(0)

    @property
    def total(self) -> float:
        return sum(self.waits)


def client_worker(base_url: str, cache_path: str, texts: list[str], start) -> dict:
    """Run in a spawned process: complete every text through a cached client once `start` is
    set (so two processes write at the same time); return the client's usage summary."""
    from twistbench.llm.client import ChatRequest, LLMClient, LLMConfig

    config = LLMConfig(base_url=base_url, model="loopback-model", api_key=SECRET,
                       cache_path=cache_path, max_concurrency=8, timeout_s=30)
    start.wait(60)
    with LLMClient(config) as client:
        results = client.complete_many([ChatRequest(user(t)) for t in texts])
        failed = [repr(r) for r in results if isinstance(r, Exception)]
        summary = client.usage_summary()
    summary["failed"] = failed
    return summary


def cache_writer(cache_path: str, worker: int, keys: int, threads: int, start) -> dict:
    """Run in a spawned process: `threads` threads put `keys` entries each into one cache
    (overlapping with the other process), reading each back at once."""
    import threading

    from twistbench.llm.cache import ResponseCache, request_key

    cache = ResponseCache(cache_path)
    errors: list[str] = []
    mismatches: list[str] = []

    def write(thread: int) -> None:
        for i in range(keys):
            body = {"model": "m", "messages": user(f"shared {i}" if i % 2 else
                                                   f"own {worker}.{thread}.{i}")}
            key = request_key(body)
            try:
                cache.put(key, body, {"content": body["messages"][0]["content"]})
                got = cache.get(key)
                if got is None or got["content"] != body["messages"][0]["content"]:
                    mismatches.append(key)
            except Exception as exc:  # noqa: BLE001 - reported to the test
                errors.append(repr(exc))

    start.wait(60)
    pool = [threading.Thread(target=write, args=(t,)) for t in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    stats = cache.stats()
    cache.close()
    return {"errors": errors, "mismatches": mismatches, "stats": stats}
