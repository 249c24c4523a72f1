"""rescore() on traces held in memory (TraceRun), the working tree's code against a commit's.

The inputs are bench_tiap.py's synthetic shape (100 queries per conversation, ~750 memories
per conversation's store, top-60 traces). For each --queries size, two
worker processes are started, one importing the working tree's twistbench and one the code of
--reference (its `src/`, exported with `git archive` as bench_default_run.py --reference does);
each builds the same inputs once (same seed), then the repetitions alternate between them, so
both meet the same load. Timed: `rescore(run, lineage, gold, k=60)` from the in-memory objects
(lineage and gold coding included, as `twist trace` and the Python API call it). Printed per
code: the median wall and CPU (process_time) seconds of --repeats runs, the ratio current /
reference of the medians, the worker's peak resident memory, and whether the two codes gave
the same values bit for bit (a digest of the query ids, eligible counts, first-hit ranks and
the bytes of every score array).

Run: PYTHONPATH=src .venv/bin/python benchmarks/bench_rescore_memory.py
         [--queries 50000,100000] [--repeats 5] [--reference c31ae04] [--current COMMIT]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from working_tree import SRC, child_env

HERE = Path(__file__).resolve().parent


def digest(rs) -> str:  # noqa: ANN001 - a TraceScores of either code
    h = hashlib.sha256()
    h.update(json.dumps([rs.k, rs.qids, rs.categories, rs.errors, rs.missing, rs.extra_traces,
                         rs.duplicates_dropped, rs.unknown_ids]).encode())
    for t in sorted(rs.n_rel):
        h.update(rs.n_rel[t].tobytes())
        h.update(rs.first_hit[t].tobytes())
        for m in sorted(rs.scores[t]):
            h.update(rs.scores[t][m].tobytes())
    return h.hexdigest()[:16]


def worker(n_queries: int, k: int) -> None:
    """Build the inputs, then one timed rescore() per line read on stdin; a JSON line each."""
    from bench_tiap import make

    import twistbench
    from twistbench.audit.metrics import rescore

    run, lin, gold = make(n_queries, k)
    print(json.dumps({"ready": twistbench.__file__}), flush=True)
    for _ in sys.stdin:
        c0, t0 = time.process_time(), time.perf_counter()
        rs = rescore(run, lin, gold, k=k)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps({"wall": wall, "cpu": cpu, "digest": digest(rs), "peak_mb": peak}),
              flush=True)
        del rs


def start(src: Path, n_queries: int, k: int) -> subprocess.Popen:
    """A worker importing the twistbench of `src` (first on its PYTHONPATH, absolute: the
    worker runs in benchmarks/, where a relative PYTHONPATH would miss it and the installed
    one be used; working_tree.child_env)."""
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker",
                             str(n_queries), "--k", str(k)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=child_env(src), cwd=HERE)
    return proc


def ask(proc: subprocess.Popen) -> dict:
    proc.stdin.write("go\n")
    proc.stdin.flush()
    return wait_line(proc)


def wait_line(proc: subprocess.Popen) -> dict:
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"a worker exited with code {proc.wait()}")
    return json.loads(line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", default="50000,100000")
    ap.add_argument("--k", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--reference", default="c31ae04", metavar="COMMIT")
    ap.add_argument("--current", default=None, metavar="COMMIT",
                    help="measure this commit's code instead of the working tree's (e.g. the "
                    "figures before a change)")
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker is not None:
        worker(args.worker, args.k)
        return
    from bench_default_run import export_src

    with tempfile.TemporaryDirectory(prefix="twist-ref-") as scratch:
        for sub in ("reference", "current"):
            (Path(scratch) / sub).mkdir()
        ref_src = export_src(args.reference, Path(scratch) / "reference")
        cur_src = SRC if args.current is None else \
            export_src(args.current, Path(scratch) / "current")
        for n in (int(x) for x in args.queries.split(",")):
            codes = {"reference": start(ref_src, n, args.k),
                     "current": start(cur_src, n, args.k)}
            for c, proc in codes.items():  # inputs built; the code each one imported
                print(f"{c}: {wait_line(proc)['ready']}")
            res: dict[str, list[dict]] = {c: [] for c in codes}
            for _ in range(args.repeats):
                for c, proc in codes.items():  # the reference first, then ours, alternating
                    res[c].append(ask(proc))
            for proc in codes.values():
                proc.stdin.close()
                proc.wait()
            med = {c: statistics.median(r["wall"] for r in rs) for c, rs in res.items()}
            print(f"{n:,} queries x {args.k}, rescore() from in-memory objects, median of "
                  f"{args.repeats} (load {os.getloadavg()[0]:.1f}):")
            for c, rs in res.items():
                cpu = statistics.median(r["cpu"] for r in rs)
                walls = ", ".join(f"{r['wall']:.2f}" for r in rs)
                code = args.reference if c == "reference" else args.current or "working tree"
                print(f"  {c:9s} ({code}): "
                      f"wall {med[c]:.2f} s, CPU {cpu:.2f} s, peak RSS {rs[-1]['peak_mb']:.0f} "
                      f"MB  [{walls}]")
            digests = {r["digest"] for rs in res.values() for r in rs}
            print(f"  ratio current / reference (wall medians): "
                  f"{med['current'] / med['reference']:.2f}; values "
                  f"{'identical' if len(digests) == 1 else 'DIFFER: ' + str(sorted(digests))}")


if __name__ == "__main__":
    main()
