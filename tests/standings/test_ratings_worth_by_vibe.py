"""The judge's exchange rate per vibe on a simulated arena where the truth is known: a judge that agrees with people
except on answers that differ in length (where it picks the longer one) is worth little there and is flagged there;
a judge that agrees everywhere is worth about a person on that slice and is flagged nowhere."""

from __future__ import annotations

import math

import pytest

from vibestudio.standings.ratings import judge_worth_by_vibe
from vibestudio.standings.ratings._worth_by_vibe import simulate_vibe_judge


def _row(report, vibe):
    return next(r for r in report.rows if r.vibe == vibe)


def test_length_biased_judge_is_flagged_on_length() -> None:
    frame, truth = simulate_vibe_judge(seed=0, bias=0.9)
    report = judge_worth_by_vibe(frame, ["judge"], rounds=8)
    tokens = _row(report, "tokens")
    assert report.most["judge"] == truth["biased_vibe"] == "tokens"
    assert tokens.judge_more[0] > 0.8 and 0.35 < tokens.people_more[0] < 0.65 and tokens.clear
    w = tokens.worth
    assert w is not None and w.worth is not None and (math.isinf(w.worth) or w.worth >= 4)
    assert w.worth_low is not None and w.worth_low >= 2  # clearly worth less than a person here
    # vibes no answer shows: no slice, a stated can't tell
    emoji = _row(report, "emoji")
    assert emoji.worth is None and "need" in emoji.note and emoji.n_human == 0
    assert "disagrees with people most on tokens" in report.sentences()[0]


def test_faithful_judge_is_worth_about_a_person_and_flagged_nowhere() -> None:
    frame, _ = simulate_vibe_judge(seed=1, bias=None)
    report = judge_worth_by_vibe(frame, ["judge"], features=("tokens",), rounds=8)
    w = _row(report, "tokens").worth
    assert w is not None and w.worth is not None and w.worth_low is not None
    assert w.worth_low <= 1.0 <= (w.worth_high if w.worth_high is not None else math.inf)
    assert report.most["judge"] is None and "can't tell" in report.sentences()[0]


def test_needs_counts_or_answers() -> None:
    frame, _ = simulate_vibe_judge(seed=2)
    bare = frame[["model_a", "model_b", "winner", "judge"]]
    with pytest.raises(ValueError, match="answers"):
        judge_worth_by_vibe(bare, ["judge"])
    with pytest.raises(ValueError, match="judge"):
        judge_worth_by_vibe(frame, [])
