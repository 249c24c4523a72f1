"""`twist audit` end to end: two runs of 100,000 queries x 60, 3,000-resample bootstraps.

Issue 18's goal: the whole command (reading the files, rescoring both runs under Raw / Source /
Canonical, every bootstrap, comparisons, winner flips, contested credits, writing audit.json,
audit.md, per_query.jsonl, the contested files and the TREC exports, printing the report)
finishes in <= 20 s wall and <= 1 GB peak RSS on 2 cores.

Inputs: the synthetic shape of bench_tiap.py (its generator: 1,000 conversations of 300 raw
turns plus 0-3 facts each, 100 queries per conversation, top-60 traces). Run A is
bench_tiap.make()'s trace; run B ranks the same stores with another draw, so the two runs share
lineage and gold and every comparison has queries to compare. They are written once to a
temporary folder as a.jsonl, b.jsonl, lineage.jsonl and gold.jsonl.

Printed:
  per run of the CLI (a child process, --repeats times): wall time, the child's CPU time
      (user + system) and peak RSS (os.wait4's rusage of that child, ru_maxrss) and the
      1-minute load average after it, then the median wall and the largest peak;
  per-stage times of the median run (`twist audit --profile`, the audit's own stage timer);
  the reference, in this process: pytrec_eval scoring ONE target (Source) of ONE run from the
      same files (its run and qrels dicts built with orjson, RelevanceEvaluator + evaluate),
      median of --repeats; and the ratio audit / reference.
The last line is `audit: WALL s wall, PEAK MB peak RSS (goal <= 20 s, <= 1000 MB)`.

Run: .venv/bin/python benchmarks/bench_audit.py [--queries 100000] [--repeats 3]
     [--keep DIR] (keep the inputs and the last audit's output in DIR; reuse inputs there)
     [--no-pyarrow] (the CLI as an install without the parquet extra runs it)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tiap import make  # noqa: E402  (the shared synthetic generator)
from working_tree import child_env  # noqa: E402

from twistbench.audit.traces import (  # noqa: E402
    Lineage,
    Trace,
    TraceRun,
    write_gold_jsonl,
    write_lineage_jsonl,
    write_traces_jsonl,
)


def second_run(run: TraceRun, lin: Lineage, k: int, seed: int = 7) -> TraceRun:
    """Run B: every query ranks k memories of its own conversation's store, drawn anew."""
    rng = np.random.default_rng(seed)
    store: dict[str, list[str]] = {}
    for r in lin.rows:
        store.setdefault(r.conversation, []).append(r.memory_id)
    scores = [float(x) for x in np.linspace(1.0, 0.01, k)]
    traces: dict[str, Trace] = {}
    for qid in run.traces:
        mem = store[qid.rsplit(":", 1)[0]]
        picks = rng.choice(len(mem), k, replace=False)
        traces[qid] = Trace(qid, [mem[j] for j in picks], scores, k)
    return TraceRun("b", "b", k, traces)


def write_inputs(folder: Path, n_queries: int, k: int) -> dict[str, Path]:
    run, lin, gold = make(n_queries, k)
    paths = {"a": folder / "a.jsonl", "b": folder / "b.jsonl",
             "lineage": folder / "lineage.jsonl", "gold": folder / "gold.jsonl"}
    write_traces_jsonl(paths["a"], TraceRun("a", "a", k, run.traces))
    write_traces_jsonl(paths["b"], second_run(run, lin, k))
    write_lineage_jsonl(paths["lineage"], lin.rows)
    write_gold_jsonl(paths["gold"], gold.queries.values())
    return paths


# the CLI as an install without pyarrow runs it (the parquet extra): `import pyarrow` fails
NO_PYARROW = "import sys; sys.modules['pyarrow'] = None; from twistbench.cli import main; main()"


def run_cli(paths: dict[str, Path], out: Path, log: Path,
            no_pyarrow: bool = False) -> tuple[float, float, str, float]:
    """One `twist audit` in a child process: (wall s, peak RSS MB, its stderr, CPU s)."""
    launch = ["-c", NO_PYARROW] if no_pyarrow else ["-m", "twistbench.cli"]
    cmd = [sys.executable, *launch, "audit", str(paths["a"]), str(paths["b"]),
           "--lineage", str(paths["lineage"]), "--gold", str(paths["gold"]), "--out", str(out),
           "--profile"]
    shutil.rmtree(out, ignore_errors=True)
    with open(log, "wb") as so, open(log.with_suffix(".err"), "wb") as se:
        t0 = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=so, stderr=se, env=child_env())
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
    err = log.with_suffix(".err").read_text(encoding="utf-8")
    if child.returncode != 0:
        raise SystemExit(f"twist audit exited {child.returncode}:\n{err[-3000:]}")
    # ru_maxrss is in KiB on Linux; CPU = user + system time of the child (all its threads):
    # on a shared machine it tells the work done apart from the waiting for a core
    return wall, usage.ru_maxrss / 1024, err, usage.ru_utime + usage.ru_stime


def pytrec_one_target(paths: dict[str, Path], k: int) -> float:
    """pytrec_eval on run A under the Source target, dicts built from the files (orjson)."""
    import pytrec_eval

    t0 = time.perf_counter()
    by_anchor: dict[tuple[str, str], list[str]] = {}
    with open(paths["lineage"], "rb") as fh:
        for line in fh:
            r = orjson.loads(line)
            for a in r["sources"]:
                by_anchor.setdefault((r["conversation"], a), []).append(r["memory_id"])
    qrels: dict[str, dict[str, int]] = {}
    with open(paths["gold"], "rb") as fh:
        for line in fh:
            g = orjson.loads(line)
            rel = {m: 1 for a in g["anchors"] for m in by_anchor.get((g["conversation"], a), ())}
            if rel:
                qrels[g["query_id"]] = rel
    trec_run: dict[str, dict[str, float]] = {}
    with open(paths["a"], "rb") as fh:
        for line in fh:
            t = orjson.loads(line)
            trec_run[t["query_id"]] = {r["id"]: r["score"] for r in t["results"]}
    measures = {f"ndcg_cut_{k}", f"recall_{k}", "recip_rank"}
    pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(trec_run)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--k", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--keep", type=Path, default=None,
                    help="keep the inputs and the last audit's output in this folder (inputs "
                    "already there, from an earlier --keep with the same sizes, are reused)")
    ap.add_argument("--no-pyarrow", action="store_true",
                    help="run the CLI as without the parquet extra (pyarrow not importable)")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="bench_audit_")
    folder = args.keep or Path(tmp)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        paths = {n: folder / f"{n}.jsonl" for n in ("a", "b", "lineage", "gold")}
        reused = args.keep is not None and all(p.is_file() for p in paths.values())
        if not reused:
            paths = write_inputs(folder, args.queries, args.k)
        mb = sum(p.stat().st_size for p in paths.values()) / 1e6
        print(f"inputs: 2 runs x {args.queries:,} queries x {args.k}, shared lineage and gold, "
              f"{mb:.0f} MB of JSONL ("
              + ("reused from --keep" if reused else f"{time.perf_counter() - t0:.1f} s to write")
              + ")")
        runs = []
        for i in range(args.repeats):
            wall, peak, err, cpu = run_cli(paths, folder / "audit", folder / "cli.log",
                                           args.no_pyarrow)
            runs.append((wall, peak, err))
            print(f"  twist audit run {i + 1}: {wall:.2f} s wall, {cpu:.2f} s CPU, "
                  f"{peak:.0f} MB peak RSS (load average {os.getloadavg()[0]:.2f})")
        walls = [w for w, _, _ in runs]
        med = statistics.median(walls)
        peak = max(p for _, p, _ in runs)
        median_err = runs[walls.index(med)][2] if med in walls else runs[0][2]
        print("stages of the median run (twist audit --profile):")
        for line in median_err.splitlines():
            if line.startswith("profile:"):
                print("  " + line[len("profile:"):].strip())
        try:
            ref = statistics.median(pytrec_one_target(paths, args.k)
                                    for _ in range(args.repeats))
            print(f"reference: pytrec_eval, 1 run x 1 target (Source) x 3 metrics, dicts built "
                  f"from the files: {ref:.2f} s; ratio twist audit (2 runs, 3 targets, "
                  f"bootstraps, reports) / reference: {med / ref:.2f}")
        except ImportError:
            print("pytrec_eval not installed (the test extra): no reference ratio")
        print(f"audit: {med:.2f} s wall, {peak:.0f} MB peak RSS (goal <= 20 s, <= 1000 MB)")
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
