"""What a judge vote is worth (`standings.ratings._composite`) on simulated arenas with a known judge noise: a judge who
votes like people is worth about one human vote, a noisy one much less, a coin-flipping one nothing; the held-out
choice agrees with the oracle weight from the true skills; boards human-only / judge-only / pooled; and the cases
with no answer."""

from __future__ import annotations

import math

import pytest

from vibestudio.standings.ratings import composite_board, judge_worth
from vibestudio.standings.ratings._composite import oracle_weight, simulate_judged_arena


def _worth(noise: float, seed: int = 1):
    frame, truth = simulate_judged_arena(judge_noise=noise, human_votes=1000, judge_votes=4000, seed=seed)
    (result,) = judge_worth(frame, ["judge"], rounds=8, folds=4)
    return frame, truth, result


def test_exchange_rate_follows_the_judge_noise() -> None:
    _, _, clean = _worth(0.0)
    frame, truth, noisy = _worth(0.6)
    _, _, coin = _worth(1.0)
    assert clean.worth_low <= 1.0 <= clean.worth_high  # votes exactly like people: about one for one
    assert noisy.worth > 4 * clean.worth and noisy.worth_low > 1.0  # a noisy judge: clearly worth less
    assert coin.weight_low == 0.0 and coin.worth_high == math.inf  # pure noise: can be worth nothing
    oracle = oracle_weight(frame, ["judge"], truth["skills"])
    assert oracle["weight"] <= noisy.weight_high
    assert "one human vote is worth about" in noisy.sentence()
    assert noisy.n_judge_votes == 4000 and noisy.n_human_votes == 1000


def test_boards_by_source() -> None:
    frame, truth = simulate_judged_arena(judge_noise=0.0, human_votes=600, judge_votes=600, seed=4)
    opts = {"ci_method": "sandwich", "elo_k": None}
    human = composite_board(frame, ["judge"], source="human", **opts)
    judge = composite_board(frame, ["judge"], source="judge", **opts)
    pooled = composite_board(frame, ["judge"], source="pooled", weight=1.0, **opts)
    half = composite_board(frame, ["judge"], source="pooled", weight=0.5, **opts)
    assert human.n_battles == 600 and judge.n_battles == 600 and pooled.n_battles == 1200
    width = {
        b: sum(m.ci_high - m.ci_low for m in x.models) for b, x in (("h", human), ("p", pooled), ("q", half))
    }
    assert width["p"] < width["q"] < width["h"]  # more weight on the judge: narrower intervals
    with pytest.raises(ValueError, match="source must be"):
        composite_board(frame, ["judge"], source="both")
    with pytest.raises(ValueError, match="weight"):
        composite_board(frame, ["judge"], weight=-1)


def test_cannot_tell() -> None:
    frame, _ = simulate_judged_arena(human_votes=30, judge_votes=200, seed=5)
    (few,) = judge_worth(frame, ["judge"], rounds=2)
    assert few.worth is None and "30 human votes" in few.sentence()
    (absent,) = judge_worth(frame, ["gpt-judge"], rounds=2)
    assert absent.worth is None and "no votes" in absent.note
    frame, _ = simulate_judged_arena(human_votes=300, judge_votes=100, seed=6)
    judged = frame["judge"] == "judge"
    frame.loc[judged, "model_a"] = "x1"
    frame.loc[judged, "model_b"] = "x2"
    (apart,) = judge_worth(frame, ["judge"], rounds=2)
    assert "no human overlap" in apart.note
    with pytest.raises(ValueError, match="at least one judge"):
        judge_worth(frame, [])
