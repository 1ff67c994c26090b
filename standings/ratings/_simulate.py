"""A simulated team arena with known truth: honest annotators, ties of three kinds, and optional rigged
accounts.

It checks the methods where the answer is known: tests, `benchmarks/rigging.py`, the predictive benchmark.
Models have true skills (Elo scale) and an answer style (length, emoji). Honest annotators vote by skill,
a length preference and a small personal taste per model (sd `taste` log-odds). Ties follow a Davidson
model. Both-good ties are more likely between strong models, both-bad between weak ones. Each prompt's
answer from a model is fixed, so the same answers recur across annotators.

Rigged accounts cast `rigger_votes` votes for the `target` model:
- "target": the always-vote-target strategy. The target's identity is known, e.g. from a
  self-introduction. Only battles with the target are voted on, always for it, quickly.
- "style": the smarter strategy. The target is recognised from its answers' style: it uses emoji much more
  than the others. Battles where exactly one side shows emoji are voted for that side, at human reading
  speed. Others are skipped. Misrecognitions put some of its votes on other models.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from vibestudio.common.outcomes import FASTCHAT_WINNERS
from vibestudio.textfeatures import vibes

from ._board import SCALE

#: Style and vibe counts this simulation does not vary (present, so style and vibe control can run).
_UNUSED = tuple(f for f in vibes.STYLE_FEATURES + vibes.VIBE_FEATURES if f not in ("tokens", "emoji"))


def simulate_arena(
    *,
    n_models: int = 8,
    n_honest: int = 40,
    votes_per_honest: int = 120,
    riggers: int = 0,
    rigger_votes: int = 300,
    strategy: str = "target",
    target: int | None = None,
    n_prompts: int = 30,
    taste: float = 0.15,
    tie_nu: float = 0.7,
    length_pref: float = 0.3,
    seed: int = 0,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Battles in FastChat's layout plus `judge`, `vote_seconds` and style counts; and the truth: {"skills",
    "target", "riggers", "honest"}. Models are named m0..m{n-1} with skills in decreasing order."""
    if strategy not in ("target", "style"):
        raise ValueError("strategy must be 'target' or 'style'")
    rng = np.random.default_rng(seed)
    skills = np.sort(rng.normal(0.0, 120.0, n_models))[::-1]
    skills -= skills.mean()
    names = np.array([f"m{k}" for k in range(n_models)], dtype=object)
    target = n_models * 2 // 3 if target is None else target
    emoji_rate = np.full(n_models, 0.1)
    emoji_rate[target] = 0.9
    tokens = rng.lognormal(5.5, 0.5, (n_models, n_prompts)).round()
    shown = rng.random((n_models, n_prompts)) < emoji_rate[:, None]
    emoji = shown * rng.integers(1, 4, (n_models, n_prompts)).astype(float)
    rows: list[dict[str, Any]] = []
    clock = 1.7e9

    def battle(a: int, b: int, q: int, judge: str, winner: int, seconds: float) -> None:
        nonlocal clock
        clock += rng.exponential(30.0)
        rows.append(
            {
                "model_a": names[a],
                "model_b": names[b],
                "winner": FASTCHAT_WINNERS[winner],
                "tstamp": clock,
                "judge": judge,
                "question_id": f"q{q}",
                "vote_seconds": seconds,
                "style_tokens_a": tokens[a, q],
                "style_tokens_b": tokens[b, q],
                "style_emoji_a": emoji[a, q],
                "style_emoji_b": emoji[b, q],
                **{f"style_{f}_{side}": 0.0 for f in _UNUSED for side in "ab"},
            }
        )

    def honest_winner(a: int, b: int, q: int, bias: np.ndarray) -> int:
        length = (tokens[a, q] - tokens[b, q]) / (tokens[a, q] + tokens[b, q] + 1.0)
        d = (skills[a] - skills[b]) / SCALE + bias[a] - bias[b] + length_pref * length / 0.25
        pa, pb = np.exp(d / 2), np.exp(-d / 2)
        u = rng.random() * (pa + pb + tie_nu)
        if u < pa:
            return 0
        if u < pa + pb:
            return 1
        quality = (skills[a] + skills[b]) / 2 / SCALE
        kind = rng.random()
        if kind < 0.3:
            return 2
        return 4 if rng.random() < 1 / (1 + np.exp(-2.0 * quality)) else 3

    def reading_seconds(a: int, b: int, q: int) -> float:
        return float((tokens[a, q] + tokens[b, q]) / 6.0 * rng.lognormal(0.0, 0.3))

    # honest and rigged votes interleave over the same period
    schedule: list[tuple[str, int]] = [(f"h{u:02d}", votes_per_honest) for u in range(n_honest)]
    schedule += [(f"r{u}", rigger_votes) for u in range(riggers)]
    tastes = {judge: rng.normal(0.0, taste, n_models) for judge, _ in schedule}
    queue = [judge for judge, count in schedule for _ in range(count)]
    rng.shuffle(queue)
    for judge in queue:
        if judge.startswith("h"):
            a, b = rng.choice(n_models, 2, replace=False)
            q = int(rng.integers(n_prompts))
            battle(a, b, q, judge, honest_winner(a, b, q, tastes[judge]), reading_seconds(a, b, q))
            continue
        while True:  # the rigger asks for battles until one is worth voting on
            a, b = rng.choice(n_models, 2, replace=False)
            q = int(rng.integers(n_prompts))
            if strategy == "target":
                if target in (a, b):
                    battle(a, b, q, judge, 0 if a == target else 1, float(rng.uniform(1.0, 3.0)))
                    break
            else:
                ea, eb = emoji[a, q] > 0, emoji[b, q] > 0
                if ea != eb:
                    battle(a, b, q, judge, 0 if ea else 1, reading_seconds(a, b, q))
                    break
    truth = {
        "skills": dict(zip(names.tolist(), skills.tolist(), strict=True)),
        "target": str(names[target]),
        "riggers": [f"r{u}" for u in range(riggers)],
        "honest": [f"h{u:02d}" for u in range(n_honest)],
    }
    return pd.DataFrame(rows), truth
