"""The one Wilson interval (``common.stats.wilson``): published table values, SciPy's own, and its edges."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest, norm

from vibestudio.common.stats import Z95, _wilson_closed, sign_test, wilson


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [  # Newcombe (1998), Statistics in Medicine 17:857, Table I, method 3 (score interval without correction)
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_matches_the_published_table(k: int, n: int, low: float, high: float) -> None:
    ci = wilson(k, n)
    assert ci is not None
    assert ci[0] == pytest.approx(low, abs=1e-4) and ci[1] == pytest.approx(high, abs=1e-4)


def test_nothing_to_estimate_is_none_and_bad_counts_are_refused() -> None:
    assert wilson(0, 0) is None
    with pytest.raises(ValueError, match="k=11, n=10"):
        wilson(11, 10)
    with pytest.raises(ValueError, match="k=-1"):
        wilson(-1, 10)


def test_one_z_for_95_percent() -> None:
    assert norm.ppf(0.975) == pytest.approx(Z95, abs=1e-15)


@given(
    st.integers(1, 5000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.sampled_from([0.8, 0.9, 0.95, 0.99]),
)
def test_the_closed_form_is_scipys_interval_on_whole_counts(kn: tuple[int, int], level: float) -> None:
    k, n = kn
    ci = binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    assert wilson(k, n, level) == (float(ci.low), float(ci.high))
    low, high = _wilson_closed(k, n, level)
    assert low == pytest.approx(ci.low, abs=1e-9) and high == pytest.approx(ci.high, abs=1e-9)


@given(st.integers(1, 500).flatmap(lambda n: st.tuples(st.integers(0, n - 1), st.just(n))))
def test_a_half_count_lies_between_its_whole_neighbours(kn: tuple[int, int]) -> None:
    """A head-to-head score counts a tie as half a win: its interval sits between those of k and k + 1."""
    k, n = kn
    below, half, above = wilson(k, n), wilson(k + 0.5, n), wilson(k + 1, n)
    assert below is not None and half is not None and above is not None
    assert below[0] <= half[0] <= above[0] and below[1] <= half[1] <= above[1]


def test_the_sign_test_reads_the_same_interval() -> None:
    p, low, high = sign_test(8, 2)
    assert (low, high) == wilson(8, 10) and p == pytest.approx(binomtest(8, 10).pvalue)
    assert sign_test(0, 0) == (1.0, None, None)
