"""Size and speed of report.html for a 10,000-item run, against the default run's own report.

The 10,000-item run is the default run replicated: every conversation of a source run root
(default `runs/default`, written by `make run`; `twist run` is started first when it is absent)
copied K times under new conversation and item ids (the same turns, gold and system outputs),
so that the item browser holds at least --items items. Each copy's records are rewritten to the
new ids and the runs are re-scored through `report_runs` like `twist report` does.

Printed, for the source report (the reference, in the same process) and the 10,000-item one:
- items in the browser, HTML size;
- build time: re-scoring plus rendering the HTML (median of --repeats);
- in headless Chromium from file:// (a fresh page per load, median of --repeats):
  first contentful paint (the overview), items ready (the item data parsed, the list built),
  and opening the Items tab with the list drawn;
and the ratio of each to the reference.

Run: .venv/bin/python benchmarks/bench_report.py [--source runs/default] [--items 10000]
     [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from working_tree import child_env

from twistbench.model import Dataset
from twistbench.records import ITEMS, MANIFEST, read_manifest, read_records
from twistbench.report.chromium import browser_page, unavailable
from twistbench.report.html import render_html
from twistbench.report.runs import find_sources, load_run_dataset, report_runs
from twistbench.tracks import a_tension, b_alignment, c_supersession, d_safety, locomo_qa


def replicate(ds: Dataset, k: int) -> tuple[Dataset, list[dict[str, str]]]:
    """The dataset with every conversation copied k times (copy 0 is the original), and per
    copy the map from each original record id to the copy's."""
    data: dict[str, Any] = {f: [] for f in Dataset.ITEM_FIELDS}
    data["conversations"] = []
    maps = []
    for n in range(k):
        suffix = "" if n == 0 else f"~{n}"
        ids: dict[str, str] = {}
        for c in ds.conversations:
            cid = c.id + suffix
            data["conversations"].append(c.model_copy(update={
                "id": cid, "events": [e.model_copy(update={"conversation": cid})
                                      for e in c.events]}))
            ids[a_tension.batch_item_id(c.id)] = a_tension.batch_item_id(cid)
            for s, _ in c.sessions():
                ids[f"ingest:{c.id}:s{s}"] = f"ingest:{cid}:s{s}"
        for fld in Dataset.ITEM_FIELDS:
            for it in getattr(ds, fld):
                new = it.model_copy(update={"id": it.id + suffix,
                                            "conversation": it.conversation + suffix})
                data[fld].append(new)
                if fld == "drafts":
                    ids[b_alignment.item_id(it.id)] = b_alignment.item_id(new.id)
                elif fld == "update_chains":
                    for q in it.queries:
                        ids[c_supersession.item_id(it.id, q.id)] = c_supersession.item_id(
                            new.id, q.id)
                elif fld == "qa":
                    ids[locomo_qa.item_id(it.id)] = locomo_qa.item_id(new.id)
                elif fld == "emotional_negatives":
                    ids[d_safety.item_id(it.id, it.probe.id)] = d_safety.item_id(new.id,
                                                                                 it.probe.id)
                elif fld in ("pii_plants", "crisis_plants"):
                    for pr in it.probes:
                        ids[d_safety.item_id(it.id, pr.id)] = d_safety.item_id(new.id, pr.id)
        maps.append(ids)
    data["key_sha256"] = f"bench-x{k}-{ds.key_sha256[:12]}"
    return ds.model_copy(update=data), maps


def write_copies(source: list[Path], k: int, out: Path) -> tuple[list[Path], Dataset]:
    """Run folders holding every source run's records K times, and the replicated dataset."""
    ds = load_run_dataset(read_manifest(source[0]), str(source[0]))
    big, maps = replicate(ds, k)
    folders = []
    for folder in source:
        manifest = read_manifest(folder)
        manifest["dataset"]["sha256"] = big.key_sha256
        manifest.setdefault("config", {})["conversations"] = None
        dest = out / folder.name
        dest.mkdir(parents=True)
        (dest / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
        records = read_records(folder)
        with open(dest / ITEMS, "w", encoding="utf-8") as fh:
            for n, ids in enumerate(maps):
                suffix = "" if n == 0 else f"~{n}"
                for r in records:
                    copy = r.model_copy(update={"item_id": ids.get(r.item_id, r.item_id),
                                                "conversation": r.conversation + suffix})
                    fh.write(copy.model_dump_json() + "\n")
        folders.append(dest)
    return folders, big


def build(folders: list[Path], dataset: Dataset | None, repeats: int) -> tuple[str, float, int]:
    """(html, median seconds to re-score and render, items in the browser)."""
    times, html, items = [], "", 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        rep = report_runs(folders, dataset=dataset)
        html = render_html(rep)
        times.append(time.perf_counter() - t0)
        items = sum(len(rep.views(p).items) for p in rep.profiles)
    return html, statistics.median(times), items


def browser_times(path: Path, repeats: int) -> dict[str, float]:
    """Median first contentful paint, items-ready and items-tab times (ms) over fresh loads."""
    fcp, ready, tab = [], [], []
    url = path.resolve().as_uri()
    with browser_page(1400, 900) as page:
        for _ in range(repeats + 1):  # the first load warms the browser and is not counted
            page.goto("about:blank")
            page.goto(url)
            page.wait_for_function("window.twistReady === true", timeout=120_000)
            paint = page.evaluate(
                "performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? null")
            at = page.evaluate("window.twistReadyAt")
            t0 = time.perf_counter()
            page.click("#tab-items")
            page.wait_for_selector(".row")
            page.evaluate("new Promise(r => requestAnimationFrame(() => r()))")
            fcp.append(paint)
            ready.append(at)
            tab.append((time.perf_counter() - t0) * 1000)
    return {"first_paint_ms": statistics.median(fcp[1:]),
            "items_ready_ms": statistics.median(ready[1:]),
            "items_tab_ms": statistics.median(tab[1:])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=Path("runs/default"))
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    if not args.source.exists():
        print(f"{args.source} is absent: running `twist run -o {args.source}` first")
        subprocess.run([sys.executable, "-m", "twistbench.cli", "run", "--no-progress", "-o",
                        str(args.source)], check=True, capture_output=True, env=child_env())
    source = find_sources([args.source]).runs
    why = unavailable()
    work = Path(tempfile.mkdtemp(prefix="twist-bench-report-"))
    try:
        ref_html, ref_build, ref_items = build(source, None, args.repeats)
        k = math.ceil(args.items / ref_items)
        folders, big = write_copies(source, k, work / "big")
        big_html, big_build, big_items = build(folders, big, max(1, args.repeats // 2))
        rows = []
        for name, html, built, items in (("default run", ref_html, ref_build, ref_items),
                                         (f"x{k} copies", big_html, big_build, big_items)):
            path = work / f"{name.split()[0]}.html"
            path.write_text(html, encoding="utf-8")
            b = browser_times(path, args.repeats) if why is None else {}
            rows.append((name, items, len(html.encode("utf-8")), built, b))
        print(f"source: {args.source} ({len(source)} runs); repeats: {args.repeats}; "
              f"{'browser: ' + why if why else 'Chromium headless, file://'}")
        print(f"{'report':<14}{'items':>8}{'HTML MB':>10}{'build s':>9}{'first paint':>13}"
              f"{'items ready':>13}{'items tab':>11}")
        for name, items, size, built, b in rows:
            cells = [f"{b[key]:>10.0f} ms" if b else f"{'-':>13}" for key in
                     ("first_paint_ms", "items_ready_ms")]
            tab = f"{b['items_tab_ms']:>8.0f} ms" if b else f"{'-':>11}"
            print(f"{name:<14}{items:>8,}{size / 1e6:>10.2f}{built:>9.2f}{cells[0]:>13}"
                  f"{cells[1]:>13}{tab:>11}")
        (_, i0, s0, t0, b0), (_, i1, s1, t1, b1) = rows
        ratio = (f"ratio (x{k} / default): items {i1 / i0:.1f}, size {s1 / s0:.1f}, build "
                 f"{t1 / t0:.1f}")
        if b0 and b1:
            ratio += (f", first paint {b1['first_paint_ms'] / b0['first_paint_ms']:.2f}, items "
                      f"ready {b1['items_ready_ms'] / b0['items_ready_ms']:.1f}, items tab "
                      f"{b1['items_tab_ms'] / b0['items_tab_ms']:.2f}")
        print(ratio)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
