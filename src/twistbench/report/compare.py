"""Paired comparison of two runs on the same key: exact McNemar per item type.

Each track turns a run into per-item outcomes (`twistbench.tracks.item_outcomes`): 1/0 for binary
outcomes, oriented so that 1 is good (an arc detected, a hard negative left alone, a verdict
right, a current answer, a probe that did not leak, an emotional negative still recalled), and
the official score for LoCoMo questions. For every item type, on the items both runs answered
(errors on either side drop the item and are counted):
- b = items run 1 got right and run 2 did not, c = the reverse (for a LoCoMo F1 score: items
  where run 1 scored higher / lower: an exact sign test, McNemar's generalisation);
- p = exact two-sided binomial p-value of b against b + c; Holm-adjusted over the family.
An item type no item of which both runs answered (n = 0) is not a test: its p is None, it is
left out of the Holm family, and the table lists it apart. p-values below 1e-4 print as
"< 1e-4". Runs on different key sha256s are refused with an InputError.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from twistbench.contract import Capabilities
from twistbench.errors import InputError
from twistbench.model import Dataset
from twistbench.records import ItemRecord, read_manifest
from twistbench.report.keys import KeyRef, require_one_key
from twistbench.report.runs import capabilities_from_manifest, score_folder
from twistbench.stats import holm, mcnemar
from twistbench.tracks import item_outcomes
from twistbench.tracks.base import ItemOutcome

_SAME_KEY = "two runs on the same key (a paired test needs the same items)"


class PairedTest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    item_type: str
    n: int  # items both runs answered
    only_1: int  # items only in run 1 (error or missing in run 2)
    only_2: int
    mean_1: float | None
    mean_2: float | None
    b: int  # run 1 better
    c: int  # run 2 better
    p: float | None  # None: n == 0, nothing to test
    p_holm: float | None = None
    method: str = "exact McNemar"


class Comparison(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name_1: str
    name_2: str
    dataset: str
    key_sha256: str
    dataset_version: str = ""
    tests: list[PairedTest] = Field(default_factory=list)


def compare_outcomes(out1: list[ItemOutcome], out2: list[ItemOutcome], name_1: str, name_2: str,
                     dataset: str, key_sha256: str) -> Comparison:
    """Pure: paired tests per item type from two lists of per-item outcomes."""
    by1: dict[str, dict[str, ItemOutcome]] = defaultdict(dict)
    by2: dict[str, dict[str, ItemOutcome]] = defaultdict(dict)
    for o in out1:
        by1[o.item_type][o.item_id] = o
    for o in out2:
        by2[o.item_type][o.item_id] = o
    tests: list[PairedTest] = []
    for t in sorted(set(by1) | set(by2)):
        a, b_ = by1.get(t, {}), by2.get(t, {})
        common = sorted(set(a) & set(b_))
        binary = all(a[i].value in (0.0, 1.0) and b_[i].value in (0.0, 1.0) for i in common)
        b = sum(a[i].value > b_[i].value for i in common)
        c = sum(b_[i].value > a[i].value for i in common)
        tests.append(PairedTest(
            item_type=t, n=len(common), only_1=len(set(a) - set(b_)), only_2=len(set(b_) - set(a)),
            mean_1=(sum(a[i].value for i in common) / len(common)) if common else None,
            mean_2=(sum(b_[i].value for i in common) / len(common)) if common else None,
            b=b, c=c, p=mcnemar(b, c) if common else None,
            method=("no items both runs answered" if not common else "exact McNemar" if binary
                    else "exact sign test on per-item scores")))
    tested = [t for t in tests if t.p is not None]
    adj = holm({t.item_type: t.p for t in tested}) if tested else {}
    for t in tested:
        t.p_holm = adj[t.item_type]
    return Comparison(name_1=name_1, name_2=name_2, dataset=dataset, key_sha256=key_sha256,
                      tests=tests)


def compare_runs(dataset: Dataset, records_1: list[ItemRecord], caps_1: Capabilities,
                 records_2: list[ItemRecord], caps_2: Capabilities, *, key_1: str, key_2: str,
                 name_1: str = "run 1", name_2: str = "run 2") -> Comparison:
    """Paired McNemar per item type between two runs. Raises InputError unless both runs used
    the dataset's key (same sha256)."""
    for name, key in ((name_1, key_1), (name_2, key_2)):
        if key != dataset.key_sha256:
            raise InputError(name, f"run key sha256 {key} differs from {dataset.key_sha256}",
                             field="dataset.sha256",
                             expected=_SAME_KEY)
    cmp = compare_outcomes(item_outcomes(dataset, records_1, caps_1),
                           item_outcomes(dataset, records_2, caps_2), name_1, name_2,
                           dataset.name, dataset.key_sha256)
    cmp.dataset_version = dataset.version
    return cmp


def compare_folders(folder_1: str | Path, folder_2: str | Path, locomo: Path | None = None,
                    dataset: Dataset | None = None) -> Comparison:
    """`twist compare RUN1 RUN2`: load both run folders and compare them (no system is called).
    Refuses runs on different key sha256s before loading any dataset."""
    m1, m2 = read_manifest(folder_1), read_manifest(folder_2)
    k1 = (m1.get("dataset") or {}).get("sha256")
    k2 = (m2.get("dataset") or {}).get("sha256")
    require_one_key([KeyRef(str(f), str((m.get("dataset") or {}).get("version")),
                            str((m.get("dataset") or {}).get("sha256")))
                     for f, m in ((folder_1, m1), (folder_2, m2))])
    e1, ds, recs1 = score_folder(folder_1, dataset=dataset, locomo=locomo)
    e2, _, recs2 = score_folder(folder_2, dataset=ds, locomo=locomo)
    return compare_runs(ds, recs1, capabilities_from_manifest(m1, str(folder_1)), recs2,
                        capabilities_from_manifest(m2, str(folder_2)), key_1=k1, key_2=k2,
                        name_1=e1.system, name_2=e2.system)


def fmt_p(p: float | None) -> str:
    """'0.0312', '< 1e-4', or '—' when there was nothing to test."""
    if p is None:
        return "—"
    return "< 1e-4" if p < 1e-4 else f"{p:.4f}"


def render_comparison(cmp: Comparison, digits: int = 3) -> str:
    """Markdown table: per item type n, means, b / c, p and Holm-adjusted p; item types no item
    of which both runs answered are listed under it, not as tests."""
    lines = [f"## Paired comparison — {cmp.name_1} vs {cmp.name_2} on {cmp.dataset}", "",
             f"| item type | n | {cmp.name_1} | {cmp.name_2} | b (1 better) | c (2 better) | p | "
             "p (Holm) | test |", "|---|---|---|---|---|---|---|---|---|"]

    def f(x: float | None) -> str:
        return "—" if x is None else f"{x:.{digits}f}"

    untested = []
    for t in cmp.tests:
        if t.p is None:
            untested.append(f"{t.item_type} (only {cmp.name_1}: {t.only_1}, only "
                            f"{cmp.name_2}: {t.only_2})")
            continue
        lines.append(f"| {t.item_type} | {t.n} | {f(t.mean_1)} | {f(t.mean_2)} | {t.b} | {t.c} | "
                     f"{fmt_p(t.p)} | {fmt_p(t.p_holm)} | {t.method} |")
    lines += [""]
    if untested:
        lines += ["Not compared (no item of the type answered by both runs): "
                  + "; ".join(untested) + ".", ""]
    lines += [f"Key {cmp.dataset_version} · sha256 `{cmp.key_sha256}`. Items either run "
              "failed on are left out (counted as only_1 / only_2 in the JSON). Holm's "
              "adjustment is over the item types compared."]
    return "\n".join(lines) + "\n"
