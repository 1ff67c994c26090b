"""Self-play: one contestant on both sides of a battle, two samplings, to collect on-policy preference pairs.

A researcher picks one contestant and two temperatures. Side A answers with the contestant's own sampling
plus the first override (``temperature`` and a ``seed``). Side B takes the second. The overrides are
stored on the battle (``battles.sampling_a`` / ``sampling_b``). The battle's fair coin (``left_is_a``)
decides which screen side got which temperature. That stays hidden until the reveal, so it cannot sway the
votes. The contestant's name is not hidden; the researcher chose it. Votes are ordinary per-turn votes.

**What counts where.** Both sides are the same contestant, so a self-play battle counts nowhere in the
standings. That means ratings, battle records, the vote cache, vibe profiles and speed. Its decisive votes
do make preference pairs (`annotation.snapshots`). The provenance names the contestant as the author of
both answers (``on`` for it in `training.objectives.pairmix`). It also says which sampling wrote the
chosen and which the rejected answer.

**Rules:**
- Without temperatures: the contestant's own, and whichever of ``CONTRAST`` (0.3, 1.0) lies farther from
  it.
- Equal temperatures are allowed: two samples at one temperature, told apart by their seeds. Both 0 is
  refused, since greedy decoding gives the same answer twice.
- The two seeds always differ. A regenerated turn adds its number of regenerations to each seed, so it
  gets new samples.
This module holds those rules and touches no database.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

SELF_PLAY = "self_play"
#: The second temperature by default: whichever of these lies farther from the contestant's own.
CONTRAST = (0.3, 1.0)
#: What the engines accept (`arena.engines.base.Sampling`).
TEMPERATURE_RANGE = (0.0, 5.0)
_SEED_MAX = 2**31 - 1


def default_temperatures(own: float | None) -> tuple[float, float]:
    """The contestant's own temperature (0.7 when it sets none) and the farther of ``CONTRAST``."""
    first = 0.7 if own is None else float(own)
    low, high = CONTRAST
    return first, (low if abs(first - low) > abs(first - high) else high)


def check_temperatures(temperatures: Sequence[Any]) -> tuple[float, float]:
    """Two temperatures as floats; raises ValueError saying what is wrong (count, type, range, both 0)."""
    if isinstance(temperatures, str | bytes) or len(temperatures) != 2:
        raise ValueError(f"self-play needs exactly two temperatures, got {temperatures!r}")
    out = []
    lo, hi = TEMPERATURE_RANGE
    for k, t in enumerate(temperatures, 1):
        if isinstance(t, bool):
            raise ValueError(f"temperature {k}: {t!r} is not a number")
        try:
            v = float(t)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"temperature {k}: {t!r} is not a number") from exc
        if not lo <= v <= hi:  # NaN fails too
            raise ValueError(f"temperature {k}: {v:g} is outside {lo:g}..{hi:g}")
        out.append(v)
    if out[0] == out[1] == 0:
        raise ValueError("both temperatures are 0: greedy decoding would give the same answer twice")
    return out[0], out[1]


def parse_temperatures(text: str) -> tuple[float, float]:
    """``"0.3,1.0"`` -> (0.3, 1.0), checked like `check_temperatures`."""
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) != 2 or not all(parts):
        raise ValueError(
            f"temperatures: expected two numbers separated by a comma (e.g. 0.3,1.0), got {text!r}"
        )
    return check_temperatures(parts)


def side_overrides(temperatures: tuple[float, float], rng: random.Random) -> tuple[dict, dict]:
    """Each side's override: its temperature and a seed, the two seeds different."""
    seed_a, seed_b = rng.sample(range(1, _SEED_MAX), 2)
    return {"temperature": temperatures[0], "seed": seed_a}, {"temperature": temperatures[1], "seed": seed_b}


def effective_sampling(
    own: dict[str, Any] | None, override: dict[str, Any] | None, regenerations: int = 0
) -> dict[str, Any]:
    """The sampling one side answers with: the contestant's own, the override on top, the seed moved on by the
    turn's regenerations. Without an override (any battle that is not self-play): the contestant's own."""
    out = dict(own or {})
    if not override:
        return out
    out.update(override)
    if out.get("seed") is not None:
        out["seed"] = int(out["seed"]) + int(regenerations)
    return out
