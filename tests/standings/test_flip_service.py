"""The leaderboard service's votes-to-flip and LC win rates over the vote store: the same counts as the plain path
(every vote through the ORM, then `standings.ratings`), the votes named with battle, time and voter, and "can't tell"
where there is nothing to say."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from tests.helpers.standings import register_contestants, write_battles
from vibestudio.accounts import add_user
from vibestudio.db.models import Vote
from vibestudio.standings.leaderboard import BoardOptions, LeaderboardService
from vibestudio.standings.ratings import votes_to_flip, win_rate_intervals
from vibestudio.standings.records import battle_records
from vibestudio.standings.vote_cache import VoteCache


@pytest.fixture
def store(db, tmp_path):
    ids = register_contestants(db)
    write_battles(db, ids, 240)
    return db, ids, LeaderboardService(db, VoteCache(db, tmp_path / "cache"))


def test_votes_to_flip_matches_the_plain_path_and_names_the_votes(store):
    db, _, svc = store
    user = add_user(db, "rater", "a long password 1")
    with db.session() as s:
        s.execute(update(Vote).values(user_id=user.id))
        records = battle_records(s, with_text=False)
    out = svc.votes_to_flip(BoardOptions())
    plain = votes_to_flip(records)
    assert out["votes_to_flip"] == plain.summary()
    assert out["n_votes"] == len(records)
    assert "holds over" in out["headline"] or "dead heat" in out["headline"]
    top = out["pairs"][0]
    assert len(top["removed"]) == top["votes"]
    battle_ids = {r["battle_id"] for r in records}
    for v in top["removed"]:
        assert v["battle_id"] in battle_ids and v["voter"] == "rater" and v["tstamp"] > 0
    assert svc.votes_to_flip(BoardOptions()) == out  # memoised until the votes change


def test_lc_win_rates_with_intervals(store):
    db, _, svc = store
    out = svc.win_rates("charlie", BoardOptions(), rounds=50)
    rows = {r["name"]: r for r in out["rows"]}
    assert set(rows) == {"alpha", "bravo", "delta"}
    for r in rows.values():
        assert r["win_low"] <= r["win_rate"] <= r["win_high"]
        assert r["lc_low"] <= r["lc_win_rate"] <= r["lc_high"]
    assert rows["alpha"]["win_rate"] > rows["delta"]["win_rate"]
    with pytest.raises(ValueError, match="no rated votes"):
        svc.win_rates("nobody", BoardOptions())


def test_cannot_tell_without_votes(db, tmp_path):
    register_contestants(db)
    svc = LeaderboardService(db, VoteCache(db, tmp_path / "cache"))
    out = svc.votes_to_flip()
    assert out["pairs"] == [] and "can't tell" in out["headline"]


def test_few_battles_against_the_baseline_get_no_interval():
    frame = [{"model_a": "x", "model_b": "base", "winner": "model_a"}] * 3 + [
        {"model_a": "y", "model_b": "base", "winner": "model_b"}
    ] * 12
    out = win_rate_intervals(frame, "base", rounds=20)
    rows = {r["name"]: r for r in out["rows"]}
    assert rows["x"]["win_low"] is None and "can't tell" in rows["x"]["note"]
    assert rows["y"]["win_low"] == rows["y"]["win_high"] == 0.0
    assert any("can't tell" in n for n in out["notes"])  # no answer lengths: no LC win rate
