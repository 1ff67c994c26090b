"""Online Elo: one pass over the battles in chronological order, the rating FastChat's first leaderboards
showed.

It is order-dependent by design: recent battles move ratings most. Bradley-Terry is the order-free
estimate. The leaderboard's cache carries ratings forward from its last call: it passes them back in as
``start``.
"""

from __future__ import annotations

import math

import numpy as np


def online_elo(
    a: np.ndarray,
    b: np.ndarray,
    y: np.ndarray,
    n_models: int,
    *,
    order: np.ndarray | None = None,
    k: float = 4.0,
    scale: float = 400.0,
    base: float = 10.0,
    init: float = 1000.0,
    start: np.ndarray | None = None,
) -> np.ndarray:
    """Elo ratings after updating on each battle (a vs b, y = score of a) in `order` (default: as given).
    Every model starts at `init`, or at its rating in `start` (ratings carried forward from earlier battles)."""
    ratings = [float(init)] * n_models if start is None else [float(r) for r in start]
    if len(ratings) != n_models:
        raise ValueError(f"start has {len(ratings)} ratings for {n_models} models")
    if order is not None:
        a, b, y = a[order], b[order], y[order]
    c = math.log(base) / scale
    exp = math.exp
    for i, j, s in zip(a.tolist(), b.tolist(), y.tolist(), strict=True):
        ri, rj = ratings[i], ratings[j]
        delta = k * (s - 1.0 / (1.0 + exp((rj - ri) * c)))
        ratings[i] = ri + delta
        ratings[j] = rj - delta
    return np.asarray(ratings)
