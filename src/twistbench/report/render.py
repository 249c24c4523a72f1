"""Markdown and JSON renderings of profiles.

Headline cells are rendered only from `PairedMetric` (`render_pair` refuses anything else), so a
printed detection rate always stands beside its partner. Under each table: the key version and
sha256, the judge, and the reasons of every N/A cell. Then, per system, every metric with its
k/n, 95% interval and method, and the counted outcomes (errors, missing, excluded...).
"""

from __future__ import annotations

import json
from typing import Any

from rich.table import Table

from twistbench.report.profile import COLUMNS, Cell, PairedMetric, Profile
from twistbench.sanitize import plain
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


def render_profile_markdown(profile: Profile, details: bool = True, digits: int = 3) -> str:
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


def _compact_counts(m: Metric) -> str:
    """The count part of a metric, short: '3/4', 'TP 20 FP 19 FN 20', 'pos 29/60 neg 55/60'."""
    if m.value is None:
        return "n=0"
    c = m.counts
    if {"tp", "fp", "fn"} <= set(c):
        return f"TP {int(c['tp'])} FP {int(c['fp'])} FN {int(c['fn'])}"
    if {"tp", "n_pos", "tn", "n_neg"} <= set(c):
        return f"pos {int(c['tp'])}/{int(c['n_pos'])} neg {int(c['tn'])}/{int(c['n_neg'])}"
    k = str(int(m.k)) if float(m.k).is_integer() else f"{m.k:.1f}"
    return f"{k}/{m.n}"


def render_compact_pair(pair: PairedMetric, digits: int = 2) -> str:
    """'0.51 / 0.05' with the counts of each beneath: the terminal form of a headline cell.
    Only a PairedMetric is accepted, as in render_pair."""
    if not isinstance(pair, PairedMetric):
        raise TypeError(f"a headline cell needs a PairedMetric, got {type(pair).__name__}")

    def value(m: Metric) -> str:
        return "none" if m.value is None else f"{m.value:.{digits}f}"

    return (f"{value(pair.primary)} / {value(pair.partner)}\n"
            f"{_compact_counts(pair.primary)}\n{_compact_counts(pair.partner)}")


def console_table(profile: Profile) -> Any:
    """The profile as a rich Table that fits a terminal: value / partner with the counts of
    each, and each cell's errors. Columns N/A for every system are left out (their reasons are
    printed below the table). Intervals and every other metric: report.md / report.json."""
    def scored(cell: Cell | None) -> bool:
        return cell is not None and cell.status == "scored" and cell.pair is not None

    cols = [c for c in COLUMNS if c.key in profile.columns
            and any(scored(r.cells.get(c.key)) for r in profile.rows)]
    table = Table(title=f"TWIST profile — {profile.dataset} ({profile.dataset_version})",
                  caption=f"key sha256 {profile.key_sha256[:16]}… · each cell: metric / partner, "
                  "then the counts of each · intervals in report.md", show_lines=True)
    table.add_column("system", no_wrap=True)
    for c in cols:
        table.add_column(f"{c.title}\n{c.label}", justify="center")
    for row in profile.rows:
        cells = []
        for c in cols:
            cell = row.cells.get(c.key)
            if not scored(cell):
                cells.append("[dim]N/A[/]")
                continue
            text = render_compact_pair(cell.pair)
            if cell.errors or cell.missing:
                text += f"\n[bold red]{cell.errors} errors[/]" + (
                    f", {cell.missing} missing" if cell.missing else "")
            cells.append(text)
        table.add_row(plain(row.system), *cells)  # a system's name is text, never markup
    return table
