"""Judge bias arithmetic, pure logic: combining swapped runs, position / length / own-family preference.

A pairwise judge is asked twice per item: once with answer 1 shown first, once with answer 2 first
(``swapped``). Verdicts here are in item terms: ``1``, ``2``, ``tie``, ``unparsed``.
- Two runs that agree give that verdict.
- Runs that disagree give ``inconsistent``: the judge followed the position, not the content.
- A run that could not be parsed makes the pair ``unparsed``.

Rates are (numerator, count) pairs, so callers can show how much evidence stands behind them. A rate over
zero cases is NaN. This module knows nothing about engines or the database.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ORG_PREFIXES = {
    "meta",
    "mistralai",
    "google",
    "microsoft",
    "openai",
    "anthropic",
    "huggingfacetb",
    "hf",
    "tiiuae",
    "qwen-org",
    "deepseek-ai",
    "builtin",
}


@dataclass
class Rate:
    hits: int
    n: int

    @property
    def value(self) -> float:
        return self.hits / self.n if self.n else float("nan")

    def __str__(self) -> str:
        return "n/a" if not self.n else f"{self.value:.2f} ({self.hits}/{self.n})"


def combine(first: str, swapped: str) -> str:
    """The verdict of a position-swapped pair of runs."""
    if first == "unparsed" or swapped == "unparsed":
        return "unparsed"
    return first if first == swapped else "inconsistent"


def first_position_choice(verdict: str, swapped: bool) -> bool | None:
    """Did this run pick the answer shown first? None for ties and unparsed runs."""
    if verdict not in ("1", "2"):
        return None
    return verdict == ("2" if swapped else "1")


def position_rate(runs: list[tuple[str, bool]]) -> Rate:
    """Share of decisive runs that picked the first-shown answer (0.5 = no position bias)."""
    picks = [first_position_choice(v, s) for v, s in runs]
    decided = [p for p in picks if p is not None]
    return Rate(sum(decided), len(decided))


def longer_rate(verdicts: list[tuple[str, int, int]]) -> Rate:
    """Share of decisive verdicts (outcome, len answer 1, len answer 2) that preferred the longer answer."""
    hits = n = 0
    for outcome, len1, len2 in verdicts:
        if outcome not in ("1", "2") or len1 == len2:
            continue
        n += 1
        hits += int((outcome == "1") == (len1 > len2))
    return Rate(hits, n)


def family_rate(verdicts: list[tuple[str, str | None, str | None]], own: str | None) -> Rate:
    """Share of decisive verdicts (outcome, family 1, family 2) on own-vs-other pairs that chose the own family."""
    if not own:
        return Rate(0, 0)
    hits = n = 0
    for outcome, fam1, fam2 in verdicts:
        if outcome not in ("1", "2") or (fam1 == own) == (fam2 == own):
            continue
        n += 1
        hits += int((outcome == "1") == (fam1 == own))
    return Rate(hits, n)


def model_family(name: str | None) -> str | None:
    """A model's family from its name: the first word that is not an organisation, without trailing digits
    (``smollm2-plain`` -> smollm, ``gpt-4-0613`` -> gpt, ``meta-llama/Llama-3-8B`` -> llama)."""
    if not name:
        return None
    tokens = [t for t in re.split(r"[-_:/. @]+", name.lower()) if t]
    for t in tokens:
        if t in ORG_PREFIXES:
            continue
        word = re.sub(r"\d+$", "", t)
        if word and not word.isdigit():
            return word
    return None
