"""Shortcut audit wall time per key (prints medians; never asserted in tests).

For each key, `run_gates` (the whole battery, shuffled-label control included: what `twist
validate --shortcuts` and `twist build` run) is timed --repeats times in this one process;
printed: median, min and max wall seconds, the median process CPU seconds, and the per-step
split of the median run. Key loading is not timed. The first run also pays for loading presidio
(spaCy) once per process; the median hides it and the max shows it.
Goal: under 2 minutes per key on 2 cores.

Run: .venv/bin/python benchmarks/bench_shortcuts.py [--key twist-cs-1.0] [--key twist-locomo-1.0]
     [--locomo ../shared/data/locomo/locomo10.json] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from twistbench.datasets.paths import shared_data_dir
from twistbench.datasets.registry import DatasetOptions, load_dataset
from twistbench.validation import shortcuts


def _timed_steps() -> dict[str, float]:
    """Wrap each check function of the battery to record its wall time."""
    spent: dict[str, float] = {}
    for name in ("check_track_a", "check_track_b", "check_candidates", "check_track_c",
                 "check_track_d", "check_surface"):
        fn = getattr(shortcuts, name)

        def wrapped(*a, _fn=fn, _name=name, **kw):
            t = time.perf_counter()
            try:
                return _fn(*a, **kw)
            finally:
                spent[_name] = spent.get(_name, 0.0) + time.perf_counter() - t

        setattr(shortcuts, name, wrapped)
    return spent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--key", action="append", help="dataset name or key file (repeatable)")
    ap.add_argument("--locomo", type=Path,
                    default=shared_data_dir() / "locomo" / "locomo10.json")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    keys = args.key or ["twist-cs-1.0", "twist-locomo-1.0"]
    spent = _timed_steps()
    print(f"cores visible: {os.cpu_count()}; repeats: {args.repeats}")
    for key in keys:
        ds = load_dataset(key, DatasetOptions(locomo=args.locomo))
        walls, cpus, splits = [], [], []
        for _ in range(args.repeats):
            spent.clear()
            t, c = time.perf_counter(), time.process_time()
            rep = shortcuts.run_gates(ds)
            walls.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
            splits.append(dict(spent))
        med = statistics.median(walls)
        split = splits[walls.index(sorted(walls)[len(walls) // 2])]
        print(f"{ds.version}: {ds.counts()['events']} turns, battery wall median {med:.1f} s "
              f"(min {min(walls):.1f}, max {max(walls):.1f}), CPU median "
              f"{statistics.median(cpus):.1f} s; {len(rep.failures())} of "
              f"{sum(c.passed is not None for c in rep.checks)} gates fail")
        print("  " + ", ".join(f"{k.removeprefix('check_')} {v:.1f} s" for k, v in split.items()))
        if line := rep.nonconverged_line():
            print("  " + line)


if __name__ == "__main__":
    main()
