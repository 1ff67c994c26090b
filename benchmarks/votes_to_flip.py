"""Votes-to-flip: the one-step-Newton search with a checking refit vs the raw baseline (greedy exact refits).

Baseline: remove one vote at a time, each time trying every kind of vote (pair x outcome) with an exact refit and
keeping the one that lowers the gap most, until the pair flips (`standings.ratings._flip.greedy_refit_flip`). Ours:
`votes_to_flip` (influence-ranked removals, refit to check, bisection to the shortest flipping prefix). Prints, per
adjacent pair, both counts and the time ratio; with `--n` above `--baseline-limit` only ours runs (the cost at 1M).

    python benchmarks/votes_to_flip.py                    # 10k-vote simulated team arena, 8 models
    python benchmarks/votes_to_flip.py --n 1000000 --models 150 --pairs top
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from standings.ratings import votes_to_flip
from standings.ratings._flip import greedy_refit_flip
from standings.ratings._simulate import simulate_arena


def synthetic(n: int, n_models: int, seed: int) -> pd.DataFrame:
    """Random pairs over `n_models` with normal skills (sd 150 points), 10% ties."""
    rng = np.random.default_rng(seed)
    skill = rng.normal(0.0, 150.0, n_models) / (400.0 / np.log(10.0))
    a = rng.integers(0, n_models, n)
    b = (a + rng.integers(1, n_models, n)) % n_models
    wins = rng.random(n) < 1.0 / (1.0 + np.exp(-(skill[a] - skill[b])))
    winner = np.where(rng.random(n) < 0.1, "tie", np.where(wins, "model_a", "model_b"))
    names = np.array([f"model-{k:03d}" for k in range(n_models)], dtype=object)
    return pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": winner})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="votes (10,000: the simulated team arena)")
    parser.add_argument("--models", type=int, default=8)
    parser.add_argument("--pairs", choices=["adjacent", "top"], default="adjacent")
    parser.add_argument(
        "--baseline-limit", type=int, default=20_000, help="run the baseline up to this many votes"
    )
    parser.add_argument("--seed", type=int, default=4)
    args = parser.parse_args()
    if args.n == 10_000 and args.models == 8:
        frame, _ = simulate_arena(n_honest=80, votes_per_honest=125, seed=args.seed)
        what = "simulated team arena (simulate_arena: 80 annotators x 125 votes, 8 models, ties)"
    else:
        frame = synthetic(args.n, args.models, args.seed)
        what = f"synthetic battles ({args.models} models, random pairs, 10% ties)"
    print(f"{len(frame):,} votes, {what}")
    votes_to_flip(frame.head(500))  # imports
    start = time.perf_counter()
    report = votes_to_flip(frame, pairs=args.pairs)
    ours = time.perf_counter() - start
    refits = sum(p.refits for p in report.pairs)
    print(f"ours: {ours:.3f} s for {len(report.pairs)} pairs ({refits} refits)")
    if len(frame) > args.baseline_limit:
        for p in report.pairs[:5]:
            print(f"  #{p.position} {p.higher} > {p.lower}: gap {p.gap:.1f}, {p.votes} votes")
        return
    print(f"{'pair':<16} {'gap':>6} {'ours':>6} {'baseline':>9} {'ours s':>8} {'base s':>8} {'ratio':>7}")
    total_base = 0.0
    for p in report.pairs:
        t0 = time.perf_counter()
        base = greedy_refit_flip(frame, p.higher, p.lower)
        t_base = time.perf_counter() - t0
        total_base += t_base
        per = ours / len(report.pairs)
        print(
            f"{p.higher + ' > ' + p.lower:<16} {p.gap:6.1f} {p.votes!s:>6} {base!s:>9} {per:8.3f} {t_base:8.2f} "
            f"{t_base / per:6.0f}x"
        )
    print(f"all pairs: ours {ours:.3f} s, baseline {total_base:.2f} s, ratio {total_base / ours:.0f}x")


if __name__ == "__main__":
    main()
