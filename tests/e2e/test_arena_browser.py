"""A person's first visit in real Chromium: battle, vote, reveal, and the leaderboard changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.browser import wait_empty, wait_text

pytestmark = pytest.mark.e2e


def _reveal(page) -> None:
    """Votes are blind; the reveal is its own step."""
    page.locator("#arena-reveal-btn").click()
    wait_text(page, "#arena-reveal", "Model A was")


def test_battle_vote_reveal_and_leaderboard(studio_server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(studio_server)
    page.wait_for_selector("#arena-prompt textarea")
    names = ("smollm2-plain", "smollm2-concise", "smollm2-warm", "smollm2-playful", "smollm2-structured")
    # Other tabs (leaderboard, train) list every contestant; a battle must add no mention of any of them
    # until the vote is stored.
    before = {n: page.content().count(n) for n in names}
    page.locator("#arena-prompt textarea").fill("Give me one tip for better sleep.")
    page.locator("#arena-send").click()
    wait_text(page, "#arena-status", "Turn 1 answered")
    html = page.content()
    assert {n: html.count(n) for n in names} == before
    assert page.locator("#arena-reveal").inner_text().strip() == ""
    shot = os.environ.get("VIBESTUDIO_SCREENSHOT")
    if shot:
        Path(shot).parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=shot, full_page=True)
    page.locator("#vote-left").click()
    wait_text(page, "#arena-status", "Vote on turn 1 saved")
    assert page.locator("#arena-reveal").inner_text().strip() == ""  # the vote alone reveals nothing
    _reveal(page)
    reveal = page.locator("#arena-reveal").inner_text()
    assert "smollm2-" in reveal

    # a second battle via the random-prompt button
    page.locator("#arena-new").click()
    wait_empty(page, "#arena-reveal")  # New round has cleared the page; it would also clear a drawn prompt
    page.locator("#arena-random").click()
    page.wait_for_function("document.querySelector('#arena-prompt textarea').value.length > 0")
    page.locator("#arena-send").click()
    wait_text(page, "#arena-status", "Turn 1 answered")
    page.locator("#vote-right").click()
    wait_text(page, "#arena-status", "Vote on turn 1 saved")
    _reveal(page)

    page.get_by_role("tab", name="Leaderboard").click()
    page.locator("#leaderboard-refresh").click()
    wait_text(page, "#leaderboard-summary", "2 rated votes")
    wait_text(page, "#leaderboard-table", "smollm2-")
    page.close()
