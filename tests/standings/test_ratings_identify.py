"""Intervals the data do not identify read "can't tell" with the reason, never a huge figure (issue 35).

The case that broke: *Include named-mode votes* with a disconnected comparison graph (one named battle between two
models, one anonymous battle between two others) gave every row `-5382471.6 ... 5384471.6`, bootstrap and sandwich
alike. The rule lives in one place (`standings.ratings._board.identify`) and these tests hold each of its parts.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.helpers.standings import register_contestants, write_battles
from vibestudio.standings.leaderboard import BoardOptions, LeaderboardService
from vibestudio.standings.ratings import leaderboard
from vibestudio.standings.ratings._board import MAX_HALF_WIDTH, identify


def _bounded(row: dict) -> bool:
    if row.get("cant_tell"):
        return row["ci_low"] is None and row["ci_high"] is None
    lo, hi, r = row["ci_low"], row["ci_high"], row["rating"]
    return all(map(math.isfinite, (lo, hi, r))) and max(r - lo, hi - r) <= MAX_HALF_WIDTH


@pytest.mark.parametrize("ci_method", ["bootstrap", "sandwich"])
def test_two_tied_pairs_that_never_met(ci_method: str) -> None:
    """The reported numbers: two tied battles between pairs that never met gave every row -5382471 ... 5384471 (the
    tiny numerical ridge was the only curvature between the groups); now the centre pair has its small-sample
    interval and the other pair can't tell."""
    records = [
        {"model_a": "alpha", "model_b": "bravo", "winner": "tie"},
        {"model_a": "charlie", "model_b": "delta", "winner": "tie"},
    ]
    board = leaderboard(records, ci_method=ci_method, bootstrap_rounds=20)
    rows = [m.to_dict() for m in board.models]
    assert all(_bounded(m) for m in rows), rows
    assert [m["name"] for m in rows if m["cant_tell"]] == ["charlie", "delta"]
    assert all(abs(x) < 2000 for m in rows for x in (m["ci_low"], m["ci_high"]) if x is not None)


@pytest.mark.parametrize("ci_method", ["bootstrap", "sandwich"])
def test_disconnected_named_and_anonymous_battle_reads_cant_tell(db, ci_method: str) -> None:
    """The reported case through the service: every row is bounded, and the pair outside the centre group says why."""
    ids = register_contestants(db)  # alpha, bravo, charlie, delta
    write_battles(db, ids, 1, mode="named", a_id=ids["alpha"], b_id=ids["bravo"])
    write_battles(db, ids, 1, seed=1, start=1, mode="anonymous", a_id=ids["charlie"], b_id=ids["delta"])
    service = LeaderboardService(db)
    board = service.board(BoardOptions(ci_method=ci_method, bootstrap=20, include_named=True))
    rows = {m["name"]: m for m in board["models"]}
    assert set(rows) == {"alpha", "bravo", "charlie", "delta"}
    assert all(_bounded(m) for m in board["models"]), board["models"]
    # equal groups: the one with the first name is the centre; the other pair has no common scale with it
    assert rows["alpha"]["cant_tell"] is None and rows["bravo"]["cant_tell"] is None
    assert "never compared" in rows["charlie"]["cant_tell"] and "disconnected" in rows["delta"]["cant_tell"]
    assert any("can't tell" in w for w in board["warnings"])


def test_anchor_group_is_the_reference() -> None:
    """With an anchor the identified group is the anchor's, whatever its size; the scale puts it at its value."""
    records = [{"model_a": "a", "model_b": "b", "winner": w} for w in ["model_a", "model_b", "tie"] * 4]
    records += [
        {"model_a": x, "model_b": y, "winner": "model_a"} for x, y in [("c", "d"), ("d", "e"), ("e", "c")]
    ]
    board = leaderboard(records, ci_method="sandwich", anchor="a", anchor_rating=1200.0)
    rows = {m.name: m for m in board.models}
    assert rows["a"].rating == pytest.approx(1200.0) and rows["a"].cant_tell is None
    assert rows["b"].cant_tell is None and rows["b"].ci_low is not None
    assert all(rows[k].cant_tell and rows[k].ci_low is None for k in "cde")
    assert rows["c"].rank_low == 1 and rows["c"].rank_high == 5  # an unknown interval allows every rank


def test_connected_board_is_unchanged_by_the_rule() -> None:
    """A connected board with plenty of votes: no interval is touched, the mean stays at 1000."""
    rng = np.random.default_rng(0)
    names = ["a", "b", "c"]
    records = [
        {"model_a": x, "model_b": y, "winner": "model_a" if rng.random() < 0.6 else "model_b"}
        for x, y in [tuple(rng.choice(names, 2, replace=False)) for _ in range(300)]
    ]
    board = leaderboard(records, bootstrap_rounds=20)
    assert all(m.cant_tell is None for m in board.models)
    assert np.mean([m.rating for m in board.models]) == pytest.approx(1000.0)


def test_identify_names_each_reason() -> None:
    """Outside the reference group, a bound that is not finite, a span past the stated bound: each has its words."""
    names = ["in", "nan", "wide", "out"]
    ratings = np.array([1000.0, 1000.0, 1000.0, 1000.0])
    lo = np.array([900.0, np.nan, 1000.0 - MAX_HALF_WIDTH - 1, 900.0])
    hi = np.array([1100.0, 1100.0, 1100.0, 1100.0])
    out = identify(names, ratings, lo, hi, np.array([0, 1, 2]))
    assert out[0] is None
    assert "singular" in (out[1] or "")
    assert f"±{MAX_HALF_WIDTH:.0f}" in (out[2] or "")
    assert "never compared" in (out[3] or "")
