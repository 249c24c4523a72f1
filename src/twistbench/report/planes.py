"""What the profile plots show, independent of how they are drawn (SVG in report.html, PNG for
report.md): each track's headline pair as a point per system in its metric plane, with interval
whiskers, the good corner and which way is good on each axis.

Track A's two modes share one plane (the same pair, F1 against false-flag rate): a system's
online and batch points are drawn with different markers and joined by a line. A plane with no
point (every system N/A) is not drawn; a system whose cell is N/A, or whose metric has no items,
is listed under the plane with the reason, never drawn at zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from twistbench.report.profile import Column, Profile
from twistbench.stats import Metric
from twistbench.tracks import locomo_qa

# Okabe-Ito: distinguishable with the common colour-vision deficiencies
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000",
           "#F0E442")


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


@dataclass
class Point:
    system: str
    index: int  # the system's row: its colour
    mode: str | None  # "online" / "batch" in Track A's plane
    x: Metric
    y: Metric

    @property
    def xv(self) -> float:
        return float(self.x.value)  # type: ignore[arg-type]

    @property
    def yv(self) -> float:
        return float(self.y.value)  # type: ignore[arg-type]


@dataclass
class Plane:
    key: str  # the track key
    title: str
    x_label: str
    y_label: str
    x_up: bool  # higher is better on x
    y_up: bool
    points: list[Point] = field(default_factory=list)
    links: list[tuple[int, int]] = field(default_factory=list)  # point indices joined by a line
    absent: list[str] = field(default_factory=list)  # "system (mode): why it is not drawn"

    @property
    def good_corner(self) -> tuple[float, float]:
        return (1.0 if self.x_up else 0.0, 1.0 if self.y_up else 0.0)

    def direction(self) -> str:
        """'better: right and down' — where the good corner is."""
        return (f"better: {'right' if self.x_up else 'left'} and "
                f"{'up' if self.y_up else 'down'}")


# the QA plane is titled by the profile's corpus (locomo_qa.title_for)
_TITLES = {"A": "A · tension detection", "B": "B · draft alignment",
           "C": "C · belief supersession", "D": "D · safe recall"}


def _labels(col: Column) -> tuple[str, str]:
    first, second = (s.strip() for s in col.label.split("/", 1))
    return first, second


def planes(profile: Profile) -> list[Plane]:
    """One plane per track with at least one drawable point, in column order."""
    by_track: dict[str, Plane] = {}
    qa_title = locomo_qa.title_for(profile.dataset)
    for col in profile.scored_columns():
        x_label, y_label = _labels(col)
        plane = by_track.setdefault(col.track, Plane(
            key=col.track, title=qa_title if col.track == locomo_qa.KEY
            else _TITLES.get(col.track, col.title), x_label=x_label,
            y_label=y_label, x_up=col.primary_up, y_up=col.partner_up))
        mode = col.sub if col.track == "A" else None
        for i, row in enumerate(profile.rows):
            cell = row.cells[col.key]
            who = f"{row.system} ({mode})" if mode else row.system
            if cell.status != "scored" or cell.pair is None:
                continue  # N/A reasons are listed under the table; never a point at zero
            if cell.pair.primary.value is None or cell.pair.partner.value is None:
                plane.absent.append(f"{who}: no items")
                continue
            plane.points.append(Point(row.system, i, mode, cell.pair.primary,
                                      cell.pair.partner))
    for plane in by_track.values():
        firsts: dict[str, int] = {}
        for j, p in enumerate(plane.points):
            if p.mode is None:
                continue
            if p.system in firsts:
                plane.links.append((firsts[p.system], j))
            else:
                firsts[p.system] = j
    return [p for p in by_track.values() if p.points]
