"""Tests for win rates (raw and length-controlled), category boards, matrices, rating over time and the report."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from vibestudio.standings.ratings import (
    RatingsInputError,
    group_boards,
    leaderboard_by,
    pairwise_matrices,
    rating_over_time,
    ratings_report,
    vibe_profiles,
    win_rates,
)


def answer(tokens: int) -> str:
    return " ".join(["word"] * max(1, tokens))


def judged(seed: int = 0, questions: int = 300) -> list[dict]:
    """AlpacaEval-style data: every model answers every question and is judged against 'base'.

    'padder' is as good as the baseline but wins when it writes more (and it usually does); 'good' is genuinely
    better with no length effect. Questions differ in difficulty. Outcomes follow the LC model itself:
    logit = skill + length_effect * tanh(delta / sd(delta)) + difficulty.
    """
    rng = np.random.default_rng(seed)
    spec = {"padder": (0.0, 2.5, 150.0), "good": (1.0, 0.0, 0.0)}
    difficulty = rng.normal(0.0, 0.7, questions)
    base_len = rng.integers(100, 300, questions)
    out = []
    for model, (skill, length_effect, extra) in spec.items():
        own_len = np.maximum(1, (base_len + extra + rng.normal(0.0, 200.0, questions)).astype(int))
        delta = own_len - base_len
        logit = skill + length_effect * np.tanh(delta / delta.std()) + difficulty
        wins = rng.random(questions) < 1.0 / (1.0 + np.exp(-logit))
        for q in range(questions):
            first = bool(rng.random() < 0.5)
            a, b = (model, "base") if first else ("base", model)
            la, lb = (int(own_len[q]), int(base_len[q])) if first else (int(base_len[q]), int(own_len[q]))
            out.append(
                {
                    "model_a": a,
                    "model_b": b,
                    "winner": "model_a" if bool(wins[q]) == first else "model_b",
                    "question_id": f"q{q}",
                    "conversation_a": [
                        {"role": "user", "content": f"q{q}"},
                        {"role": "assistant", "content": answer(la)},
                    ],
                    "conversation_b": [
                        {"role": "user", "content": f"q{q}"},
                        {"role": "assistant", "content": answer(lb)},
                    ],
                }
            )
    return out


def test_lc_win_rate_pulls_length_gaming_towards_50() -> None:
    rates = win_rates(judged(questions=600), "base")
    assert set(rates) == {"padder", "good"}
    padder, good = rates["padder"], rates["good"]
    padder_lc, good_lc = padder["lc_win_rate"], good["lc_win_rate"]
    assert padder["win_rate"] > 65.0
    assert padder_lc is not None and abs(padder_lc - 50.0) < 8.0
    assert good_lc is not None and abs(good_lc - good["win_rate"]) < 6.0
    assert good["win_rate"] > 65.0
    assert padder["n_battles"] == 600


def test_win_rate_counts_ties_half_and_needs_lengths_for_lc() -> None:
    records = [
        {"model_a": "m", "model_b": "base", "winner": "model_a"},
        {"model_a": "base", "model_b": "m", "winner": "model_a"},
        {"model_a": "m", "model_b": "base", "winner": "tie"},
        {"model_a": "m", "model_b": "other", "winner": "model_a"},
    ]
    rates = win_rates(records, "base")
    assert rates == {"m": {"win_rate": 50.0, "lc_win_rate": None, "n_battles": 3}}
    with pytest.raises(ValueError, match="baseline"):
        win_rates(records, "nobody")


def test_pairwise_matrices() -> None:
    records = [
        {"model_a": "a", "model_b": "b", "winner": "model_a"},
        {"model_a": "b", "model_b": "a", "winner": "model_b"},
        {"model_a": "a", "model_b": "b", "winner": "tie"},
        {"model_a": "b", "model_b": "c", "winner": "model_a"},
        {"model_a": "c", "model_b": "b", "winner": "model_b"},
        {"model_a": "c", "model_b": "b", "winner": "model_a"},
    ]
    mats = pairwise_matrices(records)
    assert list(mats.counts.index) == ["a", "b", "c"]
    assert (
        mats.counts.loc["a", "b"] == 3 and mats.counts.loc["b", "c"] == 3 and mats.counts.loc["a", "c"] == 0
    )
    assert mats.win_rate.loc["a", "b"] == pytest.approx(2.5 / 3)
    assert mats.win_rate.loc["b", "a"] == pytest.approx(0.5 / 3)
    assert math.isnan(mats.win_rate.loc["a", "c"])
    assert mats.predicted.loc["a", "b"] + mats.predicted.loc["b", "a"] == pytest.approx(1.0)


def test_leaderboard_by_category_and_turns() -> None:
    records = []
    for k in range(60):
        records.append(
            {
                "model_a": "x" if k % 2 else "y",
                "model_b": "y" if k % 2 else "x",
                "winner": "model_a" if k % 3 else "tie",
                "category": ["coding", "math"] if k % 5 == 0 else "coding",
                "turn": 1 if k < 40 else 3,
            }
        )
    boards = leaderboard_by(records, "category", ci_method="sandwich")
    assert list(boards) == ["coding", "math"]
    assert boards["coding"].n_battles == 60 and boards["math"].n_battles == 12
    turns = leaderboard_by(records, "multi_turn", ci_method="sandwich")
    assert turns["single-turn"].n_battles == 40 and turns["multi-turn"].n_battles == 20
    custom = leaderboard_by(records, lambda r: "early" if r["turn"] == 1 else None, ci_method="sandwich")
    assert list(custom) == ["early"]
    with pytest.raises(KeyError):
        leaderboard_by(records, "language")


def test_group_boards_orders_by_weight_then_label_and_splits_sources() -> None:
    # cells: (labels, votes, source); "b" and "c" tie on weight, so the label decides; no label joins no board
    labels = [["b"], ["a"], [], ["c"], ["a"], ["b", "c"]]
    groups = group_boards(labels, [2, 3, 50, 1, 4, 1], ["set", "set", "none", "predicted", "labelled", "set"])
    assert [(g.label, g.n_votes) for g in groups] == [("a", 7), ("b", 3), ("c", 2)]
    assert groups[0].sources == {"set": 3, "labelled": 4}
    assert groups[2].sources == {"predicted": 1, "set": 1}
    assert groups[1].positions.tolist() == [0, 5]
    # unweighted items count one each; a label listed twice on one item counts that item once
    plain = group_boards([["x", "x"], ["y"], ["y"]])
    assert [(g.label, g.n_votes, g.positions.tolist()) for g in plain] == [("y", 2, [1, 2]), ("x", 1, [0])]
    assert plain[0].sources == {}
    assert group_boards([]) == []
    with pytest.raises(ValueError, match="2 weights for 1 items"):
        group_boards([["a"]], [1, 2])
    with pytest.raises(ValueError, match="0 sources for 1 items"):
        group_boards([["a"]], None, [])


def test_leaderboard_by_counts_a_battle_listed_twice_once() -> None:
    records = [
        {"model_a": "x", "model_b": "y", "winner": "model_a", "category": ["coding", "coding"]},
        {"model_a": "y", "model_b": "x", "winner": "tie", "category": "coding"},
    ]
    assert leaderboard_by(records, "category", ci_method="sandwich")["coding"].n_battles == 2


def test_rating_over_time_is_cumulative() -> None:
    day = 86_400.0
    records = [{"model_a": "a", "model_b": "b", "winner": "model_a", "tstamp": 0.0 + k} for k in range(3)]
    records += [{"model_a": "b", "model_b": "a", "winner": "model_a", "tstamp": 0.0 + k} for k in range(2)]
    records += [
        {"model_a": "c", "model_b": "a", "winner": "model_b", "tstamp": 2 * day + k} for k in range(2)
    ]
    records += [{"model_a": "c", "model_b": "a", "winner": "model_a", "tstamp": 2 * day + 9}]
    over = rating_over_time(records, "D")
    assert len(over) == 2
    first, last = over.iloc[0], over.iloc[1]
    assert math.isnan(first["c"]) and not math.isnan(last["c"])
    assert first["a"] - first["b"] == pytest.approx(400 * math.log10(1.5))
    assert first["a"] + first["b"] == pytest.approx(2000.0)
    with pytest.raises(ValueError, match="tstamp"):
        rating_over_time([{"model_a": "a", "model_b": "b", "winner": "tie"}])


def test_vibe_profiles() -> None:
    records = [
        {
            "model_a": "a",
            "model_b": "b",
            "winner": "tie",
            "conversation_a": [{"role": "assistant", "content": "Great question! **Yes**."}],
            "conversation_b": [{"role": "assistant", "content": "No."}],
        }
    ]
    profiles = vibe_profiles(records)
    assert profiles["a"]["flattery"]["rate"] == 1.0 and profiles["b"]["flattery"]["rate"] == 0.0
    assert profiles["a"]["bold"]["mean"] == 1.0


def test_ratings_report_text_and_json(tmp_path: Path) -> None:
    path = tmp_path / "battles.jsonl"
    rows = judged(seed=1, questions=60)
    rows.append({"model_a": "good", "model_b": "padder", "winner": "oops"})
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    with pytest.raises(RatingsInputError, match=f"line {len(rows)}, field 'winner'"):
        ratings_report(path)
    data = json.loads(ratings_report(path, bootstrap=20, baseline="base", as_json=True, skip_bad=True))
    assert set(data) == {"models", "style_coefficients", "warnings"}
    assert {m["name"] for m in data["models"]} == {"good", "padder", "base"}
    by_name = {m["name"]: m for m in data["models"]}
    assert by_name["good"]["win_rate"] > 50 and by_name["padder"]["lc_win_rate"] is not None
    assert "win_rate" not in by_name["base"]
    assert data["warnings"][0].startswith("skipped 1 bad rows: line")
    styled = json.loads(ratings_report(path, style_control=True, bootstrap=0, as_json=True, skip_bad=True))
    assert styled["style_coefficients"]["tokens"] > 0
    text = ratings_report(path, bootstrap=0, baseline="base", skip_bad=True, style_control=True)
    assert "Bradley-Terry ratings with style control" in text
    assert "sandwich" in text and "LC win%" in text and "padder" in text
    assert "Style coefficients" in text and "Warnings:" in text


def test_empty_input(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("", encoding="utf-8")
    data = json.loads(ratings_report(path, as_json=True))
    assert data == {"models": [], "style_coefficients": {}, "warnings": ["no battles to rate"]}
    assert "0 battles, 0 models" in ratings_report(path)
