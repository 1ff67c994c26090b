"""The predictive check: methods scored on held-out votes, with intervals, and honest about what it cannot say."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vibestudio.standings.ratings import format_predictive, predictive_check
from vibestudio.standings.ratings._predict import best_board_method
from vibestudio.standings.ratings._simulate import simulate_arena


@pytest.fixture(scope="module")
def arena() -> pd.DataFrame:
    frame, _ = simulate_arena(seed=3, n_honest=30, votes_per_honest=120, length_pref=0.6)
    return frame


@pytest.mark.parametrize("split", ["time", "random"])
def test_scores_every_method_with_intervals(arena: pd.DataFrame, split: str) -> None:
    check = predictive_check(arena, split=split, rounds=100)
    assert check.n_train + check.n_test == len(arena)
    assert {s.method for s in check.scores} == {
        "elo",
        "bt",
        "bt+style",
        "bt+style+vibe",
        "rao-kupper",
        "davidson",
    }
    for s in check.scores:
        assert s.log_loss is not None and s.brier is not None, s
        assert s.log_loss_ci[0] <= s.log_loss <= s.log_loss_ci[1]
        assert s.brier_ci[0] <= s.brier <= s.brier_ci[1]
        assert 0.0 < s.brier < 2.0
        assert s.log_loss < np.log(3) + 0.1  # no worse than a coin with three sides (plus noise)
    best = check.get(check.best)
    assert best.vs_best == 0.0
    assert all(s.vs_best >= 0.0 for s in check.scores)


def test_style_control_wins_where_length_matters(arena: pd.DataFrame) -> None:
    """The simulated annotators prefer longer answers: style control must predict them better than plain BT."""
    check = predictive_check(arena, split="random", rounds=200)
    assert check.get("bt+style").log_loss < check.get("bt").log_loss
    lo, _ = check.get("bt").vs_best_ci
    assert lo > 0.0  # plain BT is clearly worse than the best
    assert check.best in ("bt+style", "bt+style+vibe")


def test_tie_models_beat_a_constant_tie_rate() -> None:
    """Davidson data with a wide skill spread: ties happen mostly between close models, which only the tie models
    can predict."""
    rng = np.random.default_rng(0)
    theta = np.linspace(-2.0, 2.0, 8)
    n = 6000
    a = rng.integers(0, 8, n)
    b = (a + rng.integers(1, 8, n)) % 8
    d = theta[a] - theta[b]
    den = np.exp(d / 2) + np.exp(-d / 2) + 1.2
    u = rng.random(n) * den
    winner = np.where(
        u < np.exp(d / 2), "model_a", np.where(u < np.exp(d / 2) + np.exp(-d / 2), "model_b", "tie")
    )
    frame = pd.DataFrame({"model_a": [f"m{k}" for k in a], "model_b": [f"m{k}" for k in b], "winner": winner})
    check = predictive_check(frame, split="random", methods=("bt", "elo", "davidson", "rao-kupper"))
    assert check.get("davidson").log_loss < check.get("bt").log_loss - 0.02
    assert best_board_method([check]) in ("davidson", "rao-kupper")
    assert "no tstamp" not in " ".join(check.notes)  # random split needs no time


def test_no_tstamp_uses_file_order_and_says_so() -> None:
    frame, _ = simulate_arena(seed=4, n_honest=10, votes_per_honest=40)
    check = predictive_check(frame.drop(columns=["tstamp"]), methods=("bt",))
    assert any("file order" in n for n in check.notes)


def test_every_vote_a_tie_is_not_scored() -> None:
    frame = pd.DataFrame(
        {"model_a": ["a", "b", "c"] * 20, "model_b": ["b", "c", "a"] * 20, "winner": ["tie"] * 60}
    )
    check = predictive_check(frame)
    assert check.best is None
    assert all(s.log_loss is None and s.note for s in check.scores)
    assert "every vote is a tie" in check.notes[0]
    assert "cannot estimate" in format_predictive([check])


def test_too_few_votes() -> None:
    frame = pd.DataFrame({"model_a": ["a", "b"], "model_b": ["b", "c"], "winner": ["model_a", "model_b"]})
    check = predictive_check(frame)
    assert check.best is None and any("too few votes" in n for n in check.notes)


def test_models_seen_once_cannot_be_predicted() -> None:
    """Every model plays one battle only: no held-out vote has both models in the fitting part."""
    names = [f"m{k}" for k in range(200)]
    frame = pd.DataFrame(
        {
            "model_a": names[0::2],
            "model_b": names[1::2],
            "winner": ["model_a", "model_b"] * 50,
            "tstamp": range(100),
        }
    )
    check = predictive_check(frame)
    assert check.best is None
    assert check.n_unscorable == 20
    assert any("no votes in the fitting part" in n for n in check.notes)
    assert all(s.log_loss is None for s in check.scores)


def test_style_without_answers_says_what_is_missing() -> None:
    frame, _ = simulate_arena(seed=5, n_honest=10, votes_per_honest=40)
    bare = frame[["model_a", "model_b", "winner", "tstamp"]]
    check = predictive_check(bare, methods=("bt", "bt+style"))
    assert check.get("bt").log_loss is not None
    style = check.get("bt+style")
    assert style.log_loss is None and "answers" in (style.note or "")


def test_bad_arguments() -> None:
    frame, _ = simulate_arena(seed=6, n_honest=5, votes_per_honest=20)
    with pytest.raises(ValueError, match="split"):
        predictive_check(frame, split="weekly")
    with pytest.raises(ValueError, match="unknown methods"):
        predictive_check(frame, methods=("glicko",))
