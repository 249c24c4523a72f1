"""Inline SVG plots for report.html (no library, no network): metric planes, the detection
latency histogram, TIAP score shifts. Every mark carries a <title> (its numbers on hover)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from html import escape
from typing import Any

from twistbench.report.planes import Plane, Point, colour
from twistbench.report.terminal import counts

W, H = 380, 340
LEFT, RIGHT, TOP, BOTTOM = 52, 18, 34, 50
FONT = "font-family='system-ui, sans-serif'"


def _x(v: float) -> float:
    return LEFT + v * (W - LEFT - RIGHT)


def _y(v: float) -> float:
    return H - BOTTOM - v * (H - TOP - BOTTOM)


def _text(x: float, y: float, s: str, size: int = 12, anchor: str = "start", fill: str = "#222",
          weight: str = "normal", extra: str = "") -> str:
    return (f"<text x='{x:.1f}' y='{y:.1f}' font-size='{size}' text-anchor='{anchor}' "
            f"fill='{fill}' font-weight='{weight}' {extra}>{escape(s)}</text>")


def _marker(p: Point, x: float, y: float) -> str:
    c = colour(p.index)
    if p.mode == "batch":
        return (f"<rect x='{x - 5:.1f}' y='{y - 5:.1f}' width='10' height='10' fill='white' "
                f"stroke='{c}' stroke-width='2.2'/>")
    return f"<circle cx='{x:.1f}' cy='{y:.1f}' r='5.5' fill='{c}' stroke='white' stroke-width='1'/>"


def _tip(p: Point, plane: Plane) -> str:
    def one(label: str, m: Any) -> str:
        ci = f" [{m.lo:.3f}, {m.hi:.3f}]" if m.lo is not None and m.hi is not None else ""
        return f"{label} {m.value:.3f}{ci} ({counts(m)})"
    who = f"{p.system} ({p.mode})" if p.mode else p.system
    return f"{who}: {one(plane.x_label, p.x)}; {one(plane.y_label, p.y)}"


Box = tuple[float, float, float, float]  # x0, y0, x1, y1


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def label_groups(points: Sequence[Point]) -> list[list[int]]:
    """Points drawn at (nearly) the same place share one label (e.g. a system's online and
    batch points when both modes score the same)."""
    groups: list[list[int]] = []
    for i, p in enumerate(points):
        for g in groups:
            q = points[g[0]]
            if abs(_x(p.xv) - _x(q.xv)) < 4 and abs(_y(p.yv) - _y(q.yv)) < 4:
                g.append(i)
                break
        else:
            groups.append([i])
    return groups


def group_names(points: Sequence[Point], group: list[int]) -> list[tuple[str, int]]:
    """(name, colour index) of each system in a group of coinciding points."""
    names: list[tuple[str, int]] = []
    for i in group:
        p = points[i]
        same = [points[j].mode for j in group if points[j].system == p.system and points[j].mode]
        name = p.system + (f" · {'/'.join(same)}" if same else "")
        if (name, p.index) not in names:
            names.append((name, p.index))
    return names


def _group_text(points: Sequence[Point], group: list[int]) -> tuple[str, str]:
    p = points[group[0]]
    return (", ".join(n for n, _ in group_names(points, group)), f"{p.xv:.2f}, {p.yv:.2f}")


def place_labels(points: Sequence[Point], obstacles: Sequence[Box] = ()
                 ) -> list[tuple[list[int], float, float, str]]:
    """(group, x, y, anchor) of a two-line label per group of coinciding points: the first of
    several spots around the point that stays inside the plot and clear of every other label,
    marker and obstacle; when none is clear, the spot that overlaps least."""
    groups = label_groups(points)
    markers: list[Box] = [(_x(p.xv) - 6, _y(p.yv) - 6, _x(p.xv) + 6, _y(p.yv) + 6)
                          for p in points]
    placed: list[Box] = list(obstacles)
    out = []
    def edge(g: int) -> tuple[float, float]:
        # points on an edge or in a corner have the fewest free spots: they are placed first
        p = points[groups[g][0]]
        return (min(p.xv, 1 - p.xv, p.yv, 1 - p.yv), _y(p.yv))

    order = sorted(range(len(groups)), key=edge)
    for gi in order:
        group = groups[gi]
        p = points[group[0]]
        px, py = _x(p.xv), _y(p.yv)
        name, vals = _group_text(points, group)
        w, h = 6.4 * max(len(name), len(vals)) + 2, 25.0
        spots = [(9, -12, "start"), (-9, -12, "end"), (9, -30, "start"), (-9, -30, "end"),
                 (9, 6, "start"), (-9, 6, "end"), (-w / 2, -38, "middle"), (-w / 2, 10, "middle")]
        for k in range(1, 13):  # then further up or down, nearest first
            for dy in (-12 - k * 14, -12 + k * 14):
                spots += [(9, dy, "start"), (-9, dy, "end")]
        best: tuple[float, Box, float, float, str] | None = None
        own = {i for i in group}
        for dx, dy, anchor in spots:
            x0 = px + dx if anchor == "start" else px + dx - w if anchor == "end" else px + dx
            box = (x0, py + dy, x0 + w, py + dy + h)
            outside = (max(0.0, LEFT - box[0]) + max(0.0, box[2] - (W - 2))
                       + max(0.0, TOP - box[1]) + max(0.0, box[3] - (H - BOTTOM)))
            hits = sum(_overlaps(box, b) for b in placed)
            hits += sum(_overlaps(box, m) for j, m in enumerate(markers) if j not in own)
            cost = hits * 100 + outside * 10 + abs(dy + 12) * 0.1
            if best is None or cost < best[0]:
                tx = px + dx if anchor != "middle" else px + dx + w / 2
                best = (cost, box, tx, py + dy + 10, anchor)
            if cost < 1:
                break
        assert best is not None
        placed.append(best[1])
        out.append((group, best[2], best[3], best[4]))
    return out


def better_mark(plane: Plane) -> tuple[float, float, str, Box]:
    """Where "better" is written: on the good corner's shaded square, at its inner edge (where a
    point sitting in the corner does not cover it): x, y, anchor and its box."""
    gx, gy = plane.good_corner
    cw, ch = 0.3 * (W - LEFT - RIGHT), 0.3 * (H - TOP - BOTTOM)
    cx = _x(1) - cw if gx else _x(0)
    cy = _y(1) if gy else _y(0) - ch
    bx = cx + 4 if gx else cx + cw - 4
    by = cy + 13 if not gy else cy + ch - 5
    return bx, by, "start" if gx else "end", (bx - (0 if gx else 42), by - 11,
                                             bx + (42 if gx else 0), by + 3)


def plane_labels(plane: Plane) -> list[tuple[list[int], float, float, str]]:
    """The value labels of a plane, clear of "better" and of the marker legend (both the SVG
    and the PNG place them so)."""
    obstacles = [better_mark(plane)[3]]
    if any(p.mode for p in plane.points):
        obstacles.append((W - 156.0, 6.0, W - 4.0, 24.0))
    return place_labels(plane.points, obstacles)


def leader(plane: Plane, group: list[int], lx: float, ly: float) -> tuple[float, float] | None:
    """The label end of a line from a point to a label moved away from it, or None."""
    p = plane.points[group[0]]
    py = _y(p.yv)
    if abs(ly - 4 - py) <= 24:
        return None
    return lx, ly + (14 if ly < py else -10)


def plane_svg(plane: Plane) -> str:
    """One metric plane: axes 0..1, the good corner shaded, a point per system (and mode) with
    interval whiskers, value labels; hover a point for its numbers and counts."""
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {W} {H}' width='{W}' "
             f"height='{H}' role='img' aria-label='{escape(plane.title)}' {FONT}>"]
    gx, gy = plane.good_corner
    cw, ch = 0.3 * (W - LEFT - RIGHT), 0.3 * (H - TOP - BOTTOM)
    cx = _x(1) - cw if gx else _x(0)
    cy = _y(1) if gy else _y(0) - ch
    parts.append(f"<rect x='{cx:.1f}' y='{cy:.1f}' width='{cw:.1f}' height='{ch:.1f}' "
                 "fill='#2e9d5b' fill-opacity='0.12'/>")
    bx, by, banchor, _ = better_mark(plane)
    parts.append(_text(bx, by, "better", 11, banchor, "#1d7a45", "bold"))
    for t in (0, 0.25, 0.5, 0.75, 1):
        parts.append(f"<line x1='{_x(t):.1f}' y1='{_y(0):.1f}' x2='{_x(t):.1f}' y2='{_y(1):.1f}' "
                     "stroke='#e3e3e3'/>")
        parts.append(f"<line x1='{_x(0):.1f}' y1='{_y(t):.1f}' x2='{_x(1):.1f}' y2='{_y(t):.1f}' "
                     "stroke='#e3e3e3'/>")
        parts.append(_text(_x(t), _y(0) + 15, f"{t:g}", 11, "middle", "#555"))
        parts.append(_text(_x(0) - 6, _y(t) + 4, f"{t:g}", 11, "end", "#555"))
    parts.append(f"<rect x='{_x(0):.1f}' y='{_y(1):.1f}' width='{_x(1) - _x(0):.1f}' "
                 f"height='{_y(0) - _y(1):.1f}' fill='none' stroke='#888'/>")
    xl = f"{plane.x_label} ({'higher' if plane.x_up else 'lower'} is better)"
    yl = f"{plane.y_label} ({'higher' if plane.y_up else 'lower'} is better)"
    parts.append(_text((_x(0) + _x(1)) / 2, H - 12, xl, 12, "middle", "#222"))
    parts.append(_text(14, (_y(0) + _y(1)) / 2, yl, 12, "middle", "#222",
                       extra=f"transform='rotate(-90 14 {(_y(0) + _y(1)) / 2:.1f})'"))
    parts.append(_text(LEFT, 20, plane.title, 14, "start", "#111", "bold"))
    if any(p.mode for p in plane.points):
        parts.append(f"<circle cx='{W - 150}' cy='15' r='4.5' fill='#555'/>")
        parts.append(_text(W - 142, 19, "online", 11))
        parts.append(f"<rect x='{W - 92}' y='11' width='8' height='8' fill='white' "
                     "stroke='#555' stroke-width='2'/>")
        parts.append(_text(W - 80, 19, "batch", 11))
    for a, b in plane.links:
        pa, pb = plane.points[a], plane.points[b]
        parts.append(f"<line x1='{_x(pa.xv):.1f}' y1='{_y(pa.yv):.1f}' x2='{_x(pb.xv):.1f}' "
                     f"y2='{_y(pb.yv):.1f}' stroke='{colour(pa.index)}' stroke-dasharray='4 3' "
                     "stroke-width='1.5'/>")
    for p in plane.points:
        c = colour(p.index)
        x, y = _x(p.xv), _y(p.yv)
        whisk = []
        if p.x.lo is not None and p.x.hi is not None:
            x0, x1 = _x(max(0.0, p.x.lo)), _x(min(1.0, p.x.hi))
            whisk.append(f"M{x0:.1f},{y:.1f}H{x1:.1f}M{x0:.1f},{y - 4:.1f}v8M{x1:.1f},"
                         f"{y - 4:.1f}v8")
        if p.y.lo is not None and p.y.hi is not None:
            y0, y1 = _y(max(0.0, p.y.lo)), _y(min(1.0, p.y.hi))
            whisk.append(f"M{x:.1f},{y0:.1f}V{y1:.1f}M{x - 4:.1f},{y0:.1f}h8M{x - 4:.1f},"
                         f"{y1:.1f}h8")
        g = [f"<g class='pt'><title>{escape(_tip(p, plane))}</title>"]
        if whisk:
            g.append(f"<path d='{''.join(whisk)}' stroke='{c}' stroke-width='1.4' fill='none' "
                     "opacity='0.8'/>")
        g.append(_marker(p, x, y))
        parts.append("".join(g) + "</g>")
    for group, lx, ly, anchor in plane_labels(plane):
        name, vals = _group_text(plane.points, group)
        p = plane.points[group[0]]
        end = leader(plane, group, lx, ly)
        if end is not None:
            parts.append(f"<line x1='{_x(p.xv):.1f}' y1='{_y(p.yv):.1f}' x2='{end[0]:.1f}' "
                         f"y2='{end[1]:.1f}' stroke='{colour(p.index)}' stroke-width='0.8' "
                         "opacity='0.7'/>")
        spans = ", ".join(f"<tspan fill='{colour(i)}'>{escape(n)}</tspan>"
                          for n, i in group_names(plane.points, group))
        parts.append(f"<text x='{lx:.1f}' y='{ly:.1f}' font-size='11' text-anchor='{anchor}' "
                     f"font-weight='bold' fill='#333'>{spans}</text>")
        parts.append(_text(lx, ly + 12, vals, 11, anchor, "#333"))
    parts.append("</svg>")
    return "".join(parts)


def latency_svg(latencies: dict[str, list[int]], systems: Sequence[str]) -> str:
    """Histogram of online detection latency (sessions from the reversal turn to the flag), one
    bar group per latency, one bar per system; hover a bar for its count."""
    data = {s: Counter(v) for s, v in latencies.items() if v}
    if not data:
        return ""
    top = max(max(c) for c in data.values())
    bins = list(range(0, max(top, 1) + 1))
    peak = max(max(c.values()) for c in data.values())
    w, h, left, bottom, top_m = max(380, 40 * len(bins) + 80), 260, 48, 44, 30
    gw = (w - left - 12) / len(bins)
    bw = max(3.0, (gw - 6) / len(data))
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {w} {h}' width='{w}' "
             f"height='{h}' role='img' aria-label='detection latency' {FONT}>",
             _text(left, 18, "A online · detection latency", 14, "start", "#111", "bold")]

    def yv(v: float) -> float:
        return h - bottom - v / peak * (h - bottom - top_m)

    for t in sorted({0, peak // 2, peak}):
        parts.append(f"<line x1='{left}' y1='{yv(t):.1f}' x2='{w - 12}' y2='{yv(t):.1f}' "
                     "stroke='#e3e3e3'/>")
        parts.append(_text(left - 6, yv(t) + 4, str(t), 11, "end", "#555"))
    for bi, b in enumerate(bins):
        gx = left + bi * gw + 3
        parts.append(_text(gx + (gw - 6) / 2, h - bottom + 15, str(b), 11, "middle", "#555"))
        for si, name in enumerate(s for s in systems if s in data):
            n = data[name].get(b, 0)
            if not n:
                continue
            x = gx + si * bw
            parts.append(f"<rect x='{x:.1f}' y='{yv(n):.1f}' width='{bw - 1:.1f}' "
                         f"height='{yv(0) - yv(n):.1f}' fill='{colour(systems.index(name))}'>"
                         f"<title>{escape(name)}: {n} arc(s) flagged {b} session(s) after the "
                         "reversal</title></rect>")
            parts.append(_text(x + (bw - 1) / 2, yv(n) - 3, str(n), 10, "middle", "#333"))
    parts.append(_text((left + w) / 2, h - 10, "sessions from reversal to flag (lower is better)",
                       11, "middle"))
    parts.append("</svg>")
    return "".join(parts)


def shifts_svg(audit: dict[str, Any], metric: str) -> str:
    """TIAP: per run and target comparison, the mean score shift with its bootstrap interval
    (zero line marked: an interval off zero means the target alone moved the score)."""
    rows = [s for s in audit["shifts"] if metric in (s.get("delta") or {})]
    rows = [s for s in rows if s["delta"][metric].get("estimate") is not None]
    if not rows:
        return ""
    vals = [v for s in rows for v in (s["delta"][metric].get("low"),
                                      s["delta"][metric].get("high"),
                                      s["delta"][metric]["estimate"]) if v is not None]
    lo, hi = min(0.0, *vals), max(0.0, *vals)
    pad = (hi - lo) * 0.08 or 0.05
    lo, hi = lo - pad, hi + pad
    left, right, row_h, top_m = 230, 70, 24, 34
    w, h = 640, top_m + row_h * len(rows) + 40

    def xv(v: float) -> float:
        return left + (v - lo) / (hi - lo) * (w - left - right)

    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {w} {h}' width='{w}' "
             f"height='{h}' role='img' aria-label='TIAP score shifts' {FONT}>",
             _text(8, 18, f"TIAP score shift · {metric}", 14, "start", "#111", "bold"),
             f"<line x1='{xv(0):.1f}' y1='{top_m - 6}' x2='{xv(0):.1f}' y2='{h - 34}' "
             "stroke='#888' stroke-dasharray='3 3'/>"]
    for i, s in enumerate(rows):
        d = s["delta"][metric]
        y = top_m + i * row_h + row_h / 2
        label = f"{s['run']}: {s['a']} − {s['b']}"
        parts.append(_text(left - 10, y + 4, label, 11, "end"))
        est = d["estimate"]
        tip = f"{label}: {est:+.3f}"
        if d.get("low") is not None and d.get("high") is not None:
            parts.append(f"<line x1='{xv(d['low']):.1f}' y1='{y:.1f}' x2='{xv(d['high']):.1f}' "
                         f"y2='{y:.1f}' stroke='#0072B2' stroke-width='2'/>")
            tip += f" [{d['low']:+.3f}, {d['high']:+.3f}], n={d.get('n', s.get('n'))}"
        parts.append(f"<circle cx='{xv(est):.1f}' cy='{y:.1f}' r='4.5' fill='#0072B2'>"
                     f"<title>{escape(tip)}</title></circle>")
        parts.append(_text(w - right + 6, y + 4, f"{est:+.3f}", 11))
    for t in (lo + pad, 0.0, hi - pad):
        parts.append(_text(xv(t), h - 18, f"{t:+.2f}", 11, "middle", "#555"))
    parts.append("</svg>")
    return "".join(parts)
