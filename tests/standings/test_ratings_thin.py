"""Thin data must not look certain, and the rating over time is the board's rating (#27)."""

from __future__ import annotations

import math

import pytest

from vibestudio.standings.ratings import leaderboard, rating_over_time

DAY = 86_400.0


@pytest.mark.parametrize("ci_method", ["bootstrap", "sandwich"])
def test_one_tied_battle_gets_a_wide_interval(ci_method):
    board = leaderboard([{"model_a": "x", "model_b": "y", "winner": "tie"}], ci_method=ci_method, elo_k=None)
    for m in board.models:
        assert m.rating == pytest.approx(1000.0)
        assert m.ci_high - m.ci_low > 200, (m.ci_low, m.ci_high)  # not [1000, 1000]
    assert any("places are not settled" in w for w in board.warnings)


def test_well_measured_intervals_are_left_alone():
    rows = [{"model_a": "x", "model_b": "y", "winner": "model_a" if k % 3 else "model_b"} for k in range(60)]
    wide = leaderboard(rows, ci_method="sandwich", elo_k=None, min_battles=100)  # every model "thin"
    plain = leaderboard(rows, ci_method="sandwich", elo_k=None)  # 60 battles each: nothing widened
    for a, b in zip(plain.models, wide.models, strict=True):
        assert a.rating == pytest.approx(b.rating)
        assert b.ci_low <= a.ci_low + 1e-9 and b.ci_high >= a.ci_high - 1e-9


def _separated() -> list[dict]:
    """`top` beats everyone on every day: the maximum-likelihood ratings do not exist (they run off to infinity)."""
    rows = []
    for day in range(4):
        for k in range(3):
            t = day * DAY + 3600 * k
            rows.append({"model_a": "top", "model_b": "mid", "winner": "model_a", "tstamp": t})
            rows.append({"model_a": "top", "model_b": "low", "winner": "model_a", "tstamp": t + 1})
            rows.append(
                {"model_a": "mid", "model_b": "low", "winner": "model_a" if k else "tie", "tstamp": t + 2}
            )
    return rows


@pytest.mark.parametrize("method", ["bt", "davidson"])
def test_over_time_ends_at_the_board(method):
    rows = _separated()
    over = rating_over_time(rows, "D", method=method)
    board = leaderboard(rows, method=method, ci_method="sandwich", elo_k=None)
    assert len(over) == 4
    last = over.iloc[-1]
    for m in board.models:
        assert last[m.name] == pytest.approx(m.rating, abs=1e-6)
    assert over.to_numpy().max() < 1400 and over.to_numpy().min() > 600  # no +2000 / -1100
    # rows sit at the last vote of each day, not at a period's nominal end
    assert [ts.timestamp() for ts in over.index] == [d * DAY + 2 * 3600 + 2 for d in range(4)]
    assert all(not math.isnan(v) for v in last)
