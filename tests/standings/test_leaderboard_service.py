"""The leaderboard service over the vote store: it must agree with the plain path (every vote through the ORM, then
`standings.ratings`) on every board, stay right when votes arrive, battles error or votes disappear, and come back
from its Parquet cache after a restart.
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from sqlalchemy import delete, update

from tests.helpers.standings import NAMES, T0, current_leaderboard, register_contestants, write_battles
from vibestudio.db.models import Battle, Vote
from vibestudio.standings.leaderboard import (
    BoardOptions,
    LeaderboardService,
    compare_contestants,
    vibe_profile,
)
from vibestudio.standings.ratings import (
    leaderboard,
    leaderboard_by,
    online_elo,
    pairwise_matrices,
    rating_over_time,
)
from vibestudio.standings.records import battle_records
from vibestudio.standings.vote_cache import VoteCache


def _plain(db, **kw):
    with db.session() as s:
        return battle_records(s, **kw)


def _same_board(board: dict, ref, tol=1e-6) -> None:
    got = {m["name"]: m for m in board["models"]}
    want = {m.name: m for m in ref.models}
    assert set(got) == set(want)
    for name, m in want.items():
        g = got[name]
        assert g["rating"] == pytest.approx(m.rating, abs=tol)
        assert g["ci_low"] == pytest.approx(m.ci_low, abs=tol) and g["ci_high"] == pytest.approx(
            m.ci_high, abs=tol
        )
        # the plain path's records are votes: its n_battles is the service's n_votes (issue 48)
        assert (g["n_votes"], g["wins"], g["ties"], g["rank"]) == (m.n_battles, m.wins, m.ties, m.rank)
        assert g["n_battles"] <= g["n_votes"]


def _elo(records) -> dict[str, float]:
    names = sorted({r["model_a"] for r in records} | {r["model_b"] for r in records})
    idx = {n: k for k, n in enumerate(names)}
    y = {"model_a": 1.0, "model_b": 0.0}
    a = np.array([idx[r["model_a"]] for r in records])
    b = np.array([idx[r["model_b"]] for r in records])
    s = np.array([y.get(r["winner"], 0.5) for r in records])
    return dict(zip(names, online_elo(a, b, s, len(names)), strict=True))


@pytest.fixture
def store(db, tmp_path):
    ids = register_contestants(db)
    write_battles(db, ids, 240)
    return db, ids, LeaderboardService(db, VoteCache(db, tmp_path / "cache"))


def test_board_matches_the_plain_path_with_bootstrap_sandwich_and_elo(store):
    db, _, svc = store
    records = _plain(db, with_text=False)
    out = svc.board(BoardOptions(bootstrap=30, seed=3))
    assert out["n_votes"] == len(records) and out["refresh"]["rebuilt"] is False
    _same_board(out, leaderboard(records, bootstrap_rounds=30, seed=3))
    elo = _elo(records)
    assert {m["name"]: m["elo"] for m in out["models"]} == pytest.approx(elo, abs=1e-9)
    with db.session() as s:
        plain = current_leaderboard(s, bootstrap=30)
    default = svc.board(BoardOptions(bootstrap=30))
    assert [m["name"] for m in default["models"]] == [m["name"] for m in plain["models"]]
    for got, want in zip(default["models"], plain["models"], strict=True):
        # the plain path's records are votes: its n_battles is the service's n_votes (issue 48)
        assert got["n_battles"] <= got["n_votes"]
        want = {**want, "n_votes": want["n_battles"], "n_battles": got["n_battles"]}
        assert got == {k: pytest.approx(v, abs=1e-6) if isinstance(v, float) else v for k, v in want.items()}
    assert default["unrated"] == plain["unrated"] == []
    sandwich = svc.board(BoardOptions(ci_method="sandwich"))
    ref = leaderboard(records, ci_method="sandwich")
    # cells carry their mean weight, so sandwich intervals differ only by the spread of weights within a cell
    for m in ref.models:
        got = next(g for g in sandwich["models"] if g["name"] == m.name)
        assert got["rating"] == pytest.approx(m.rating, abs=1e-6)
        assert got["ci_high"] - got["ci_low"] == pytest.approx(m.ci_high - m.ci_low, rel=0.15)


def test_boards_by_category_and_turns_match_leaderboard_by(store):
    db, _, svc = store
    records = _plain(db, with_text=False)
    boards = {b["board"]: b["n_votes"] for b in svc.board(BoardOptions(ci_method="sandwich"))["boards"]}
    by_cat = leaderboard_by(records, "category", ci_method="sandwich", min_battles=5)
    by_turn = leaderboard_by(records, "multi_turn", ci_method="sandwich", min_battles=5)
    assert boards["category:coding"] == by_cat["coding"].n_battles
    assert boards["multi-turn"] == by_turn["multi-turn"].n_battles > 0
    assert boards["single-turn"] + boards["multi-turn"] == boards["all"] == len(records)
    for name, ref in (("category:writing", by_cat["writing"]), ("multi-turn", by_turn["multi-turn"])):
        out = svc.board(BoardOptions(board=name, ci_method="sandwich", min_battles=5))
        assert out["n_votes"] == ref.n_battles
        assert {m["name"]: m["rating"] for m in out["models"]} == pytest.approx(ref.ratings(), abs=1e-6)
        assert any("fewer than 5 votes" in w for w in out["warnings"]) == any(
            "fewer than 5 battles" in w
            for w in ref.warnings  # the plain path's records are the votes
        )
    assert svc.board(BoardOptions(board="category:nothing"))["models"] == []


def test_named_votes_and_both_bad_policy(store):
    db, _, svc = store
    records = _plain(db, with_text=False, include_named=True)
    opts = BoardOptions(include_named=True, both_bad="drop", ci_method="sandwich")
    out = svc.board(opts)
    ref = leaderboard(records, both_bad="drop", ci_method="sandwich")
    assert out["n_votes"] == ref.n_battles < len(records)
    assert {m["name"]: m["rating"] for m in out["models"]} == pytest.approx(ref.ratings(), abs=1e-6)


def test_new_votes_are_read_incrementally_and_elo_carries_forward(store):
    db, ids, svc = store
    svc.cache.compact_min = 10  # compact the aggregated cells on the way
    svc.board(BoardOptions(ci_method="sandwich"))
    for k in range(7):
        write_battles(db, ids, 1, seed=9 + k, start=500 + k)
        out = svc.board(BoardOptions(ci_method="sandwich"))
        assert out["refresh"]["new_votes"] in (1, 2) and out["refresh"]["rebuilt"] is False
    assert svc.cache._cell_keys > 0  # the cells were compacted, then took deltas
    records = _plain(db, with_text=False)
    assert out["n_votes"] == len(records)
    assert {m["name"]: m["rating"] for m in out["models"]} == pytest.approx(
        leaderboard(records, ci_method="sandwich").ratings(), abs=1e-6
    )
    assert {m["name"]: m["elo"] for m in out["models"]} == pytest.approx(_elo(records), abs=1e-9)
    again = svc.board(BoardOptions(ci_method="sandwich"))
    assert again["refresh"]["new_votes"] == 0 and again["models"] == out["models"]


def test_a_battle_that_errors_after_its_vote_drops_out(store):
    db, ids, svc = store
    (open_battle,) = write_battles(db, ids, 1, seed=4, start=900, status="open")
    before = svc.board(BoardOptions(ci_method="sandwich"))
    assert open_battle in svc.cache.watch
    with db.session() as s:
        s.execute(update(Battle).where(Battle.id == open_battle).values(status="errored"))
    out = svc.board(BoardOptions(ci_method="sandwich"))
    records = _plain(db, with_text=False)
    assert out["n_votes"] == len(records) == before["n_votes"]  # open, then errored: never counted
    assert {m["name"]: m["elo"] for m in out["models"]} == pytest.approx(_elo(records), abs=1e-9)
    assert open_battle not in svc.cache.watch


@pytest.mark.parametrize("ending", ["voted", "abandoned"])
def test_an_open_battle_counts_nowhere_until_it_ends(store, ending):
    """While a battle is open no board, matrix, chart, profile or plain record moves (else a second tab could
    tell which two contestants are playing); once it ends (reveal, or New round) everything counts it."""
    db, ids, svc = store
    o = BoardOptions(ci_method="sandwich")

    def everything():
        board = svc.board(o)
        with db.session() as s:
            profiles = {n: vibe_profile(s, n)["n_answers"] for n in NAMES}
            plain = len(battle_records(s, with_text=False))
        m = svc.matrices(o)
        return (
            board["n_votes"],
            [(x["name"], x["n_battles"], x["wins"], x["rating"], x.get("elo")) for x in board["models"]],
            [(b["board"], b["n_votes"]) for b in board["boards"]],
            m["counts"].to_dict(),
            svc.over_time(o).to_dict(),
            profiles,
            plain,
        )

    before = everything()
    (battle,) = write_battles(db, ids, 1, seed=7, start=950, status="open", mode="anonymous")
    assert everything() == before
    with db.session() as s:  # a second vote on the still-open battle
        s.add(
            Vote(
                battle_id=battle,
                turn_idx=5,
                outcome="a",
                revealed_before_vote=False,
                created_at=T0 + timedelta(days=400),
            )
        )
    assert everything() == before
    with db.session() as s:
        s.execute(update(Battle).where(Battle.id == battle).values(status=ending))
    after = everything()
    assert after[0] > before[0] and after[5] != before[5] and after[6] > before[6]
    records = _plain(db, with_text=False)
    out = svc.board(o)
    assert out["n_votes"] == len(records)
    assert {m["name"]: m["elo"] for m in out["models"]} == pytest.approx(_elo(records), abs=1e-9)


def test_deleted_votes_trigger_a_full_reread(store):
    db, _, svc = store
    svc.refresh()
    with db.session() as s:
        s.execute(delete(Vote).where(Vote.id.in_([2, 3, 5])))
    out = svc.board(BoardOptions(ci_method="sandwich"))
    assert out["refresh"]["rebuilt"] is True
    assert out["n_votes"] == len(_plain(db, with_text=False))


def test_restart_reads_the_parquet_cache_and_only_new_votes(store, tmp_path):
    db, ids, svc = store
    first = svc.board(BoardOptions(bootstrap=10))
    svc.cache.save()  # with the Elo state of this board
    assert (tmp_path / "cache" / "votes.parquet").exists()
    write_battles(db, ids, 3, seed=7, start=700)
    restarted = LeaderboardService(db, VoteCache(db, tmp_path / "cache"))
    restarted.cache._load_saved()
    (carried,) = restarted.cache.extras["elo"].values()
    assert carried["last_vote_id"] == svc.cache.last_vote_id  # Elo goes on from here instead of replaying
    out = restarted.board(BoardOptions(bootstrap=10))
    assert out["refresh"]["rebuilt"] is False and 3 <= out["refresh"]["new_votes"] <= 6
    assert out["n_votes"] > first["n_votes"]
    records = _plain(db, with_text=False)
    _same_board(out, leaderboard(records, bootstrap_rounds=10))
    assert {m["name"]: m["elo"] for m in out["models"]} == pytest.approx(_elo(records), abs=1e-9)


def test_style_and_vibe_control_match_and_report_coefficients(store):
    db, _, svc = store
    records = _plain(db)
    out = svc.board(BoardOptions(style_control=True, vibe_control=True, ci_method="sandwich"))
    ref = leaderboard(records, style_control=True, vibe_control=True, ci_method="sandwich")
    assert out["style_coefficients"] == pytest.approx(ref.style_coefficients, abs=1e-6)
    assert "tokens" in out["style_coefficients"] and set(out["style_intervals"]) == set(ref.style_intervals)
    assert {m["name"]: m["rating"] for m in out["models"]} == pytest.approx(ref.ratings(), abs=1e-6)
    assert not np.isnan(svc.cache.features(np.arange(svc.cache.n))).any()


def test_matrices_and_rating_over_time(store):
    db, _, svc = store
    records = _plain(db, with_text=False)
    m = svc.matrices(BoardOptions())
    ref = pairwise_matrices(records)
    assert list(m["counts"].index) == list(ref.counts.index)
    assert np.array_equal(m["counts"].to_numpy(), ref.counts.to_numpy())
    np.testing.assert_allclose(m["win_rate"].to_numpy(), ref.win_rate.to_numpy(), atol=1e-12)
    weekly = svc.over_time(BoardOptions(), "W")
    want = rating_over_time(records, "W")
    assert len(weekly) == len(want) >= 3
    np.testing.assert_allclose(weekly[want.columns].to_numpy(), want.to_numpy(), atol=1e-6)


def test_empty_store_and_bad_options(db, tmp_path):
    register_contestants(db)
    svc = LeaderboardService(db, VoteCache(db, tmp_path / "c"))
    out = svc.board()
    assert out["models"] == [] and out["n_votes"] == 0 and sorted(out["unrated"]) == NAMES
    assert svc.matrices()["counts"].empty and svc.over_time().empty
    for bad in ({"ci_method": "jackknife"}, {"board": "weekend"}, {"both_bad": "keep"}, {"bootstrap": 1}):
        with pytest.raises(ValueError):
            svc.board(BoardOptions(**bad))


def test_vibe_profile_and_comparison(store):
    db, _, _ = store
    with db.session() as s:
        alpha = vibe_profile(s, "alpha")
        both = compare_contestants(s, "alpha", "delta")
        with pytest.raises(ValueError, match="no contestant"):
            vibe_profile(s, "zulu")
    assert alpha["n_answers"] > 50 and alpha["features"]["tokens"]["mean"] > 0
    # alpha (a positive skill) answers twice as long on side a in the fixture
    assert both["features"]["tokens"]["mean_diff"] > 0
    assert set(both["features"]) >= {"tokens", "emoji", "flattery", "bold"}
