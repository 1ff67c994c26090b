"""Fits that know what they can't tell (issue 48): every board option at small and degenerate vote counts.

Seen: style + vibe control on 5 votes gave ratings 2160 ... -9.2 and `list_items -5202 [-5541, -4499]`, a narrow
interval on a coefficient the page itself called collinear. The property: on every board option, every number shown
(a rating, a style or vibe coefficient, a prompt-conditioned rating) has an interval that holds its point, is no
wider than `MAX_HALF_WIDTH` either side, and is never narrower than the information in the votes allows (a
Cramér-Rao bound: a rating or coefficient fitted on n votes has a standard deviation of at least
2 / sqrt(n) log-odds, a vote carrying at most 1/4 of information); every coefficient asked for is either shown or
reads "can't tell" with a reason; a shown coefficient has the votes the rule asks for.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vibestudio.standings.ratings import leaderboard, leaderboard_by, prompt_board
from vibestudio.standings.ratings._board import MAX_HALF_WIDTH, RIDGE_SEPARATED, SCALE
from vibestudio.textfeatures import vibes

Z = NormalDist().inv_cdf(0.975)
MODELS = ["concise", "plain", "listy", "warm", "loud"]
#: Answer texts with different style and vibe features (lists, headers, bold, praise, exclamations, emoji).
TEXTS = [
    "Fine.",
    "Here it is: the answer is four.",
    "# Answer\n\n- one\n- two\n- three",
    "**Great question!** I love it! 😀 The answer is four.",
    "I think it might be four, perhaps.",
    "Sorry, I can't help with that.",
    "The answer is four. " * 6,
]
#: Every board option the studio offers over these fits.
OPTIONS: list[dict[str, Any]] = [
    {},
    {"style_control": True},
    {"vibe_control": True},
    {"style_control": True, "vibe_control": True},
    {"style_control": True, "vibe_control": True, "ci_method": "sandwich"},
    {"method": "rao-kupper"},
    {"method": "davidson", "ci_method": "sandwich"},
]


@st.composite
def battles(draw: Any, max_votes: int = 60) -> list[dict[str, Any]]:
    """Random small arenas, with the degenerate shapes drawn on purpose: all ties, one pair only, one text per
    model (every feature collinear with the models), a feature shown by one model only."""
    shape = draw(st.sampled_from(["random", "all ties", "one pair", "collinear", "one vote"]))
    n = 1 if shape == "one vote" else draw(st.integers(0, max_votes))
    models = MODELS[:2] if shape == "one pair" else MODELS[: draw(st.integers(2, 5))]
    text_of = {m: TEXTS[k % len(TEXTS)] for k, m in enumerate(MODELS)}
    out = []
    for _ in range(n):
        a, b = draw(st.sampled_from([(x, y) for x in models for y in models if x != y]))
        winner = "tie" if shape == "all ties" else draw(st.sampled_from(["model_a", "model_b", "tie"]))
        ta = text_of[a] if shape == "collinear" else draw(st.sampled_from(TEXTS))
        tb = text_of[b] if shape == "collinear" else draw(st.sampled_from(TEXTS))
        out.append(
            {
                "model_a": a,
                "model_b": b,
                "winner": winner,
                "category": draw(st.sampled_from(["code", "chat"])),
                "conversation_a": [{"role": "user", "content": "q"}, {"role": "assistant", "content": ta}],
                "conversation_b": [{"role": "user", "content": "q"}, {"role": "assistant", "content": tb}],
            }
        )
    return out


def _floor(n: int, params_ridge: float, share: float = 1.0) -> float:
    """The narrowest honest half-width (rating points) of a contrast fitted on n votes: information per vote is at
    most 1/4 (a tie or a coin flip), plus the ridge's; `share` is the contrast's length (1 - 1/m for a rating
    against the mean)."""
    return Z * SCALE * share / math.sqrt(0.25 * n + params_ridge)


def _check_board(board: Any, options: dict[str, Any], records: list[dict[str, Any]]) -> None:
    m = len(board.models)
    for row in board.models:
        if row.cant_tell:
            assert row.ci_low is None and row.ci_high is None and row.cant_tell.strip()
            continue
        lo, hi, r = row.ci_low, row.ci_high, row.rating
        assert all(map(math.isfinite, (lo, hi, r))), row
        assert lo - 1e-6 <= r <= hi + 1e-6, row
        assert max(r - lo, hi - r) <= MAX_HALF_WIDTH, row
        if row.n_battles < 10 or row.ties == row.n_battles:
            # no spread to resample: the interval is at least what the information allows
            floor = _floor(row.n_battles, RIDGE_SEPARATED, 1.0 - 1.0 / m)
            assert hi - lo >= 2 * 0.5 * floor, (row, floor)
    wanted = (vibes.STYLE_FEATURES if options.get("style_control") else ()) + (
        vibes.VIBE_FEATURES if options.get("vibe_control") else ()
    )
    if not wanted or not board.models:
        assert not board.style_coefficients
        return
    cant_tell = getattr(board, "style_cant_tell", {})
    shown, unknown = set(board.style_coefficients), set(cant_tell)
    assert shown | unknown == set(wanted) and not shown & unknown, (shown, unknown)
    assert all(reason.strip() for reason in cant_tell.values())
    n = board.n_battles
    for name, value in board.style_coefficients.items():
        lo, hi = board.style_intervals[name]
        assert all(map(math.isfinite, (lo, hi, value)))
        assert lo - 1e-6 <= value <= hi + 1e-6, (name, value, lo, hi)
        assert max(value - lo, hi - value) <= MAX_HALF_WIDTH, (name, value, lo, hi)
        assert hi - lo >= 2 * 0.99 * _floor(n, RIDGE_SEPARATED), (name, value, lo, hi, n)
        # ten votes per fitted parameter (ratings after the first, and each coefficient shown)
        assert n >= 10 * (m - 1 + len(shown)), (name, n, m, shown)
    if n < 10 * (m - 1 + 1):
        assert not shown
        assert all("votes" in r or "never varies" in r for r in cant_tell.values())


PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "+".join(f"{k}={v}" for k, v in o.items()) or "bt")
@PROPERTY
@given(records=battles())
def test_every_board_option_says_what_it_cant_tell(options: dict[str, Any], records: list[dict]) -> None:
    board = leaderboard(records, bootstrap_rounds=20, elo_k=None, **options)
    _check_board(board, options, records)
    if not records:
        return
    for sub in leaderboard_by(records, "category", bootstrap_rounds=20, elo_k=None, **options).values():
        _check_board(sub, options, records)


@PROPERTY
@given(records=battles())
def test_prompt_conditioned_board_says_what_it_cant_tell(records: list[dict]) -> None:
    if len({r["model_a"] for r in records} | {r["model_b"] for r in records}) < 2:
        return
    board = prompt_board(records, shrink=8.0)
    m = len(board.names)
    for (
        kind,
        n,
    ) in board.votes_by_kind.items():  # a kind too thin to move the board says so, with the votes needed
        if n < 10 * (m - 1):
            assert any(f"{kind} ({n})" in note and f"at least {10 * (m - 1)}" in note for note in board.notes)
    for probs in (None, {"code": 1.0}, {"chat": 0.5, "code": 0.5}):
        for row in board.rank(probs):
            if row["cant_tell"]:
                assert row["ci_low"] is None and row["ci_high"] is None
                continue
            lo, hi, r = row["ci_low"], row["ci_high"], row["rating"]
            assert all(map(math.isfinite, (lo, hi, r))) and lo <= r <= hi
            assert max(r - lo, hi - r) <= MAX_HALF_WIDTH, row


def test_the_reported_case_five_votes_style_and_vibe() -> None:
    """Five anonymous votes with style + vibe control: no coefficient is shown (each says the votes it needs), and
    the ratings are the identifiable part, with bounded intervals."""
    records = [
        {
            "model_a": a,
            "model_b": b,
            "winner": w,
            "conversation_a": [{"role": "assistant", "content": TEXTS[k % 7]}],
            "conversation_b": [{"role": "assistant", "content": TEXTS[(k + 3) % 7]}],
        }
        for k, (a, b, w) in enumerate(
            [
                ("concise", "plain", "model_a"),
                ("listy", "warm", "model_b"),
                ("loud", "concise", "model_a"),
                ("plain", "listy", "tie"),
                ("warm", "loud", "model_a"),
            ]
        )
    ]
    board = leaderboard(records, style_control=True, vibe_control=True, bootstrap_rounds=50)
    assert board.style_coefficients == {}
    needs = [r for r in board.style_cant_tell.values() if "too few votes" in r]
    assert needs and all("need at least" in r and "this board has 5" in r for r in needs)
    assert any("not controlled" in w for w in board.warnings)
    _check_board(board, {"style_control": True, "vibe_control": True}, records)


def test_collinear_feature_names_its_partner_and_the_rest_is_fitted() -> None:
    """A feature only one model shows is collinear with the models: can't tell, and why; ratings stay bounded."""
    import numpy as np

    rng = np.random.default_rng(3)
    records = []
    for _ in range(600):
        a, b = (str(x) for x in rng.choice(["loud", "quiet", "calm"], size=2, replace=False))
        text = {"loud": "Wow!! " + "w " * int(rng.integers(1, 30)), "quiet": "w " * int(rng.integers(1, 30))}
        text["calm"] = text["quiet"]
        records.append(
            {
                "model_a": a,
                "model_b": b,
                "winner": str(rng.choice(["model_a", "model_b"])),
                "conversation_a": [{"role": "assistant", "content": text[a]}],
                "conversation_b": [{"role": "assistant", "content": text[b]}],
            }
        )
    board = leaderboard(records, style_control=True, vibe_control=True, ci_method="sandwich")
    assert "the models" in board.style_cant_tell["exclamations"]
    assert "tokens" in board.style_coefficients
    _check_board(board, {"style_control": True, "vibe_control": True}, records)
