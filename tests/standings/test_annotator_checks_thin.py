"""Annotator checks on thin data (#27): the single-user demo (votes with no voter name), no votes, one vote, one
annotator. Each must return a report that says what it cannot estimate, never raise."""

from __future__ import annotations

import pytest

from tests.helpers.standings import register_contestants, write_battles
from vibestudio.accounts import add_user
from vibestudio.db.models import Vote
from vibestudio.standings.annotator_checks import annotator_checks
from vibestudio.standings.ratings import annotator_diagnostics


def _name_votes(db, user_id: int | None) -> None:
    with db.session() as s:
        for vote in s.query(Vote).all():
            vote.user_id = user_id


def test_no_votes(db) -> None:
    register_contestants(db)
    out = annotator_checks(db)
    assert out["n_votes"] == 0 and out["annotators"] == []
    assert out["notes"]


@pytest.mark.parametrize("n_battles", [1, 30])
def test_votes_without_voter_names(db, n_battles: int) -> None:
    """The open single-user mode stores votes with no user: there is nobody to diagnose, and it says so."""
    ids = register_contestants(db)
    write_battles(db, ids, n_battles, seed=3)
    _name_votes(db, None)
    out = annotator_checks(db)
    assert out["n_votes"] >= 1
    assert out["annotators"] == [] and out["flagged"] == []
    assert any("nobody to compare" in n for n in out["notes"])
    assert out["plain_board"] is not None and out["robust_board"] is not None


@pytest.mark.parametrize("n_battles", [1, 30])
def test_one_annotator(db, n_battles: int) -> None:
    ids = register_contestants(db)
    write_battles(db, ids, n_battles, seed=4)
    alice = add_user(db, "alice", "correct horse battery", "annotator").id
    _name_votes(db, alice)
    out = annotator_checks(db)
    assert [a["annotator"] for a in out["annotators"]] == ["alice"]
    assert out["flagged"] == []
    if n_battles == 1:
        assert "too few decisive votes" in (out["annotators"][0]["note"] or "")


def test_some_votes_named_some_not() -> None:
    """A mix: the votes with no id keep weight 1 and are counted in the note."""
    rows = [
        {"model_a": "x", "model_b": "y", "winner": "model_a", "judge": None},
        {"model_a": "x", "model_b": "y", "winner": "model_b", "judge": "bob"},
    ]
    report = annotator_diagnostics(rows)
    assert [a.annotator for a in report.annotators] == ["bob"]
    assert any("1 vote has no annotator id" in n for n in report.notes)
