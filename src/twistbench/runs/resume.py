"""Resuming a run folder: what is already finished, and whether the folder may be resumed.

A folder is resumed only when its manifest's fingerprint equals this run's (same dataset key,
system, options, tracks, judge); otherwise it is refused (InputError naming the first field that
differs) unless --force-new, which clears it.
"""

from __future__ import annotations

from typing import Any

from twistbench.errors import InputError
from twistbench.records import ItemRecord
from twistbench.runs.folder import RunFolder


def finished_items(folder: RunFolder, config: dict[str, Any], fingerprint: str,
                   force_new: bool) -> dict[str, ItemRecord]:
    """The records already in `folder` by item id ({} for a new or cleared folder)."""
    if folder.exists():
        old = folder.read_manifest()
        if old.get("fingerprint") != fingerprint and not force_new:
            raise InputError(str(folder.manifest_path),
                             "this folder holds a run with a different configuration "
                             f"(fingerprint {old.get('fingerprint')} vs {fingerprint}); "
                             "refusing to resume",
                             field=first_difference(old.get("config", {}), config),
                             expected="the same dataset, system, options and tracks, or "
                                      "--force-new to start over")
        if force_new:
            folder.clear()
            return {}
        folder.repair_tail()
        return {r.item_id: r for r in folder.records()}
    if folder.items_path.exists():
        if not force_new:
            raise InputError(str(folder.items_path), "items without a manifest; refusing to mix",
                             expected="an empty folder, a run folder, or --force-new")
        folder.clear()
    return {}


def first_difference(old: Any, new: Any, path: str = "") -> str | None:
    """The dotted path of the first field where two configurations differ (None if equal)."""
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new)):
            d = first_difference(old.get(k), new.get(k), f"{path}.{k}" if path else k)
            if d:
                return d
        return None
    return None if old == new else (path or "config")
