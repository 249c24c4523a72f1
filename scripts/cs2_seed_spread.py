"""The shortcut battery's gated values on TWIST-CS 2.0 built with other seeds: how far the committed
key's figures are from the spread of the generator (docs/keys/twist-cs-2.0.md, "Gate results").

    .venv/bin/python scripts/cs2_seed_spread.py [--seeds 1 2 3] [--json OUT]

Each seed: build the key in memory and run the battery without its shuffled-label control
(the gated values are the same with it; half the time). A few minutes per seed on two shared
cores.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from twistbench.itemgen import cs2
from twistbench.validation.shortcuts import measured_with, run_gates

SHOWN = ("A.text", "A.nontext", "B.text", "B.skeleton", "find.items", "C.most_recent", "C.first",
         "C.all", "D.masking", "surface.duplicates")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--json", type=Path, default=None, help="write the values here too")
    args = parser.parse_args(argv)
    rows: dict[str, dict[str, object]] = {}
    for seed in args.seeds:
        report = run_gates(cs2.build(seed=seed), control=False)
        meta = report.to_meta()
        rows[str(seed)] = {"passed": meta["passed"], "failures": meta["failures"],
                           **{c: [meta["checks"][c]["value"], meta["checks"][c].get("partner")]
                              for c in SHOWN}}
        cells = ", ".join(f"{c} {meta['checks'][c]['value']}"
                          + (f"/{meta['checks'][c]['partner']}" if c == "D.masking" else "")
                          for c in SHOWN)
        print(f"seed {seed}: {'PASS' if meta['passed'] else 'FAIL ' + str(meta['failures'])}; "
              f"{cells}", flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps({"measured_with": measured_with(), "seeds": rows},
                                        indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
