"""Wall time and peak memory of the default run (`twist run` with no arguments).

That is: the TWIST-CS key, systems flat-rag, fact-rag, heuristic and oracle, every track, then
the profile (what `make run` does). Each repetition runs the `twist` command in a fresh process
into a fresh folder, so nothing is resumed and model loading is included. Printed: the median
wall time and the peak resident memory of the child process (ru_maxrss), beside the goals
(<= 60 s and <= 1.5 GB on 2 cores), and the 1-minute load average before each run (other
processes on the machine slow everything down; compare figures taken at a low load).

With the on-disk embedding cache (TWIST_EMBED_CACHE) each repetition runs three ways,
interleaved: "off" (no disk cache: the reference), "cold" (an empty cache file) and "warm" (a
file an earlier, unmeasured run filled); the ratio of each median to the first mode's is
printed.

Run: .venv/bin/python benchmarks/bench_default_run.py [--repeats 3] [--cores 0,1]
                                                      [--embed-cache off,cold,warm]
     --cores pins the child to those CPUs with taskset (to emulate a 2-core machine).
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

GOAL_S = 60.0
GOAL_BYTES = 1.5 * 1024**3


def twist_command() -> list[str]:
    exe = Path(sys.executable).parent / "twist"
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-m", "twistbench.cli"]


def run_once(cores: str | None, keep: Path | None,
             embed_cache: str = "off") -> tuple[float, int, float, str]:
    """(wall seconds, peak RSS bytes of the child, load average before, profile text).

    embed_cache: the child's TWIST_EMBED_CACHE: "off", or a path to a cache file.
    """
    out = Path(tempfile.mkdtemp(prefix="twist-default-"))
    cmd = twist_command() + ["run", "--out", str(out / "runs"), "--no-progress"]
    if cores:
        cmd = ["taskset", "-c", cores] + cmd
    env = {**os.environ, "TWIST_EMBED_CACHE": embed_cache}
    load = os.getloadavg()[0]
    with tempfile.TemporaryFile() as so, tempfile.TemporaryFile() as se:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=so, stderr=se, env=env)
        # wait4 gives this child's own rusage (RUSAGE_CHILDREN would be the max over all)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        so.seek(0)
        se.seek(0)
        stdout, stderr = so.read().decode(), se.read().decode()
    if proc.returncode != 0:
        sys.stderr.write(stdout[-4000:] + stderr[-4000:])
        raise SystemExit(f"twist run failed with exit code {proc.returncode}")
    if keep is not None:
        shutil.copytree(out, keep, dirs_exist_ok=True)
    shutil.rmtree(out, ignore_errors=True)
    return wall, usage.ru_maxrss * 1024, load, stdout  # ru_maxrss is KiB on Linux


MODES = {
    "off": "no embedding cache on disk (each run embeds every distinct text; the reference)",
    "cold": "an empty cache file (the first run on a machine: embeds, and stores)",
    "warm": "a cache filled by an earlier run (every later run: nothing embedded)",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--cores", default=None, help="taskset CPU list for the child, e.g. 0,1")
    ap.add_argument("--keep", type=Path, default=None, help="copy the last run folder here")
    ap.add_argument("--show-profile", action="store_true", help="print the run's profile")
    ap.add_argument("--embed-cache", default="off,cold,warm",
                    help="comma list of " + ", ".join(f"{k}: {v}" for k, v in MODES.items()))
    args = ap.parse_args()
    modes = [m for m in args.embed_cache.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise SystemExit(f"--embed-cache: unknown mode(s) {unknown} (expected {list(MODES)})")

    scratch = Path(tempfile.mkdtemp(prefix="twist-embcache-"))
    warm_file = scratch / "warm.sqlite3"
    if "warm" in modes:  # filled once, not measured
        run_once(args.cores, None, str(warm_file))
    walls: dict[str, list[float]] = {m: [] for m in modes}
    peaks: dict[str, list[int]] = {m: [] for m in modes}
    text = ""
    for i in range(args.repeats):
        for m in modes:  # interleaved, so every mode sees the same load over time
            cache = {"off": "off", "cold": str(scratch / f"cold-{i}.sqlite3"),
                     "warm": str(warm_file)}[m]
            wall, peak, load, text = run_once(args.cores, args.keep, cache)
            walls[m].append(wall)
            peaks[m].append(peak)
            print(f"run {i + 1} [{m}]: {wall:.1f} s, peak RSS {peak / 1024**3:.2f} GB "
                  f"(load average before: {load:.1f})", flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    ref = statistics.median(walls[modes[0]])
    for m in modes:
        wall = statistics.median(walls[m])
        peak = max(peaks[m])
        print(f"default run [{m}: {MODES[m]}]: median wall {wall:.1f} s "
              f"(goal <= {GOAL_S:.0f} s: {'met' if wall <= GOAL_S else 'NOT met'}), "
              f"peak RSS {peak / 1024**3:.2f} GB (goal <= 1.5 GB: "
              f"{'met' if peak <= GOAL_BYTES else 'NOT met'}), ratio to {modes[0]} "
              f"{wall / ref:.2f}, cpus {args.cores or os.cpu_count()}")
    if args.show_profile:
        print(text)


if __name__ == "__main__":
    main()
