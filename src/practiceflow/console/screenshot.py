"""A screenshot of a console page in headless Chromium (the demo and the docs use it).

Debian's ``chromium`` driven by Playwright, nothing downloaded; when either is missing it says
so and returns None: a screenshot is an illustration, never the point of a run.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

logger = logging.getLogger(__name__)

#: Flags for a headless Chromium on a machine with no network but loopback.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def screenshot(url: str, out: Path, *, width: int = 1280) -> tuple[Path | None, str]:
    """Save a full-page screenshot of ``url`` to ``out``."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        return None, "no chromium on this machine (apt-get install chromium)"
    try:
        from playwright import sync_api
    except ImportError:
        return None, "playwright is not installed (pip install playwright)"
    out.parent.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.goto(url)
            page.screenshot(path=str(out), full_page=True)
        finally:
            browser.close()
    return out, ""
