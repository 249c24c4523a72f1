"""The surface report of a TWIST-CS 2.0 key: what `twist build cs --version 2.0` prints.

Exact-duplicate turns (issue 11 gate 7: at most 5% of all turns, background included), the
channel mix of item turns, and per family how many distinct bank lines its items use and the
most frequent one.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from twistbench.model import Dataset

DUPLICATE_MAX = 0.05


def duplicate_share(ds: Dataset) -> float:
    """Share of turns whose text equals another turn's text (whole key)."""
    texts = [e.text for c in ds.conversations for e in c.events]
    cnt = Counter(texts)
    return sum(n for n in cnt.values() if n > 1) / max(1, len(texts))


def family_lines(ds: Dataset) -> dict[str, dict[str, Any]]:
    """Per item family: items, distinct bank lines behind their target turns, the most used."""
    rows: dict[str, list[str]] = {}
    for a in ds.reversal_arcs:
        rows.setdefault(f"A reversal/{a.family}", []).append(a.meta["target_line"])
    for h in ds.hard_negative_arcs:
        rows.setdefault(f"A hard_negative/{h.family}", []).append(h.meta["target_line"])
    for d in ds.drafts:
        rows.setdefault(f"B {d.label}/{d.family}", []).append(d.meta["draft_line"])
    for ch in ds.update_chains:
        rows.setdefault(f"C {ch.family}", []).extend(ch.meta["lines"])
    for p in ds.pii_plants:
        rows.setdefault(f"D plant/{p.meta['form']}", []).append(p.meta["line"])
    for n in ds.emotional_negatives:
        rows.setdefault(f"D control/{n.meta['family']}", []).append(n.meta["line"])
    out = {}
    for fam, lines in sorted(rows.items()):
        top, k = Counter(lines).most_common(1)[0]
        out[fam] = {"items": len(lines), "distinct": len(set(lines)), "top": top, "top_n": k}
    return out


def surface_report(ds: Dataset) -> str:
    dup = duplicate_share(ds)
    lines = [f"exact-duplicate turns: {dup:.3f} (gate <= {DUPLICATE_MAX})", "",
             f"{'family':<40} {'items':>5} {'lines':>5}  most used"]
    for fam, r in family_lines(ds).items():
        lines.append(f"{fam:<40} {r['items']:>5} {r['distinct']:>5}  {r['top']} x{r['top_n']}")
    return "\n".join(lines)
