"""Markdown and JSON renderings of profiles.

Headline cells are rendered only from `PairedMetric` (`render_pair` refuses anything else), so a
printed detection rate always stands beside its partner. Under each table: the key version and
sha256, the judge, and the reasons of every N/A cell. Then, per system, every metric with its
k/n, 95% interval and method, and the counted outcomes (errors, missing, excluded...).
"""

from __future__ import annotations

import json
from typing import Any

from twistbench.report.profile import COLUMNS, Cell, PairedMetric, Profile
from twistbench.stats import Metric


def fmt_metric(m: Metric, digits: int = 3) -> str:
    """'0.750 (3/4) [0.301, 0.954]'; F1 shows TP/FP/FN, balanced accuracy both classes, a
    difference both rates; 'no items' when n == 0."""
    if m.value is None:
        return "no items"
    c = m.counts
    if {"tp", "fp", "fn"} <= set(c):
        body = f"{m.value:.{digits}f} (TP {int(c['tp'])}, FP {int(c['fp'])}, FN {int(c['fn'])})"
    elif {"tp", "n_pos", "tn", "n_neg"} <= set(c):
        body = (f"{m.value:.{digits}f} (pos {int(c['tp'])}/{int(c['n_pos'])}, "
                f"neg {int(c['tn'])}/{int(c['n_neg'])})")
    elif {"k_before", "n_before", "k_after", "n_after"} <= set(c):
        body = (f"{m.value:+.{digits}f} (before {int(c['k_before'])}/{int(c['n_before'])}, "
                f"after {int(c['k_after'])}/{int(c['n_after'])})")
    else:
        body = m.fmt(digits, with_ci=False)
    if m.lo is not None and m.hi is not None:
        body += f" [{m.lo:.{digits}f}, {m.hi:.{digits}f}]"
    return body


def render_pair(pair: PairedMetric, digits: int = 3) -> str:
    """'primary / partner'. Only a PairedMetric is accepted: a lone metric cannot be printed in
    a headline cell."""
    if not isinstance(pair, PairedMetric):
        raise TypeError(f"a headline cell needs a PairedMetric, got {type(pair).__name__}")
    return f"{fmt_metric(pair.primary, digits)} / {fmt_metric(pair.partner, digits)}"


def render_cell(cell: Cell, digits: int = 3) -> str:
    if cell.status == "n/a" or cell.pair is None:
        return "N/A"
    out = render_pair(cell.pair, digits)
    notes = []
    if cell.errors:
        notes.append(f"{cell.errors} errors")
    if cell.missing:
        notes.append(f"{cell.missing} missing")
    out += " · " + (", ".join(notes) if notes else "0 errors")
    return out


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(profile: Profile, details: bool = True, digits: int = 3) -> str:
    """The profile table, the key under it, N/A reasons, and (details=True) every metric."""
    cols = [c for c in COLUMNS if c.key in profile.columns]
    head = ["System"] + [f"{c.title}: {c.label}" for c in cols]
    lines = [f"## TWIST profile — {profile.dataset}", "",
             "| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    notes: list[str] = []
    for row in profile.rows:
        cells = []
        for c in cols:
            cell = row.cells[c.key]
            text = render_cell(cell, digits)
            if cell.status == "n/a":
                notes.append(f"{row.system} · {c.title}: N/A — {cell.reason}")
            cells.append(_esc(text))
        lines.append("| " + " | ".join([_esc(row.system)] + cells) + " |")
    lines += ["", f"Key: {profile.dataset_version} · sha256 `{profile.key_sha256}` · "
              f"Track C judge: {profile.judge}",
              "Cells: value (k/n) [95% interval]; proportions use Wilson intervals, F1, balanced "
              "accuracy and means a bootstrap clustered by conversation. Errors are failed system "
              "calls, excluded from every metric. Online and batch tension modes are separate "
              "columns and must not be compared."]
    if notes:
        lines += [""] + [f"- {_esc(n)}" for n in notes]
    if details:
        for row in profile.rows:
            lines += ["", *render_details(row.system, row.scores.model_dump(), digits)]
    return "\n".join(lines) + "\n"


def render_details(system: str, scores: dict[str, Any], digits: int = 3) -> list[str]:
    """Every metric of every scored track for one system, with counts."""
    out = [f"### {system}", ""]
    if scores.get("ingest_errors"):
        out.append(f"Ingest errors: {scores['ingest_errors']}")
        out.append("")
    for key, tr in scores["tracks"].items():
        if tr["status"] == "n/a":
            out.append(f"- **{key}** ({tr['title']}): N/A — {tr['reason']}")
            continue
        out += ["", f"**{key}** — {tr['title']}", "",
                "| metric | value (k/n) [95% CI] | method | note |", "|---|---|---|---|"]
        for name, m in tr["metrics"].items():
            metric = Metric.model_validate(m)
            out.append(f"| {name} | {_esc(fmt_metric(metric, digits))} | {metric.method} | "
                       f"{_esc(metric.note)} |")
        extra = []
        for label in ("errors", "missing", "counts"):
            if tr.get(label):
                extra.append(f"{label}: " + ", ".join(f"{k} {v}" for k, v in tr[label].items()))
        for sub, why in (tr.get("na") or {}).items():
            extra.append(f"{sub}: N/A — {why}")
        if extra:
            out += [""] + [f"- {_esc(e)}" for e in extra]
    return out


def profile_json(profile: Profile) -> dict[str, Any]:
    """Everything, as plain JSON data: headline cells (pairs), and per system every metric with
    k/n and interval, per-category LoCoMo, per-family breakdowns, errors and counts."""
    return json.loads(profile.model_dump_json())


def render_json(profile: Profile) -> str:
    return json.dumps(profile_json(profile), indent=2, sort_keys=True) + "\n"
