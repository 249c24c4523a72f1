"""Markdown and JSON renderings of profiles.

Headline cells are rendered only from `PairedMetric` (`render_pair` and `render_cell` refuse
anything else), so a printed detection rate always stands beside its partner. A headline cell is
short (value and interval of each); a judged column names its judge's calibration verdict; under
each table: the key version and sha256, the judge and its calibration, each run's answerer, and
the reasons of every N/A cell. Then, per system, every metric with its k/n,
95% interval and method, and the counted outcomes (errors, missing, excluded...).
"""

from __future__ import annotations

import json
from typing import Any

from twistbench.report.profile import (
    Cell,
    Column,
    PairedMetric,
    Profile,
    answerer_lines,
)
from twistbench.report.terminal import pair_heading
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
    elif not float(m.k).is_integer():
        body = f"{m.value:.{digits}f} (mean over n={m.n})"  # a mean of scores: k is no count
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


def short_metric(m: Metric, digits: int = 2) -> str:
    """'0.51 [0.38, 0.62]': the headline form (counts are in the details)."""
    if m.value is None:
        return "no items"
    out = f"{m.value:.{digits}f}"
    if m.lo is not None and m.hi is not None:
        out += f" [{m.lo:.{digits}f}, {m.hi:.{digits}f}]"
    return out


def render_cell(cell: Cell, digits: int = 2) -> str:
    """A headline cell: 'metric [interval] / partner [interval]', then errors and missing items
    when there are any."""
    if cell.status == "n/a" or cell.pair is None:
        return "N/A"
    if not isinstance(cell.pair, PairedMetric):
        raise TypeError(f"a headline cell needs a PairedMetric, got {type(cell.pair).__name__}")
    out = f"{short_metric(cell.pair.primary, digits)} / {short_metric(cell.pair.partner, digits)}"
    notes = []
    if cell.errors:
        notes.append(f"{cell.errors} errors")
    if cell.missing:
        notes.append(f"{cell.missing} missing")
    if notes:
        out += " · " + ", ".join(notes)
    return out


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def column_heading(col: Column, judge_note: str = "") -> str:
    """'A online: F1 ↑ / false-flag ↓'; a judged column adds its judge and calibration verdict
    ('C: current ↑ / stale ↓ (judge structural v3: not calibrated)')."""
    return f"{col.title}: {pair_heading(col)}" + (f" ({judge_note})" if judge_note else "")


def judged(profile: Profile, col: Column) -> bool:
    return any(r.cells[col.key].judged for r in profile.rows)


def judged_note(profile: Profile) -> str:
    """What a judged column's header carries: each distinct judge and its calibration verdict
    ('judge structural v3: decoys rejected >= 0.826, FAILS calibration (< 0.95: ...)')."""
    return "; ".join(f"judge {j.short()}" for j in profile.judges())


def judge_line(profile: Profile) -> str:
    """Who judged the judged columns, with each judge's decoy calibration."""
    titles = [c.title for c in profile.scored_columns() if judged(profile, c)]
    judges = profile.judges()
    if not titles or not judges:
        return ""
    if len(judges) == 1:
        return f"Judge of {', '.join(titles)}: {judges[0].describe()}."
    per = "; ".join(f"{r.system}: {r.judge.describe()}" for r in profile.rows if r.judge)
    return f"Judges of {', '.join(titles)} differ between rows — {per}."


def render_profile_markdown(profile: Profile, details: bool = True, digits: int = 2,
                            image: str | None = None) -> str:
    """The profile table (columns scored for some system; ↑/↓ say which way is good; a judged
    column names its judge's calibration verdict), the key, the judge and each answerer under
    it, N/A reasons, and (details=True) every metric with its counts."""
    cols = profile.scored_columns() or [c for c in profile.titled_columns()
                                        if c.key in profile.columns]
    note = judged_note(profile)
    head = ["System"] + [column_heading(c, note if judged(profile, c) else "") for c in cols]
    lines = [f"## TWIST profile — {profile.dataset}", ""]
    if image:
        lines += [f"![TWIST profile: each track's pair per system]({image})", ""]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    notes: list[str] = []
    for row in profile.rows:
        cells = []
        for c in cols:
            cells.append(_esc(render_cell(row.cells[c.key], digits)))
        for c in profile.titled_columns():
            cell = row.cells.get(c.key)
            if c.key in profile.columns and cell is not None and cell.status == "n/a":
                notes.append(f"{row.system} · {c.title}: N/A — {cell.reason}")
        lines.append("| " + " | ".join([_esc(row.system)] + cells) + " |")
    lines += ["", f"Key: {profile.dataset_version} · sha256 `{profile.key_sha256}`"]
    jl = judge_line(profile)
    if jl:
        lines += ["", jl]
    lines += [f"- {_esc(line)}" for line in answerer_lines(profile)]
    lines += ["", "Cells: value [95% interval] of the metric / of its partner (↑ higher is "
              "better, ↓ lower); counts are in the details below. Proportions use Wilson "
              "intervals; F1, balanced accuracy and means a bootstrap clustered by "
              "conversation. Errors are failed system calls (and failed judgements), excluded "
              "from every metric. Online and batch tension modes are separate columns and must "
              "not be compared."]
    if notes:
        lines += [""] + [f"- {_esc(n)}" for n in notes]
    if details:
        for row in profile.rows:
            lines += ["", *render_details(row.system, row.scores.model_dump(), 3)]
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
