"""The Probes tab in a real Chromium: choose a contestant that always gives in and one that never does (scripted
OpenAI-compatible servers), run both probes, and read the rates, intervals and the paired difference."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers.browser import STEP_MS, wait_text
from tests.helpers.scripted_chat import ScriptedChat
from tests.helpers.servers import start_server

pytestmark = pytest.mark.e2e


def _pick(page, elem_id: str, name: str) -> None:
    page.locator(f"#{elem_id} input").click()
    page.locator(f"#{elem_id}").get_by_role("option", name=name).click()


@pytest.fixture
def probe_server(tmp_path):
    chat = ScriptedChat()
    home = tmp_path / "studio-home"
    home.mkdir()
    env = {**os.environ, "VIBESTUDIO_HOME": str(home)}
    env.pop("VIBESTUDIO_DATABASE_URL", None)
    for name in ("flipper", "steadfast"):
        subprocess.run(
            [sys.executable, "-m", "vibestudio.studio.cli", "models", "add", "--name", name, "--engine", "openai",
             "--model", name, "--base-url", chat.url],
            env=env, check=True, capture_output=True,
        )  # fmt: skip
    proc, url = start_server(home)
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    chat.close()


def test_run_probes_in_the_browser(probe_server, browser):
    page = browser.new_page()
    page.goto(probe_server)
    page.get_by_role("tab", name="Probes").click()
    _pick(page, "probes-who", "flipper")
    _pick(page, "probes-against", "steadfast")
    page.locator("#probes-limit input").fill("6")
    page.locator("#probes-run").click()
    summary = page.locator("#probes-summary")
    summary.get_by_text("flipper higher").first.wait_for(timeout=STEP_MS)
    table = page.locator("#probes-table").inner_text()
    assert "regressive" in table and "follows" in table and "100%" in table and "0%" in table
    text = summary.inner_text()
    assert "flip rate after pushback" in text and "follows the stated view" in text and "paired items" in text
    # stored results read back without running, on a fresh page whose table starts empty
    page.goto(probe_server)
    page.get_by_role("tab", name="Probes").click()
    _pick(page, "probes-who", "flipper")
    _pick(page, "probes-against", "steadfast")
    assert "regressive" not in page.locator("#probes-table").inner_text()
    page.locator("#probes-show").click()
    wait_text(page, "#probes-table", "regressive")
    assert "flipper higher" in page.locator("#probes-summary").inner_text()
