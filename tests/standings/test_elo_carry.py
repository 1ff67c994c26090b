"""One Elo update (#47): the leaderboard's cache carries online Elo forward through ``online_elo(start=...)``, and
updating in two steps gives exactly the ratings of one pass over all the battles."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vibestudio.standings.ratings import online_elo

BATTLES = st.lists(
    st.tuples(st.integers(0, 4), st.integers(0, 4), st.sampled_from([0.0, 0.5, 1.0])).filter(
        lambda t: t[0] != t[1]
    ),
    max_size=60,
)


@given(BATTLES, st.integers(0, 60), st.sampled_from([4.0, 16.0, 32.0]))
def test_two_steps_are_one_pass(battles: list[tuple[int, int, float]], cut: int, k: float) -> None:
    a = np.array([t[0] for t in battles], dtype=np.int64)
    b = np.array([t[1] for t in battles], dtype=np.int64)
    y = np.array([t[2] for t in battles], dtype=float)
    once = online_elo(a, b, y, 5, k=k)
    first = online_elo(a[:cut], b[:cut], y[:cut], 5, k=k)
    assert online_elo(a[cut:], b[cut:], y[cut:], 5, k=k, start=first).tolist() == once.tolist()


def test_start_must_rate_every_model() -> None:
    with pytest.raises(ValueError, match="start has 2 ratings for 3 models"):
        online_elo(np.array([0]), np.array([1]), np.array([1.0]), 3, start=np.array([1000.0, 1000.0]))
