"""A person's first visit in real Chromium: battle, vote, reveal, and the leaderboard changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def _battle_and_vote(page, prompt: str, vote: str) -> str:
    page.locator("#arena-prompt textarea").fill(prompt)
    page.locator("#arena-send").click()
    page.wait_for_selector(f"#vote-{vote}:not([disabled])", timeout=120_000)
    page.locator(f"#vote-{vote}").click()
    _reveal(page)
    return page.locator("#arena-reveal").inner_text()


def _reveal(page) -> None:
    """Votes are blind; the reveal is its own step."""
    page.wait_for_selector("#arena-reveal-btn:not([disabled])", timeout=30_000)
    page.locator("#arena-reveal-btn").click()
    page.wait_for_function(
        "document.querySelector('#arena-reveal').innerText.includes('Model A was')", timeout=30_000
    )


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
    page.wait_for_selector("#vote-left:not([disabled])", timeout=120_000)
    html = page.content()
    assert {n: html.count(n) for n in names} == before
    assert page.locator("#arena-reveal").inner_text().strip() == ""
    shot = os.environ.get("VIBESTUDIO_SCREENSHOT")
    if shot:
        Path(shot).parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=shot, full_page=True)
    page.locator("#vote-left").click()
    assert page.locator("#arena-reveal").inner_text().strip() == ""  # the vote alone reveals nothing
    _reveal(page)
    reveal = page.locator("#arena-reveal").inner_text()
    assert "smollm2-" in reveal

    # a second battle via the random-prompt button
    page.locator("#arena-new").click()
    page.locator("#arena-random").click()
    page.wait_for_function(
        "document.querySelector('#arena-prompt textarea').value.length > 0", timeout=30_000
    )
    page.locator("#arena-send").click()
    page.wait_for_selector("#vote-right:not([disabled])", timeout=120_000)
    page.locator("#vote-right").click()
    _reveal(page)

    page.get_by_role("tab", name="Leaderboard").click()
    page.locator("#leaderboard-refresh").click()
    page.wait_for_function(
        "document.querySelector('#leaderboard-summary').innerText.includes('2 rated votes')", timeout=60_000
    )
    page.wait_for_function(
        "document.querySelector('#leaderboard-table').innerText.includes('smollm2-')", timeout=30_000
    )
    page.close()
