"""report.html: one self-contained file (inline CSS, JS and SVG, data as JSON; no CDN, no network;
works from file://) with the profile, its plots and a per-item browser.

Overview: per dataset key, the profile table (one row per run: each pair with intervals, counts,
errors; N/A with its reason), the key version and sha256, the judge and its calibration beside
the judged column (its verdict re-derived from the per-style rates), each run's answerer, the
metric planes, the detection-latency histogram, and TIAP score shifts when an audit folder is
included.

Items: every gold item with each run's outcome, filterable by track, family, outcome and system;
gold beside each system's output, the cited turns' text, the score and why. The item data is a
JSON block the browser parses after the overview has painted, and the list is virtualised
(only visible rows exist in the page), so a 10,000-item run stays responsive. `#item=ID` selects
an item (a shareable link); `#items?track=B&system=NAME&outcome=wrong` opens a filtered list.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from html import escape
from importlib import metadata, resources
from typing import Any
from urllib.parse import quote

from twistbench.report.items import ItemViews, column_track
from twistbench.report.planes import colour, planes
from twistbench.report.profile import Cell, Column, Profile, answerer_lines
from twistbench.report.render import judge_line
from twistbench.report.runs import RunsReport
from twistbench.report.svg import latency_svg, plane_svg, shifts_svg
from twistbench.report.terminal import arrow, counts, na_groups


def _version() -> str:
    # from the installed distribution: the report layer does not import the package root
    try:
        return metadata.version("twistbench")
    except metadata.PackageNotFoundError:
        return "unknown"


def _asset(name: str) -> str:
    return (resources.files("twistbench.report") / "assets" / name).read_text(encoding="utf-8")


def _json_block(element_id: str, data: Any) -> str:
    """A JSON data island: '<' escaped so no text in the data can close the script element."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    return f"<script type='application/json' id='{element_id}'>{text}</script>"


def _metric_html(label: str, up: bool, m: Any) -> str:
    if m.value is None:
        return (f"<div class='m'><span class='ml'>{escape(label)} {arrow(up)}</span> "
                "<span class='na'>no items</span></div>")
    ci = (f" <span class='ci'>[{m.lo:.2f}, {m.hi:.2f}]</span>"
          if m.lo is not None and m.hi is not None else "")
    return (f"<div class='m' title='{escape(m.note or m.name)} · {escape(m.method)}'>"
            f"<span class='nw'><span class='ml'>{escape(label)} {arrow(up)}</span> "
            f"<b>{m.value:.2f}</b>{ci}</span> <span class='cnt'>{escape(counts(m))}</span></div>")


def _cell_html(cell: Cell, col: Column, system: str, judge: str, dataset: str) -> str:
    if cell.status != "scored" or cell.pair is None:
        return (f"<td class='na' title='{escape(cell.reason or '')}'>N/A"
                f"<div class='why'>{escape(cell.reason or '')}</div></td>")
    first, second = (s.strip() for s in col.label.split("/", 1))
    body = (_metric_html(first, col.primary_up, cell.pair.primary)
            + _metric_html(second, col.partner_up, cell.pair.partner))
    notes = []
    if cell.errors:
        notes.append(f"<span class='err'>{cell.errors} errors</span>")
    if cell.missing:
        notes.append(f"<span class='err'>{cell.missing} missing</span>")
    if cell.judged and judge:
        notes.append(f"<span class='judge'>judge {escape(judge)}</span>")
    track = column_track(col.key, dataset)  # the browser's label: the QA track by its corpus
    # each value URL-encoded (a label may hold '&' or '#'), then HTML-escaped for the attribute
    link = (f"#items?track={escape(quote(track, safe=''))}"
            f"&amp;system={escape(quote(system, safe=''))}")
    return (f"<td>{body}<div class='notes'>{' · '.join(notes)} "
            f"<a class='to-items' href='{link}'>items →</a></div></td>")


def _profile_table(profile: Profile) -> str:
    cols = profile.scored_columns()
    judges = profile.judges()
    one_judge = judges[0].short() if len(judges) == 1 else ""

    def head_cell(c: Column) -> str:
        judged = any(r.cells[c.key].judged for r in profile.rows)
        judge = (f"<div class='judge'>judge: {escape(one_judge)}</div>"
                 if judged and one_judge else "")
        return (f"<th>{escape(c.title)}<div class='pair'>{escape(c.label)}</div>{judge}</th>")

    head = "".join(head_cell(c) for c in cols)
    rows = []
    for i, row in enumerate(profile.rows):
        # one judge: named in the column header; judges differing between rows: in each cell
        judge = row.judge.short() if row.judge and not one_judge else ""
        cells = "".join(_cell_html(row.cells[c.key], c, row.system, judge, profile.dataset)
                        for c in cols)
        run = f"<div class='run'>{escape(row.run or '')}</div>" if row.run else ""
        rows.append(f"<tr><th class='sys'><span class='sw' style='background:{colour(i)}'>"
                    f"</span>{escape(row.system)}{run}</th>{cells}</tr>")
    na = "".join(f"<li><b>{escape(', '.join(cols_))}</b>: {escape(', '.join(systems))} — "
                 f"{escape(reason)}</li>" for cols_, systems, reason in na_groups(profile))
    return (f"<table class='profile'><thead><tr><th>run</th>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
            + (f"<ul class='nalist'><li class='h'>N/A — declined or absent, never zero:</li>"
               f"{na}</ul>" if na else ""))


def _legend(profile: Profile) -> str:
    return "<div class='legend'>" + "".join(
        f"<span><i style='background:{colour(i)}'></i>{escape(r.system)}</span>"
        for i, r in enumerate(profile.rows)) + "</div>"


def _plots(profile: Profile, views: ItemViews, audits: list[dict[str, Any]]) -> str:
    figs = [f"<figure>{plane_svg(p)}"
            + (f"<figcaption>not drawn: {escape('; '.join(p.absent))}</figcaption>"
               if p.absent else "") + "</figure>" for p in planes(profile)]
    lat = latency_svg(views.latencies, views.systems)
    if lat:
        figs.append(f"<figure>{lat}<figcaption>Online mode: how many sessions after the "
                    "reversal turn each detected arc was first flagged.</figcaption></figure>")
    for audit in audits:
        metrics = (audit.get("config") or {}).get("metrics") or sorted(
            {m for s in audit["shifts"] for m in (s.get("delta") or {})})
        for m in metrics:
            svg = shifts_svg(audit, m)
            if svg:
                figs.append(f"<figure class='wide'>{svg}<figcaption>{escape(audit['folder'])}: "
                            "mean per-query change when only the credit target changes "
                            "(paired bootstrap interval).</figcaption></figure>")
    if not figs:
        return ""
    return (f"<h3>Plots</h3>{_legend(profile)}<p class='hint'>Each track's pair is one point per "
            "system, with 95% interval whiskers; the shaded corner is where a perfect system "
            "sits. Hover a point for its numbers and counts.</p>"
            f"<div class='plots'>{''.join(figs)}</div>")


def _section(k: int, profile: Profile, report: RunsReport) -> tuple[str, str, int]:
    views = report.views(profile)
    key = (f"<div class='key'>key <b>{escape(profile.dataset_version)}</b> · sha256 "
           f"<code>{escape(profile.key_sha256)}</code></div>")
    jl = judge_line(profile)
    overview = (f"<section class='profile-sec'><h2>TWIST profile — {escape(profile.dataset)}</h2>"
                f"{key}{_profile_table(profile)}"
                + (f"<p class='judge-line'>{escape(jl)}</p>" if jl else "")
                + "".join(f"<p class='judge-line'>{escape(line)}</p>"
                          for line in answerer_lines(profile))
                + "<p class='hint'>Each cell: the metric and its partner (↑ higher is better, "
                  "↓ lower), 95% interval in brackets, counts after it. Errors are failed "
                  "system calls, counted and never scored.</p>"
                + _plots(profile, views, report.audits) + "</section>")
    browser = (f"<section class='browser' data-k='{k}' data-count='{len(views.items)}'>"
               f"<h2>Items — {escape(profile.dataset)} <span class='muted'>"
               f"{escape(profile.dataset_version)}</span></h2>"
               "<div class='loading'>loading items…</div></section>"
               + _json_block(f"items-{k}", views.as_json()))
    return overview, browser, len(views.items)


def render_html(report: RunsReport, title: str = "twistbench report") -> str:
    """The whole report as one HTML document."""
    overviews, browsers, n_items = [], [], 0
    for k, profile in enumerate(report.profiles):
        o, b, n = _section(k, profile, report)
        overviews.append(o)
        browsers.append(b)
        n_items += n
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<style>{_asset("report.css")}</style></head>
<body>
<header><h1>{escape(title)}</h1><span class="muted">twistbench {escape(_version())}
· written {stamp}</span>
<nav><a href="#overview" id="tab-overview" class="on">Overview</a>
<a href="#items" id="tab-items">Items <span class="muted">({n_items:,})</span></a></nav></header>
<main>
<div id="overview">{''.join(overviews)}</div>
<div id="items" hidden>{''.join(browsers)}</div>
</main>
<script>{_asset("report.js")}</script>
</body></html>
"""
