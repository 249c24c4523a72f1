"""TWIST-CS 2.0: the customer-success key built from hand-written banks (issue 12).

`build` (generate.py) makes the Dataset; `write_key_2` writes it as a versioned key with its
sha256; `run_build` is what `twist build cs --version 2.0` does. The design, the label rules and
the test that enforces each are in docs/keys/twist-cs-2.0.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console

from twistbench.datasets.keyfile import encode_key, sha256_bytes, write_key
from twistbench.datasets.paths import cs2_key_path, repo_data_dir
from twistbench.itemgen.cs2.banks import Banks, load_banks
from twistbench.itemgen.cs2.generate import (
    CRISIS_KEY_FILE,
    DEFAULT_SEED,
    KEY_FILE,
    NAME,
    SIZES,
    VERSION,
    VERSION_CRISIS,
    build,
)
from twistbench.itemgen.cs2.report import surface_report
from twistbench.itemgen.gate import KeyGate
from twistbench.model import Dataset

# The gates measured on each key's content (issue 11 shortcut battery, separability audit), by
# key version: {"content_sha256", "measured_with", "shortcuts", "separability"}, written by
# scripts/record_cs2_gates.py. An entry counts only for exactly the content being written,
# measured with the battery revision and judge version the build runs with (measured_with).
GATES_RECORD = Path(__file__).with_name("gates_record.json")
GATE_META = ("gates", "separability", "gates_measured_on", "gates_measured_with")


def content_sha256(dataset: Dataset) -> str:
    """sha256 of the key as it would be written without its gate results: what they were
    measured on."""
    meta = {k: v for k, v in dataset.meta.items() if k not in GATE_META}
    payload = dataset.model_copy(update={"meta": meta}).model_dump(mode="json")
    return sha256_bytes(encode_key(NAME, dataset.version, payload))


def recorded_gates(dataset: Dataset, measured_with: Mapping[str, str] | None,
                   record: Path = GATES_RECORD) -> dict[str, Any] | None:
    """The record's entry for this dataset's version when it was measured on exactly this
    content with `measured_with` (battery revision, judge version); None otherwise (no entry,
    other content, another battery or judge, or measured_with unknown)."""
    if measured_with is None or not record.exists():
        return None
    entry = json.loads(record.read_text(encoding="utf-8")).get(dataset.version)
    if (entry is None or entry.get("content_sha256") != content_sha256(dataset)
            or entry.get("measured_with") != dict(measured_with)):
        return None
    return entry


def with_gate_record(dataset: Dataset, measured_with: Mapping[str, str] | None,
                     record: Path = GATES_RECORD,
                     shortcuts: dict[str, Any] | None = None) -> Dataset:
    """The dataset with its meta recording the gate results measured on its content.

    `shortcuts`: the shortcut battery's results just measured by the build's gate (they win over
    the record's); the separability audit is never run by a build, so it comes from the record
    only. Whatever was not measured on this content with `measured_with` says so instead of
    carrying stale figures."""
    digest = content_sha256(dataset)
    entry = recorded_gates(dataset, measured_with, record)
    unmeasured = {"passed": None, "note": f"not measured on this content (content sha256 {digest})"
                  f" with {dict(measured_with or {})}; run scripts/record_cs2_gates.py"}
    gates = shortcuts if shortcuts is not None else (entry["shortcuts"] if entry else unmeasured)
    measured = shortcuts is not None or entry is not None
    meta = {"gates": gates, "separability": entry["separability"] if entry else unmeasured,
            "gates_measured_on": digest if measured else None,
            "gates_measured_with": dict(measured_with or {}) if measured else None}
    return dataset.model_copy(update={"meta": {**dataset.meta, **meta}})


def key_path(include_crisis: bool = False) -> Path:
    """Where the committed 2.0 key lives (data/ in a checkout, twistbench/_data in a wheel)."""
    return cs2_key_path(include_crisis)


def write_dataset(out: Path, dataset: Dataset) -> str:
    """Write a built dataset as a versioned key (+ .sha256 beside it); return the sha256."""
    return write_key(out, name=NAME, version=dataset.version,
                     payload=dataset.model_dump(mode="json"))


def write_key_2(out: Path | None = None, seed: int = DEFAULT_SEED, include_crisis: bool = False,
                banks: Banks | None = None, *,
                measured_with: Mapping[str, str] | None = None) -> str:
    """Build TWIST-CS 2.0 and write it without running the gates; return the key file's sha256.
    The gate results come from the record when measured with `measured_with` (what
    validation.shortcuts.measured_with() says now). out None: data/ of the checkout."""
    ds = with_gate_record(build(seed=seed, include_crisis=include_crisis, banks=banks),
                          measured_with)
    if out is None:
        out = repo_data_dir() / (CRISIS_KEY_FILE if include_crisis else KEY_FILE)
    return write_dataset(out, ds)


def run_build(out: Path | None = None, seed: int = DEFAULT_SEED, include_crisis: bool = False,
              console: Any = None, *, gate: KeyGate | None = None) -> str:
    """What `twist build cs --version 2.0` does: build, check the key about to be written with
    `gate` (the CLI passes the shortcut audit, validation.shortcuts.BuildGate; a gate that raises
    leaves nothing written), write it with the gate's results and the recorded separability
    audit in its meta, print counts and the surface report (duplicates, lines used, channel
    mix). Returns the sha256."""
    console = console or Console()
    ds = build(seed=seed, include_crisis=include_crisis)
    shortcuts = gate.before_write(ds) if gate is not None else None
    measured_with = gate.measured_with() if gate is not None else None
    entry = recorded_gates(ds, measured_with)
    if shortcuts is not None and entry is not None and entry["shortcuts"] != shortcuts:
        console.print("[yellow]the shortcut results just measured differ from the record's "
                      "for this content[/yellow]: the key carries the new ones; re-record with "
                      "scripts/record_cs2_gates.py", highlight=False)
    ds = with_gate_record(ds, measured_with, shortcuts=shortcuts)
    if ds.meta["separability"].get("passed") is None:
        console.print("[yellow]separability audit: not measured on this content[/yellow] "
                      "(scripts/record_cs2_gates.py)", highlight=False)
    if out is None:
        out = repo_data_dir() / (CRISIS_KEY_FILE if include_crisis else KEY_FILE)
    digest = write_dataset(out, ds)
    beside = gate.after_write(out) if gate is not None else None
    if beside is not None:
        console.print(f"gates -> {beside}")
    console.print(f"[bold]{ds.version}[/bold] -> {out}  sha256 {digest}", highlight=False)
    console.print(", ".join(f"{k} {v}" for k, v in ds.counts().items()), highlight=False)
    console.print(surface_report(ds), markup=False, highlight=False)
    return digest


__all__ = [
    "CRISIS_KEY_FILE",
    "DEFAULT_SEED",
    "KEY_FILE",
    "NAME",
    "SIZES",
    "VERSION",
    "VERSION_CRISIS",
    "build",
    "content_sha256",
    "key_path",
    "load_banks",
    "recorded_gates",
    "run_build",
    "with_gate_record",
    "write_dataset",
    "write_key_2",
]
