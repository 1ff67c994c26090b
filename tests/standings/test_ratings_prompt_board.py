"""The prompt-conditioned board on simulated arenas whose per-kind truth is known: it finds the kind's best model,
beats the plain board on held-out votes when kinds matter, does not when they do not, and says when it can't tell."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vibestudio.standings.ratings import predictive_check
from vibestudio.standings.ratings._prompt_board import log_loss_gain, prompt_board, simulate_kind_arena


def test_per_kind_board_finds_the_kind_specialist_and_covers_the_truth() -> None:
    frame, truth = simulate_kind_arena(seed=1, votes=4000)
    board = prompt_board(frame)
    assert board.kinds == ["coding", "math", "writing"] and board.votes_by_kind["coding"] > 1000
    coding = board.rank({"coding": 1.0})
    true_coding = truth["skills"]["coding"]
    assert coding[0]["name"] == max(true_coding, key=true_coding.get) == "m0"
    # the ratings for coding prompts follow the true coding skills (centred), within their intervals mostly
    t = np.array([true_coding[m["name"]] for m in coding])
    t = 1000 + (t - t.mean()) * 400 / np.log(10)
    inside = [m["ci_low"] <= v <= m["ci_high"] for m, v in zip(coding, t, strict=True)]
    assert sum(inside) >= len(inside) - 1
    # an unknown kind, or no kind, is the global board
    assert [m["name"] for m in board.rank({"poetry": 1.0})] == [m["name"] for m in board.rank({})]


def test_beats_the_plain_board_only_when_kinds_matter() -> None:
    frame, _ = simulate_kind_arena(seed=2, votes=4000, swing=150.0)
    gain = log_loss_gain(frame)
    assert gain["better"] and gain["difference"] < -0.01 and gain["n_test"] == 800
    null, _ = simulate_kind_arena(seed=3, votes=4000, swing=0.0)
    null_gain = log_loss_gain(null)
    lo, hi = null_gain["difference_ci"]
    assert not null_gain["better"] and lo <= 0.0 <= hi + 0.002
    assert null_gain["shrink"] >= 32.0  # no kind effect: shrunk hard to the global board


def test_in_the_predictive_check_and_cant_tell_without_kinds() -> None:
    frame, _ = simulate_kind_arena(seed=4, votes=3000)
    check = predictive_check(frame, split="random", methods=("bt", "bt+kind"), rounds=100)
    kind_ll, bt_ll = check.get("bt+kind").log_loss, check.get("bt").log_loss
    assert kind_ll is not None and bt_ll is not None and kind_ll < bt_ll
    bare = frame.drop(columns=["category"])
    check = predictive_check(bare, split="random", methods=("bt", "bt+kind"), rounds=50)
    assert check.get("bt+kind").log_loss is None and "category" in (check.get("bt+kind").note or "")
    board = prompt_board(bare)
    assert board.kinds == [] and any("global board" in n for n in board.notes)
    with pytest.raises(ValueError, match="self-battle"):
        prompt_board(pd.DataFrame({"model_a": ["x"], "model_b": ["x"], "winner": ["tie"]}))
