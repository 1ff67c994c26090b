"""Counts and shares in words: the one helper every standings text (and the studio's display path) uses.

`counted(1, "vote")` is "1 vote", `counted(2, "vote")` "2 votes", `counted(1200, "vote")` "1,200 votes".
An irregular plural is given (`counted(n, "child", "children")`). `percent(0.694)` is "69%". A count and
its noun are written together in one call, so the number and the word cannot disagree.
"""

from __future__ import annotations


def counted(n: int | float, noun: str, plural: str | None = None) -> str:
    """`n` with `noun`, singular for exactly one and plural otherwise (thousands separated)."""
    value = int(n) if float(n).is_integer() else n
    return f"{value:,} {agreeing(value, noun, plural)}"


def agreeing(n: int | float, noun: str, plural: str | None = None) -> str:
    """The form of `noun` that agrees with `n` (without the number): singular for exactly one."""
    return noun if n == 1 else (plural or _plural(noun))


#: Irregular plurals of the nouns the studio counts.
_IRREGULAR = {"person": "people", "child": "children"}


def _plural(noun: str) -> str:
    """The English plural of the last word of `noun` ("rated vote" -> "rated votes", "person" -> "people")."""
    head, _, last = noun.rpartition(" ")
    if last in _IRREGULAR:
        return f"{head} {_IRREGULAR[last]}".lstrip()
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and len(noun) > 1 and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def percent(share: float) -> str:
    """A share (0..1) as a whole percentage ("69%"); shares that round to 0 or 100 but are not say "<1%" / ">99%"."""
    value = 100.0 * share
    if 0.0 < value < 0.5:
        return "<1%"
    if 99.5 <= value < 100.0:
        return ">99%"
    return f"{value:.0f}%"


def rank_words(rank_low: int, rank_high: int, of: int) -> str:
    """A place as far as the rank interval allows: "#2 of 6" when it is one rank, else "#1–#6 of 6 (can't tell
    its exact place)". A board's `rank` is the best rank the intervals allow, never a place on its own."""
    if rank_low == rank_high:
        return f"#{rank_low} of {of}"
    return f"#{rank_low}–#{rank_high} of {of} (can't tell its exact place)"


def progress_note(done: int, total: int, noun: str) -> str:
    """A progress line whose count is the one the bar shows: "2 of 3 prompts done" beside 2/3."""
    return f"{done} of {counted(total, noun)} done"
