"""Headless Chromium for looking at report.html: the end-to-end test, the report benchmark and
the screenshots in docs/. Drives the system Chromium (Debian: `apt-get install chromium`) through
Playwright, which pip installs without downloading any browser; nothing here touches a network.

    python -m twistbench.report.chromium runs/default/report.html docs/img

writes overview.png and item.png of a report (the README's screenshots).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    """The Chromium executable: $TWIST_CHROMIUM, else the first of chromium, chromium-browser,
    google-chrome on PATH."""
    env = os.environ.get("TWIST_CHROMIUM")
    if env:
        return env if Path(env).exists() else None
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def unavailable() -> str | None:
    """Why a browser cannot be driven here (None when it can)."""
    try:
        import playwright.sync_api  # noqa: F401 - lazy: only the browser checks need it
    except ImportError:
        return "the Python package playwright is not installed (pip install -e '.[test]')"
    env = os.environ.get("TWIST_CHROMIUM")
    if env and not Path(env).exists():
        return f"TWIST_CHROMIUM names {env}, which does not exist"
    if find_chromium() is None:
        return ("no Chromium on PATH (Debian: apt-get install chromium chromium-driver; or set "
                "TWIST_CHROMIUM)")
    return None


@contextmanager
def browser_page(width: int = 1400, height: int = 900) -> Iterator[Any]:
    """A Playwright page in a fresh headless Chromium with its own profile folder."""
    from playwright.sync_api import sync_playwright  # lazy: optional, heavy

    exe = find_chromium()
    if exe is None:
        raise RuntimeError(unavailable() or "no Chromium")
    with tempfile.TemporaryDirectory(prefix="twist-chromium-") as profile, \
            sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            profile, executable_path=exe, headless=True, args=FLAGS,
            viewport={"width": width, "height": height})
        try:
            yield ctx.pages[0] if ctx.pages else ctx.new_page()
        finally:
            ctx.close()


def screenshots(report: str | Path, out_dir: str | Path, item: str | None = None) -> list[Path]:
    """overview.png (the profile and its plots) and item.png (one item in the browser: `item`,
    else the first Track B item some system got wrong)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    url = Path(report).resolve().as_uri()
    with browser_page(1400, 1000) as page:
        page.goto(url)
        page.wait_for_function("window.twistReady === true")
        page.screenshot(path=str(out / "overview.png"), full_page=True)
        if item is None:
            page.goto(url + "#items?track=B&outcome=wrong")
            page.wait_for_selector(".row")
            item = page.get_attribute(".row", "data-id")
        page.goto(url + "#item=" + str(item))
        page.wait_for_selector(".card.sys")
        page.screenshot(path=str(out / "item.png"))
    return [out / "overview.png", out / "item.png"]


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: python -m twistbench.report.chromium REPORT.html OUT_DIR [ITEM_ID]")
    for p in screenshots(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None):
        print(p)
