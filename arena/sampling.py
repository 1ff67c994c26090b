"""Pair sampling: which two contestants meet next, and the exact probability of that draw.

The probability is of the unordered pair; left/right is a separate fair coin stored on the battle.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass


class SamplingError(ValueError):
    """No valid pair can be drawn (too few contestants after include/exclude)."""


@dataclass
class Draw:
    a_id: int
    b_id: int
    probability: float


def uniform_pair(ids: Sequence[int], rng: random.Random) -> Draw:
    ids = sorted(set(ids))
    n = len(ids)
    if n < 2:
        raise SamplingError(f"need at least two active contestants to battle, found {n}")
    a, b = rng.sample(ids, 2)
    return Draw(a, b, 2.0 / (n * (n - 1)))


def weighted_pair(weights: dict[tuple[int, int], float], rng: random.Random) -> Draw:
    """Draw an unordered pair with probability proportional to its weight (weights need not sum to 1)."""
    pairs = [(p, w) for p, w in weights.items() if w > 0 and p[0] != p[1]]
    total = sum(w for _, w in pairs)
    if not pairs or total <= 0:
        raise SamplingError("no pair has a positive sampling weight")
    x = rng.random() * total
    for (a, b), w in pairs:
        x -= w
        if x <= 0:
            return Draw(a, b, w / total)
    (a, b), w = pairs[-1]
    return Draw(a, b, w / total)
