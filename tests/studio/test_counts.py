"""Words agree with numbers (#35): "1 vote", "2 votes", "0 votes", on the helpers and on page text built with them."""

from __future__ import annotations

from vibestudio.studio.pages.leaderboard import summary_text
from vibestudio.studio.render import count, noun


def test_count_agrees_with_its_number():
    assert count(1, "vote") == "1 vote"
    assert count(0, "vote") == "0 votes"
    assert count(2480, "vote") == "2,480 votes"
    assert count(1, "pair", bold=True) == "**1** pair"
    assert count(3, "reply") == "3 replies"
    assert noun(1, "person") == "person" and noun(2, "person") == "people"


def test_the_board_summary_says_1_rated_vote():
    board = {"n_votes": 1, "unrated": [], "warnings": []}
    assert "1</strong> rated vote." in summary_text(board)
    assert "rated votes" not in summary_text(board)
    assert "2</strong> rated votes." in summary_text({**board, "n_votes": 2})
