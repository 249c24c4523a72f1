"""One key per table: scores from different key versions are never put side by side.

Whitepaper §6.1: scores cite the key version. A key version is its name plus its sha256 (an
errata level or a LoCoMo audit changes both), so a table (a profile, a paired comparison) holds
runs of one sha256 only, and it states the version and sha256 under it. `require_one_key` is
the check every table calls before it is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from twistbench.errors import InputError


@dataclass(frozen=True)
class KeyRef:
    """Which key a run's scores come from: `who` is the run folder or system."""

    who: str
    version: str
    sha256: str

    def describe(self) -> str:
        return f"{self.version} (sha256 {self.sha256})"


def require_one_key(refs: Sequence[KeyRef]) -> KeyRef:
    """The one key of these runs; InputError naming the first run on another key."""
    if not refs:
        raise InputError("report", "no runs to report", expected="at least one run")
    first = refs[0]
    for ref in refs[1:]:
        if ref.sha256 != first.sha256:
            raise InputError(
                ref.who, f"run is on key {ref.describe()}, but {first.who} is on key "
                f"{first.describe()}: scores of different key versions are not put side by side",
                field="dataset.sha256", expected="runs on the same key version in one table")
    return first
