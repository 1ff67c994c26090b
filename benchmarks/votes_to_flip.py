"""Votes-to-flip: what it costs next to the board's fit, and the fast search against the slower exact ones.

Three measurements, each printing a ratio from one run:

- ``--overhead`` (the performance lane's): the board's fit (`leaderboard`, 100-round bootstrap, what `vibestudio
  ratings` fits) and `votes_to_flip` for every adjacent pair on the same loaded records; prints ``ratio:`` =
  votes-to-flip seconds / board seconds (goal <= 0.25: it adds at most a quarter to the fit). Synthetic battles,
  150 models, random pairs, 10% ties (`--n 1000000` is the headline size).
- ``--search``: the fast search against the reference search (`search="refit"`: Newton refits, a pseudo-inverse
  per round, bisection) on the same board: both counts per pair (they must agree) and the time ratio.
- the default: the fast search against the raw baseline (remove one vote at a time, each time trying every kind of
  vote (pair x outcome) with an exact refit: `standings.ratings._flip.greedy_refit_flip`) on the 10k-vote simulated
  team arena: both counts per pair and the time ratio.

    python benchmarks/votes_to_flip.py                                  # 10k votes, 8 models, vs greedy refits
    python benchmarks/votes_to_flip.py --overhead --n 1000000 --models 150
    python benchmarks/votes_to_flip.py --search --n 200000 --models 60
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from vibestudio.standings.ratings import leaderboard, votes_to_flip
from vibestudio.standings.ratings._flip import greedy_refit_flip
from vibestudio.standings.ratings._input import as_records
from vibestudio.standings.ratings._simulate import simulate_arena


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


def overhead(frame: pd.DataFrame, rounds: int, repeat: int) -> None:
    """Board fit vs votes-to-flip on the same records, best of `repeat` each (taking turns)."""
    records = as_records(frame)
    votes_to_flip(frame.head(500))  # imports
    t_board, t_flip, report = np.inf, np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        leaderboard(records, bootstrap_rounds=rounds)
        t_board = min(t_board, time.perf_counter() - start)
        start = time.perf_counter()
        report = votes_to_flip(records)
        t_flip = min(t_flip, time.perf_counter() - start)
    assert report is not None
    refits = sum(p.refits for p in report.pairs)
    checked = sum(p.checked for p in report.pairs)
    print(f"board fit ({rounds}-round bootstrap): {t_board:.3f} s")
    print(
        f"votes-to-flip, {len(report.pairs)} adjacent pairs ({checked} checked by refits, the rest estimated; {refits} refits): "
        f"{t_flip:.3f} s"
    )
    print(f"ratio: {t_flip / t_board:.3f} (votes-to-flip / board fit; goal <= 0.25)")


def against_reference(frame: pd.DataFrame, pairs: str) -> None:
    """The fast search and the reference search on one board: the same counts, and the time ratio."""
    records = as_records(frame)
    votes_to_flip(frame.head(500))
    start = time.perf_counter()
    fast = votes_to_flip(records, pairs=pairs)
    t_fast = time.perf_counter() - start
    start = time.perf_counter()
    slow = votes_to_flip(records, pairs=pairs, search="refit")
    t_slow = time.perf_counter() - start
    same = sum(f.votes == s.votes for f, s in zip(fast.pairs, slow.pairs, strict=True))
    for f, s in zip(fast.pairs, slow.pairs, strict=True):
        if f.votes != s.votes:
            print(f"  differs: #{f.position} {f.higher} > {f.lower}: fast {f.votes}, refit {s.votes}")
    print(
        f"fast: {t_fast:.3f} s ({sum(p.refits for p in fast.pairs)} refits); reference: {t_slow:.3f} s "
        f"({sum(p.refits for p in slow.pairs)} refits); same count on {same} of {len(fast.pairs)} pairs"
    )
    print(f"ratio: {t_slow / t_fast:.2f} (reference search / fast search)")


def against_greedy(frame: pd.DataFrame, pairs: str) -> None:
    votes_to_flip(frame.head(500))  # imports
    start = time.perf_counter()
    report = votes_to_flip(frame, pairs=pairs)
    ours = time.perf_counter() - start
    refits = sum(p.refits for p in report.pairs)
    print(f"ours: {ours:.3f} s for {len(report.pairs)} pairs ({refits} refits)")
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
    print(f"all pairs: ours {ours:.3f} s, baseline {total_base:.2f} s")
    print(f"ratio: {total_base / ours:.0f} (greedy exact refits / ours)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="votes (10,000: the simulated team arena)")
    parser.add_argument("--models", type=int, default=8)
    parser.add_argument("--pairs", choices=["adjacent", "top"], default="adjacent")
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=100, help="bootstrap rounds of the board (--overhead)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each side, best counts (--overhead)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--overhead", action="store_true", help="votes-to-flip against the board's fit")
    mode.add_argument("--search", action="store_true", help="the fast search against the reference search")
    args = parser.parse_args()
    if args.n == 10_000 and args.models == 8:
        frame, _ = simulate_arena(n_honest=80, votes_per_honest=125, seed=args.seed)
        what = "simulated team arena (simulate_arena: 80 annotators x 125 votes, 8 models, ties)"
    else:
        frame = synthetic(args.n, args.models, args.seed)
        what = f"synthetic battles ({args.models} models, random pairs, 10% ties)"
    print(f"{len(frame):,} votes, {what}")
    if args.overhead:
        overhead(frame, args.rounds, args.repeat)
    elif args.search:
        against_reference(frame, args.pairs)
    else:
        against_greedy(frame, args.pairs)


if __name__ == "__main__":
    main()
