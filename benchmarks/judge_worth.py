"""What a judge vote is worth on simulated arenas with a known judge noise (`simulate_judged_arena`).

For each noise level (the share of the judge's votes that are coin flips): the exchange rate chosen by held-out
human log-likelihood (`judge_worth`, with its bootstrap interval), the oracle weight from the true skills
(`oracle_weight`, averaged over the seeds as the median) and the Fisher information ratio, and the time per call.

    python benchmarks/judge_worth.py [--seeds 3] [--rounds 30]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

from vibestudio.standings.ratings import judge_worth
from vibestudio.standings.ratings._composite import oracle_weight, simulate_judged_arena


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--human", type=int, default=1500)
    parser.add_argument("--judge", type=int, default=6000)
    args = parser.parse_args()
    print(f"{args.human} human votes, {args.judge} judge votes, 8 models; k = human vote in judge votes")
    print(
        f"{'noise':>5} {'seed':>4} {'k (held-out)':>13} {'95% interval':>18} {'oracle k':>9} {'info k':>7} {'s':>5}"
    )
    for noise in (0.0, 0.2, 0.4, 0.6, 1.0):
        oracles = []
        for seed in range(args.seeds):
            frame, truth = simulate_judged_arena(
                judge_noise=noise, human_votes=args.human, judge_votes=args.judge, seed=seed
            )
            start = time.perf_counter()
            (r,) = judge_worth(frame, ["judge"], rounds=args.rounds)
            took = time.perf_counter() - start
            oracle = oracle_weight(frame, ["judge"], truth["skills"])
            oracles.append(oracle["weight"])
            k = lambda x: "inf" if x is None or math.isinf(x) else f"{x:.2g}"  # noqa: E731
            print(
                f"{noise:5.1f} {seed:4d} {k(r.worth):>13} {'[' + k(r.worth_low) + ', ' + k(r.worth_high) + ']':>18}"
                f" {k(oracle['worth']):>9} {k(truth['information_worth']):>7} {took:5.1f}"
            )
        med = statistics.median(oracles)
        print(f"      median oracle weight {med:.3g} (k = {'inf' if med == 0 else f'{1 / med:.2g}'})")


if __name__ == "__main__":
    main()
