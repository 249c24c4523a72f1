"""The cost of the HTTP contract per call: the same system driven in-process and through
`twist serve` + the HTTP client (`-s http://...`).

Both sides go through the runner's guard (runs/guard.py), as in a run. The served system runs
in a child process (`twist serve`, as a user would start it), over one keep-alive connection on
127.0.0.1. Per call kind: the median time per call over --repeats rounds of --calls calls each,
in-process and over HTTP, their difference (the overhead per call) and their ratio. The system
is flat-rag with the lexical retriever, so that the system's own work is small and the figure
is mostly the transport's.

Run: .venv/bin/python benchmarks/bench_http.py [--repeats 5] [--calls 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from working_tree import child_env

from twistbench.datasets.demo import demo_dataset
from twistbench.runs.guard import GuardedSystem
from twistbench.systems import build_system

OPTIONS = {"retriever": "lexical"}


def start_server() -> tuple[subprocess.Popen, str]:
    exe = Path(sys.executable).parent / "twist"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "twistbench.cli"]
    cmd += ["serve", "flat-rag", "--port", "0", "-S", "retriever=lexical"]
    # the served side imports this tree's code, as the in-process side must (child_env)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True,
                            env=child_env(COLUMNS="400"))
    line = proc.stdout.readline() if proc.stdout else ""
    if " at http://" not in line:
        proc.kill()
        raise SystemExit(f"twist serve did not start: {line!r}")
    return proc, line.split(" at ", 1)[1].split(";", 1)[0].strip()


def per_call(fn: Callable[[], object], calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    conv = demo_dataset().conversations[0]
    sessions = [events for _, events in conv.sessions()]
    proc, url = start_server()
    try:
        sides = {"in-process": GuardedSystem(build_system("flat-rag", OPTIONS), 30.0),
                 "http": GuardedSystem(build_system(url), 30.0)}
        for g in sides.values():
            g.reset(conv.id)
            for events in sessions:
                g.ingest(events)
        kinds: dict[str, Callable[[GuardedSystem], object]] = {
            "recall": lambda g: g.recall("When is the renewal due?"),
            "retrieve k=5": lambda g: g.retrieve("renewal", 5),
            "check_alignment": lambda g: g.check_alignment("We will renew the dashboards."),
            "lineage": lambda g: g.lineage(),
            f"ingest ({len(sessions[0])} events)": lambda g: g.ingest(sessions[0]),
        }
        print(f"flat-rag (lexical), {args.repeats} rounds x {args.calls} calls, median per call; "
              f"load average {os.getloadavg()[0]:.2f}")
        print(f"{'call':<22}{'in-process':>14}{'http':>12}{'overhead':>12}{'ratio':>8}")
        for kind, fn in kinds.items():
            med = {}
            for side, g in sides.items():
                fn(g)  # warm-up
                med[side] = statistics.median(per_call(lambda g=g, fn=fn: fn(g), args.calls)
                                              for _ in range(args.repeats))
            local, http = med["in-process"], med["http"]
            print(f"{kind:<22}{local * 1e6:>11.0f} us{http * 1e6:>9.0f} us"
                  f"{(http - local) * 1e6:>9.0f} us{http / local:>7.1f}x")
        for g in sides.values():
            g.end_conversation()
            g.close()
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
