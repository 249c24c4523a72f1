"""The profile in a terminal: read at a glance, at 80 columns (CI logs, pipes) or wider.

Narrow (the usual case): one block per headline column, one line per system — metric, its counts,
partner, its counts, errors — under a line naming the pair and which way is good. Wide enough
for every column side by side (counts included): one line per system, one cell per column.
Columns N/A for every system are left out; every N/A reason is printed once, grouped with the
columns and systems it applies to. Counts are never fractional: a LoCoMo F1 is a mean over n
questions and is shown as `n=…`. Intervals are in report.md / report.html, named only when they
were written.
"""

from __future__ import annotations

import textwrap
from collections import defaultdict
from collections.abc import Sequence

from rich.text import Text

from twistbench.report.profile import COLUMNS, Cell, Column, Profile, answerer_lines
from twistbench.sanitize import control_free
from twistbench.stats import Metric

MAX_NAME = 22


def arrow(up: bool) -> str:
    return "↑" if up else "↓"


def pair_heading(col: Column) -> str:
    """'F1 ↑ / false-flag ↓': the pair and which way is good for each."""
    first, second = (s.strip() for s in col.label.split("/", 1))
    return f"{first} {arrow(col.primary_up)} / {second} {arrow(col.partner_up)}"


def counts(m: Metric) -> str:
    """The count behind a value, whole numbers only: '2/40', 'TP 20 FP 19 FN 20',
    'pos 29/60 neg 55/60', or 'n=1540' for a mean of scores."""
    if m.value is None:
        return "no items"
    c = m.counts
    if {"tp", "fp", "fn"} <= set(c):
        return f"TP {int(c['tp'])} FP {int(c['fp'])} FN {int(c['fn'])}"
    if {"tp", "n_pos", "tn", "n_neg"} <= set(c):
        return f"pos {int(c['tp'])}/{int(c['n_pos'])} neg {int(c['tn'])}/{int(c['n_neg'])}"
    if float(m.k).is_integer():
        return f"{int(m.k)}/{m.n}"
    return f"n={m.n}"


def value(m: Metric, digits: int = 2) -> str:
    return "none" if m.value is None else f"{m.value:.{digits}f}"


def _name(system: str, width: int) -> str:
    # rich Text takes no markup; control characters from data are made visible
    system = control_free(system)
    return system if len(system) <= width else system[:width - 1] + "…"


def _flag(cell: Cell) -> Text:
    if cell.errors or cell.missing:
        parts = [f"{cell.errors} err"] if cell.errors else []
        parts += [f"{cell.missing} missing"] if cell.missing else []
        return Text(" " + ", ".join(parts), style="bold red")
    return Text("")


def na_groups(profile: Profile) -> list[tuple[list[str], list[str], str]]:
    """(column titles, systems, reason) for every N/A reason, each reason once per set of
    systems; 'all systems' when every row shares it."""
    by_col: dict[tuple[str, str], list[str]] = defaultdict(list)
    for row in profile.rows:
        for col_key, cell in row.cells.items():
            if cell.status == "n/a":
                by_col[(col_key, cell.reason or "N/A")].append(row.system)
    titles = {c.key: c.title for c in profile.titled_columns()}
    order = {c.key: i for i, c in enumerate(COLUMNS)}
    grouped: dict[tuple[str, tuple[str, ...]], list[str]] = defaultdict(list)
    for (col_key, reason), systems in sorted(by_col.items(), key=lambda kv: order[kv[0][0]]):
        grouped[(reason, tuple(systems))].append(titles[col_key])
    everyone = len(profile.rows)
    return [(cols, ["all systems"] if len(systems) == everyone and everyone > 1
             else list(systems), reason) for (reason, systems), cols in grouped.items()]


def legend(cols: Sequence[Column], profile: Profile) -> str:
    """One line saying what the counts are (only the forms that appear)."""
    seen = {counts(r.cells[c.key].pair.primary if i == 0 else r.cells[c.key].pair.partner)
            .split(" ")[0] for r in profile.rows for c in cols
            for i in (0, 1) if r.cells[c.key].pair is not None}
    parts = ["↑/↓: higher/lower is better", "k/n: items right or flagged / items scored"]
    if "TP" in seen:
        parts.append("TP FP FN: detections")
    if "pos" in seen:
        parts.append("pos/neg: contradicting / aligned drafts right")
    if any(s.startswith("n=") for s in seen):
        parts.append("n=: a mean over n questions (LoCoMo F1 is a score, not a count)")
    return "; ".join(parts)


def _long(profile: Profile, cols: Sequence[Column], width: int) -> list[Text]:
    name_w = min(MAX_NAME, max(len(control_free(r.system)) for r in profile.rows))
    # metric column: value + counts, as wide as its longest entry
    def cell_parts(cell: Cell) -> tuple[str, str]:
        assert cell.pair is not None
        return (f"{value(cell.pair.primary)}  {counts(cell.pair.primary)}",
                f"{value(cell.pair.partner)}  {counts(cell.pair.partner)}")

    out: list[Text] = []
    for col in cols:
        scored = [r for r in profile.rows if r.cells[col.key].status == "scored"]
        first_w = max(len(cell_parts(r.cells[col.key])[0]) for r in scored)
        out.append(Text.assemble((f"{col.title}", "bold"), " · ", pair_heading(col)))
        for row in profile.rows:
            cell = row.cells[col.key]
            line = Text("  " + _name(row.system, name_w).ljust(name_w) + "  ")
            if cell.status != "scored" or cell.pair is None:
                line.append("N/A", style="dim")
            else:
                a, b = cell_parts(cell)
                line.append(a.ljust(first_w) + "   " + b)
                line.append_text(_flag(cell))
            line.truncate(width, overflow="ellipsis")
            out.append(line)
    return out


def _wide_cell(cell: Cell) -> Text:
    if cell.status != "scored" or cell.pair is None:
        return Text("N/A", style="dim")
    p = cell.pair
    text = Text(f"{value(p.primary)} {counts(p.primary)} / {value(p.partner)} "
                f"{counts(p.partner)}")
    text.append_text(_flag(cell))
    return text


def _wide_width(profile: Profile, cols: Sequence[Column]) -> tuple[int, list[int]]:
    """Width of the side-by-side layout (every cell with its counts) and of each column."""
    name_w = min(MAX_NAME, max(len(control_free(r.system)) for r in profile.rows))
    widths = [max([len(c.title), len(pair_heading(c))]
                  + [len(_wide_cell(r.cells[c.key])) for r in profile.rows]) for c in cols]
    return name_w + sum(w + 2 for w in widths), widths


def _wide(profile: Profile, cols: Sequence[Column], widths: list[int]) -> list[Text]:
    name_w = min(MAX_NAME, max(len(control_free(r.system)) for r in profile.rows))
    head1 = Text(" " * (name_w + 2))
    head2 = Text("system".ljust(name_w + 2))
    for c, w in zip(cols, widths):
        head1.append(c.title.ljust(w + 2), style="bold")
        head2.append(pair_heading(c).ljust(w + 2))
    out = [head1, head2]
    for row in profile.rows:
        line = Text(_name(row.system, name_w).ljust(name_w + 2))
        for c, w in zip(cols, widths):
            text = _wide_cell(row.cells[c.key])
            text.pad_right(w + 2 - len(text))
            line.append_text(text)
        out.append(line)
    for line in out:
        line.rstrip()
    return out


def profile_lines(profile: Profile, width: int = 80, written: Sequence[str] = ()) -> list[Text]:
    """The profile as terminal lines no wider than `width` (N/A reason lines may wrap)."""
    cols = profile.scored_columns()
    head = Text.assemble(("TWIST profile", "bold"), control_free(
        f" — {profile.dataset} · {profile.dataset_version} · sha256 {profile.key_sha256[:12]}"))
    head.truncate(width, overflow="ellipsis")
    out = [head]

    def wrapped(text: str, style: str, first: str = "") -> list[Text]:
        lines = textwrap.wrap(control_free(text), width=width - len(first),
                              subsequent_indent="    ")
        return [Text(first if i == 0 else "", style=style + " bold") + Text(ln, style=style)
                for i, ln in enumerate(lines)]

    if not cols:
        out.append(Text("  no column scored for any system", style="dim"))
    else:
        need, widths = _wide_width(profile, cols)
        out += _wide(profile, cols, widths) if need <= width else _long(profile, cols, width)
        out += wrapped(legend(cols, profile), "dim")
    judged = [c.title for c in cols if any(r.cells[c.key].judged for r in profile.rows)]
    for j in profile.judges() if judged else []:
        out += wrapped(f"judge of {', '.join(judged)}: {j.describe()}", "dim")
    for line in answerer_lines(profile):
        out += wrapped(line, "dim")
    for col_titles, systems, reason in na_groups(profile):
        out += wrapped(f"{', '.join(col_titles)}: {', '.join(systems)} — {reason}", "dim", "N/A ")
    if written:
        out += wrapped("95% intervals and every metric: " + ", ".join(written), "dim")
    return out
