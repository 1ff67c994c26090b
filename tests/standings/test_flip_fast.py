"""The fast votes-to-flip search against the reference search (`search="refit"`: Newton refits, a pseudo-inverse per
round, bisection) on generated boards: the same count for every pair, each fast count checked by an independent
refit, and the checking budget (top pair first, then the closest; the rest marked as estimates)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vibestudio.standings.ratings import votes_to_flip
from vibestudio.standings.ratings._flip import refit_without

WINNERS = ["model_a", "model_b", "tie", "tie (bothbad)"]


@st.composite
def boards(draw: st.DrawFn) -> pd.DataFrame:
    """A random arena: 3-7 models with skills, 60-400 votes between random pairs, ties of both kinds, and sometimes
    sampling probabilities (weighted votes). Pairs are drawn uniformly, so most boards are connected; a
    disconnected or perfect-record board is a valid case too (it exercises "can't tell" and the prior)."""
    m = draw(st.integers(3, 7))
    n = draw(st.integers(60, 400))
    seed = draw(st.integers(0, 2**31 - 1))
    spread = draw(st.sampled_from([0.2, 0.6, 1.2]))  # near-ties, a usual board, a clear order
    tie_share = draw(st.sampled_from([0.0, 0.15]))
    weighted = draw(st.booleans())
    rng = np.random.default_rng(seed)
    skill = rng.normal(0.0, spread, m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m  # never a model against itself (the input rejects that)
    p = 1.0 / (1.0 + np.exp(-(skill[a] - skill[b])))
    u = rng.random(n)
    winner = np.where(u < p, "model_a", "model_b")
    tie = rng.random(n) < tie_share
    winner = np.where(tie, np.where(rng.random(n) < 0.5, "tie", "tie (bothbad)"), winner)
    frame = pd.DataFrame(
        {
            "model_a": [f"m{k}" for k in a],
            "model_b": [f"m{k}" for k in b],
            "winner": winner,
            "battle_id": np.arange(n),
        }
    )
    if weighted:  # a few distinct draw probabilities, as the pair sampler logs them
        frame["sampling_prob"] = rng.choice([0.05, 0.1, 0.2], n)
    return frame


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(boards())
def test_fast_search_gives_the_reference_counts(frame: pd.DataFrame) -> None:
    fast = votes_to_flip(frame)
    slow = votes_to_flip(frame, search="refit")
    assert [(p.higher, p.lower) for p in fast.pairs] == [(p.higher, p.lower) for p in slow.pairs]
    for f, s in zip(fast.pairs, slow.pairs, strict=True):
        assert f.votes == s.votes, (f.higher, f.lower, f.votes, s.votes)
        assert f.predicted == s.predicted
        assert f.checked == s.checked == (f.votes is not None)  # a small board: every count is checked
        assert [v["row"] for v in f.removed] == [v["row"] for v in s.removed]


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(boards())
def test_each_fast_count_is_checked_by_an_independent_refit(frame: pd.DataFrame) -> None:
    report = votes_to_flip(frame)
    for pair in report.pairs:
        if not pair.votes:  # can't tell, or a dead heat
            continue
        rows = [v["row"] for v in pair.removed]
        after = refit_without(frame, rows)
        assert after[pair.lower] > after[pair.higher]
        before = refit_without(frame, rows[:-1])
        assert before[pair.higher] >= before[pair.lower]


def _arena(n: int, m: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    skill = rng.normal(0.0, 0.5, m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    wins = rng.random(n) < 1.0 / (1.0 + np.exp(-(skill[a] - skill[b])))
    return pd.DataFrame(
        {
            "model_a": [f"m{k:02d}" for k in a],
            "model_b": [f"m{k:02d}" for k in b],
            "winner": np.where(wins, "model_a", "model_b"),
        }
    )


def test_the_budget_checks_the_top_pair_and_the_closest_first() -> None:
    frame = _arena(6000, 12, 7)
    full = votes_to_flip(frame)
    assert all(p.checked for p in full.pairs)
    some = votes_to_flip(frame, checked=3)
    checked = [p for p in some.pairs if p.checked]
    estimated = [p for p in some.pairs if not p.checked]
    assert len(checked) == 3 and some.pairs[0].checked  # the top pair always
    closest = sorted(some.pairs[1:], key=lambda p: (p.predicted, p.position))[:2]
    assert {p.position for p in checked[1:]} == {p.position for p in closest}
    for p in estimated:  # the one-step estimate, said to be one, with the votes it names
        assert p.votes is not None and p.votes == p.predicted and "estimated" in p.note
        assert len(p.removed) == min(p.votes, 200)
    for p, q in zip(some.pairs, full.pairs, strict=True):
        assert (p.checked and p.votes == q.votes) or not p.checked
    summary = some.summary()
    assert [set(s) for s in summary] == [{"higher", "lower", "votes"}] * len(summary)
