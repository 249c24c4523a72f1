"""Shared pieces of the annotation tests: the committed TWIST-CS key, an exported packet, and
answer files written as an annotator would (CSV or the form's JSON)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from twistbench.annotate.packet import ANSWERS_FORMAT
from twistbench.datasets.paths import cs_key_path
from twistbench.datasets.twist_cs import load_cs_dataset
from twistbench.model import Dataset

KEY = cs_key_path()


def cs_dataset() -> Dataset:
    return load_cs_dataset()


def manifest_of(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "manifest.json").read_text())


def gold_choice(manifest: dict[str, Any], item: str) -> str:
    """The choice code that gives the key's answer for this item."""
    info = manifest["items"][item]
    return next(code for code, cat in info["choices"].items() if cat == info["gold"])


def other_choice(manifest: dict[str, Any], item: str, category: str | None = None) -> str:
    """A choice that is not the key's answer (the one for `category` when given)."""
    info = manifest["items"][item]
    for code, cat in info["choices"].items():
        if (category is None and cat != info["gold"] and cat != "cannot_tell") or cat == category:
            return code
    raise KeyError(category)


def write_answers(folder: Path, manifest: dict[str, Any], annotator: str,
                  choose: dict[str, str] | None = None, fmt: str = "json",
                  notes: dict[str, str] | None = None, **override: Any) -> Path:
    """An answer file of `annotator`: the key's answer for every item unless `choose` (item id
    -> choice code) says otherwise. `override` replaces header fields (packet, key_version ...)."""
    choose, notes = choose or {}, notes or {}
    key = manifest["key"]
    head = {"packet": manifest["packet"], "annotator": annotator, "key_version": key["version"],
            "key_sha256": key["sha256"], **override}
    mine = manifest["annotators"][override.get("codes_of", annotator)]
    codes = [(c, mine["codes"][c]) for c in mine["order"]]
    rows = [{"seq": i + 1, "code": code, "answer": choose.get(item, gold_choice(manifest, item)),
             "note": notes.get(item, "")} for i, (code, item) in enumerate(codes)]
    head.pop("codes_of", None)
    path = folder / f"answers-{annotator}.{fmt}"
    if fmt == "json":
        path.write_text(json.dumps({"format": ANSWERS_FORMAT, **head, "answers": rows}))
    else:
        with path.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=[*head, "seq", "code", "answer", "note"])
            w.writeheader()
            for r in rows:
                w.writerow({**head, **r})
    return path
