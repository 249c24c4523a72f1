"""The check a key must pass before `twist build` writes it, as the item generators see it.

The generators may not import the checks (validation/ reaches the systems and the runner;
itemgen imports only datasets, judges and llm, ARCHITECTURE.md), so the CLI hands them one: the
shortcut audit, validation.shortcuts.BuildGate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from twistbench.model import Dataset


@runtime_checkable
class KeyGate(Protocol):
    def before_write(self, dataset: Dataset) -> dict[str, Any] | None:
        """Check the dataset the key is about to hold. Raise to refuse it (nothing is written);
        return what the key records as meta["gates"], or None when the key records nothing (a
        1.0 key, whose bytes stay those released)."""
        ...

    def measured_with(self) -> dict[str, str]:
        """What the gate's results depend on besides the key's content (the battery's revision,
        the judge's version): results recorded with other values are not this gate's."""
        ...

    def after_write(self, key_path: Path) -> Path | None:
        """The key is written at key_path: write what goes beside it and return its path, or
        None when nothing does."""
        ...
