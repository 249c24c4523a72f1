"""report.html is one self-contained file with the profile, the plots and the item data; the
metric planes hold what the profile holds; TIAP shifts join when an audit folder is given."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from toy_systems import KeywordToy

from twistbench.datasets.demo import demo_dataset
from twistbench.judges.structural import StructuralJudge
from twistbench.report.html import _json_block, render_html
from twistbench.report.planes import planes
from twistbench.report.runs import report_runs
from twistbench.report.svg import H, W, group_names, place_labels, plane_labels, plane_svg
from twistbench.runs.runner import RunSettings, run_system


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory):
    root = tmp_path_factory.mktemp("html")
    run_system(demo_dataset(), KeywordToy(), root / "kw", settings=RunSettings(progress=False),
               dataset_source={"name": "demo"})
    return root, report_runs([root / "kw"])


def island(html: str, k: int = 0) -> dict:
    m = re.search(rf"<script type='application/json' id='items-{k}'>(.*?)</script>", html, re.S)
    assert m, "no item data"
    return json.loads(m.group(1))


def test_the_html_is_self_contained(demo_report):
    _, rep = demo_report
    html = render_html(rep)
    # nothing is fetched: no external script, stylesheet, image or font; links are fragments
    assert not re.search(r"<(script|img|iframe)[^>]*\bsrc=", html)
    assert "<link" not in html and "@import" not in html and "url(" not in html
    assert all(h.startswith("#") for h in re.findall(r"href=['\"]([^'\"]*)", html))
    assert not re.findall(r"https?://(?!www\.w3\.org/2000/svg)", html)
    prof = rep.profiles[0]
    assert prof.key_sha256 in html and prof.dataset_version in html
    # beside the judged column; the version read from the judge (it moves with the judge's rules)
    assert f"judge: structural {StructuralJudge.version} (no decoy calibration)" in html
    assert "system declares no safety layer" in html  # N/A with its reason
    data = island(html)
    assert data["systems"] == ["keyword-toy"] and len(data["items"]) == len(
        rep.views(prof).items)


def test_no_item_text_can_close_the_data_island():
    block = _json_block("x", {"q": "</script><script>alert(1)</script>"})
    assert block.count("</script>") == 1 and json.loads(block[block.index(">") + 1:-9]) == {
        "q": "</script><script>alert(1)</script>"}


def test_planes_hold_the_profile_pairs_and_no_empty_plane(demo_report):
    _, rep = demo_report
    prof = rep.profiles[0]
    drawn = planes(prof)
    # tracks with no scored cell get no plane; A's two modes share one plane, linked
    assert [p.key for p in drawn] == list(dict.fromkeys(c.track for c in prof.scored_columns()))
    assert prof.rows[0].cells["D"].status == "n/a" and "D" not in [p.key for p in drawn]
    a = next(p for p in drawn if p.key == "A")
    assert {pt.mode for pt in a.points} == {"online", "batch"} and a.links == [(0, 1)]
    b = next(p for p in drawn if p.key == "B")
    cell = prof.rows[0].cells["B"].pair
    assert (b.points[0].xv, b.points[0].yv) == (cell.primary.value, cell.partner.value)
    assert b.good_corner == (1.0, 1.0) and b.x_up and b.y_up
    c = next(p for p in drawn if p.key == "C")
    assert c.good_corner == (1.0, 0.0)  # current up, stale down
    svg = plane_svg(b)
    assert svg.startswith("<svg") and "better" in svg and "(higher is better)" in svg


def test_labels_of_crowded_points_do_not_overlap():
    from twistbench.report.planes import Plane, Point
    from twistbench.stats import proportion

    pts = [Point(f"system-{i}", i, None, proportion("x", k, 10), proportion("y", j, 10))
           for i, (k, j) in enumerate([(5, 5), (5, 5), (6, 5), (5, 6), (10, 10), (10, 9),
                                       (0, 0), (0, 1)])]
    plane = Plane("B", "t", "x", "y", True, True, points=pts)
    placed = plane_labels(plane)
    boxes = []
    for group, x, y, anchor in placed:
        name = ", ".join(n for n, _ in group_names(pts, group))
        w = 6.4 * len(name)
        x0 = x if anchor == "start" else x - w if anchor == "end" else x - w / 2
        boxes.append((x0, y - 10, x0 + w, y + 14))
    # coinciding points share one label; no two labels overlap; all stay on the picture
    assert len(placed) == 7
    for i, a in enumerate(boxes):
        assert a[0] >= 0 and a[2] <= W and a[1] >= 0 and a[3] <= H, a
        for b in boxes[i + 1:]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (a, b)
    assert place_labels([]) == []


def test_an_audit_folder_adds_tiap_shifts(demo_report, tmp_path):
    root, _ = demo_report

    def twist(*args):
        r = subprocess.run([sys.executable, "-m", "twistbench.cli", *args], capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return r

    for name in ("flat-rag", "fact-rag"):
        twist("trace", "-s", name, "-d", "demo", "-o", str(tmp_path / name))
    twist("audit", str(tmp_path / "flat-rag"), str(tmp_path / "fact-rag"), "-o",
          str(tmp_path / "audit"), "--resamples", "200")
    doc = json.loads((tmp_path / "audit" / "audit.json").read_text())
    twist("report", str(root / "kw"), str(tmp_path / "audit"), "--html",
          str(tmp_path / "r.html"))
    html = (tmp_path / "r.html").read_text()
    assert "TIAP score shift" in html
    shown = [s for s in doc["shifts"] if any(d.get("estimate") is not None
                                              for d in s["delta"].values())]
    assert shown
    s = shown[0]
    metric, d = next((m, d) for m, d in s["delta"].items() if d.get("estimate") is not None)
    assert f"{s['run']}: {s['a']} − {s['b']}: {d['estimate']:+.3f}" in html


def test_a_label_with_url_characters_keeps_its_items_link(demo_report):
    root, _ = demo_report
    html = render_html(report_runs([root / "kw"], labels=["kw & co #2"]))
    # each value URL-encoded, so the page's router splits on '&' before decoding
    assert "href='#items?track=B&amp;system=kw%20%26%20co%20%232'" in html
    assert "system=kw & co" not in html and "system=kw &amp; co" not in html
