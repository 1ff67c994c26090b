"""The fragile-board sections in real Chromium over a store of simulated votes: the board says how many votes #1
rests on, the votes behind a pair are listed, LC win rates come with intervals, and the decision card draws with its
sentence and its "can't tell" lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.browser import STEP_MS
from tests.helpers.servers import rated_server as rated_server_at
from tests.helpers.servers import stop_server
from vibestudio.standings.ratings._simulate import simulate_arena

pytestmark = pytest.mark.e2e


def _pick(page, elem_id: str, name: str) -> None:
    page.locator(f"#{elem_id} input").click()
    page.locator(f"#{elem_id}").get_by_role("option", name=name).click()


@pytest.fixture
def rated_server(tmp_path: Path):
    frame, _ = simulate_arena(seed=43, n_models=4, n_honest=10, votes_per_honest=40)
    proc, url, _ = rated_server_at(tmp_path / "studio-home", frame)
    yield url
    stop_server(proc)


def test_flip_lc_and_decision_card(rated_server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(rated_server)
    page.get_by_role("tab", name="Leaderboard").click()
    summary = "document.querySelector('#leaderboard-summary').innerText"
    page.wait_for_function(
        f"{summary}.includes('holds over') && {summary}.includes('votes go')", timeout=STEP_MS
    )

    page.get_by_role("tab", name="Votes to flip").click()
    page.locator("#flip-run").click()
    votes = "document.querySelector('#flip-votes').innerText"
    page.wait_for_function(f"{votes}.includes('model_a') && {votes}.includes('2026-01')", timeout=STEP_MS)
    assert "checked by refitting" in page.locator("#flip-summary").inner_text()
    assert "m0" in page.locator("#flip-table").inner_text()

    page.get_by_role("tab", name="LC win rate").click()
    _pick(page, "lc-baseline", "m3")
    page.locator("#lc-run").click()
    page.wait_for_function(
        "document.querySelector('#lc-notes').innerText.includes('bootstrap')", timeout=STEP_MS
    )
    assert "m0" in page.locator("#lc-table").inner_text()

    _pick(page, "card-a", "m0")
    _pick(page, "card-b", "m1")
    page.locator("#card-run").click()
    card = "document.querySelector('#card-body').innerText"
    page.wait_for_function(f"{card}.includes('m0 vs m1')", timeout=STEP_MS)
    text = page.locator("#card-body").inner_text()
    assert "arena rating" in text and "no verifiable evals for m0" in text and "no price per hour" in text
    page.close()
