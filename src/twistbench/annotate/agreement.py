"""`twist annotate agreement`: how far independent annotators agree, and what goes to the
adjudicator.

Per track and per family (the generator's item kind): raw agreement (the share of agreeing
rater pairs per item, averaged), kappa (Cohen's for two annotators, Fleiss' for more; the
formulas are in stats.py and cross-checked against scikit-learn and statsmodels), a 95%
interval from the project's cluster bootstrap (whole conversations are resampled: items of one
conversation share people and history), confusion tables for every pair of annotators, and each
annotator against the key.

The threshold (whitepaper §6.1: items below kappa 0.8 "category agreement" are dropped) is
applied per family with the family's observed agreement against the chance agreement of its
whole track: kappa_family = (p_o(family) - p_e(track)) / (1 - p_e(track)). Why not the family's
own kappa: every family of our keys has one gold label (a hard-negative family is all
`no_tension`), so within a family the raters' marginals are nearly all one category and the
family's own kappa collapses towards 0 (or is undefined) at the first disagreement however well
annotators agree (the prevalence paradox of kappa). Chance agreement is a property of the track's
label scheme and of how the annotators use it, so it is estimated over the track; a family's
kappa so defined averages, weighted by items, to the track's kappa (tested). The family's own
kappa is reported beside it. A family whose chance agreement is 1 (every answer in the track one
label) has perfect observed agreement, and passes.

The adjudication queue holds every item where the annotators disagree with each other or with
the key, with what each answered and noted, the key's answer, and whether its family passed
(items of a failing family are dropped whatever the adjudicator says, so they need no decision).
A sampled round (`export --sample`, a pilot) reports the same figures but drops no family: a
family's agreement on a few of its items is no ground to drop the ones nobody annotated.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from twistbench.annotate.answers import RaterAnswers
from twistbench.annotate.labels import TRACKS, category_order
from twistbench.datasets.keyfile import atomic_write_bytes
from twistbench.defaults import DEFAULT_MIN_KAPPA
from twistbench.errors import InputError
from twistbench.stats import (
    cluster_bootstrap_sums,
    cohen_kappa,
    cohen_parts,
    fleiss_parts,
    fleiss_sums,
    kappa_from_parts,
)

QUEUE_FORMAT = "twist-adjudication-queue/1"
QUEUE_CSV_COLUMNS = ["queue_id", "item", "track", "family", "why", "key_answer", "answers",
                     "notes", "family_passes", "needs_decision", "item_text", "decision",
                     "new_label", "evidence", "decision_reason"]


@dataclass
class Figures:
    """Agreement over one group of items (a track, or a family within it)."""

    group: str
    n: int
    raw: float
    kappa: float  # the group's own kappa (Cohen / Fleiss)
    kappa_ci: tuple[float, float] | None
    categories: list[str]
    confusion: dict[str, list[list[int]]]  # "r1 x r2" -> rows r1, columns r2
    kappa_track: float | None = None  # families: against the track's chance agreement
    kappa_track_ci: tuple[float, float] | None = None
    passes: bool | None = None
    vs_key: dict[str, dict[str, float]] = field(default_factory=dict)


@dataclass
class AgreementResult:
    packet: str
    key: dict[str, str]
    annotators: list[str]
    method: str  # "cohen" | "fleiss"
    threshold: float
    tracks: dict[str, Figures]
    families: dict[str, Figures]
    queue: list[dict[str, Any]]
    items: int
    sampled: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"packet": self.packet, "key": self.key, "annotators": self.annotators,
                "method": self.method, "threshold": self.threshold, "items": self.items,
                "tracks": {k: _jsonable(asdict(v)) for k, v in self.tracks.items()},
                "families": {k: _jsonable(asdict(v)) for k, v in self.families.items()},
                "queue": len(self.queue), "sampled": self.sampled}


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    return obj


class _Kappa:
    """Additive sufficient statistics of one kappa (Cohen for 2 raters, Fleiss for more) over
    K categories, and (p_o, p_e) of pooled sums."""

    def __init__(self, raters: int, categories: list[str]):
        self.m, self.cats = raters, categories
        self.index = {c: i for i, c in enumerate(categories)}
        k = len(categories)
        self.size = k * k if raters == 2 else 2 + k

    def of(self, labels: Sequence[Sequence[str]]) -> np.ndarray:
        k = len(self.cats)
        if not labels:
            return np.zeros(self.size)
        if self.m == 2:
            conf = np.zeros((k, k))
            for a, b in labels:
                conf[self.index[a], self.index[b]] += 1
            return conf.ravel()
        counts = np.zeros((len(labels), k))
        for i, row in enumerate(labels):
            for lab in row:
                counts[i, self.index[lab]] += 1
        return fleiss_sums(counts)

    def parts(self, sums: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = len(self.cats)
        if self.m == 2:
            return cohen_parts(np.asarray(sums).reshape(*np.shape(sums)[:-1], k, k))
        return fleiss_parts(sums, self.m)


def _interval(per_cluster: dict[str, np.ndarray],
              stat: Callable[[np.ndarray], np.ndarray]) -> tuple[float, float] | None:
    return cluster_bootstrap_sums({c: list(v) for c, v in per_cluster.items()}, stat)


def _confusions(rows: list[dict[str, Any]], raters: list[str], cats: list[str]
                ) -> dict[str, list[list[int]]]:
    index = {c: i for i, c in enumerate(cats)}
    out = {}
    for a, b in combinations(raters, 2):
        m = [[0] * len(cats) for _ in cats]
        for r in rows:
            m[index[r["labels"][a]]][index[r["labels"][b]]] += 1
        out[f"{a} x {b}"] = m
    return out


def _figures(group: str, rows: list[dict[str, Any]], raters: list[str], cats: list[str],
             track_rows: list[dict[str, Any]] | None = None) -> Figures:
    kap = _Kappa(len(raters), cats)

    def labels(rs: list[dict[str, Any]]) -> list[list[str]]:
        return [[r["labels"][a] for a in raters] for r in rs]

    by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_conv[r["conversation"]].append(r)
    own = {c: kap.of(labels(rs)) for c, rs in by_conv.items()}
    p_o, p_e = kap.parts(sum(own.values()))
    kappa = float(kappa_from_parts(p_o, p_e))

    def own_stat(p: np.ndarray) -> np.ndarray:
        return kappa_from_parts(*kap.parts(p))

    fig = Figures(group=group, n=len(rows), raw=float(p_o), kappa=kappa,
                  kappa_ci=_interval(own, own_stat), categories=cats,
                  confusion=_confusions(rows, raters, cats))
    for a in raters:
        got = [r["labels"][a] for r in rows]
        gold = [r["gold"] for r in rows]
        fig.vs_key[a] = {"accuracy": sum(x == y for x, y in zip(got, gold)) / len(rows),
                         "kappa": cohen_kappa(got, gold, cats)}
    if track_rows is not None:
        track_by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in track_rows:
            track_by_conv[r["conversation"]].append(r)
        joint = {c: np.concatenate([kap.of(labels(by_conv.get(c, []))), kap.of(labels(rs))])
                 for c, rs in track_by_conv.items()}
        size = kap.size

        def track_stat(p: np.ndarray) -> np.ndarray:
            return kappa_from_parts(kap.parts(p[..., :size])[0], kap.parts(p[..., size:])[1])

        total = sum(joint.values())
        fig.kappa_track = float(track_stat(total[None, :])[0])
        fig.kappa_track_ci = _interval(joint, track_stat)
    return fig


def passes(fig: Figures, threshold: float) -> bool:
    """A family passes when its kappa (against its track's chance agreement) reaches the
    threshold; an undefined kappa means every answer was one label: perfect agreement."""
    k = fig.kappa_track if fig.kappa_track is not None else fig.kappa
    if k is None or math.isnan(k):
        return fig.raw >= 1.0
    return k >= threshold - 1e-12


def compute_agreement(manifest: dict[str, Any], raters: list[RaterAnswers],
                      threshold: float = DEFAULT_MIN_KAPPA) -> AgreementResult:
    """Agreement of these annotators' answers (all of one packet) and the adjudication queue."""
    if len(raters) < 2:
        raise InputError("answers", f"{len(raters)} answer file", expected="two or more")
    ids = [r.annotator for r in raters]
    dup = sorted({a for a in ids if ids.count(a) > 1})
    if dup:
        raise InputError(raters[ids.index(dup[0]) + 1].path, f"a second answer file of "
                         f"annotator {dup[0]} (first: {raters[ids.index(dup[0])].path})",
                         expected="one file per annotator")
    items: dict[str, dict[str, Any]] = manifest["items"]
    rows = []
    for item_id, info in items.items():
        rows.append({"item": item_id, **info,
                     "labels": {r.annotator: r.categories[item_id] for r in raters},
                     "choices": {r.annotator: r.choices[item_id] for r in raters},
                     "notes": {r.annotator: r.notes.get(item_id, "") for r in raters}})
    tracks: dict[str, Figures] = {}
    families: dict[str, Figures] = {}
    for track in TRACKS:
        trows = [r for r in rows if r["track"] == track]
        if not trows:
            continue
        seen = {lab for r in trows for lab in r["labels"].values()} | {r["gold"] for r in trows}
        cats = category_order(track, seen)
        tracks[track] = _figures(track, trows, ids, cats)
        for fam in sorted({r["family"] for r in trows}):
            frows = [r for r in trows if r["family"] == fam]
            fig = _figures(fam, frows, ids, cats, track_rows=trows)
            fig.passes = passes(fig, threshold)
            families[fam] = fig
    queue = _queue(rows, ids, families, sampled=manifest.get("sample") is not None)
    return AgreementResult(packet=manifest["packet"], key=manifest["key"], annotators=ids,
                           method="cohen" if len(ids) == 2 else "fleiss", threshold=threshold,
                           tracks=tracks, families=families, queue=queue, items=len(rows),
                           sampled=manifest.get("sample") is not None)


def _queue(rows: list[dict[str, Any]], raters: list[str], families: dict[str, Figures],
           sampled: bool = False) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        labels = [r["labels"][a] for a in raters]
        if all(lab == r["gold"] for lab in labels):
            continue
        why = ("the annotators disagree" if len(set(labels)) > 1
               else "the annotators agree with each other, not with the key")
        fam_ok = bool(families[r["family"]].passes)
        out.append({"queue_id": f"q{len(out) + 1:04d}", "item": r["item"], "track": r["track"],
                    "family": r["family"], "conversation": r["conversation"], "why": why,
                    "key_answer": r["gold"], "answers": r["labels"], "choices": r["choices"],
                    "notes": r["notes"], "family_passes": fam_ok,
                    "needs_decision": fam_ok or sampled,
                    "item_text": r["text"]})
    return out


# ---------------------------------------------------------------------------------------------
# Writing


def _fmt(x: float | None, digits: int = 3) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _ci(ci: tuple[float, float] | None) -> str:
    return f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""


def render_markdown(res: AgreementResult) -> str:
    name = "Cohen's" if res.method == "cohen" else "Fleiss'"
    lines = [f"# Annotation agreement: packet {res.packet}", "",
             f"Key {res.key['version']} · sha256 `{res.key['sha256']}` · annotators "
             f"{', '.join(res.annotators)} · {res.items} items · {name} kappa · threshold "
             f"{res.threshold:g} per family (against the track's chance agreement; "
             "docs/annotation/README.md)", "",
             "Intervals: 95% cluster bootstrap over conversations (TWIST seed, 2000 resamples).",
             "", "## Tracks", "",
             "| track | n | raw agreement | kappa [95% CI] | " + " | ".join(
                 f"{a} vs key (acc / kappa)" for a in res.annotators) + " |",
             "|---|---|---|---|" + "---|" * len(res.annotators)]
    for t, f in res.tracks.items():
        vs = " | ".join(f"{_fmt(f.vs_key[a]['accuracy'])} / {_fmt(f.vs_key[a]['kappa'])}"
                        for a in res.annotators)
        lines.append(f"| {t} | {f.n} | {_fmt(f.raw)} | {_fmt(f.kappa)}{_ci(f.kappa_ci)} | {vs} |")
    lines += ["", "## Families", "",
              "| family | n | raw agreement | kappa (track chance) [95% CI] | own kappa | passes |",
              "|---|---|---|---|---|---|"]
    for fam, f in res.families.items():
        lines.append(f"| {fam} | {f.n} | {_fmt(f.raw)} | {_fmt(f.kappa_track)}"
                     f"{_ci(f.kappa_track_ci)} | {_fmt(f.kappa)} | "
                     f"{'yes' if f.passes else '**no: dropped**'} |")
    lines += ["", "## Confusion tables (rows: first annotator, columns: second)", ""]
    for t, f in res.tracks.items():
        for pair, m in f.confusion.items():
            lines += [f"Track {t}, {pair}:", "", "| | " + " | ".join(f.categories) + " |",
                      "|---|" + "---|" * len(f.categories)]
            lines += [f"| {c} | " + " | ".join(str(x) for x in row) + " |"
                      for c, row in zip(f.categories, m)]
            lines.append("")
    need = sum(1 for q in res.queue if q["needs_decision"])
    lines += [f"Adjudication queue: {len(res.queue)} items ({need} need a decision; the others "
              "are in a family below the threshold and are dropped)."]
    if res.sampled:
        lines += ["", "This was a sampled round: families below the threshold are reported, "
                  "not dropped (annotate the whole family to decide)."]
    return "\n".join(lines) + "\n"


def queue_header(res: AgreementResult, manifest: dict[str, Any]) -> dict[str, Any]:
    return {"format": QUEUE_FORMAT, "packet": res.packet, "key": res.key,
            "annotators": res.annotators, "method": res.method, "threshold": res.threshold,
            "agreement": res.as_dict(), "family_members": manifest.get("family_members", {}),
            "annotated": sorted(manifest["items"]), "examples": manifest.get("examples", []),
            "sample": manifest.get("sample")}


def queue_csv(queue: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=QUEUE_CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    for q in queue:
        w.writerow({"queue_id": q["queue_id"], "item": q["item"], "track": q["track"],
                    "family": q["family"], "why": q["why"], "key_answer": q["key_answer"],
                    "answers": "; ".join(f"{a}: {lab}" for a, lab in q["answers"].items()),
                    "notes": "; ".join(f"{a}: {n}" for a, n in q["notes"].items() if n),
                    "family_passes": "yes" if q["family_passes"] else "no",
                    "needs_decision": "yes" if q["needs_decision"] else "no",
                    "item_text": q["item_text"], "decision": "", "new_label": "",
                    "evidence": "", "decision_reason": ""})
    return buf.getvalue()


def write_agreement(res: AgreementResult, manifest: dict[str, Any], out: str | Path
                    ) -> list[Path]:
    """agreement.md, agreement.json, queue.jsonl (header + entries) and queue.csv (to fill in)
    in `out`. An existing queue is not overwritten (it may hold an adjudicator's work)."""
    out = Path(out)
    if (out / "queue.jsonl").exists() or (out / "queue.csv").exists():
        raise InputError(str(out), "holds an adjudication queue already", field="-o",
                         expected="a folder without queue.jsonl and queue.csv")
    files = {
        "agreement.md": render_markdown(res),
        "agreement.json": json.dumps(res.as_dict(), indent=1, sort_keys=True) + "\n",
        "queue.jsonl": "\n".join(json.dumps(x, ensure_ascii=False, sort_keys=True)
                                 for x in [_jsonable(queue_header(res, manifest)), *res.queue])
        + "\n",
        "queue.csv": queue_csv(res.queue),
    }
    written = []
    for name, text in files.items():
        atomic_write_bytes(out / name, text.encode("utf-8"))
        written.append(out / name)
    return written
