"""Benchmark for standings.ratings on synthetic battles with known skills (issue 4), each part printing a ratio.

1. Bradley-Terry + 100-round bootstrap: ours vs a plain reference of FastChat's current method (outcomes counted per
   ordered pair and outcome, scipy L-BFGS fit from zero, multinomial bootstrap with every round refitted from
   scratch). Goal: >= 25x faster, ratings <= 0.5 points apart.
2. The whole `ratings_report(FILE, bootstrap=100, as_json=True)` (file loading included) vs the same reference
   reading the JSONL file with pandas. Goal: >= 4x.
3. Style-controlled Bradley-Terry with bootstrap intervals on the same number of battles. Goal: <= 5 s (2 cores).

    python benchmarks/ratings.py            # 1M battles, 150 models (a few minutes, mostly the reference)
    python benchmarks/ratings.py --n 100000 # quicker
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
from fastchat_reference import bradley_terry  # benchmarks/fastchat_reference.py
from scipy.special import expit

from vibestudio.standings.ratings import leaderboard, ratings_report

SCALE = 400.0 / math.log(10.0)


# ------------------------------------------------------------------------------------------------ synthetic data


def synthetic(
    n: int, n_models: int, seed: int, *, length_bias: float = 0.0
) -> tuple[pd.DataFrame, np.ndarray]:
    """Battles between random pairs; P(a wins | not tie) from true skills (Elo scale) plus an optional length effect.

    Returns the battles (FastChat layout plus `style_<feature>_a/_b` counts) and the true ratings (mean 1000).
    """
    rng = np.random.default_rng(seed)
    true = rng.normal(0.0, 150.0, n_models)
    true = true - true.mean() + 1000.0
    a = rng.integers(0, n_models, n)
    b = (a + rng.integers(1, n_models, n)) % n_models
    tokens_a = rng.lognormal(6.0, 0.6, n).round()
    tokens_b = rng.lognormal(6.0, 0.6, n).round()
    length = (tokens_a - tokens_b) / (tokens_a + tokens_b + 1.0)
    logit = (true[a] - true[b]) / SCALE + length_bias * length / length.std()
    u = rng.random(n)
    tie = u < 0.1
    a_wins = rng.random(n) < expit(logit)
    winner = np.where(tie, "tie", np.where(a_wins, "model_a", "model_b"))
    names = np.array([f"model-{k:03d}" for k in range(n_models)], dtype=object)
    frame = pd.DataFrame(
        {
            "model_a": names[a],
            "model_b": names[b],
            "winner": winner,
            "tstamp": 1.7e9 + np.arange(n) * 1.0,
            "question_id": [f"{q:08x}" for q in rng.integers(0, 2**32, n)],
            "style_tokens_a": tokens_a,
            "style_tokens_b": tokens_b,
            "style_headers_a": rng.poisson(1.0, n).astype(float),
            "style_headers_b": rng.poisson(1.0, n).astype(float),
            "style_list_items_a": rng.poisson(3.0, n).astype(float),
            "style_list_items_b": rng.poisson(3.0, n).astype(float),
            "style_bold_a": rng.poisson(2.0, n).astype(float),
            "style_bold_b": rng.poisson(2.0, n).astype(float),
        }
    )
    return frame, true


# ------------------------------------------------------------------------------------- reference (FastChat method)


def reference_method(frame: pd.DataFrame, rounds: int, processes: int = 1) -> tuple[pd.Series, pd.DataFrame]:
    """Point ratings and bootstrap intervals (2.5 / 97.5 percentiles) the FastChat way (`fastchat_reference.py`)."""
    board = bradley_terry(frame, rounds, processes=processes)
    point = pd.Series({name: row["rating"] for name, row in board.items()})
    ci = pd.DataFrame(
        {"lo": {n: r["ci_low"] for n, r in board.items()}, "hi": {n: r["ci_high"] for n, r in board.items()}}
    )
    return point, ci


# -------------------------------------------------------------------------------------------------------- timing


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    best, result = math.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=1_000_000, help="number of battles")
    parser.add_argument("--models", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=100, help="bootstrap rounds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--ref-processes", type=int, default=1, help="process pool for the reference bootstrap"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of our side (best time counts)")
    parser.add_argument("--parts", default="123", help="which parts to run, e.g. 13")
    args = parser.parse_args()
    print(f"{args.n:,} battles, {args.models} models, {args.rounds} bootstrap rounds, {os.cpu_count()} CPUs")
    frame, true = synthetic(args.n, args.models, args.seed)

    if "1" in args.parts:
        t_ref, (ref_point, ref_ci) = timed(lambda: reference_method(frame, args.rounds, args.ref_processes))
        t_ours, board = timed(
            lambda: leaderboard(frame, bootstrap_rounds=args.rounds, elo_k=None), repeat=args.repeat
        )
        t_bayes, bayes = timed(
            lambda: leaderboard(frame, bootstrap_rounds=args.rounds, elo_k=None, resample="bayesian"),
            repeat=args.repeat,
        )
        ours = pd.Series(board.ratings())
        diff = (ours - ref_point[ours.index]).abs().max()
        lo = pd.Series({m.name: m.ci_low for m in board.models})
        hi = pd.Series({m.name: m.ci_high for m in board.models})
        width_ratio = ((hi - lo) / (ref_ci["hi"] - ref_ci["lo"])[lo.index]).median()
        err = (ours - pd.Series(true, index=[f"model-{k:03d}" for k in range(args.models)])[ours.index]).abs()
        print("\n[1] Bradley-Terry + bootstrap, in memory")
        print(f"  reference (FastChat method): {t_ref:8.2f} s")
        print(
            f"  ours (multinomial bootstrap, the default): {t_ours:6.3f} s   ratio {t_ref / t_ours:5.1f}x (goal >= 25x)"
        )
        print(
            f"  ours (Bayesian bootstrap, resample=...):   {t_bayes:6.3f} s   ratio {t_ref / t_bayes:5.1f}x"
        )
        print(f"  max |rating difference| vs reference: {diff:.4f} points (goal <= 0.5)")
        print(f"  median CI width ours / reference: {width_ratio:.3f}")
        b_lo = pd.Series({m.name: m.ci_low for m in bayes.models})
        b_hi = pd.Series({m.name: m.ci_high for m in bayes.models})
        print(
            f"  median CI width Bayesian / reference: {((b_hi - b_lo) / (ref_ci['hi'] - ref_ci['lo'])[b_lo.index]).median():.3f}"
        )
        print(f"  max |rating - true skill| (ties shrink the scale a little): {err.max():.1f} points")

    if "2" in args.parts:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "battles.jsonl"
            battles = frame[["model_a", "model_b", "winner", "tstamp", "question_id"]]
            con = duckdb.connect()
            con.register("battles", battles)
            con.execute(f"COPY battles TO '{path}' (FORMAT json)")
            con.close()
            size = path.stat().st_size / 1e6

            def reference_file() -> Any:
                return reference_method(pd.read_json(path, lines=True), args.rounds, args.ref_processes)

            t_ref, _ = timed(reference_file)
            t_ours, report = timed(
                lambda: ratings_report(path, bootstrap=args.rounds, as_json=True), args.repeat
            )
        print(f"\n[2] ratings_report(FILE, bootstrap={args.rounds}, as_json=True), {size:.0f} MB JSONL")
        print(f"  reference (pandas.read_json + FastChat method): {t_ref:8.2f} s")
        print(f"  ours (load + validate + BT + bootstrap + Elo + JSON): {t_ours:8.2f} s")
        print(f"  ratio: {t_ref / t_ours:.1f}x (goal >= 4x); JSON {len(report) / 1e3:.0f} kB")

    if "3" in args.parts:
        styled, _ = synthetic(args.n, args.models, args.seed + 1, length_bias=0.5)
        t_boot, board = timed(
            lambda: leaderboard(styled, style_control=True, bootstrap_rounds=args.rounds, elo_k=None),
            args.repeat,
        )
        t_sand, board_s = timed(
            lambda: leaderboard(styled, style_control=True, ci_method="sandwich", elo_k=None), args.repeat
        )
        planted = 0.5 * SCALE
        print(f"\n[3] style-controlled Bradley-Terry, {args.n:,} battles")
        print(f"  bootstrap ({args.rounds} rounds): {t_boot:6.2f} s (goal <= 5 s)")
        print(f"  sandwich:                {t_sand:6.2f} s")
        coef = board.style_coefficients
        lo, hi = board.style_intervals["tokens"]
        print(
            f"  length coefficient {coef['tokens']:.1f} points/SD [{lo:.1f}, {hi:.1f}] (planted {planted:.1f}); "
            f"others: {', '.join(f'{k} {v:+.1f}' for k, v in coef.items() if k != 'tokens')}"
        )
        print(f"  sandwich length interval: {board_s.style_intervals['tokens']}")


if __name__ == "__main__":
    main()
