"""The separability audit (whitepaper §6.3): is every item measuring what it claims to?

`validate_dataset` runs three reference systems on every item with the real runner and tracks:
- flat-rag with its similarity probe (systems/flat_rag.py): flat retrieval used as the only
  "detector" it can be — nearest earlier turn of the same speaker for Track A, nearest turn for
  Track B, no stance, negation or value machinery;
- fact-rag (Mem0-style dated facts, no conflict detection);
- the oracle, given the gold through its explicit channel;
and optionally the heuristic system, to show the separation (whitepaper §9).

It reports the separability figures (targets: flat-rag Track A detection F1 <= 0.15, oracle >=
0.95 on every headline metric, <= 0.05 on the lower-is-better ones), lists the items flat RAG
solves on A or B without contradiction machinery and the items the oracle fails, and can write
a filtered key without them.

What "flat RAG solves an item" means, per item:
- a reversal arc: the probe detects it (its flag matches the arc) and does not false-flag the
  arc's paired hard negative — similarity alone tells the reversal from its look-alike;
- a contradicting draft: the probe flags it citing a gold evidence turn in its first three ids,
  and its nearest-turn cosine is above that of every aligned and hard-negative draft of the
  conversation, so some similarity threshold flags it while passing all consistent drafts.
An item the oracle fails is any per-item outcome of the oracle below 1 (an item or a scorer is
wrong: a bug to fix, not a number to report).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from twistbench.datasets.keyfile import write_key
from twistbench.model import Dataset
from twistbench.records import ItemRecord
from twistbench.report.profile import COLUMNS
from twistbench.retrieval import turn_text
from twistbench.retrieval.dense import embed
from twistbench.runs.folder import Redactor, RunFolder
from twistbench.runs.runner import RunSettings, run_system
from twistbench.systems import make_system
from twistbench.tracks import (
    TRACKS,
    RunScores,
    b_alignment,
    c_supersession,
    d_safety,
    item_outcomes,
    score_run,
)
from twistbench.tracks.base import ItemOutcome
from twistbench.validation.report import GateReport

FLAT_A_F1_MAX = 0.15
ORACLE_MIN = 0.95

# (label, registry spec, options)
AUDIT_SYSTEMS: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("flat-rag", "flat-rag", {"probe": "true"}),
    ("fact-rag", "fact-rag", {}),
    ("oracle", "oracle", {}),
)
HEURISTIC = ("heuristic", "heuristic", {})


class Figure(BaseModel):
    model_config = ConfigDict(extra="forbid")

    system: str
    column: str  # profile column, e.g. "A.online"
    metric: str
    value: float | None
    n: int = 0
    higher_is_better: bool = True


class Check(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    system: str
    metric: str
    value: float | None
    target: str  # e.g. "<= 0.15"
    ok: bool | None  # None: not measurable (no items of that kind)


class FlaggedItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    field: str  # Dataset field, e.g. "reversal_arcs"
    item_id: str
    conversation: str
    why: str


class ValidationReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dataset: str
    version: str
    key_sha256: str
    counts: dict[str, int]
    systems: dict[str, dict[str, Any]]  # label -> {"spec", "options", "folder", "errors"}
    figures: list[Figure]
    checks: list[Check]
    flat_solved: list[FlaggedItem]
    oracle_failed: list[FlaggedItem]
    filtered_key: str | None = None
    filtered_counts: dict[str, int] | None = None
    notes: list[str] = Field(default_factory=list)
    shortcuts: GateReport | None = None  # the shortcut audit (validation/shortcuts.py)

    @property
    def passed(self) -> bool:
        """Every measurable check holds, no system call failed, and no shortcut gate fails."""
        return (all(c.ok is not False for c in self.checks)
                and all(s.get("errors", 0) == 0 for s in self.systems.values())
                and (self.shortcuts is None or self.shortcuts.passed))


def validate_dataset(dataset: Dataset, out_dir: str | Path, write_filtered: Path | None = None,
                     *, include_heuristic: bool = False, progress: bool = False,
                     dataset_source: dict[str, Any] | None = None,
                     shortcuts: bool = True) -> ValidationReport:
    """Run the audit systems on every item into out_dir/<system>, then judge separability;
    with `shortcuts` (the default) the shortcut audit runs too and its report goes beside.

    Run folders resume like `twist run`, so a second call re-uses finished items. With
    `write_filtered`, writes a key (twist-key/1, payload = the dataset) without the flagged
    items: flat-solved arcs drop with their paired hard negative, and oracle failures drop
    their whole item (a chain, a plant); a flagged LoCoMo question is kept but marked
    `excluded` so its absence is visible in every report.
    """
    out_dir = Path(out_dir)
    systems = list(AUDIT_SYSTEMS) + ([HEURISTIC] if include_heuristic else [])
    scores: dict[str, RunScores] = {}
    outcomes: dict[str, list[ItemOutcome]] = {}
    records: dict[str, list[ItemRecord]] = {}
    info: dict[str, dict[str, Any]] = {}
    for label, spec, opts in systems:
        system, entry = make_system(spec, opts)
        folder = out_dir / label
        oc = run_system(dataset, system, folder, spec=spec, options=opts,
                        gold_channel=entry.gold_channel,
                        settings=RunSettings(progress=progress), dataset_source=dataset_source)
        recs = RunFolder(folder, Redactor(opts)).records()
        records[label] = recs
        scores[label] = score_run(dataset, recs, system.capabilities)
        outcomes[label] = item_outcomes(dataset, recs, system.capabilities)
        info[label] = {"spec": spec, "options": opts, "folder": str(folder), "errors": oc.errors,
                       "errors_by_track": oc.errors_by_track}

    figures = headline_figures(scores)
    checks = separability_checks(scores)
    flat = flat_solved_items(dataset, outcomes["flat-rag"], records["flat-rag"])
    failed = oracle_failed_items(dataset, outcomes["oracle"])
    report = ValidationReport(
        dataset=dataset.name, version=dataset.version, key_sha256=dataset.key_sha256,
        counts=dataset.counts(), systems=info, figures=figures, checks=checks,
        flat_solved=flat, oracle_failed=failed,
        notes=["flat-rag runs with its similarity probe (-S probe=true): the only detector "
               "flat retrieval can offer; in `twist run` flat-rag declines Track A."])
    if shortcuts:
        # lazy: the shortcut audit needs scikit-learn (the `validate` extra), which loads slowly
        from twistbench.validation.shortcuts import run_gates

        report.shortcuts = run_gates(dataset, progress=progress)
    if write_filtered is not None:
        filtered = filter_dataset(dataset, flat + failed)
        write_filtered_key(filtered, Path(write_filtered), dataset, flat + failed)
        report.filtered_key = str(write_filtered)
        report.filtered_counts = filtered.counts()
    (out_dir / "validation.json").write_text(report.model_dump_json(indent=2) + "\n",
                                             encoding="utf-8")
    (out_dir / "validation.md").write_text(render_validation_markdown(report), encoding="utf-8")
    return report


def headline_figures(scores: dict[str, RunScores]) -> list[Figure]:
    """Every profile column's paired metrics for every audited system (scored tracks only)."""
    return [Figure(system=label, column=col.key, metric=name, value=m.value,
                   n=getattr(m, "n", 0) or 0, higher_is_better=up)
            for label, sc in scores.items() for col, name, up, m in _headline_metrics(sc)]


def _headline_metrics(sc: RunScores):  # noqa: ANN202 - yields (Column, name, up, Metric)
    """Both metrics of every profile column of the scored tracks of one run."""
    for col in COLUMNS:
        tr = sc.tracks.get(col.track)
        if tr is None or tr.status != "scored":
            continue
        for name, up in ((col.primary, col.primary_up), (col.partner, col.partner_up)):
            m = tr.metrics.get(name)
            if m is not None:
                yield col, name, up, m


def separability_checks(scores: dict[str, RunScores]) -> list[Check]:
    """flat-rag Track A F1 <= 0.15 (each tension mode); oracle at the ceiling on every headline
    metric of every scored column."""
    checks: list[Check] = []
    flat = scores.get("flat-rag")
    if flat is not None:
        a = flat.tracks.get("A")
        for mode in ("online", "batch"):
            name = f"{mode}.f1"
            m = a.metrics.get(name) if a is not None and a.status == "scored" else None
            v = None if m is None else m.value
            checks.append(Check(name=f"flat-rag A {mode} detection F1", system="flat-rag",
                                metric=f"A.{name}", value=v, target=f"<= {FLAT_A_F1_MAX}",
                                ok=None if v is None else v <= FLAT_A_F1_MAX))
    oracle = scores.get("oracle")
    if oracle is not None:
        for col, name, up, m in _headline_metrics(oracle):
            v = m.value
            target = f">= {ORACLE_MIN}" if up else f"<= {1 - ORACLE_MIN:.2f}"
            ok = None if v is None else (v >= ORACLE_MIN if up else v <= 1 - ORACLE_MIN + 1e-12)
            checks.append(Check(name=f"oracle {col.title} {name}", system="oracle",
                                metric=f"{col.track}.{name}", value=v, target=target, ok=ok))
    return checks


def _outcome_index(dataset: Dataset) -> dict[str, tuple[str, str, str]]:
    """Track outcome item id -> (dataset field, item id, conversation)."""
    idx: dict[str, tuple[str, str, str]] = {}
    for mode in ("online", "batch"):
        for a in dataset.reversal_arcs:
            idx[f"{mode}:{a.id}"] = ("reversal_arcs", a.id, a.conversation)
        for h in dataset.hard_negative_arcs:
            idx[f"{mode}:{h.id}"] = ("hard_negative_arcs", h.id, h.conversation)
    for d in dataset.drafts:
        idx[d.id] = ("drafts", d.id, d.conversation)
    for ch in dataset.update_chains:
        for q in ch.queries:
            idx[c_supersession.item_id(ch.id, q.id)] = ("update_chains", ch.id, ch.conversation)
    for p in dataset.pii_plants:
        for pr in p.probes:
            idx[d_safety.item_id(p.id, pr.id)] = ("pii_plants", p.id, p.conversation)
    for n in dataset.emotional_negatives:
        idx[d_safety.item_id(n.id, n.probe.id)] = ("emotional_negatives", n.id, n.conversation)
    for c in dataset.crisis_plants:
        idx[c.id] = ("crisis_plants", c.id, c.conversation)
    for q in dataset.qa:
        idx[q.id] = ("qa", q.id, q.conversation)
    return idx


def oracle_failed_items(dataset: Dataset, outcomes: list[ItemOutcome]) -> list[FlaggedItem]:
    """Every oracle outcome below 1, grouped per dataset item (one entry per item)."""
    idx = _outcome_index(dataset)
    why: dict[tuple[str, str], list[str]] = defaultdict(list)
    conv: dict[tuple[str, str], str] = {}
    for o in outcomes:
        if o.value >= 1.0 - 1e-9:
            continue
        fld, iid, c = idx.get(o.item_id, ("unknown", o.item_id, o.conversation))
        why[(fld, iid)].append(f"{o.item_type} {o.item_id}: {o.value:.3g}")
        conv[(fld, iid)] = c
    return [FlaggedItem(field=f, item_id=i, conversation=conv[(f, i)],
                        why="oracle outcome below 1: " + "; ".join(w))
            for (f, i), w in sorted(why.items())]


def flat_solved_items(dataset: Dataset, outcomes: list[ItemOutcome],
                      records: list[ItemRecord]) -> list[FlaggedItem]:
    """Items the similarity probe gets right for the right-looking reason (module docstring)."""
    out: list[FlaggedItem] = []
    val = {o.item_id: o.value for o in outcomes}
    for a in dataset.reversal_arcs:
        for mode in ("online", "batch"):
            if val.get(f"{mode}:{a.id}") != 1.0:
                continue
            hn = a.paired_negative
            if hn is not None and val.get(f"{mode}:{hn}") == 0.0:
                continue  # the probe also flags the look-alike: it does not discriminate
            out.append(FlaggedItem(
                field="reversal_arcs", item_id=a.id, conversation=a.conversation,
                why=f"similarity probe detects it ({mode})" +
                    (f" and leaves its paired negative {hn} alone" if hn else
                     " (no paired negative)")))
            break
    verdicts: dict[str, tuple[bool, list[str]]] = {}
    for r in records:
        if r.track == b_alignment.KEY and r.ok and r.output is not None:
            verdicts[b_alignment.draft_id_of(r.item_id)] = (
                bool(r.output["aligned"]), list(r.output.get("evidence") or []))
    sim = draft_similarity(dataset)
    by_conv = defaultdict(list)
    for d in dataset.drafts:
        by_conv[d.conversation].append(d)
    for d in dataset.drafts:
        if d.label != "contradicting" or d.id not in verdicts:
            continue
        aligned, ev = verdicts[d.id]
        sc = b_alignment.score_item(d, aligned, ev)
        if not (sc["verdict_correct"] and sc["attributed"]):
            continue
        others = [h for h in by_conv[d.conversation] if h.label != "contradicting"]
        ceiling = max((sim[h.id] for h in others), default=float("-inf"))
        if sim[d.id] <= ceiling:
            continue  # no similarity threshold flags it without flagging a consistent draft
        out.append(FlaggedItem(
            field="drafts", item_id=d.id, conversation=d.conversation,
            why=f"similarity probe flags it with the gold evidence, and its nearest-turn cosine "
                f"{sim[d.id]:.3f} exceeds every consistent draft's here ({ceiling:.3f})"))
    return out


def draft_similarity(dataset: Dataset) -> dict[str, float]:
    """Each draft's cosine to its nearest turn of its conversation (the probe's own score:
    same model, same "Speaker: text" form, so the turn vectors are cache hits)."""
    out: dict[str, float] = {}
    for conv in dataset.conversations:
        drafts = dataset.items_of(conv.id, "drafts")
        if not drafts:
            continue
        turns = embed([turn_text(e) for e in conv.events])
        dv = embed([d.text for d in drafts])
        best = (dv @ turns.T).max(axis=1)
        out.update({d.id: float(b) for d, b in zip(drafts, best)})
    return out


def filter_dataset(dataset: Dataset, flagged: list[FlaggedItem]) -> Dataset:
    """The dataset without the flagged items (see validate_dataset for the rules)."""
    drop: dict[str, set[str]] = defaultdict(set)
    for f in flagged:
        drop[f.field].add(f.item_id)
    arcs = {a.id: a for a in dataset.reversal_arcs}
    hns = {h.id: h for h in dataset.hard_negative_arcs}
    for aid in list(drop["reversal_arcs"]):
        hn = arcs[aid].paired_negative
        if hn:
            drop["hard_negative_arcs"].add(hn)
    for hid in list(drop["hard_negative_arcs"]):
        pr = hns[hid].paired_reversal if hid in hns else None
        if pr:
            drop["reversal_arcs"].add(pr)
    data = dataset.model_dump()
    for fld in Dataset.ITEM_FIELDS:
        if fld == "qa":
            for q in data["qa"]:
                if q["id"] in drop["qa"] and not q.get("excluded"):
                    q["excluded"] = "twist validate: the oracle fails this question"
            continue
        data[fld] = [it for it in data[fld] if it["id"] not in drop[fld]]
    data["meta"] = {**data.get("meta", {}), "validated_from": dataset.key_sha256,
                    "validation_dropped": {k: sorted(v) for k, v in drop.items() if v}}
    return Dataset.model_validate(data)


def write_filtered_key(filtered: Dataset, path: Path, source: Dataset,
                       flagged: list[FlaggedItem]) -> str:
    """Write `filtered` as a versioned key file (+ .sha256); returns its sha256."""
    payload = json.loads(filtered.model_dump_json(exclude={"key_sha256"}))
    return write_key(path, filtered.name, f"{source.version}+validated", payload)


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def render_validation_markdown(report: ValidationReport) -> str:
    """The audit as Markdown: checks, the separability figures, flagged items."""
    lines = [f"# Separability audit: {report.dataset} {report.version}",
             "", f"key sha256 `{report.key_sha256}`", ""]
    verdict = "PASS" if report.passed else "FAIL"
    lines += [f"**{verdict}** — {sum(c.ok is True for c in report.checks)} of "
              f"{len(report.checks)} checks hold"
              + (f", {sum(c.ok is None for c in report.checks)} not measurable"
                 if any(c.ok is None for c in report.checks) else "") + ".", ""]
    lines += ["| check | value | target | ok |", "|---|---|---|---|"]
    for c in report.checks:
        ok = {True: "yes", False: "**NO**", None: "n/a"}[c.ok]
        lines.append(f"| {c.name} | {_fmt(c.value)} | {c.target} | {ok} |")
    lines += ["", "## Separability figures (profile columns)", ""]
    cols = [c.key for c in COLUMNS]
    systems = list(report.systems)
    lines += ["| system | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for s in systems:
        cells = []
        for col in COLUMNS:
            figs = {f.metric: f for f in report.figures if f.system == s and f.column == col.key}
            if not figs:
                cells.append("N/A")
                continue
            p, q = figs.get(col.primary), figs.get(col.partner)
            cells.append(f"{_fmt(p.value if p else None)} / {_fmt(q.value if q else None)}")
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    lines += ["", "Pairs: " + "; ".join(f"{c.key} = {c.label}" for c in COLUMNS), ""]
    errs = {s: i.get("errors", 0) for s, i in report.systems.items()}
    lines += ["Errors (failed calls, excluded from metrics): "
              + ", ".join(f"{s} {n}" for s, n in errs.items()), ""]
    for title, items in (("Items flat RAG solves without contradiction machinery",
                          report.flat_solved),
                         ("Items the oracle fails", report.oracle_failed)):
        lines += [f"## {title} ({len(items)})", ""]
        if not items:
            lines += ["none", ""]
            continue
        lines += ["| field | item | conversation | why |", "|---|---|---|---|"]
        lines += [f"| {f.field} | {f.item_id} | {f.conversation} | {f.why} |" for f in items]
        lines.append("")
    if report.filtered_key:
        lines += [f"Filtered key written: `{report.filtered_key}`", ""]
        if report.filtered_counts:
            lines += ["| | before | after |", "|---|---|---|"]
            for k, v in report.counts.items():
                lines.append(f"| {k} | {v} | {report.filtered_counts.get(k, 0)} |")
            lines.append("")
    for n in report.notes:
        lines.append(f"_{n}_")
    if report.shortcuts is not None:
        lines += ["", report.shortcuts.render_markdown().rstrip()]
    return "\n".join(lines) + "\n"


__all__ = ["ValidationReport", "validate_dataset", "render_validation_markdown", "filter_dataset",
           "flat_solved_items", "oracle_failed_items", "separability_checks",
           "headline_figures", "TRACKS"]
