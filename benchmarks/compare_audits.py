"""Compare two `twist audit -o` folders: which files are byte-identical, and audit.json value by
value (the input paths of runs are skipped; floats that differ are listed with |difference|).

Used for before/after checks of audit changes that must not change results, e.g.
  python benchmarks/compare_audits.py before/ after/

Run: .venv/bin/python benchmarks/compare_audits.py DIR_A DIR_B
"""

from __future__ import annotations

import filecmp
import json
import sys
from pathlib import Path
from typing import Any

INPUT_PATH_KEYS = ("lineage", "traces")  # where each run was read from: differs by design


def walk(x: Any, y: Any, path: str, floats: list[tuple[float, str, float, float]],
         other: list[str]) -> None:
    if isinstance(x, dict) and isinstance(y, dict) and x.keys() == y.keys():
        for k in x:
            if k in INPUT_PATH_KEYS and isinstance(x[k], str):
                continue
            walk(x[k], y[k], f"{path}/{k}", floats, other)
    elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        for i, (u, v) in enumerate(zip(x, y)):
            walk(u, v, f"{path}[{i}]", floats, other)
    elif isinstance(x, float) and isinstance(y, float):
        if x != y:
            floats.append((abs(x - y), path, x, y))
    elif x != y:
        other.append(path)


def main() -> None:
    a, b = Path(sys.argv[1]), Path(sys.argv[2])
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    differ = [str(f) for f in files if not (b / f).is_file()
              or not filecmp.cmp(a / f, b / f, shallow=False)]
    print(f"{len(files) - len(differ)} of {len(files)} files byte-identical; differ: {differ}")
    floats: list[tuple[float, str, float, float]] = []
    other: list[str] = []
    walk(json.loads((a / "audit.json").read_text()), json.loads((b / "audit.json").read_text()),
         "", floats, other)
    print(f"audit.json: {len(other)} non-float values differ {other[:5]}; {len(floats)} floats "
          f"differ, max |difference| {max(floats)[0] if floats else 0:.1e}, in fields "
          f"{sorted({p.rsplit('/', 1)[-1] for _, p, _, _ in floats})}")


if __name__ == "__main__":
    main()
