"""End to end in a real browser: the default run's report.html opened from file:// in headless
Chromium; click the Items tab, a track filter, an outcome filter and an item, and check what the
page shows against the report's own data. Skips, saying why, where Chromium or Playwright is
absent (`.ci/run` installs Chromium, so CI runs it)."""

from __future__ import annotations

import json
import re

import pytest

from twistbench.report.chromium import browser_page, unavailable

WHY = unavailable()
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"no browser to drive: {WHY}")


def items_of(html: str) -> dict:
    m = re.search(r"<script type='application/json' id='items-0'>(.*?)</script>", html, re.S)
    assert m
    return json.loads(m.group(1))


def test_default_run_report_in_chromium(default_run):
    report = default_run / "report.html"
    assert report.exists(), "twist run writes report.html into its root"
    data = items_of(report.read_text(encoding="utf-8"))
    systems = data["systems"]
    b_items = [it for it in data["items"] if it["t"] == "B"]
    wrong_b = [it for it in b_items if any(r["o"] == "wrong" for r in it["r"])]
    assert b_items and wrong_b, "the default systems get some Track B drafts wrong"
    errors = []
    with browser_page(1400, 900) as page:
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: r.url.startswith("file:") or errors.append(r.url))
        page.goto(report.resolve().as_uri())
        # the overview: one profile row per run, in run order, and the key under it
        rows = page.locator("table.profile tbody th.sys").all_inner_texts()
        assert [r.splitlines()[0].strip() for r in rows] == systems
        assert data and page.locator(".key code").inner_text() in report.read_text()
        assert page.locator("svg[aria-label='B · draft alignment']").count() == 1
        # the items tab, then the track filter B and the outcome filter wrong
        page.click("#tab-items")
        page.wait_for_selector(".row")
        assert page.locator(".browser .count").inner_text().endswith(
            f"of {len(data['items']):,} items")
        page.click(".chip[data-v='B']")
        assert page.locator(".browser .count").inner_text().startswith(f"{len(b_items)} of")
        page.click(".chip[data-v='wrong']")
        assert page.locator(".browser .count").inner_text().startswith(f"{len(wrong_b)} of")
        # click the second item of the list: its detail shows the draft, gold and each system
        row = page.locator(".row[data-r='1']")
        item_id = row.get_attribute("data-id")
        row.click()
        item = next(it for it in data["items"] if it["i"] == item_id)
        assert item in wrong_b
        assert page.locator(".lead").inner_text().endswith(item["q"])
        assert "Draft" in page.locator(".lead .kind").inner_text()
        gold = page.locator(".card.gold").inner_text()
        assert "gold verdict" in gold
        for ids in (g[1] for g in item["gt"]):  # the gold turns, with their text
            for tid in ids:
                assert tid in gold
                assert data["turns"][item["c"]][tid][3].splitlines()[0][:40] in gold
        cards = page.locator(".card.sys")
        assert cards.count() == len(systems)
        for k, r in enumerate(item["r"]):
            card = cards.nth(k)
            assert card.get_attribute("data-system") == systems[k]
            assert card.get_attribute("data-outcome") == r["o"]
            if r.get("w"):
                assert r["w"] in card.inner_text()
        # the link names the item; j moves to the next one; a shared link selects it again
        assert page.evaluate("location.hash") == "#item=" + page.evaluate(
            f"encodeURIComponent({json.dumps(item_id)})")
        page.keyboard.press("j")
        assert page.locator(".row.sel").get_attribute("data-id") == wrong_b[2]["i"]
        page.goto(report.resolve().as_uri() + "#item=" + item_id)
        page.wait_for_selector(".card.sys")
        assert page.locator(".lead").inner_text().endswith(item["q"])
        assert page.locator(".row.sel").get_attribute("data-id") == item_id
    assert not errors, errors
