"""TWIST-CS 2.0: the customer-success key built from hand-written banks (issue 12).

`build` (generate.py) makes the Dataset; `write_key_2` writes it as a versioned key with its
sha256; `run_build` is what `twist build cs --version 2.0` does. The design, the label rules and
the test that enforces each are in docs/keys/twist-cs-2.0.md.
"""

from __future__ import annotations

import json
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
from twistbench.model import Dataset

# The gates measured on each key's content (issue 11 shortcut battery, separability audit), by
# key version: {"content_sha256", "shortcuts", "separability"}. The build copies an entry into
# the key's meta only when it was measured on exactly the content being written.
GATES_RECORD = Path(__file__).with_name("gates_record.json")
GATE_META = ("gates", "separability", "gates_measured_on")


def content_sha256(dataset: Dataset) -> str:
    """sha256 of the key as it would be written without its gate results: what they were
    measured on."""
    meta = {k: v for k, v in dataset.meta.items() if k not in GATE_META}
    payload = dataset.model_copy(update={"meta": meta}).model_dump(mode="json")
    return sha256_bytes(encode_key(NAME, dataset.version, payload))


def with_gate_record(dataset: Dataset, record: Path = GATES_RECORD) -> Dataset:
    """The dataset with its meta recording the gate results measured on its content; a key
    whose content was never measured (another seed, changed banks) says so instead."""
    digest = content_sha256(dataset)
    entries = json.loads(record.read_text(encoding="utf-8")) if record.exists() else {}
    entry = entries.get(dataset.version)
    if entry is not None and entry["content_sha256"] == digest:
        gates = {"gates": entry["shortcuts"], "separability": entry["separability"],
                 "gates_measured_on": digest}
    else:
        unmeasured = {"passed": None, "note": "not measured on this content (content sha256 "
                      f"{digest}); run the shortcut battery and `twist validate` on it"}
        gates = {"gates": unmeasured, "separability": unmeasured, "gates_measured_on": None}
    return dataset.model_copy(update={"meta": {**dataset.meta, **gates}})


def key_path(include_crisis: bool = False) -> Path:
    """Where the committed 2.0 key lives (data/ in a checkout, twistbench/_data in a wheel)."""
    return cs2_key_path(include_crisis)


def write_dataset(out: Path, dataset: Dataset) -> str:
    """Write a built dataset as a versioned key (+ .sha256 beside it); return the sha256."""
    return write_key(out, name=NAME, version=dataset.version,
                     payload=dataset.model_dump(mode="json"))


def write_key_2(out: Path | None = None, seed: int = DEFAULT_SEED, include_crisis: bool = False,
                banks: Banks | None = None) -> str:
    """Build TWIST-CS 2.0 and write it; return the key file's sha256. out None: data/ of the
    checkout."""
    ds = with_gate_record(build(seed=seed, include_crisis=include_crisis, banks=banks))
    if out is None:
        out = repo_data_dir() / (CRISIS_KEY_FILE if include_crisis else KEY_FILE)
    return write_dataset(out, ds)


def run_build(out: Path | None = None, seed: int = DEFAULT_SEED, include_crisis: bool = False,
              console: Any = None) -> str:
    """What `twist build cs --version 2.0` does: build, write, print counts and the surface
    report (duplicates, lines used, channel mix). Returns the sha256."""
    console = console or Console()
    ds = with_gate_record(build(seed=seed, include_crisis=include_crisis))
    if out is None:
        out = repo_data_dir() / (CRISIS_KEY_FILE if include_crisis else KEY_FILE)
    digest = write_dataset(out, ds)
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
    "run_build",
    "with_gate_record",
    "write_dataset",
    "write_key_2",
]
