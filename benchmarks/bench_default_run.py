"""Wall time and peak memory of the default run (`twist run` with no arguments).

That is: the TWIST-CS key, systems flat-rag, fact-rag, heuristic and oracle, every track, then
the profile (what `make run` does). Each repetition runs the `twist` command in a fresh process
into a fresh folder, so nothing is resumed and model loading is included. Printed: the median
wall time, the median CPU time (user + system) and the peak resident memory of the child
process (ru_maxrss), beside the goals (issue 18: <= 20 s wall and <= 1 GB on 2 cores), and the
1-minute load average before each run. Other processes on the machine slow the wall time down;
the CPU time is what a load changes least, so compare that when the load is high.

--reference COMMIT runs, interleaved with the working tree's code, the code of that commit (its
`src/` and `data/`, exported with `git archive` into a scratch folder, `src/` put first on
PYTHONPATH, same interpreter and packages), so a change is measured against the code path it
replaced in the same session and load: the ratio of each median to the reference's is printed.
--keep-both DIR keeps the last run folder of each variant for comparing their results:
DIR/reference and DIR/current (one mode), DIR/<mode> without --reference (e.g. DIR/shipped and
DIR/cold: shipped against computed vectors), DIR/<code>-<mode> otherwise.

Embeddings come four ways, chosen per repetition and interleaved (--embed-cache): "shipped"
(the default of `twist run`: the key's committed vectors, data/embeddings/, with an empty cache
file), "off" (no shipped vectors, no disk cache: every distinct text embedded), "cold" (no
shipped vectors, an empty cache file: a machine's first run before vectors shipped) and "warm"
(no shipped vectors, a cache file an earlier, unmeasured run filled); the ratio of each median
to the first mode's is printed. TWIST_SHIPPED_VECTORS=0 is how the child is told to compute.

Run: .venv/bin/python benchmarks/bench_default_run.py [--repeats 3] [--cores 0,1]
                                                      [--embed-cache cold,shipped,warm]
                                                      [--reference COMMIT] [--keep-both DIR]
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

from working_tree import SRC, child_env

GOAL_S = 20.0
GOAL_BYTES = 1024**3
REPO = Path(__file__).resolve().parent.parent


def twist_command(src: Path | None) -> list[str]:
    exe = Path(sys.executable).parent / "twist"
    if exe.exists() and src is None:
        return [str(exe)]
    return [sys.executable, "-m", "twistbench.cli"]


def export_src(commit: str, into: Path) -> Path:
    """`src/` and `data/` (the committed keys, found beside `src/`) of `commit`, written under
    `into` (the repository itself is left as it is); returns the `src/` folder."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "src", "data"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def run_once(cores: str | None, keep: Path | None, embed_cache: str = "off",
             src: Path | None = None, shipped: bool = False,
             ) -> tuple[float, float, int, float, str]:
    """(wall seconds, CPU seconds, peak RSS bytes of the child, load average before, profile).

    embed_cache: the child's TWIST_EMBED_CACHE: "off", or a path to a cache file.
    shipped: whether the child may read the key's shipped vectors (TWIST_SHIPPED_VECTORS).
    src: a `src/` folder whose twistbench the child imports (None: this tree's).
    """
    out = Path(tempfile.mkdtemp(prefix="twist-default-"))
    cmd = twist_command(src) + ["run", "--out", str(out / "runs"), "--no-progress"]
    if cores:
        cmd = ["taskset", "-c", cores] + cmd
    env = child_env(src or SRC, TWIST_EMBED_CACHE=embed_cache,
                    TWIST_SHIPPED_VECTORS="1" if shipped else "0")
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
    if "running the built-in demo dataset" in stderr:  # a code without its data/ beside it
        raise SystemExit(f"the run found no committed key and ran the demo: {stderr[:400]}")
    if keep is not None:
        shutil.copytree(out, keep, dirs_exist_ok=True)
    shutil.rmtree(out, ignore_errors=True)
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss * 1024, load, stdout  # ru_maxrss is KiB on Linux


MODES = {
    "shipped": "the key's shipped vectors and an empty cache file (what `twist run` does)",
    "off": "no shipped vectors, no cache on disk (each run embeds every distinct text)",
    "cold": "no shipped vectors, an empty cache file (embeds every distinct text, and stores)",
    "warm": "no shipped vectors, a cache filled by an earlier run (nothing embedded)",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--cores", default=None, help="taskset CPU list for the child, e.g. 0,1")
    ap.add_argument("--keep", type=Path, default=None, help="copy the last run folder here")
    ap.add_argument("--show-profile", action="store_true", help="print the run's profile")
    ap.add_argument("--embed-cache", default="cold,shipped,warm",
                    help="comma list of " + ", ".join(f"{k}: {v}" for k, v in MODES.items()))
    ap.add_argument("--reference", default=None, metavar="COMMIT",
                    help="also run this commit's code, interleaved; ratios are against it")
    ap.add_argument("--keep-both", type=Path, default=None, metavar="DIR",
                    help="keep the last run of each variant under DIR: DIR/reference and "
                    "DIR/current with --reference and one mode, DIR/<mode> without --reference "
                    "(shipped against computed vectors), DIR/<code>-<mode> with both")
    args = ap.parse_args()
    modes = [m for m in args.embed_cache.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise SystemExit(f"--embed-cache: unknown mode(s) {unknown} (expected {list(MODES)})")

    scratch = Path(tempfile.mkdtemp(prefix="twist-embcache-"))
    codes: dict[str, Path | None] = {"current": None}
    if args.reference:
        codes = {"reference": export_src(args.reference, scratch), "current": None}
    variants = [(c, m) for m in modes for c in codes]  # the reference first: ratios against it
    warm_file = scratch / "warm.sqlite3"
    if "warm" in modes:  # filled once, not measured
        run_once(args.cores, None, str(warm_file))
    walls: dict[tuple[str, str], list[float]] = {v: [] for v in variants}
    cpus: dict[tuple[str, str], list[float]] = {v: [] for v in variants}
    peaks: dict[tuple[str, str], list[int]] = {v: [] for v in variants}
    loads: list[float] = []
    text = ""
    for i in range(args.repeats):
        for code, m in variants:  # interleaved, so every variant sees the same load over time
            cache = {"off": "off", "cold": str(scratch / f"cold-{code}-{i}.sqlite3"),
                     "shipped": str(scratch / f"shipped-{code}-{i}.sqlite3"),
                     "warm": str(warm_file)}[m]
            keep = args.keep
            if args.keep_both is not None:
                # DIR/current, DIR/reference; DIR/<mode> for one code; DIR/<code>-<mode> for both
                parts = [code] * (len(codes) > 1) + [m] * (len(modes) > 1 or len(codes) == 1)
                keep = args.keep_both / "-".join(parts)
            wall, cpu, peak, load, text = run_once(args.cores, keep, cache, codes[code],
                                                   shipped=m == "shipped")
            walls[(code, m)].append(wall)
            cpus[(code, m)].append(cpu)
            peaks[(code, m)].append(peak)
            loads.append(load)
            print(f"run {i + 1} [{code} {m}]: {wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS "
                  f"{peak / 1024**3:.2f} GB (load average before: {load:.1f})", flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    ref = variants[0]
    ref_wall, ref_cpu = statistics.median(walls[ref]), statistics.median(cpus[ref])
    for v in variants:
        code, m = v
        wall, cpu, peak = statistics.median(walls[v]), statistics.median(cpus[v]), max(peaks[v])
        print(f"default run [{code + ' ' if args.reference else ''}{m}: {MODES[m]}]: median wall "
              f"{wall:.1f} s (goal <= {GOAL_S:.0f} s: {'met' if wall <= GOAL_S else 'NOT met'}),"
              f" median CPU {cpu:.1f} s, peak RSS {peak / 1024**3:.2f} GB (goal <= "
              f"{GOAL_BYTES / 1024**3:.0f} GB: {'met' if peak <= GOAL_BYTES else 'NOT met'}), "
              f"ratio to {' '.join(ref)}: wall {wall / ref_wall:.2f}, CPU {cpu / ref_cpu:.2f}; "
              f"cpus {args.cores or os.cpu_count()}, load average {min(loads):.1f} to "
              f"{max(loads):.1f}")
    if args.show_profile:
        print(text)


if __name__ == "__main__":
    main()
