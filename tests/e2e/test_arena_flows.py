"""Real Chromium: named mode (the user picks both models), regenerate, a rubric score with the vote, new round."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from db.models import Battle, RubricScore, Turn, Vote
from tests.helpers.browser import wait_empty, wait_text
from tests.helpers.servers import QUIET, server_with_personas, stop_server

pytestmark = pytest.mark.e2e


def _pick(page, elem_id: str, name: str) -> None:
    page.locator(f"#{elem_id} input").click()
    page.locator(f"#{elem_id}").get_by_role("option", name=name).click()


def test_named_battle_with_regenerate_rubric_and_new_round(tmp_path, browser):
    proc, url, db = server_with_personas(tmp_path, QUIET)
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(url)
        page.wait_for_selector("#arena-prompt textarea")
        page.get_by_label("Named (pick both models)").check()
        page.wait_for_selector("#arena-pick-left input")
        _pick(page, "arena-pick-left", "quokka-gamma")
        _pick(page, "arena-pick-right", "quokka-alpha")
        page.locator("#arena-prompt textarea").fill("Name a fruit.")
        page.locator("#arena-send").click()
        wait_text(page, "#arena-status", "Turn 1 answered")
        assert "quokka-gamma" in page.locator("#chat-left").inner_text()  # named: the label is the name
        page.locator("#arena-regenerate").click()
        # not "a vote button is enabled": it still is, from the first answer, until the server's first update
        wait_text(page, "#arena-status", "Turn 1 regenerated")
        page.get_by_text("Quick rubric").click()
        page.locator("#rubric-helpfulness-a").get_by_text("4", exact=True).click()
        page.locator("#vote-left").click()
        wait_text(page, "#arena-status", "Vote on turn 1 saved")
        page.locator("#arena-new").click()
        wait_empty(page, "#arena-status")
        page.close()
    finally:
        stop_server(proc)
    with db.session() as s:
        b = s.scalars(select(Battle)).one()
        turn = s.scalars(select(Turn)).one()
        vote = s.scalars(select(Vote)).one()
        score = s.scalars(select(RubricScore)).one()
        assert b.mode == "named" and b.left_is_a and b.status == "voted" and b.revealed_at is None
        assert len(turn.replaced) == 1 and vote.outcome == "a"
        assert (score.criterion, score.side, score.value, score.vote_id) == ("helpfulness", "a", 4.0, vote.id)
    db.dispose()
