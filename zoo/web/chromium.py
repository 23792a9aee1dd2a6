"""Headless chromium looking at zoo ui's pages: Debian's ``chromium`` (never a browser
Playwright downloads), driven by Playwright. The browser tests and the docs' screenshots
(scripts/ui_screenshots.py) both launch it here, with the same switches."""

from __future__ import annotations

import contextlib
import shutil

from zoo.errors import ZooError

# no GPU, no sandbox (containers, root), and nothing the browser itself asks the network for
SWITCHES = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def chromium_path() -> str | None:
    """The system's chromium, where installed (Debian: apt-get install chromium)."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


@contextlib.contextmanager
def headless_chromium():
    """A launched browser (Playwright's sync ``Browser``), closed on leaving."""
    from playwright.sync_api import sync_playwright

    path = chromium_path()
    if path is None:
        raise ZooError("no chromium found (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=list(SWITCHES))
        try:
            yield browser
        finally:
            browser.close()
