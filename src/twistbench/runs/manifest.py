"""The run manifest: the configuration (and its fingerprint), the environment, the counts."""

from __future__ import annotations

import platform
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import twistbench
from twistbench.model import Dataset
from twistbench.records import ItemRecord, stable_hash
from twistbench.runs.folder import Redactor
from twistbench.wire import CONTRACT_VERSION

SCHEMA_VERSION = "twist-run/1"
_PACKAGES = ("pydantic", "numpy", "scipy", "bm25s", "onnxruntime", "tokenizers", "nltk",
             "presidio-analyzer", "typer", "rich")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def git_commit() -> str | None:
    """The commit of the twistbench checkout we run from, if it is one."""
    here = Path(twistbench.__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                           capture_output=True, text=True, timeout=5, check=False)
    commit = out.stdout.strip()
    return commit + ("+dirty" if dirty.stdout.strip() else "")


def package_versions() -> dict[str, str]:
    out = {}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def environment() -> dict[str, Any]:
    return {
        "twistbench_version": twistbench.__version__,
        "git_commit": git_commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": package_versions(),
    }


def fingerprint(config: dict[str, Any]) -> str:
    """Hash of everything that changes what a run's items mean. Secrets are redacted before this,
    so a rotated API key does not refuse a resume, and the hash reveals nothing about a key."""
    return stable_hash(config)[:16]


def input_hashes(dataset: Dataset) -> dict[str, str]:
    """sha256 of every input file the dataset was built from (the key, locomo10.json, an errata
    file), so that a resume over a different input file is refused, not mixed."""
    out = {"key": dataset.key_sha256}
    report = dataset.meta.get("locomo_report")
    locomo = dataset.meta.get("locomo_sha256") or (report or {}).get("sha256")
    if isinstance(locomo, str):
        out["locomo10.json"] = locomo
    errata = dataset.meta.get("errata")
    if isinstance(errata, dict):
        for fld in ("sha256", "file_sha256"):
            if isinstance(errata.get(fld), str):
                out["errata"] = errata[fld]
                break
    return out


def run_config(dataset: Dataset, system_name: str, system_spec: str, system_config: dict[str, Any],
               plan: dict[str, str], conversations: Sequence[str] | None, seed: int,
               judge: dict[str, Any], redactor: Redactor,
               answerer: dict[str, Any] | None = None,
               embedder: str | None = None) -> dict[str, Any]:
    """The part of the manifest that the fingerprint covers (the answerer of memories too; the
    embedder's model id when --embedder chose another than the built-in model, whose runs
    predate the field: another embedder's vectors give another run, never a resumed one)."""
    config = {
        "dataset": {"name": dataset.name, "version": dataset.version,
                    "sha256": dataset.key_sha256, "inputs": input_hashes(dataset)},
        "system": {"name": system_name, "spec": system_spec, "config": system_config},
        "tracks": plan,
        "conversations": list(conversations) if conversations else None,
        "seed": seed,
        "judge": judge,
        "answerer": answerer,
    }
    if embedder is not None:
        config["embedder"] = embedder
    return redactor.config(config)


def start_manifest(config: dict[str, Any], dataset: Dataset, dataset_source: dict[str, Any],
                   capabilities: dict[str, bool], gold_channel: bool, seed: int,
                   timeouts: dict[str, float], resumed_from_items: int) -> dict[str, Any]:
    """The manifest written when a run starts (status "running"); `finish_manifest` closes it."""
    return {
        "schema_version": SCHEMA_VERSION,
        **environment(),
        "config": config,
        # source: how to load the dataset again for `twist report` (not fingerprinted: paths
        # differ between machines; the sha256 is what identifies the key).
        "dataset": {**config["dataset"], "counts": dataset.counts(), "source": dataset_source},
        # contract: the version of the system contract (the HTTP wire's `Twist-Contract`).
        "system": {**config["system"], "capabilities": capabilities, "gold_channel": gold_channel,
                   "contract": CONTRACT_VERSION},
        "tracks": config["tracks"],
        "seeds": {"run": seed},
        "judge": config["judge"],
        "answerer": config.get("answerer"),
        "timeouts": timeouts,
        "fingerprint": fingerprint(config),
        "started": now_iso(),
        "ended": None,
        "status": "running",
        "resumed_from_items": resumed_from_items,
    }


def finish_manifest(manifest: dict[str, Any], status: str, records: list[ItemRecord],
                    new: int, skipped: int, replay_failures: int) -> dict[str, int]:
    """Close the manifest: end time, status and counts. Returns the errors per track."""
    by_track: dict[str, int] = {}
    answered = 0
    for r in records:
        if r.error is not None:
            by_track[r.track] = by_track.get(r.track, 0) + 1
        answer = (r.output or {}).get("answer")
        if isinstance(answer, dict) and answer.get("retrieved") is not None:
            answered += 1
    manifest.update({
        "ended": now_iso(),
        "status": status,
        "counts": {"items": len(records), "errors": sum(by_track.values()),
                   "errors_by_track": by_track, "new_items": new, "skipped": skipped,
                   "replay_failures": replay_failures, "answered_from_memories": answered},
    })
    return by_track
