"""LLM client throughput against the loopback server, and the cache on a second run.

Printed, each run with a fresh cache file, the median of --repeats runs:
  cold   2,000 JSON-mode calls at concurrency 32, server latency 100 ms, through LLMClient with
         its SQLite cache: wall time beside the ideal 2000 / 32 * 0.1 = 6.25 s (goal: within
         1.25x), CPU per call of this process, peak requests in flight at the server;
  warm   the same 2,000 calls from a new client on the same cache file: cache-hit rate
         (goal 100%) and the server requests it made (should be 0).
The last line is exactly `ratio R; cache hit H%` (median cold ratio, median warm hit rate).

--server thread (default) runs the loopback server in a thread of this process, as the tests
do, so its CPU shares the GIL with the client; --server process runs it in a child process,
the way a real endpoint sits outside the client.

--compare adds the measurements behind two design choices, 2,000 requests at concurrency 32
and 100 ms each:
  the loopback server built on asyncio streams against a ThreadingHTTPServer doing the same,
  both driven by a minimal raw-socket asyncio client;
  the HTTP client: httpx.AsyncClient with one pool of 32 connections, 4 of 8, 32 of 1, and
  32 single-connection httpcore pools (what LLMClient uses), with no cache, retries or parsing.

Run: .venv/bin/python benchmarks/bench_llm.py [--repeats 3] [--server thread|process] [--compare]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import tempfile
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpcore
import httpx
from working_tree import require_tree_code

from twistbench.llm.client import ChatRequest, LLMClient, LLMConfig
from twistbench.llm.loopback import LoopbackServer

CALLS = 2000
CONCURRENCY = 32
LATENCY_S = 0.1
IDEAL_S = CALLS / CONCURRENCY * LATENCY_S


def requests() -> list[ChatRequest]:
    return [ChatRequest([{"role": "system", "content": "Answer from the memories; reply JSON."},
                         {"role": "user", "content": f"Memories: [m{i}] ...\nQuestion {i}: when "
                                                     "did Caroline go to the support group?"}],
                        json=True)
            for i in range(CALLS)]


def _serve_in_child(latency: float, conn: Any) -> None:
    with LoopbackServer(latency_s=latency) as server:
        conn.send(server.base_url)
        conn.recv()  # until the parent says stop
        conn.send((server.hits, server.max_in_flight))


class ChildServer:
    """The loopback server in a spawned process; hits are read when it stops."""

    def __init__(self, latency: float):
        require_tree_code()  # a spawned child imports what this process imported
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve_in_child, args=(latency, child), daemon=True)
        self._proc.start()
        self.base_url = self._conn.recv()

    def stop(self) -> tuple[int, int]:
        self._conn.send("stop")
        hits, peak = self._conn.recv()
        self._proc.join(timeout=10)
        return hits, peak


@contextmanager
def server_for(mode: str):
    if mode == "thread":
        with LoopbackServer(latency_s=LATENCY_S) as server:
            yield server
    else:
        child = ChildServer(LATENCY_S)
        try:
            yield child
        finally:
            child.stop()


def one_round(mode: str, reqs: list[ChatRequest]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, server_for(mode) as server:
        config = LLMConfig(base_url=server.base_url, model="bench-model",
                           max_concurrency=CONCURRENCY, cache_path=str(Path(tmp) / "c.sqlite3"))
        with LLMClient(config) as client:
            cpu, start = time.process_time(), time.perf_counter()
            cold = client.complete_many(reqs)
            wall = time.perf_counter() - start
            cpu = time.process_time() - cpu
        failed = sum(isinstance(r, Exception) for r in cold)
        hits_cold = getattr(server, "hits", None)
        peak = getattr(server, "max_in_flight", None)
        with LLMClient(config) as client:
            start = time.perf_counter()
            warm = client.complete_many(reqs)
            warm_wall = time.perf_counter() - start
            cache = client.usage_summary()["cache"]
        hits_warm = None if hits_cold is None else server.hits - hits_cold
    return {"wall": wall, "ratio": wall / IDEAL_S, "cpu_ms": cpu / CALLS * 1000,
            "failed": failed + sum(isinstance(r, Exception) for r in warm),
            "peak": peak, "hit_rate": cache["hit_rate"], "warm_wall": warm_wall,
            "warm_requests": hits_warm}


# -- --compare: the server implementation and the httpx pool size --------------------------------


class _ThreadedHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    reply = json.dumps({"choices": [{"message": {"content": "x"}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(LATENCY_S)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.reply)))
        self.end_headers()
        self.wfile.write(self.reply)


async def _raw_driver(port: int) -> None:
    """Keep-alive HTTP/1.1 over asyncio streams: almost no client cost of its own."""
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "q"}]}).encode()
    head = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))

    async def worker(count: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(count):
            writer.write(head + body)
            await writer.drain()
            header = await reader.readuntil(b"\r\n\r\n")
            length = next(int(line.split(b":")[1]) for line in header.split(b"\r\n")
                          if line.lower().startswith(b"content-length"))
            await reader.readexactly(length)
        writer.close()

    await asyncio.gather(*(worker(CALLS // CONCURRENCY + (i < CALLS % CONCURRENCY))
                           for i in range(CONCURRENCY)))


async def _httpx_driver(url: str, pool_size: int) -> None:
    """CONCURRENCY connections as httpx clients of `pool_size` connections each."""
    ssl_context = httpx.create_ssl_context()  # shared: loading the CA bundle costs ~20 ms
    clients = [httpx.AsyncClient(verify=ssl_context,
                                 limits=httpx.Limits(max_connections=pool_size,
                                                     max_keepalive_connections=pool_size))
               for _ in range(CONCURRENCY // pool_size)]
    load = [0] * len(clients)
    gate = asyncio.Semaphore(CONCURRENCY)
    body = {"model": "m", "messages": [{"role": "user", "content": "q"}]}

    async def one() -> None:
        async with gate:
            index = min(range(len(clients)), key=load.__getitem__)
            load[index] += 1
            try:
                (await clients[index].post(url, json=body)).json()
            finally:
                load[index] -= 1

    await asyncio.gather(*(one() for _ in range(CALLS)))
    for client in clients:
        await client.aclose()


async def _httpcore_driver(url: str) -> None:
    """CONCURRENCY single-connection httpcore pools, as LLMClient uses them."""
    pools = [httpcore.AsyncConnectionPool(max_connections=1) for _ in range(CONCURRENCY)]
    gate = asyncio.Semaphore(CONCURRENCY)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "q"}]}).encode()
    headers = [(b"Content-Type", b"application/json"), (b"Content-Length", b"%d" % len(body))]

    async def one() -> None:
        async with gate:
            pool = pools.pop()
            try:
                response = await pool.request("POST", url, headers=headers, content=body)
                json.loads(response.content)
            finally:
                pools.append(pool)

    await asyncio.gather(*(one() for _ in range(CALLS)))
    for pool in pools:
        await pool.aclose()


def _timed(driver, *args: Any) -> tuple[float, float]:
    """Wall seconds and CPU ms per request of asyncio.run(driver(*args))."""
    cpu, start = time.process_time(), time.perf_counter()
    asyncio.run(driver(*args))
    return time.perf_counter() - start, (time.process_time() - cpu) / CALLS * 1000


def compare(repeats: int) -> None:
    print(f"\nservers alone, {CALLS} requests, concurrency {CONCURRENCY}, {LATENCY_S * 1000:.0f} ms"
          f" (raw asyncio driver; ideal {IDEAL_S:.2f} s), median of {repeats}:")
    threaded = ThreadingHTTPServer(("127.0.0.1", 0), _ThreadedHandler)
    threaded.daemon_threads = True
    threading.Thread(target=threaded.serve_forever, daemon=True).start()
    rows = {"ThreadingHTTPServer": [], "loopback (asyncio streams)": []}
    with LoopbackServer(latency_s=LATENCY_S) as loopback:
        for _ in range(repeats):
            rows["ThreadingHTTPServer"].append(_timed(_raw_driver, threaded.server_address[1]))
            rows["loopback (asyncio streams)"].append(_timed(_raw_driver, loopback.port))
    threaded.shutdown()
    for name, runs in rows.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        print(f"  {name:28s} wall {wall:6.2f} s  ratio {wall / IDEAL_S:4.2f}  "
              f"CPU {cpu:.3f} ms/request")
    print(f"\nHTTP clients alone against the loopback server (no cache, retries or parsing), "
          f"median of {repeats}:")
    drivers = [("httpx, 1 client of 32 connections", _httpx_driver, 32),
               ("httpx, 4 clients of 8 connections", _httpx_driver, 8),
               ("httpx, 32 clients of 1 connection", _httpx_driver, 1),
               ("httpcore, 32 pools of 1 connection", _httpcore_driver, None)]
    with LoopbackServer(latency_s=LATENCY_S) as loopback:
        url = loopback.base_url + "/chat/completions"
        for name, driver, size in drivers:
            args = (url,) if size is None else (url, size)
            runs = [_timed(driver, *args) for _ in range(repeats)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            print(f"  {name:36s} wall {wall:6.2f} s  ratio {wall / IDEAL_S:4.2f}  "
                  f"CPU {cpu:.3f} ms/request")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--server", choices=("thread", "process"), default="thread")
    parser.add_argument("--compare", action="store_true")
    args = parser.parse_args()
    reqs = requests()
    # The figures are wall times: on a shared machine they move with its load, so say it.
    print(f"{CALLS} calls, concurrency {CONCURRENCY}, latency {LATENCY_S * 1000:.0f} ms, "
          f"ideal {IDEAL_S:.2f} s, server in a {args.server}; {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f} at start")
    rounds = []
    for i in range(args.repeats):
        r = one_round(args.server, reqs)
        rounds.append(r)
        extra = "" if r["peak"] is None else f"  peak in flight {r['peak']}"
        warm = "" if r["warm_requests"] is None else f", {r['warm_requests']} server requests"
        print(f"  run {i + 1}: cold {r['wall']:6.2f} s  ratio {r['ratio']:.3f}  "
              f"CPU {r['cpu_ms']:.2f} ms/call{extra}; warm {r['warm_wall']:.2f} s, "
              f"cache hit {r['hit_rate'] * 100:.1f}%{warm}; errors {r['failed']}")
    ratio = statistics.median(r["ratio"] for r in rounds)
    hit = statistics.median(r["hit_rate"] for r in rounds)
    print(f"median: cold {statistics.median(r['wall'] for r in rounds):.2f} s vs ideal "
          f"{IDEAL_S:.2f} s (goal: ratio <= 1.25); cache hit {hit * 100:.1f}% (goal 100%); "
          f"load average {os.getloadavg()[0]:.2f} at the end")
    if args.compare:
        compare(args.repeats)
    print(f"ratio {ratio:.3f}; cache hit {hit * 100:.1f}%")


if __name__ == "__main__":
    main()
