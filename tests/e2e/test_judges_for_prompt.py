"""The judge board and the prompt-conditioned board in real Chromium: the Leaderboard's *Judge votes* sub-tab shows
the exchange rate and the board on people's votes only, and the Arena's named mode ranks the models for a typed
prompt with intervals."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from tests.helpers.browser import STEP_MS
from tests.helpers.servers import start_server, stop_server, store_simulated
from tests.helpers.standings import judged_items
from vibestudio.db.session import Database
from vibestudio.standings.ratings._simulate import simulate_arena

pytestmark = pytest.mark.e2e


@pytest.fixture
def judged_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "studio-home"
    home.mkdir()
    monkeypatch.setenv("VIBESTUDIO_HOME", str(home))
    db = Database()
    db.migrate()
    frame, _ = simulate_arena(seed=43, n_models=4, n_honest=10, votes_per_honest=40)
    store_simulated(db, frame, datetime(2026, 1, 5))
    judged_items(db, 120, "judgy", models=("m0", "m1", "m2", "m3"), humans=10)
    proc, url = start_server(home)
    yield url
    stop_server(proc)


def test_judge_board_and_for_prompt(judged_server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(judged_server)
    page.get_by_role("tab", name="Leaderboard").click()
    page.get_by_role("tab", name="Judge votes").click()
    page.locator("#judge-source").get_by_text("People only").click()
    page.locator("#judge-run").click()
    text = "document.querySelector('#judge-summary').innerText"
    page.wait_for_function(f"{text}.includes('judgy')", timeout=STEP_MS)
    assert "judge labels" in page.locator("#judge-summary").inner_text()
    assert "judgy" in page.locator("#judge-worth").inner_text()
    assert "m0" in page.locator("#judge-board").inner_text()

    page.get_by_role("tab", name="Arena").click()
    page.locator("#arena-mode").get_by_text("Named").click()
    page.locator("#arena-for-prompt-text textarea").fill("Write a Python function that sorts a list.")
    page.locator("#arena-for-prompt-run").click()
    summary = "document.querySelector('#arena-for-prompt-summary').innerText"
    page.wait_for_function(f"{summary}.includes('Prompt kind')", timeout=STEP_MS)
    assert "coding" in page.locator("#arena-for-prompt-summary").inner_text()
    assert "m0" in page.locator("#arena-for-prompt-table").inner_text()
    page.close()
