"""A picture of a profile: one panel per headline column, each system's paired metrics side by
side with their 95% intervals. N/A cells are drawn as an 'N/A' label, never as a zero bar; a
metric over no items is labelled 'no items'. Uses matplotlib's Agg backend (no display)."""

from __future__ import annotations

from pathlib import Path

from twistbench.report.profile import COLUMNS, Profile
from twistbench.stats import Metric


def plot_profile(profile: Profile, out: str | Path, dpi: int = 120) -> Path:
    """Write the profile as a PNG (or any format matplotlib infers from the suffix)."""
    import matplotlib  # lazy: matplotlib costs ~0.5 s to import and only plots need it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"): no display backend is probed

    cols = [c for c in COLUMNS if c.key in profile.columns]
    systems = [r.system for r in profile.rows]
    fig, axes = plt.subplots(1, len(cols), figsize=(3.2 * len(cols), 0.6 * len(systems) + 2.2),
                             sharey=True, squeeze=False)
    width = 0.38
    for ax, col in zip(axes[0], cols):
        ax.set_title(f"{col.title}\n{col.label}", fontsize=9)
        ax.set_xlim(0, 1)
        for yi, row in enumerate(profile.rows):
            cell = row.cells[col.key]
            if cell.status == "n/a" or cell.pair is None:
                ax.text(0.02, yi, "N/A", va="center", fontsize=8, color="0.4")
                continue
            for off, metric, colour in ((-width / 2, cell.pair.primary, "tab:blue"),
                                        (width / 2, cell.pair.partner, "tab:orange")):
                _bar(ax, yi + off, metric, colour, width)
            if cell.errors:
                ax.text(0.98, yi, f"{cell.errors} err", va="center", ha="right", fontsize=7,
                        color="tab:red")
    axes[0][0].set_yticks(range(len(systems)), systems, fontsize=8)
    axes[0][0].invert_yaxis()
    fig.suptitle(f"{profile.dataset} · {profile.dataset_version} · sha256 "
                 f"{profile.key_sha256[:12]}  (blue: first metric, orange: its partner)",
                 fontsize=9)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return out


def _bar(ax, y: float, m: Metric, colour: str, width: float) -> None:
    if m.value is None:
        ax.text(0.02, y, "no items", va="center", fontsize=7, color="0.4")
        return
    # differences (resolution responsiveness) can be negative; profile headlines are in [0, 1]
    value = max(0.0, min(1.0, m.value))
    xerr = None
    if m.lo is not None and m.hi is not None:
        xerr = [[max(0.0, value - m.lo)], [max(0.0, m.hi - value)]]
    ax.barh(y, value, height=width, color=colour, xerr=xerr, error_kw={"elinewidth": 0.8})
