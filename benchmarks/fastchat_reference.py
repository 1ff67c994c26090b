"""A reference ratings process: FastChat's leaderboard formulas with pandas and scipy, as one standalone script.

    python benchmarks/fastchat_reference.py BATTLES.jsonl [--rounds 100]

Reads the battles with `pandas.read_json(lines=True)`, computes online Elo the way FastChat's `compute_elo` does (a
loop over the rows, K = 4), and Bradley-Terry ratings by maximum likelihood on (model_a, model_b, outcome) counts
(`scipy.optimize.minimize`, L-BFGS-B from zero, ties half a win) with a multinomial bootstrap of those counts, each
round refitted from scratch; prints the ratings with 95% intervals as JSON. It imports nothing from this project,
so timing it as a fresh process measures exactly what a user of such a script waits for.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit


def online_elo(
    frame: pd.DataFrame, k: float = 4.0, scale: float = 400.0, base: float = 10.0
) -> dict[str, float]:
    rating: dict[str, float] = {}
    for model_a, model_b, winner in frame[["model_a", "model_b", "winner"]].itertuples(index=False):
        ra, rb = rating.setdefault(model_a, 1000.0), rating.setdefault(model_b, 1000.0)
        ea = 1.0 / (1.0 + base ** ((rb - ra) / scale))
        sa = 1.0 if winner == "model_a" else 0.0 if winner == "model_b" else 0.5
        rating[model_a] = ra + k * (sa - ea)
        rating[model_b] = rb - k * (sa - ea)
    return rating


def _loss(ratings: np.ndarray, matchups: np.ndarray, outcomes: np.ndarray, weights: np.ndarray):  # type: ignore[no-untyped-def]
    alpha = math.log(10.0)
    logits = alpha * (ratings[matchups[:, 0]] - ratings[matchups[:, 1]])
    probs = expit(logits)
    loss = -((np.log(probs) * outcomes + np.log(1.0 - probs) * (1.0 - outcomes)) * weights).sum()
    per_row = -alpha * (outcomes - probs) * weights
    grad = np.zeros_like(ratings)
    np.add.at(grad, matchups[:, 0], per_row)
    np.add.at(grad, matchups[:, 1], -per_row)
    return loss, grad


def fit(matchups: np.ndarray, outcomes: np.ndarray, weights: np.ndarray, n_models: int) -> np.ndarray:
    result = minimize(
        _loss,
        np.zeros(n_models),
        args=(matchups, outcomes, weights),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 100, "gtol": 1e-6},
    )
    return result.x


def count_outcomes(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Unique (model_a, model_b, outcome) rows and their counts, outcomes 1 / 0.5 / 0 for a-win / tie / b-win."""
    n = len(frame)
    codes, models = pd.factorize(pd.concat([frame["model_a"], frame["model_b"]], ignore_index=True))
    outcome = (
        frame["winner"]
        .map({"model_a": 2, "model_b": 0, "tie": 1, "tie (bothbad)": 1, "tie (bothgood)": 1})
        .to_numpy()
    )
    schedule = np.column_stack([codes[:n], codes[n:], outcome]).astype(np.int32)
    unique, counts = np.unique(schedule, return_counts=True, axis=0)
    return unique[:, :2], unique[:, 2] / 2.0, counts.astype(np.float64), np.asarray(models)


def _fit_one(args: tuple[np.ndarray, np.ndarray, np.ndarray, int]) -> np.ndarray:
    return fit(*args)


def bradley_terry(
    frame: pd.DataFrame, rounds: int, seed: int = 0, processes: int = 1
) -> dict[str, dict[str, float]]:
    """Ratings with 95% bootstrap intervals; ``processes`` > 1 refits the bootstrap rounds in a process pool."""
    matchups, outcomes, counts, models = count_outcomes(frame)
    m = len(models)
    point = fit(matchups, outcomes, counts, m) * 400.0 + 1000.0
    rng = np.random.default_rng(seed)
    total = int(counts.sum())
    boot_weights = rng.multinomial(total, counts / total, size=rounds) / total
    if processes > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(processes) as pool:
            fits = list(pool.map(_fit_one, [(matchups, outcomes, w, m) for w in boot_weights]))
    else:
        fits = [fit(matchups, outcomes, w, m) for w in boot_weights]
    boot = np.asarray(fits) * 400.0 + 1000.0
    lo, hi = np.quantile(boot, [0.025, 0.975], axis=0)
    return {
        str(name): {"rating": float(point[k]), "ci_low": float(lo[k]), "ci_high": float(hi[k])}
        for k, name in enumerate(models)
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("battles")
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args(argv)
    frame = pd.read_json(args.battles, lines=True)
    elo = online_elo(frame.sort_values("tstamp", kind="stable") if "tstamp" in frame else frame)
    board = bradley_terry(frame, args.rounds)
    for name, row in board.items():
        row["elo"] = elo[name]
    json.dump({"models": board}, sys.stdout)


if __name__ == "__main__":
    main()
