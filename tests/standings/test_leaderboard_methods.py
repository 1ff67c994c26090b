"""The studio leaderboard's rating methods over the vote store: tie models agree with the plain path, "auto" picks
the best predictor of held-out votes (or says why it cannot), and the annotator checks read who voted."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from tests.helpers.standings import register_contestants, write_battles
from vibestudio.accounts import PermissionDenied, add_user
from vibestudio.db.models import User, Vote
from vibestudio.standings.annotator_checks import annotator_checks
from vibestudio.standings.leaderboard import BoardOptions, LeaderboardService
from vibestudio.standings.ratings import leaderboard
from vibestudio.standings.records import annotated_records, battle_records
from vibestudio.standings.vote_cache import VoteCache


@pytest.fixture
def store(db, tmp_path):
    ids = register_contestants(db)
    write_battles(db, ids, 300)
    return db, LeaderboardService(db, VoteCache(db, tmp_path / "cache"))


@pytest.mark.parametrize("method", ["davidson", "rao-kupper"])
def test_tie_model_board_matches_the_plain_path(store, method):
    db, service = store
    board = service.board(BoardOptions(method=method, ci_method="sandwich"))
    with db.session() as s:
        ref = leaderboard(battle_records(s), method=method, ci_method="sandwich", elo_k=None)
    assert board["method"] == method and board["method_reason"] == "chosen"
    got = {m["name"]: m["rating"] for m in board["models"]}
    assert got == pytest.approx(ref.ratings(), abs=1e-6)
    assert set(board["tie_parameters"]) == set(ref.tie_parameters)


def test_auto_uses_the_best_predictor(store):
    _, service = store
    pred = service.predict(BoardOptions())
    assert [c["split"] for c in pred["checks"]] == ["time", "random"]
    assert pred["n_votes"] > 250
    board = service.board(BoardOptions(method="auto", ci_method="sandwich"))
    assert board["method"] == pred["best"]
    assert board["method_reason"].startswith("auto:")
    # style control forces Bradley-Terry (the covariate fit has no tie model)
    styled = service.board(BoardOptions(method="auto", ci_method="sandwich", style_control=True))
    assert styled["method"] == "bt"


def test_auto_with_too_little_data_falls_back_to_bt(db, tmp_path):
    ids = register_contestants(db)
    write_battles(db, ids, 12)
    service = LeaderboardService(db, VoteCache(db, tmp_path / "cache"))
    board = service.board(BoardOptions(method="auto", ci_method="sandwich"))
    assert board["method"] == "bt" and "too little data" in board["method_reason"]
    pred = service.predict(BoardOptions())
    assert pred["best"] is None
    assert all(s["log_loss"] is None for c in pred["checks"] for s in c["scores"])
    with pytest.raises(ValueError, match="method must be one of"):
        service.board(BoardOptions(method="elo"))


def test_annotator_checks_read_voters_and_need_an_admin(store):
    db, _ = store
    add_user(db, "root", "correct horse battery", role="admin")
    low = add_user(db, "ann", "correct horse battery", role="annotator")
    with db.session() as s:
        admin_id = s.query(User.id).filter(User.name == "root").scalar()
        s.execute(update(Vote).where(Vote.id % 2 == 0).values(user_id=low.id))
        s.execute(update(Vote).where(Vote.id % 2 == 1, Vote.id > 100).values(user_id=admin_id))
    with db.session() as s:
        records = annotated_records(s)
    assert {r["judge"] for r in records} == {"ann", "root", None}
    out = annotator_checks(db)
    assert {a["annotator"] for a in out["annotators"]} == {"ann", "root"}
    assert any("no annotator id" in n for n in out["notes"])
    assert out["flagged"] == []  # both vote like the simulation's honest crowd
    assert out["robust_board"]["models"] and out["plain_board"]["models"]
    with pytest.raises(PermissionDenied):
        annotator_checks(db, by=low.id)
