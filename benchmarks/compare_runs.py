"""Compare two `twist run -o` roots: which files are byte-identical, and for every JSON and JSONL
file (item records, manifests, report.json) which fields differ, with how many values each.

A change that must not change results should leave only what measures the run itself: item
`latency_s`, manifest `started` / `ended` / `resources`, and the run folders' paths in
report.json. For example the default run with shipped and with computed vectors:
  python benchmarks/bench_default_run.py --embed-cache cold,shipped --keep-both /tmp/keep
  python benchmarks/compare_runs.py /tmp/keep/cold /tmp/keep/shipped

Run: .venv/bin/python benchmarks/compare_runs.py ROOT_A ROOT_B
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any


def walk(x: Any, y: Any, path: str, differ: Counter[str]) -> None:
    """Count, per field path (list positions dropped), the values that differ."""
    if isinstance(x, dict) and isinstance(y, dict):
        for k in x.keys() | y.keys():
            walk(x.get(k), y.get(k), f"{path}.{k}", differ)
    elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        for u, v in zip(x, y):
            walk(u, v, f"{path}[]", differ)
    elif x != y:
        differ[path or "."] += 1


def load(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return json.loads(text)


def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    a, b = Path(sys.argv[1]), Path(sys.argv[2])
    files_a = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
    files_b = {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    for rel in sorted(files_a ^ files_b):
        print(f"only in {a if rel in files_a else b}: {rel}")
    for rel in sorted(files_a & files_b):
        if (a / rel).read_bytes() == (b / rel).read_bytes():
            print(f"same bytes: {rel}")
        elif rel.suffix in (".json", ".jsonl"):
            differ: Counter[str] = Counter()
            walk(load(a / rel), load(b / rel), "", differ)
            fields = ", ".join(f"{k} ({n})" for k, n in sorted(differ.items()))
            print(f"differs: {rel}: {fields or 'formatting only'}")
        else:
            print(f"differs: {rel}")


if __name__ == "__main__":
    main()
