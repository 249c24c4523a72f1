"""Measure the gates on both TWIST-CS 2.0 keys and write itemgen/cs2/gates_record.json.

For each key (plain, +crisis) as the generator builds it now: the shortcut battery (as
`twist build` runs it: run_gates with its shuffled-label control) and the separability audit with
the heuristic (`twist validate --with-heuristic`), both on the key file as written, so the figures
are those of exactly the content the record names. The record also names the battery revision
and judge version it was measured with (validation.shortcuts.measured_with); a build trusts an
entry only when all three match. Then rebuild the keys (`twist build cs -o data/twist-cs-2.0.json`
and `--include-crisis -o data/twist-cs-2.0-crisis.json`) so they carry the record. A key whose
bytes change needs its shipped vectors rewritten too: scripts/ship_key_vectors.py.

    .venv/bin/python scripts/record_cs2_gates.py [--out-dir runs/record-cs2]

Takes several minutes on two shared cores (four reference systems per key plus the battery).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from twistbench.datasets.registry import load_dataset_key
from twistbench.itemgen import cs2
from twistbench.validation.separability import ValidationReport, validate_dataset
from twistbench.validation.shortcuts import measured_with, run_gates


def separability_summary(report: ValidationReport) -> dict[str, Any]:
    """What a key records about its separability audit: the checks (values to three decimals),
    how many items flat RAG solves and the oracle fails, and whether every check held with no
    system error (the shortcut audit is recorded on its own)."""
    checks = {c.name: {"value": None if c.value is None else round(c.value, 3),
                       "target": c.target, "ok": c.ok} for c in report.checks}
    errors = sum(int(s.get("errors", 0)) for s in report.systems.values())
    return {"audit": "twistbench.validation.separability", "with_heuristic": True,
            "checks": checks, "flat_solved": len(report.flat_solved),
            "oracle_failed": len(report.oracle_failed), "system_errors": errors,
            "passed": all(c.ok is not False for c in report.checks) and errors == 0}


def measure(include_crisis: bool, out_dir: Path) -> tuple[str, dict[str, Any]]:
    built = cs2.build(include_crisis=include_crisis)
    key = out_dir / ("key-crisis.json" if include_crisis else "key.json")
    # the content the results are about, with no results in it: its sha256 (in the audit's
    # validation.md) is the record's content_sha256
    digest = cs2.write_dataset(key, built)
    if digest != cs2.content_sha256(built):
        raise SystemExit(f"{key}: sha256 {digest} is not the content sha256 the record would name")
    dataset = load_dataset_key(key)
    shortcuts = run_gates(dataset)  # as gate_for_build runs it
    separability = validate_dataset(dataset, out_dir / dataset.version, include_heuristic=True,
                                    shortcuts=False)
    entry = {"content_sha256": digest, "measured_with": measured_with(),
             "shortcuts": shortcuts.to_meta(), "separability": separability_summary(separability)}
    print(f"{dataset.version}: shortcuts {'PASS' if shortcuts.passed else 'FAIL'}, "
          f"separability {'PASS' if entry['separability']['passed'] else 'FAIL'} "
          f"({shortcuts.seconds:.0f} s battery)", flush=True)
    return dataset.version, entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=Path("runs/record-cs2"),
                        help="folder for the keys measured and the audit's run folders")
    parser.add_argument("--record", type=Path, default=cs2.GATES_RECORD)
    args = parser.parse_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    record = dict(measure(crisis, args.out_dir) for crisis in (False, True))
    args.record.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"record -> {args.record}")
    passed = all(e["shortcuts"]["passed"] and e["separability"]["passed"]
                 for e in record.values())
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
