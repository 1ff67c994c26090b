"""The outcome vocabulary: every spelling maps every outcome, the mappings agree with each other whichever way a
verdict travels (screen -> vote -> FastChat, screen -> item -> FastChat, codes, scores, pairs), and values from
the wrong vocabulary, of the wrong type or misspelled are refused with a message naming the allowed ones."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_layers import LAYERS
from vibestudio.common import outcomes as o

ROOT = Path(__file__).resolve().parents[2]
LAYOUTS = (True, False)
#: The same five verdicts in each spelling, position by position (the screen's order).
SPELLINGS = {
    "choice": o.CHOICES,
    "stored": o.OUTCOMES,
    "item": o.ITEM_OUTCOMES,
    "fastchat": ("model_a", "model_b", "tie", "tie (bothgood)", "tie (bothbad)"),
}


def test_the_spellings_are_pinned() -> None:
    """Error messages, stored votes, labels and cache files depend on these exact values and orders."""
    assert o.CHOICES == ("left", "right", "tie", "both_good", "both_bad")
    assert o.OUTCOMES == ("a", "b", "tie", "both_good", "both_bad")
    assert o.ITEM_OUTCOMES == ("1", "2", "tie", "both_good", "both_bad")
    assert o.FASTCHAT_WINNERS == ("model_a", "model_b", "tie", "tie (bothbad)", "tie (bothgood)")
    assert o.CODES == {"a": 0, "b": 1, "tie": 2, "both_bad": 3, "both_good": 4}  # in vote cache files
    assert o.SCORE_A == (1.0, 0.0, 0.5, 0.5, 0.5)
    for vocabulary in (*SPELLINGS.values(), o.LABEL_OUTCOMES):
        assert len(set(vocabulary)) == len(vocabulary)


@pytest.mark.parametrize("k", range(5))
def test_one_verdict_reads_the_same_in_every_spelling(k: int) -> None:
    choice, stored, item, winner = (SPELLINGS[name][k] for name in ("choice", "stored", "item", "fastchat"))
    assert o.stored_from_choice(choice, True) == stored
    assert o.item_from_choice(choice, True) == item
    assert o.item_from_stored(stored) == item and o.stored_from_item(item) == stored
    assert o.fastchat_winner(stored) == winner == o.fastchat_from_item(item)
    assert o.stored_from_fastchat(winner) == stored and o.item_from_fastchat(winner) == item
    assert o.FASTCHAT_WINNERS[o.outcome_code(stored)] == winner
    assert o.stored_from_code(o.outcome_code(stored)) == stored


@pytest.mark.parametrize(("choice", "left"), itertools.product(o.CHOICES, LAYOUTS))
def test_screen_round_trips_and_both_routes_to_fastchat_agree(choice: str, left: bool) -> None:
    stored, item = o.stored_from_choice(choice, left), o.item_from_choice(choice, left)
    assert o.choice_from_stored(stored, left) == choice
    assert o.choice_from_item(item, left) == choice
    # a battle's answer A is an item's answer 1: both routes from the screen reach the same FastChat winner
    assert o.fastchat_winner(stored) == o.fastchat_from_item(item)
    assert o.item_from_stored(stored) == item
    # the layout only moves decisive verdicts; a tie is the same tie whichever answer was on the left
    other = o.stored_from_choice(choice, not left)
    assert (other != stored) == (choice in o.SIDES)
    assert o.flipped(item) == o.item_from_choice(choice, not left)


def test_left_right_follow_the_layout() -> None:
    assert [o.stored_from_choice(c, False) for c in o.SIDES] == ["b", "a"]
    assert [o.item_from_choice(c, False) for c in o.SIDES] == ["2", "1"]
    assert [o.choice_from_stored(s, False) for s in ("a", "b")] == ["right", "left"]
    assert [o.choice_from_item(s, False) for s in ("1", "2")] == ["right", "left"]


@pytest.mark.parametrize("stored", o.OUTCOMES)
def test_score_of_a_is_one_minus_the_score_of_b(stored: str) -> None:
    mirrored = {"a": "b", "b": "a"}.get(stored, stored)
    assert o.score_a(stored) + o.score_a(mirrored) == 1.0
    assert o.score_a(stored) == o.SCORE_A[o.CODES[stored]]
    assert o.score_a(stored) == {"a": 1.0, "b": 0.0}.get(stored, 0.5)


@pytest.mark.parametrize("item", o.LABEL_OUTCOMES)
def test_the_score_of_answer_one_agrees_with_the_score_of_a(item: str) -> None:
    score = o.score_first(item)
    if item in o.ITEM_OUTCOMES:
        assert score == o.score_a(o.stored_from_item(item))
        assert score + o.score_first(o.flipped(item)) == 1.0  # type: ignore[operator]
    else:
        assert score is None  # "good", "bad", "inconsistent", "unparsed" say nothing about answer 1 vs 2
    for bad in ("a", "left", "model_a", " 1", None, 1):
        assert o.score_first(bad) is None  # type: ignore[arg-type]


def test_desirable_answers_follow_the_preference() -> None:
    assert set(o.DESIRABLE) == set(o.LABEL_OUTCOMES) - {"tie", *o.JUDGE_OUTCOMES}  # a tie says neither
    for item in ("1", "2"):
        chosen, rejected = o.chosen_rejected(item)
        assert o.DESIRABLE[item] == {chosen: True, rejected: False}
    assert o.DESIRABLE["both_good"] == {"1": True, "2": True} and o.DESIRABLE["both_bad"] == {
        "1": False,
        "2": False,
    }
    assert o.DESIRABLE["good"] == {"1": True} and o.DESIRABLE["bad"] == {"1": False}


def test_every_code_is_a_stored_outcome_and_no_other_number_is() -> None:
    assert sorted(o.CODES.values()) == list(range(len(o.FASTCHAT_WINNERS))) == list(range(len(o.SCORE_A)))
    for bad in (-1, 5, 2.0, "2", True, None):
        with pytest.raises(o.OutcomeError, match=re.escape(repr(bad))):
            o.stored_from_code(bad)  # type: ignore[arg-type]


def test_preference_pairs_come_only_from_decisive_outcomes() -> None:
    assert o.chosen_rejected("1") == ("1", "2") and o.chosen_rejected("2") == ("2", "1")
    for item in ("1", "2"):
        chosen, rejected = o.chosen_rejected(item)
        assert chosen == item and rejected == o.flipped(item) != chosen
    for outcome in (*o.TIES, *o.SINGLE_OUTCOMES, *o.JUDGE_OUTCOMES):
        with pytest.raises(o.OutcomeError, match=f"outcome '{outcome}' prefers neither answer"):
            o.chosen_rejected(outcome)
    for bad in ("a", "model_a", "left", "3", "", None):
        with pytest.raises(o.OutcomeError, match=r"unknown item outcome .*expected one of 1, 2"):
            o.chosen_rejected(bad)  # type: ignore[arg-type]


def test_merging_ties_keeps_decisive_verdicts_and_is_idempotent() -> None:
    for vocabulary in (o.OUTCOMES, o.ITEM_OUTCOMES, o.LABEL_OUTCOMES):
        for v in vocabulary:
            merged = o.merge_ties(v)
            assert merged == ("tie" if v in o.TIES else v)
            assert o.merge_ties(merged) == merged
    assert o.merge_ties("inconsistent") == "inconsistent"  # a judge's non-verdict is not a tie


def test_flipping_swaps_the_answers_and_nothing_else() -> None:
    for v in (*o.LABEL_OUTCOMES, "a", "left", "model_a"):
        assert o.flipped(o.flipped(v)) == v
        assert (o.flipped(v) != v) == (v in ("1", "2"))


def test_alpaca_preferences() -> None:
    for item in o.ITEM_OUTCOMES:
        assert o.item_from_alpaca(o.alpaca_preference(item)) == o.merge_ties(item)
        assert o.alpaca_preference(item) == 1.0 + (1.0 - o.score_a(o.stored_from_item(item)))
    assert [o.item_from_alpaca(p) for p in (1, 1.2, 1.5 + 1e-12, 1.7, 2)] == ["1", "1", "tie", "2", "2"]
    for bad in (0.99, 2.01, float("nan"), True, "1.5", None):
        with pytest.raises(o.OutcomeError, match="from 1 to 2"):
            o.item_from_alpaca(bad)  # type: ignore[arg-type]
    for bad in ("good", "inconsistent", "a"):
        with pytest.raises(o.OutcomeError, match=f"unknown item outcome '{bad}'"):
            o.alpaca_preference(bad)


#: Each translation, the name its message uses, and its allowed values in order.
TRANSLATIONS = [
    (lambda v: o.stored_from_choice(v, True), "vote", o.CHOICES),
    (lambda v: o.item_from_choice(v, False), "choice", o.CHOICES),
    (lambda v: o.choice_from_stored(v, True), "stored outcome", o.OUTCOMES),
    (lambda v: o.choice_from_item(v, False), "item outcome", o.ITEM_OUTCOMES),
    (o.item_from_stored, "stored outcome", o.OUTCOMES),
    (o.stored_from_item, "item outcome", o.ITEM_OUTCOMES),
    (o.fastchat_winner, "stored outcome", o.CODES),
    (o.outcome_code, "stored outcome", o.CODES),
    (o.score_a, "stored outcome", o.CODES),
    (o.stored_from_fastchat, "FastChat winner", o.FASTCHAT_WINNERS),
    (o.item_from_fastchat, "FastChat winner", o.FASTCHAT_WINNERS),
    (o.fastchat_from_item, "item outcome", o.ITEM_OUTCOMES),
]
#: Near misses, other vocabularies' words, and things that are not text at all.
BAD = [
    "",
    " left",
    "Left",
    "LEFT",
    "both good",
    "both-bad",
    "bothbad",
    "tie ",
    "draw",
    "A",
    "0",
    1,
    0,
    True,
    None,
]
BAD += [["left"], ("a",), b"a", 1.0]


@pytest.mark.parametrize(("translate", "what", "allowed"), TRANSLATIONS)
def test_unknown_values_are_refused_with_the_allowed_ones_named(translate, what, allowed) -> None:
    others = {v for vocabulary in SPELLINGS.values() for v in vocabulary} - set(allowed)
    for bad in [*BAD, *sorted(others), "good", "inconsistent"]:
        if bad in list(allowed):
            continue
        expected = f"unknown {what} {bad!r}; expected one of {', '.join(allowed)}"
        with pytest.raises(o.OutcomeError) as err:
            translate(bad)
        assert str(err.value) == expected
        assert isinstance(err.value, ValueError)


@pytest.mark.parametrize("flag", [None, 0, 1, "true", "False", 0.0, [True]])
def test_a_layout_must_be_a_bool(flag) -> None:
    for translate, name in (
        (o.stored_from_choice, "left_is_a"),
        (o.choice_from_stored, "left_is_a"),
        (o.item_from_choice, "left_is_first"),
        (o.choice_from_item, "left_is_first"),
    ):
        with pytest.raises(TypeError, match=f"{name} must be True or False, got {re.escape(repr(flag))}"):
            translate("tie", flag)  # a tie is in every spelling: only the flag is wrong


def test_the_ratings_and_the_vote_cache_use_these_codes() -> None:
    from vibestudio.standings.ratings import WINNERS
    from vibestudio.standings.vote_cache import CODES

    assert WINNERS is o.FASTCHAT_WINNERS and CODES is o.CODES


def test_it_imports_nothing_heavy() -> None:
    code = "import sys, vibestudio.common.outcomes; print(sorted(m for m in ('numpy', 'sqlalchemy', 'pandas') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_no_package_spells_fastchat_ties_or_the_tie_merge_itself() -> None:
    """The mappings live in common/outcomes.py; a second copy elsewhere would drift from it."""
    pattern = re.compile(r"""["']tie \(both(bad|good)\)["']|["']both_(good|bad)["']\s*:\s*["']tie["']""")
    packages = LAYERS
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for package in packages
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != ROOT / "common" / "outcomes.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if pattern.search(line)
    ]
    assert found == []
