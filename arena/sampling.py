"""Pair sampling: which two contestants meet next, and the exact probability of that draw.

Two samplers. Both return the probability of the drawn *unordered* pair, so ratings can reweight battles
by inverse probability. Left and right are a separate fair coin stored on the battle.
- ``uniform``: every pair of eligible contestants alike, p = 2 / (n (n - 1)).
- ``active``: the Chatbot Arena rule (Chiang et al. 2024, "Chatbot Arena: An Open Platform for Evaluating
  LLMs by Human Preference", section 5.2). It draws pair (i, j) with probability proportional to how much
  one more battle shrinks the uncertainty of that pair's comparison:
  ``w_ij = sqrt(S_ij / n_ij) - sqrt(S_ij / (n_ij + 1))``.

How ``active`` gets its numbers:
- The pair's variance comes from the current leaderboard's intervals. Per contestant
  ``sd = (ci_high - ci_low) / (2 * 1.96)``, and ``V_ij = sd_i^2 + sd_j^2``.
- ``S_ij`` reads as ``V_ij * (n_ij + 1)``: one pseudo-battle, so an unplayed pair has a finite weight.
  That gives ``w_ij = sqrt(V_ij) * (1 - sqrt((n_ij + 1) / (n_ij + 2)))``.
- Contestants without a rating get ``unrated_sd``.
- Pairs with a *new* contestant are multiplied by ``new_boost`` until their interval narrows. New means
  fewer than ``new_until_battles`` battles, or an interval wider than ``new_until_ci`` Elo points.
- Finally a share ``uniform_mix`` of the probability is spread evenly. So every pair stays possible, and
  inverse weights stay bounded.

The ratings and per-pair battle counts come from a ``RatingSource``: a callable returning
``SamplerInputs``. This module fits nothing itself. The studio passes its leaderboard service's
``sampler_inputs``: one vote cache and one fit for the sampler and the Leaderboard tab. ``no_ratings`` is
the source of an arena without one: everyone unrated, no battles, so the active weights are all equal.

Include / exclude lists (names or ids) restrict who can be drawn. Some weights are empty, zero, negative,
NaN or infinite. They never crash a draw: it falls back to uniform over the eligible pairs and says so in
``Draw.sampler``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import NamedTuple

from vibestudio.common.stats import Z95

SAMPLERS = ("uniform", "active")


class SamplingError(ValueError):
    """No valid pair can be drawn (too few contestants after include/exclude, unknown names...)."""


@dataclass
class Draw:
    a_id: int
    b_id: int
    probability: float | None  # of the unordered pair; None when the pair was chosen, not drawn
    sampler: str = "uniform"


@dataclass
class RatingInfo:
    """What active sampling needs to know about one contestant (a Bradley-Terry rating with its interval)."""

    rating: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n_battles: int = 0

    @property
    def ci_width(self) -> float | None:
        if self.ci_low is None or self.ci_high is None:
            return None
        return float(self.ci_high - self.ci_low)


class SamplerInputs(NamedTuple):
    """What the active sampler reads: ratings per contestant id, and rated battles per pair ``(low id, high id)``."""

    ratings: dict[int, RatingInfo]
    pair_counts: dict[tuple[int, int], int]


#: Where an arena reads its current ratings (called on every active draw; the source caches).
RatingSource = Callable[[], SamplerInputs]


def no_ratings() -> SamplerInputs:
    """The rating source of an arena without one: nobody rated, no battles (equal active weights)."""
    return SamplerInputs({}, {})


@dataclass
class PairPolicy:
    """How pairs are drawn; defaults follow the Chatbot Arena paper with a safety share of uniform draws."""

    sampler: str = "active"
    include: list[int | str] = field(default_factory=list)
    exclude: list[int | str] = field(default_factory=list)
    uniform_mix: float = 0.1
    unrated_sd: float = 200.0
    new_boost: float = 4.0
    new_until_battles: int = 10
    new_until_ci: float = 150.0

    def __post_init__(self) -> None:
        if self.sampler not in SAMPLERS:
            raise SamplingError(f"unknown sampler {self.sampler!r}; expected one of {', '.join(SAMPLERS)}")
        if not 0.0 <= self.uniform_mix <= 1.0:
            raise SamplingError(f"uniform_mix must be between 0 and 1, got {self.uniform_mix}")


def eligible(
    contestants: Sequence[tuple[int, str]], include: Iterable = (), exclude: Iterable = ()
) -> list[int]:
    """Ids of ``(id, name)`` contestants allowed by the include and exclude lists (names or ids)."""
    by_name = {name: cid for cid, name in contestants}
    ids = {cid for cid, _ in contestants}

    def resolve(items: Iterable, what: str) -> set[int]:
        out = set()
        for item in items:
            cid = item if isinstance(item, int) else by_name.get(str(item))
            if isinstance(item, str) and item.isdigit() and cid is None:
                cid = int(item)
            if cid not in ids:
                raise SamplingError(f"{what} list names {item!r}, which is not an active contestant")
            out.add(int(cid))
        return out

    inc, exc = resolve(include, "include"), resolve(exclude, "exclude")
    chosen = sorted((inc or ids) - exc)
    if len(chosen) < 2:
        raise SamplingError(
            f"need at least two active contestants to battle, found {len(chosen)}"
            + (" after the include/exclude lists" if inc or exc else "")
        )
    return chosen


def all_pairs(ids: Sequence[int]) -> list[tuple[int, int]]:
    return list(combinations(sorted(set(ids)), 2))


def _is_new(info: RatingInfo | None, policy: PairPolicy) -> bool:
    if info is None or info.rating is None:
        return True
    width = info.ci_width
    return info.n_battles < policy.new_until_battles or width is None or width > policy.new_until_ci


def _sd(info: RatingInfo | None, policy: PairPolicy) -> float:
    width = info.ci_width if info is not None else None
    if width is None or not math.isfinite(width) or width < 0:
        return policy.unrated_sd
    return width / (2.0 * Z95)


def active_weights(
    ids: Sequence[int],
    ratings: Mapping[int, RatingInfo],
    pair_counts: Mapping[tuple[int, int], int],
    policy: PairPolicy | None = None,
) -> dict[tuple[int, int], float]:
    """Unnormalised active-sampling weight of every pair (see the module docstring for the formula)."""
    policy = policy or PairPolicy()
    out: dict[tuple[int, int], float] = {}
    for a, b in all_pairs(ids):
        n = pair_counts.get((a, b), 0) + pair_counts.get((b, a), 0)
        v = _sd(ratings.get(a), policy) ** 2 + _sd(ratings.get(b), policy) ** 2
        w = math.sqrt(v) * (1.0 - math.sqrt((n + 1.0) / (n + 2.0)))
        if _is_new(ratings.get(a), policy) or _is_new(ratings.get(b), policy):
            w *= policy.new_boost
        out[(a, b)] = w
    return out


def pair_probabilities(
    weights: Mapping[tuple[int, int], float], uniform_mix: float = 0.0
) -> tuple[dict[tuple[int, int], float], bool]:
    """Normalise weights into probabilities mixed with ``uniform_mix`` of uniform; returns (probs, fell_back).

    Invalid weights (negative, NaN, infinite) count as zero; when nothing positive is left the result is uniform.
    """
    pairs = [p for p in weights if p[0] != p[1]]
    if not pairs:
        raise SamplingError("no pair to draw from")
    clean = {p: float(w) if math.isfinite(float(w)) and float(w) > 0 else 0.0 for p, w in weights.items()}
    total = sum(clean[p] for p in pairs)
    k = len(pairs)
    if total <= 0 or not math.isfinite(total):
        return {p: 1.0 / k for p in pairs}, True
    return {p: (1.0 - uniform_mix) * clean[p] / total + uniform_mix / k for p in pairs}, False


def weighted_pair(
    weights: Mapping[tuple[int, int], float], rng: random.Random, uniform_mix: float = 0.0
) -> Draw:
    """Draw an unordered pair with probability proportional to its weight (mixed with ``uniform_mix``)."""
    probs, fell_back = pair_probabilities(weights, uniform_mix)
    pairs = sorted(probs)
    x = rng.random()
    chosen = pairs[-1]
    for p in pairs:
        x -= probs[p]
        if x < 0:
            chosen = p
            break
    return Draw(chosen[0], chosen[1], probs[chosen], "uniform-fallback" if fell_back else "weighted")


def uniform_pair(ids: Sequence[int], rng: random.Random) -> Draw:
    ids = sorted(set(ids))
    n = len(ids)
    if n < 2:
        raise SamplingError(f"need at least two active contestants to battle, found {n}")
    a, b = rng.sample(ids, 2)
    return Draw(a, b, 2.0 / (n * (n - 1)), "uniform")


def draw_pair(
    ids: Sequence[int],
    rng: random.Random,
    policy: PairPolicy | None = None,
    ratings: Mapping[int, RatingInfo] | None = None,
    pair_counts: Mapping[tuple[int, int], int] | None = None,
) -> Draw:
    """Draw a pair from eligible ``ids`` with the policy's sampler; ``Draw.probability`` is exact."""
    policy = policy or PairPolicy()
    if policy.sampler == "uniform":
        return uniform_pair(ids, rng)
    if len(set(ids)) < 2:
        raise SamplingError(f"need at least two active contestants to battle, found {len(set(ids))}")
    weights = active_weights(ids, ratings or {}, pair_counts or {}, policy)
    d = weighted_pair(weights, rng, policy.uniform_mix)
    d.sampler = "uniform-fallback" if d.sampler == "uniform-fallback" else "active"
    return d
