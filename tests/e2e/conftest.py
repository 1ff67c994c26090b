"""End-to-end fixtures: a real studio server in a subprocess and a real headless Chromium (Playwright).

Waits are for a state that belongs to the step (a status naming the turn, a stored row), never for one that was
already true before the action; their time limits are generous (``STEP_MS``, ``START_S``) because a loaded CI
machine is slow, not wrong: a limit only decides how long a real failure takes to report.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

STEP_MS = 120_000  # the longest one browser step may take (a streamed turn, a stored vote, a page update)
START_S = 300  # the longest a server may take to start (imports alone took over 120 s on a loaded machine)
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(home: Path, env_extra: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {
        **os.environ,
        "VIBESTUDIO_HOME": str(home),
        "GRADIO_ANALYTICS_ENABLED": "False",
        "VIBESTUDIO_MAX_NEW_TOKENS": "24",
        **(env_extra or {}),
    }
    env.pop("VIBESTUDIO_DATABASE_URL", None)
    log = open(home / "server.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "studio.cli", "serve", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {(home / 'server.log').read_text()[-2000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"server did not start in {START_S} s")


@pytest.fixture
def studio_server(tmp_path):
    home = tmp_path / "studio-home"
    home.mkdir()
    proc, url = start_server(home)
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


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


def wait_text(page, selector: str, text: str, timeout: int = STEP_MS) -> None:
    """Wait until the element's text contains ``text`` (pick a text that only this step can produce)."""
    page.wait_for_function(
        "([sel, t]) => { const e = document.querySelector(sel); return !!e && e.innerText.includes(t); }",
        arg=[selector, text],
        timeout=timeout,
    )


def wait_empty(page, selector: str, timeout: int = STEP_MS) -> None:
    """Wait until the element shows no text (use after an action that clears text that was there)."""
    page.wait_for_function(
        "sel => { const e = document.querySelector(sel); return !!e && e.innerText.trim() === ''; }",
        arg=selector,
        timeout=timeout,
    )
