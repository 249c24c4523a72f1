"""Wall time and peak memory of the default run (`twist run` with no arguments).

That is: the TWIST-CS key, systems flat-rag, fact-rag, heuristic and oracle, every track, then
the profile (what `make run` does). Each repetition runs the `twist` command in a fresh process
into a fresh folder, so nothing is resumed and model loading is included. Printed: the median
wall time and the peak resident memory of the child process (ru_maxrss), beside the goals
(<= 60 s and <= 1.5 GB on 2 cores), and the 1-minute load average before each run (other
processes on the machine slow everything down; compare figures taken at a low load).

Run: .venv/bin/python benchmarks/bench_default_run.py [--repeats 3] [--cores 0,1]
     --cores pins the child to those CPUs with taskset (to emulate a 2-core machine).
"""

from __future__ import annotations

import argparse
import os
import resource
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


def run_once(cores: str | None, keep: Path | None) -> tuple[float, int, float, str]:
    """(wall seconds, peak RSS bytes of the child, load average before, profile text)."""
    out = Path(tempfile.mkdtemp(prefix="twist-default-"))
    cmd = twist_command() + ["run", "--out", str(out / "runs"), "--no-progress"]
    if cores:
        cmd = ["taskset", "-c", cores] + cmd
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"twist run failed with exit code {proc.returncode}")
    if keep is not None:
        shutil.copytree(out, keep, dirs_exist_ok=True)
    shutil.rmtree(out, ignore_errors=True)
    # ru_maxrss of RUSAGE_CHILDREN is the largest child so far (KiB on Linux); with one child
    # per repetition a later, smaller run would report the earlier peak, so report the max.
    return wall, max(peak_kib, before) * 1024, load, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--cores", default=None, help="taskset CPU list for the child, e.g. 0,1")
    ap.add_argument("--keep", type=Path, default=None, help="copy the last run folder here")
    ap.add_argument("--show-profile", action="store_true", help="print the run's profile")
    args = ap.parse_args()

    walls, peaks, loads = [], [], []
    text = ""
    for i in range(args.repeats):
        wall, peak, load, text = run_once(args.cores, args.keep)
        walls.append(wall)
        peaks.append(peak)
        loads.append(load)
        print(f"run {i + 1}: {wall:.1f} s, peak RSS {peak / 1024**3:.2f} GB "
              f"(load average before: {load:.1f})", flush=True)
    wall = statistics.median(walls)
    peak = max(peaks)
    print(f"default run (TWIST-CS, flat-rag + fact-rag + heuristic + oracle, all tracks): "
          f"median wall {wall:.1f} s (goal <= {GOAL_S:.0f} s: "
          f"{'met' if wall <= GOAL_S else 'NOT met'}), "
          f"peak RSS {peak / 1024**3:.2f} GB (goal <= 1.5 GB: "
          f"{'met' if peak <= GOAL_BYTES else 'NOT met'}), cpus {args.cores or os.cpu_count()}")
    if args.show_profile:
        print(text)


if __name__ == "__main__":
    main()
