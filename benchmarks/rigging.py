"""Rigging simulation: are accounts that vote for one target model flagged, and does the robust board undo them?

Simulated team arenas (`standings.ratings.simulate_arena`: 8 models, 40 honest annotators x 120 votes with personal
taste and ties of three kinds) plus one or two rigged accounts casting `--votes` votes each for a mid-table target,
with the always-vote-target strategy and the smarter identify-by-style one. Prints the recall over rigged accounts,
the false-positive rate over honest ones, and how often the robust board puts the target back at its honest rank
(the rank on the honest votes alone). Goal: recall >= 0.9 at FPR <= 0.05, rank restored.

    python benchmarks/rigging.py [--seeds 10] [--votes 300]
"""

from __future__ import annotations

import argparse
import time

from vibestudio.standings.ratings import annotator_diagnostics, leaderboard, robust_leaderboard
from vibestudio.standings.ratings._simulate import simulate_arena


def rank(board, name: str) -> int:  # type: ignore[no-untyped-def]
    return [m.name for m in board.models].index(name) + 1


def run(seeds: int, votes: int, identity_only: bool = False) -> dict[str, float]:
    caught = riggers = false_pos = honest = restored = arenas = moved = 0
    for strategy in ("target", "style"):
        for n_riggers in (1, 2):
            for seed in range(seeds):
                df, truth = simulate_arena(
                    riggers=n_riggers, rigger_votes=votes, strategy=strategy, seed=seed
                )
                if identity_only:
                    df = df.drop(columns=["vote_seconds"])
                report = annotator_diagnostics(df)
                flagged = set(report.flagged)
                caught += len(flagged & set(truth["riggers"]))
                riggers += len(truth["riggers"])
                false_pos += len(flagged & set(truth["honest"]))
                honest += len(truth["honest"])
                opts = {"ci_method": "sandwich", "elo_k": None}
                target = truth["target"]
                honest_rank = rank(leaderboard(df[df["judge"].isin(truth["honest"])], **opts), target)
                rigged_rank = rank(leaderboard(df, **opts), target)
                robust_rank = rank(robust_leaderboard(df, report=report, **opts)[0], target)
                arenas += 1
                moved += rigged_rank != honest_rank
                restored += robust_rank == honest_rank
    return {
        "recall": caught / riggers,
        "fpr": false_pos / honest,
        "riggers": riggers,
        "honest": honest,
        "arenas": arenas,
        "moved": moved / arenas,
        "restored": restored / arenas,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--votes", type=int, default=300)
    args = parser.parse_args()
    for identity_only in (False, True):
        start = time.perf_counter()
        r = run(args.seeds, args.votes, identity_only)
        label = "without vote timing (identity and agreement only)" if identity_only else "all diagnostics"
        print(
            f"{label}: recall {r['recall']:.3f} over {r['riggers']} rigged accounts, FPR {r['fpr']:.4f} over "
            f"{r['honest']} honest ones; rigging moved the target's rank in {100 * r['moved']:.0f}% of "
            f"{r['arenas']} arenas, the robust board restored its honest rank in {100 * r['restored']:.0f}% "
            f"({time.perf_counter() - start:.0f} s)"
        )


if __name__ == "__main__":
    main()
