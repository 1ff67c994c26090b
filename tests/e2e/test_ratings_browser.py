"""Leaderboard and Admin in real Chromium over a store of simulated votes: the board is current when the tab is
opened and follows new votes on its timer, the method choice and the *Predictive check* sub-tab work, and
the Admin tab flags the rigged account."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from tests.helpers.browser import STEP_MS
from tests.helpers.servers import rated_server as rated_server_at
from tests.helpers.servers import stop_server, store_simulated
from vibestudio.standings.ratings._simulate import simulate_arena

pytestmark = pytest.mark.e2e


@pytest.fixture
def rated_server(tmp_path: Path):
    frame, _ = simulate_arena(seed=41, n_honest=12, votes_per_honest=60, riggers=1, rigger_votes=150)
    proc, url, db = rated_server_at(tmp_path / "studio-home", frame)
    yield url, db, len(frame)
    stop_server(proc)


def test_leaderboard_current_methods_and_admin_flags(rated_server, browser):
    url, db, n_votes = rated_server
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(url)
    page.get_by_role("tab", name="Leaderboard").click()
    summary = "document.querySelector('#leaderboard-summary').innerText"
    page.wait_for_function(f"{summary}.includes('{n_votes} rated votes')", timeout=STEP_MS)
    page.wait_for_function(f"{summary}.includes('Method:') && {summary}.includes('auto')", timeout=STEP_MS)

    # votes that arrive while the tab is open show up without pressing Refresh (the tab's timer)
    more, _ = simulate_arena(seed=42, n_honest=2, votes_per_honest=10)
    store_simulated(db, more, datetime(2026, 2, 1))
    page.wait_for_function(f"{summary}.includes('{n_votes + 20} rated votes')", timeout=STEP_MS)

    page.get_by_role("tab", name="Predictive check").click()
    page.locator("#leaderboard-predict").click()
    table = "document.querySelector('#leaderboard-predict-table').innerText"
    page.wait_for_function(f"{table}.includes('davidson') && {table}.includes('random')", timeout=STEP_MS)
    assert "Best:" in page.locator("#leaderboard-predict-summary").inner_text()

    page.locator("#leaderboard-method").get_by_text("Davidson (ties modelled)").click()
    page.wait_for_function(
        f"{summary}.includes('Davidson (ties modelled)') && {summary}.includes('(chosen)')"
    )
    assert "tie (bothgood)" in page.locator("#leaderboard-summary").inner_text()

    page.get_by_role("tab", name="Admin").click()
    page.locator("#admin-check-annotators").click()
    page.wait_for_function(
        "document.querySelector('#admin-checks-summary').innerText.includes('Flagged: r0')", timeout=STEP_MS
    )
    assert "votes follow" in page.locator("#admin-checks-table").inner_text()
    page.close()
