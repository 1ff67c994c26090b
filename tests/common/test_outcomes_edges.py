"""The outcome mapping's edges, written to kill the mutants ``scripts/mutation_check.py`` found surviving: the code
range and its message, a score for anything that is not an outcome name, the AlpacaEval bounds and its tie."""

from __future__ import annotations

import pytest

from vibestudio.common import outcomes as o


def test_every_code_maps_and_the_message_names_the_range():
    last = len(o.FASTCHAT_WINNERS) - 1
    assert [o.outcome_code(o.stored_from_code(c)) for c in range(last + 1)] == list(range(last + 1))
    for bad in (-1, last + 1, True, 1.0, "1"):
        with pytest.raises(o.OutcomeError) as caught:
            o.stored_from_code(bad)  # type: ignore[arg-type]
        assert str(caught.value).endswith(f"expected a whole number 0..{last}")


def test_a_score_for_what_is_not_an_outcome_name_is_none():
    assert o.score_first("1") == 1.0 and o.score_first("2") == 0.0
    for nothing in ("unparsed", "inconsistent", None, 1, ["1"], {"1": 1}):
        assert o.score_first(nothing) is None  # type: ignore[arg-type]  # unhashable ones too, no TypeError


def test_alpaca_preference_bounds_ties_and_messages():
    assert o.item_from_alpaca(1) == "1" and o.item_from_alpaca(2) == "2" and o.item_from_alpaca(1.5) == "tie"
    assert o.item_from_alpaca(1.5 - 1e-6) == "1" and o.item_from_alpaca(1.5 + 1e-6) == "2"
    for bad in (0.999, 2.001, True, "1.5", None):
        with pytest.raises(o.OutcomeError, match="a number from 1 to 2"):
            o.item_from_alpaca(bad)  # type: ignore[arg-type]
    with pytest.raises(o.OutcomeError) as caught:
        o.alpaca_preference("3")
    assert str(caught.value) == f"unknown item outcome '3'; expected one of {', '.join(o.ALPACA_PREFERENCE)}"
