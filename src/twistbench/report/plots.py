"""The profile as a PNG for report.md: the same metric planes as report.html (report/planes.py),
drawn with matplotlib's Agg backend (no display).

One panel per track with a scored cell (no empty panels): each system a point with 95% interval
whiskers, its values beside it, the good corner shaded and each axis saying which way is good;
Track A's online and batch points joined; a legend of systems (and of the A markers); the
detection-latency histogram when a system flags tensions online. Sized so that its text reads
at the size it is shown (about 16 px letters at 150 dpi).
"""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

from twistbench.datasets.keyfile import atomic_write_bytes
from twistbench.report.planes import Plane, colour, planes
from twistbench.report.profile import Profile
from twistbench.report.svg import (
    BOTTOM,
    LEFT,
    RIGHT,
    TOP,
    H,
    W,
    better_mark,
    group_names,
    leader,
    plane_labels,
)
from twistbench.sanitize import control_free

PANEL_IN = (3.9, 3.5)  # inches per panel


def as_text(s: str) -> str:
    """A name from data as matplotlib text: every '$' escaped (a name like '$x$' or '$\\nope$'
    would be read as mathtext, drawn as math or raise), control characters made visible."""
    return control_free(s).replace("$", r"\$")


def _data_xy(x: float, y: float) -> tuple[float, float]:
    """SVG label coordinates (report/svg.py) to the plane's data coordinates."""
    return (x - LEFT) / (W - LEFT - RIGHT), (H - BOTTOM - y) / (H - TOP - BOTTOM)


def _draw_plane(ax, plane: Plane) -> None:  # noqa: ANN001 - a matplotlib Axes
    from matplotlib.patches import Rectangle  # lazy: matplotlib is imported for plots only

    gx, gy = plane.good_corner
    ax.add_patch(Rectangle((0.7 if gx else 0.0, 0.7 if gy else 0.0), 0.3, 0.3,
                           color="#2e9d5b", alpha=0.13, lw=0))
    bx, by, banchor, _ = better_mark(plane)
    ax.text(*_data_xy(bx, by), "better", ha="left" if banchor == "start" else "right",
            va="baseline", fontsize=8, color="#1d7a45", fontweight="bold")
    for a, b in plane.links:
        pa, pb = plane.points[a], plane.points[b]
        ax.plot([pa.xv, pb.xv], [pa.yv, pb.yv], ls="--", lw=1, color=colour(pa.index))
    for p in plane.points:
        # a bootstrap interval need not contain its point estimate: whiskers never go negative
        xerr = ([[max(0.0, p.xv - p.x.lo)], [max(0.0, p.x.hi - p.xv)]]
                if p.x.lo is not None and p.x.hi is not None else None)
        yerr = ([[max(0.0, p.yv - p.y.lo)], [max(0.0, p.y.hi - p.yv)]]
                if p.y.lo is not None and p.y.hi is not None else None)
        filled = p.mode != "batch"
        ax.errorbar(p.xv, p.yv, xerr=xerr, yerr=yerr, fmt="o" if filled else "s",
                    color=colour(p.index), mfc=colour(p.index) if filled else "white",
                    mew=1.8, ms=6, elinewidth=1, capsize=2.5, zorder=3, clip_on=False)
    for group, lx, ly, anchor in plane_labels(plane):
        x, y = _data_xy(lx, ly)
        end = leader(plane, group, lx, ly)
        if end is not None:
            p = plane.points[group[0]]
            ax.plot([p.xv, _data_xy(*end)[0]], [p.yv, _data_xy(*end)[1]], lw=0.7,
                    color=colour(p.index), alpha=0.7)
        ha = {"start": "left", "end": "right"}.get(anchor, "center")
        names = group_names(plane.points, group)
        ax.text(x, y, as_text(", ".join(n for n, _ in names)), ha=ha, va="baseline", fontsize=7.5,
                fontweight="bold", color=colour(names[0][1]))
        p = plane.points[group[0]]
        ax.text(x, y - 12 / (H - TOP - BOTTOM), f"{p.xv:.2f}, {p.yv:.2f}", ha=ha,
                va="baseline", fontsize=7.5, color="#333")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1])
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1])
    ax.tick_params(labelsize=8)
    ax.grid(color="#e6e6e6", lw=0.8)
    ax.set_xlabel(f"{plane.x_label} ({'higher' if plane.x_up else 'lower'} is better)",
                  fontsize=8.5)
    ax.set_ylabel(f"{plane.y_label} ({'higher' if plane.y_up else 'lower'} is better)",
                  fontsize=8.5)
    ax.set_title(plane.title, fontsize=10, fontweight="bold", loc="left")
    if plane.absent:
        ax.text(0.0, -0.3, "not drawn: " + "; ".join(plane.absent), transform=ax.transAxes,
                fontsize=7, color="0.4")


def _draw_latency(ax, latencies: dict[str, list[int]], systems: list[str]) -> None:  # noqa: ANN001
    data = {s: Counter(v) for s, v in latencies.items() if v}
    top = max(max(c) for c in data.values())
    bins = list(range(0, max(top, 1) + 1))
    width = 0.8 / len(data)
    for k, name in enumerate(s for s in systems if s in data):
        xs = [b - 0.4 + width * (k + 0.5) for b in bins]
        ys = [data[name].get(b, 0) for b in bins]
        bars = ax.bar(xs, ys, width=width * 0.95, color=colour(systems.index(name)),
                      label=as_text(name))
        ax.bar_label(bars, labels=[str(y) if y else "" for y in ys], fontsize=7.5)
    ax.set_xticks(bins)
    ax.tick_params(labelsize=8)
    ax.set_xlabel("sessions from the reversal to the flag (lower is better)", fontsize=8.5)
    ax.set_ylabel("detected arcs", fontsize=8.5)
    ax.set_title("A online · detection latency", fontsize=10, fontweight="bold", loc="left")


def plot_profile(profile: Profile, out: str | Path, dpi: int = 150,
                 latencies: dict[str, list[int]] | None = None) -> Path:
    """Write the profile's planes (and the latency histogram) as a PNG, or any format
    matplotlib infers from the suffix."""
    import matplotlib  # lazy: matplotlib costs ~0.5 s to import and only plots need it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"): no display backend is probed
    from matplotlib.lines import Line2D  # lazy, with matplotlib

    drawn = planes(profile)
    lat = {k: v for k, v in (latencies or {}).items() if v}
    n = len(drawn) + (1 if lat else 0)
    systems = [r.system for r in profile.rows]
    cols = min(3, max(1, n))
    rows = max(1, -(-n // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(PANEL_IN[0] * cols, PANEL_IN[1] * rows + 0.9),
                             squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax, plane in zip(flat, drawn):
        _draw_plane(ax, plane)
    if lat:
        _draw_latency(flat[len(drawn)], lat, systems)
    for ax in flat[n:]:
        ax.axis("off")
    if n == 0:
        flat[0].text(0.5, 0.5, "no track scored for any system", ha="center", va="center")
    handles = [Line2D([], [], marker="o", ls="", color=colour(i), label=as_text(s))
               for i, s in enumerate(systems)]
    if any(p.mode for pl in drawn for p in pl.points):
        handles += [Line2D([], [], marker="o", ls="", color="0.35", label="A online"),
                    Line2D([], [], marker="s", ls="", mfc="white", mec="0.35", mew=1.8,
                           label="A batch")]
    fig.legend(handles=handles, loc="upper center", ncol=min(len(handles), 6), fontsize=8.5,
               frameon=False, bbox_to_anchor=(0.5, 1 - 0.25 / fig.get_figheight()))
    fig.suptitle(as_text(f"TWIST profile — {profile.dataset} · key {profile.dataset_version} · "
                         f"sha256 {profile.key_sha256[:12]} · whiskers: 95% intervals"),
                 fontsize=10, y=0.995)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.6 / fig.get_figheight()))
    out = Path(out)
    buf = io.BytesIO()  # drawn in memory, then written whole: never a half-written picture
    try:
        fig.savefig(buf, dpi=dpi, format=out.suffix.lstrip(".") or "png")
    finally:
        plt.close(fig)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out, buf.getvalue())
    return out
