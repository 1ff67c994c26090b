"""Generated task families written for the studio: endless fresh tasks with checkable answers for a CPU run.

``generate(family, n, difficulty, seed)`` returns ``n`` distinct tasks (prompt, answer, verifier, meta).
The same arguments give the same tasks. Families:
- ``arithmetic``: word problems. Difficulty 1: one addition or subtraction of single-digit numbers. 2:
  two-digit numbers. 3: two steps (add then subtract, or a product). 4 and up: three steps with larger
  numbers.
- ``units``: unit conversions (km/m/cm/mm, kg/g, h/min/s, l/ml). Difficulty 1: whole numbers one step
  apart (3 km in m). 2: decimals. 3 and up: two steps (hours to seconds) and decimals.
- ``strings``: string transforms. Difficulty 1: spell a short word with dashes. 2: reverse a word. 3:
  count a letter. 4 and up: reverse the order of several words.

Numbers are checked with the numeric verifier, strings with the normalised exact one. Every prompt asks
for the result after ``Answer:``. So a verifier reads one stated result rather than guessing. The words
and names are the studio's own lists; nothing is taken from a published data set.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

FAMILIES = ("arithmetic", "units", "strings")
_NAMES = (
    "Ana",
    "Ben",
    "Chen",
    "Dara",
    "Eli",
    "Farah",
    "Gus",
    "Hana",
    "Ivo",
    "Jun",
    "Kai",
    "Lena",
    "Mo",
    "Nia",
)
_THINGS = ("apples", "books", "coins", "pens", "stamps", "shells", "cards", "marbles", "stickers", "cookies")
_WORDS = (
    "cat", "dog", "sun", "map", "cup", "hat", "pen", "box", "owl", "fig", "jam", "kit", "log", "net", "oak",
    "tree", "lamp", "rain", "ship", "frog", "kite", "moon", "nest", "rope", "sand", "seed", "wolf", "bell",
    "stone", "river", "cloud", "grape", "piano", "tiger", "lemon", "honey", "chair", "brush", "plant", "spoon",
    "candle", "garden", "yellow", "planet", "window", "silver", "bridge", "forest", "rocket", "orange",
    "pencil", "basket", "castle", "dragon", "ladder", "marble", "pepper", "violet", "winter", "button",
)  # fmt: skip
_SEPARATORS = {"dashes": "-", "commas": ",", "dots": "."}
_SUFFIX = " Give the result after 'Answer:'."


class GeneratorError(ValueError):
    """Unknown family, or arguments out of range."""


def _arithmetic(rng: random.Random, d: int) -> tuple[str, str]:
    who, other = rng.sample(_NAMES, 2)
    thing = rng.choice(_THINGS)
    hi = 9 if d <= 1 else 99 if d == 2 else 50 if d == 3 else 500
    a, b = rng.randint(1, hi), rng.randint(1, hi)
    if d <= 2:
        if rng.random() < 0.5:
            return f"{who} has {a} {thing} and gets {b} more. How many {thing} does {who} have now?", str(
                a + b
            )
        a, b = max(a, b), min(a, b)
        return f"{who} has {a} {thing} and gives {b} to {other}. How many {thing} does {who} have left?", str(
            a - b
        )
    c = rng.randint(1, hi)
    if d == 3:
        if rng.random() < 0.5:
            a, c = a + c, c
            return (
                f"{who} has {a} {thing}, gets {b} more, then gives {c} to {other}. How many {thing} are left?",
                str(a + b - c),
            )
        k = rng.randint(2, 9)
        return f"{who} buys {k} boxes of {thing} with {b} in each box. How many {thing} is that?", str(k * b)
    k = rng.randint(2, 12)
    return (
        f"{who} buys {k} boxes of {a} {thing}, gets {b} more from {other}, then gives away {c}. "
        f"How many {thing} does {who} have?",
        str(k * a + b - c),
    )


_STEPS = {  # (from, to, factor)
    1: [("km", "m", 1000), ("kg", "g", 1000), ("m", "cm", 100), ("h", "min", 60), ("l", "ml", 1000)],
    3: [("h", "s", 3600), ("km", "cm", 100000), ("kg", "g", 1000), ("m", "mm", 1000)],
}


def _units(rng: random.Random, d: int) -> tuple[str, str]:
    src, dst, whole = rng.choice(_STEPS[1 if d <= 2 else 3])
    factor: float = whole
    value: float = rng.randint(1, 9 if d == 1 else 99)
    if d >= 2:
        value = rng.randint(1, 99) / 10
    if rng.random() < 0.5 and d >= 2:  # the other way round
        src, dst, factor = dst, src, 1 / factor
        value = value * 10 ** rng.randint(2, 3)
    result = round(value * factor, 6)
    shown = f"{value:g}"
    answer = f"{result:g}" if abs(result) < 1e15 else str(result)
    return f"Convert {shown} {src} to {dst}.", f"{answer} {dst}"


def _strings(rng: random.Random, d: int) -> tuple[str, str]:
    word = rng.choice(_WORDS if d > 1 else _WORDS[:28])
    if d <= 1:
        name, sep = rng.choice(sorted(_SEPARATORS.items()))
        return f"Write the letters of the word '{word}' separated by {name}.", sep.join(word)
    if d == 2:
        return f"Write the word '{word}' backwards.", word[::-1]
    if d == 3:
        letter = rng.choice(sorted(set(word)))
        return f"How many times does the letter '{letter}' appear in '{word}'?", str(word.count(letter))
    words = rng.sample(_WORDS, min(3 + d - 4, 6))
    return f"Reverse the order of these words: {' '.join(words)}.", " ".join(reversed(words))


_MAKERS: dict[str, tuple[Callable[[random.Random, int], tuple[str, str]], str]] = {
    "arithmetic": (_arithmetic, "numeric"),
    "units": (_units, "numeric"),
    "strings": (_strings, "exact"),
}


def generate(family: str, n: int, difficulty: int = 1, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` distinct tasks of ``family`` as rows ``{prompt, answer, verifier, meta}`` (deterministic)."""
    if family not in _MAKERS:
        raise GeneratorError(f"unknown task family {family!r}; choose one of {', '.join(FAMILIES)}")
    if not 1 <= difficulty <= 6:
        raise GeneratorError(f"difficulty must be 1..6 (got {difficulty})")
    if not 1 <= n <= 100_000:
        raise GeneratorError(f"n must be 1..100000 (got {n})")
    make, verifier = _MAKERS[family]
    rng = random.Random(f"{family}:{difficulty}:{seed}")
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    tries = 0
    while len(rows) < n:
        tries += 1
        if tries > n * 50:
            raise GeneratorError(
                f"family {family} at difficulty {difficulty} ran out of distinct tasks after {len(rows)}; "
                "ask for fewer or raise the difficulty"
            )
        prompt, answer = make(rng, difficulty)
        if prompt in seen:
            continue
        seen.add(prompt)
        rows.append(
            {
                "prompt": prompt + _SUFFIX,
                "answer": answer,
                "verifier": {"type": verifier},
                "meta": {"family": family, "difficulty": difficulty, "seed": seed},
            }
        )
    return rows
