"""What a run manifest records about the environment, and the configuration fingerprint."""

from __future__ import annotations

import platform
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import twistbench
from twistbench.runs.records import stable_hash

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
