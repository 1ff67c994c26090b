"""End-to-end fixtures: a real studio server in a subprocess and a real headless Chromium (Playwright).

Pages wait up to ``STEP_MS`` per step (``tests.helpers.browser``); servers start within ``START_S``
(``tests.helpers.servers``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.browser import STEP_MS
from tests.helpers.servers import start_server, stop_server

CHROMIUM = os.environ.get("VIBESTUDIO_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]


@pytest.fixture
def studio_server(tmp_path):
    home = tmp_path / "studio-home"
    home.mkdir()
    proc, url = start_server(home)
    yield url
    stop_server(proc)


@pytest.fixture
def browser():
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield _Browser(b)
        b.close()


class _Browser:
    """The launched browser; its pages wait up to ``STEP_MS`` by default (Playwright's own default is 30 s)."""

    def __init__(self, browser) -> None:
        self._browser = browser

    def new_page(self, **kwargs):
        page = self._browser.new_page(**kwargs)
        page.set_default_timeout(STEP_MS)
        return page

    def __getattr__(self, name: str):
        return getattr(self._browser, name)
