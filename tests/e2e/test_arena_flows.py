"""Real Chromium: named mode (the user picks both models), regenerate, a rubric score with the vote, new round; an
earlier turn voted through the *Vote on* picker after a later one, counted on the board; the answer panes carry no
control that could erase or edit an answer before the vote. The tests share one server (three quiet personas) and
each reads back only its own battle."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from tests.helpers.browser import wait_empty, wait_text
from tests.helpers.servers import QUIET, server_with_personas, stop_server
from vibestudio.db.models import Battle, RubricScore, Turn, Vote

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def quiet_server(tmp_path_factory):
    proc, url, db = server_with_personas(tmp_path_factory.mktemp("arena-flows"), QUIET)
    yield url, db
    stop_server(proc)
    db.dispose()


def _pick(page, elem_id: str, name: str) -> None:
    page.locator(f"#{elem_id} input").click()
    page.locator(f"#{elem_id}").get_by_role("option", name=name).click()


def test_named_battle_with_regenerate_rubric_and_new_round(quiet_server, browser):
    url, db = quiet_server
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
    with db.session() as s:
        b = s.scalars(select(Battle).where(Battle.mode == "named")).one()
        turn = s.scalars(select(Turn).where(Turn.battle_id == b.id)).one()
        vote = s.scalars(select(Vote).where(Vote.battle_id == b.id)).one()
        score = s.scalars(select(RubricScore).where(RubricScore.vote_id == vote.id)).one()
        assert b.left_is_a and b.status == "voted" and b.revealed_at is None
        assert len(turn.replaced) == 1 and vote.outcome == "a"
        assert (score.criterion, score.side, score.value, score.vote_id) == ("helpfulness", "a", 4.0, vote.id)


#: The labels of the buttons a person can see in the answer panes (Gradio's Chatbot icon buttons)
PANE_CONTROLS = (
    "() => [...document.querySelectorAll('#chat-left button, #chat-right button')]"
    ".filter(b => b.checkVisibility())"
    ".map(b => (b.getAttribute('aria-label') || b.title || b.innerText || '').toLowerCase())"
)


def test_an_earlier_turn_voted_through_the_picker_counts_on_the_board(quiet_server, browser):
    url, db = quiet_server
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(url)
    page.wait_for_selector("#arena-prompt textarea")
    for n, text in ((1, "Name a colour."), (2, "Name an animal.")):
        page.locator("#arena-prompt textarea").fill(text)
        page.locator("#arena-send").click()
        wait_text(page, "#arena-status", f"Turn {n} answered")
    labels = page.evaluate(
        PANE_CONTROLS
    )  # nothing on the panes can erase or change an answer before the vote
    for word in ("clear", "delete", "trash", "edit", "retry", "undo"):
        assert not [x for x in labels if word in x], (word, labels)
    _pick(page, "arena-vote-turn", "Turn 1")  # the picker lists both unvoted turns, the latest selected
    page.locator("#vote-right").click()
    wait_text(page, "#arena-status", "Vote on turn 1 saved. Turn 2 can still be voted.")
    page.locator("#vote-both_bad").click()  # the picker now holds turn 2 only
    wait_text(page, "#arena-status", "Vote on turn 2 saved.")
    page.locator("#arena-reveal-btn").click()
    wait_text(page, "#arena-reveal", "Model A was")
    with db.session() as s:
        b = s.scalars(select(Battle).where(Battle.mode == "anonymous")).one()
        votes = [(v.turn_idx, v.outcome) for v in s.scalars(select(Vote).where(Vote.battle_id == b.id))]
    assert sorted(votes) == [(0, "b" if b.left_is_a else "a"), (1, "both_bad")]
    page.get_by_role("tab", name="Leaderboard").click()
    page.locator("#leaderboard-refresh").click()
    wait_text(page, "#leaderboard-summary", "2 rated votes")  # named votes are off the main board
    page.close()
