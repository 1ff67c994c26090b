"""The one vocabulary of a verdict on two answers, and every mapping between its spellings.

A verdict is one of five outcomes: the first answer is better, the second is, a plain tie, both good, both
bad. Each layer spells them its own way:

  the screen        CHOICES            left, right      tie, both_good, both_bad
  a stored vote     OUTCOMES           a, b             tie, both_good, both_bad
  a queue item      ITEM_OUTCOMES      "1", "2"         tie, both_good, both_bad
  FastChat battles  FASTCHAT_WINNERS   model_a, model_b tie, "tie (bothgood)", "tie (bothbad)"
  the vote cache    CODES              0, 1             2, 4, 3
  the score of A    score_a            1.0, 0.0         0.5, 0.5, 0.5
  AlpacaEval        alpaca_preference  1.0, 2.0         1.5, 1.5, 1.5

Left and right are where the answers were on the screen. ``left_is_a`` (a battle) or ``left_is_first`` (a
queue item) says which answer was on the left. Battle answer A is an item's answer 1. A preference pair
(chosen / rejected) comes only from a decisive outcome. A single-answer item takes ``good`` / ``bad``.
Judges may also record ``inconsistent`` or ``unparsed``. ``merge_ties`` reads both-good and both-bad as
plain ties.

FastChat's winners are in FastChat's order (both-bad before both-good). A vote's numeric code is its
position there. Vote cache files store the codes, so that order never changes. The other spellings keep
the order the screen offers them in.

Every translation raises ``OutcomeError`` (a ``ValueError``) on a value it does not know, naming the
allowed values. ``merge_ties`` and ``flipped`` leave values they do not change as they are. A layout flag
that is not a bool is a ``TypeError``. Pure Python: every layer may import it, at no cost.
"""

from __future__ import annotations

from collections.abc import Sequence


class OutcomeError(ValueError):
    """A value that is not an outcome in the expected spelling; the message names the allowed ones."""


#: The three kinds of tie, in the order the screen offers them (the same words on the screen, in votes and items).
TIES: tuple[str, ...] = ("tie", "both_good", "both_bad")
#: Where an answer was on the screen.
SIDES: tuple[str, ...] = ("left", "right")
#: What a person picks on the screen.
CHOICES: tuple[str, ...] = (*SIDES, *TIES)
#: A stored vote, in battle terms (A / B).
OUTCOMES: tuple[str, ...] = ("a", "b", *TIES)
#: A verdict on a queue item with two answers, in item terms (answer 1 / answer 2).
ITEM_OUTCOMES: tuple[str, ...] = ("1", "2", *TIES)
#: A verdict on a queue item with one answer.
SINGLE_OUTCOMES: tuple[str, ...] = ("good", "bad")
#: What a judge records when it reached no verdict: it flipped when the answers swapped places, or it was unreadable.
JUDGE_OUTCOMES: tuple[str, ...] = ("inconsistent", "unparsed")
#: Every outcome a queue label can hold.
LABEL_OUTCOMES: tuple[str, ...] = ITEM_OUTCOMES + SINGLE_OUTCOMES + JUDGE_OUTCOMES
#: FastChat's ``winner`` values, in FastChat's order; a vote's code is its position here.
FASTCHAT_WINNERS: tuple[str, ...] = ("model_a", "model_b", "tie", "tie (bothbad)", "tie (bothgood)")

#: Stored outcome -> FastChat winner.
STORED_TO_FASTCHAT: dict[str, str] = {
    "a": "model_a",
    "b": "model_b",
    "tie": "tie",
    "both_bad": "tie (bothbad)",
    "both_good": "tie (bothgood)",
}
_FASTCHAT_TO_STORED: dict[str, str] = {w: o for o, w in STORED_TO_FASTCHAT.items()}
#: Stored outcome -> numeric code (the position of its FastChat winner), as the vote cache stores it.
CODES: dict[str, int] = {o: FASTCHAT_WINNERS.index(w) for o, w in STORED_TO_FASTCHAT.items()}
#: The score of A for each code (a win 1, a loss 0, every kind of tie a half).
SCORE_A: tuple[float, ...] = (1.0, 0.0, 0.5, 0.5, 0.5)
#: "Merge ties": both-good and both-bad read as a plain tie (other values stay as they are).
MERGE_TIES: dict[str, str] = {"both_good": "tie", "both_bad": "tie"}
#: Item outcome -> (chosen answer, rejected answer); only decisive outcomes make a preference pair.
PREFERENCE_PAIRS: dict[str, tuple[str, str]] = {"1": ("1", "2"), "2": ("2", "1")}
#: Swap answer 1 and answer 2 (an item stored with its answers in the other order); other values stay.
FLIP: dict[str, str] = {"1": "2", "2": "1"}
#: One answer shown: the left / right keys mean good / bad.
SINGLE_FROM_SIDE: dict[str, str] = {"left": "good", "right": "bad"}
#: Item outcome -> AlpacaEval ``preference`` (1 = output_1 better, 2 = output_2 better, 1.5 = a tie).
ALPACA_PREFERENCE: dict[str, float] = {"1": 1.0, "2": 2.0, "tie": 1.5, "both_good": 1.5, "both_bad": 1.5}
#: What an item outcome scores for answer 1: 1 for a win, 0 for a loss, 0.5 for every kind of tie.
SCORE_FIRST: dict[str, float] = {"1": 1.0, "2": 0.0, **dict.fromkeys(TIES, 0.5)}
#: Which answers an item outcome calls good (KTO's per-answer ``label``); single-answer items have answer "1" only.
DESIRABLE: dict[str, dict[str, bool]] = {
    "1": {"1": True, "2": False},
    "2": {"1": False, "2": True},
    "both_good": {"1": True, "2": True},
    "both_bad": {"1": False, "2": False},
    "good": {"1": True},
    "bad": {"1": False},
}


def _position(value: object, vocabulary: Sequence[str], what: str) -> int:
    if isinstance(value, str) and value in vocabulary:
        return vocabulary.index(value)
    raise OutcomeError(f"unknown {what} {value!r}; expected one of {', '.join(vocabulary)}")


def _lookup(value: object, table: dict[str, str], what: str) -> str:
    if isinstance(value, str) and value in table:
        return table[value]
    raise OutcomeError(f"unknown {what} {value!r}; expected one of {', '.join(table)}")


def _layout(flag: object, name: str) -> bool:
    if not isinstance(flag, bool):
        raise TypeError(f"{name} must be True or False, got {flag!r}")
    return flag


def _across(value: object, source: Sequence[str], target: Sequence[str], what: str, same_side: bool) -> str:
    """The same outcome in another spelling; with ``same_side`` False the first and second answers swap."""
    k = _position(value, source, what)
    if k < 2 and not same_side:
        k = 1 - k
    return target[k]


# -- the screen <-> a stored vote / a queue item -------------------------------------------------------------------


def stored_from_choice(choice: str, left_is_a: bool) -> str:
    """A screen choice (left / right / a tie kind) as the vote stores it (a / b / the same tie kind)."""
    return _across(choice, CHOICES, OUTCOMES, "vote", _layout(left_is_a, "left_is_a"))


def choice_from_stored(stored: str, left_is_a: bool) -> str:
    """A stored vote as the screen that showed it calls it (a / b -> left / right)."""
    return _across(stored, OUTCOMES, CHOICES, "stored outcome", _layout(left_is_a, "left_is_a"))


def item_from_choice(choice: str, left_is_first: bool) -> str:
    """A screen choice on a two-answer item in item terms (left / right -> "1" / "2")."""
    return _across(choice, CHOICES, ITEM_OUTCOMES, "choice", _layout(left_is_first, "left_is_first"))


def choice_from_item(item: str, left_is_first: bool) -> str:
    """An item outcome (or answer side "1" / "2") as the screen that showed it calls it."""
    return _across(item, ITEM_OUTCOMES, CHOICES, "item outcome", _layout(left_is_first, "left_is_first"))


# -- a stored vote <-> a queue item ---------------------------------------------------------------------------------


def item_from_stored(stored: str) -> str:
    """A stored vote in item terms: battle answer A is item answer 1."""
    return _across(stored, OUTCOMES, ITEM_OUTCOMES, "stored outcome", True)


def stored_from_item(item: str) -> str:
    """An item outcome in battle terms: item answer 1 is battle answer A."""
    return _across(item, ITEM_OUTCOMES, OUTCOMES, "item outcome", True)


# -- FastChat's winners ---------------------------------------------------------------------------------------------


def fastchat_winner(stored: str) -> str:
    """A stored vote as FastChat's ``winner`` (a -> model_a, both_bad -> "tie (bothbad)", ...)."""
    return _lookup(stored, STORED_TO_FASTCHAT, "stored outcome")


def stored_from_fastchat(winner: str) -> str:
    """FastChat's ``winner`` as a stored vote."""
    return _lookup(winner, _FASTCHAT_TO_STORED, "FastChat winner")


def fastchat_from_item(item: str) -> str:
    """A two-answer item outcome as FastChat's ``winner`` (answer 1 -> model_a)."""
    return fastchat_winner(stored_from_item(item))


def item_from_fastchat(winner: str) -> str:
    """FastChat's ``winner`` as an item outcome (model_a -> "1")."""
    return item_from_stored(stored_from_fastchat(winner))


# -- numbers: the vote cache's codes, the score of A, AlpacaEval's preference ----------------------------------------


def outcome_code(stored: str) -> int:
    """The numeric code of a stored vote (its FastChat winner's position in ``FASTCHAT_WINNERS``)."""
    if isinstance(stored, str) and stored in CODES:
        return CODES[stored]
    raise OutcomeError(f"unknown stored outcome {stored!r}; expected one of {', '.join(CODES)}")


def stored_from_code(code: int) -> str:
    """The stored vote a numeric code stands for."""
    if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code < len(FASTCHAT_WINNERS):
        raise OutcomeError(
            f"unknown outcome code {code!r}; expected a whole number 0..{len(FASTCHAT_WINNERS) - 1}"
        )
    return _FASTCHAT_TO_STORED[FASTCHAT_WINNERS[code]]


def score_a(stored: str) -> float:
    """What a stored vote scores for A: 1 for a win, 0 for a loss, 0.5 for every kind of tie."""
    return SCORE_A[outcome_code(stored)]


def score_first(item: str) -> float | None:
    """What an item outcome (or a judge's verdict) scores for answer 1; None for a verdict that says nothing
    ("inconsistent", "unparsed", a single-answer label)."""
    return SCORE_FIRST.get(item) if isinstance(item, str) else None


def alpaca_preference(item: str) -> float:
    """An item outcome as AlpacaEval's ``preference`` (1, 2, or 1.5 for every kind of tie)."""
    if isinstance(item, str) and item in ALPACA_PREFERENCE:
        return ALPACA_PREFERENCE[item]
    raise OutcomeError(f"unknown item outcome {item!r}; expected one of {', '.join(ALPACA_PREFERENCE)}")


def item_from_alpaca(preference: float) -> str:
    """AlpacaEval's ``preference`` (1..2, fractions are soft) as an item outcome: nearer 1 -> "1", 1.5 -> tie."""
    if (
        isinstance(preference, bool)
        or not isinstance(preference, int | float)
        or not 1.0 <= preference <= 2.0
    ):
        raise OutcomeError(f"an AlpacaEval preference is a number from 1 to 2, got {preference!r}")
    return "tie" if abs(preference - 1.5) < 1e-9 else ("1" if preference < 1.5 else "2")


# -- preference pairs, ties, swapped answers ------------------------------------------------------------------------


def chosen_rejected(item: str) -> tuple[str, str]:
    """The (chosen, rejected) answers of a decisive item outcome: "1" -> ("1", "2"), "2" -> ("2", "1")."""
    if isinstance(item, str) and item in PREFERENCE_PAIRS:
        return PREFERENCE_PAIRS[item]
    if isinstance(item, str) and item in LABEL_OUTCOMES:
        raise OutcomeError(f"outcome {item!r} prefers neither answer, so it makes no preference pair")
    raise OutcomeError(f"unknown item outcome {item!r}; expected one of {', '.join(PREFERENCE_PAIRS)}")


def merge_ties(outcome: str) -> str:
    """Both-good and both-bad as a plain tie; any other value unchanged (works on votes and item outcomes)."""
    return MERGE_TIES.get(outcome, outcome)


def flipped(item: str) -> str:
    """An item outcome or answer side with answers 1 and 2 swapped; ties and other values unchanged."""
    return FLIP.get(item, item)
