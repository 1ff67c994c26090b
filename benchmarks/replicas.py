"""Two app replicas on one PostgreSQL against one app: the vote load of ``benchmarks/load_votes.py`` split across
two ``vibestudio serve`` processes (user ``i`` on app ``i % 2``, as sticky sessions would place them), then the
same load on one process, each on a fresh schema of the same database.

Prints, for each layout, votes/s (battle + vote + new round, end to end), the vote call's p50 and p95 with the
number of votes, whether every acknowledged vote is stored exactly once, and the two-app / one-app ratios.
A p50 or p95 is reported with a 95 % interval from the order statistics (binomial), so two layouts whose
intervals overlap are "can't tell".

    python benchmarks/replicas.py --database-url postgresql://postgres@127.0.0.1:5432/test
    python benchmarks/replicas.py --users 8 --battles 4
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.load_votes import UserRun, check, prepare, start_server, stop_server, vote_loop

START_S = 300  # two processes importing the studio at once on a loaded machine take minutes


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_apps(homes: list[Path], env: dict[str, str]) -> list[tuple[Any, str]]:
    """One ``vibestudio serve`` per data home, started together (they race on start-up, as replicas do)."""
    out: list[tuple[Any, str] | None] = [None] * len(homes)
    errors: list[BaseException] = []

    def one(k: int) -> None:
        port = free_port()
        try:
            out[k] = (start_server(homes[k], port, env, START_S), f"http://127.0.0.1:{port}")
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(k,)) for k in range(len(homes))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    started = [x for x in out if x is not None]
    if errors:
        for proc, _ in started:
            stop_server(proc)
        raise errors[0]
    return started


def split_load(
    urls: list[str], names: list[str], n_battles: int, stop: threading.Event | None = None
) -> tuple[list[UserRun], float, list[threading.Thread]]:
    """User ``i`` battles and votes on ``urls[i % len(urls)]``; returns the runs, the seconds and the threads
    (joined unless ``stop`` is given: then the caller stops and joins them)."""
    runs = [UserRun(n) for n in names]
    threads = [
        threading.Thread(target=vote_loop, args=(urls[i % len(urls)], r, n_battles, i, stop), daemon=True)
        for i, r in enumerate(runs)
    ]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    if stop is None:
        for t in threads:
            t.join()
    return runs, time.perf_counter() - t0, threads


def quantile_ci(xs: list[float], q: float) -> tuple[float, float, float]:
    """The ``q`` quantile of ``xs`` and a ~95 % distribution-free interval (binomial order statistics)."""
    s = sorted(xs)
    n = len(s)
    if n == 0:
        return (math.nan, math.nan, math.nan)
    half = 1.96 * math.sqrt(n * q * (1 - q))
    lo = max(0, math.floor(n * q - half) - 1)
    hi = min(n - 1, math.ceil(n * q + half))
    return s[min(n - 1, int(n * q))], s[lo], s[hi]


@dataclass
class Layout:
    apps: int
    votes: int
    expected: int
    seconds: float
    vote_s: list[float]
    problems: list[str]
    errors: list[str]

    @property
    def rate(self) -> float:
        return self.votes / self.seconds if self.seconds else math.nan

    def line(self) -> str:
        p50, p50_lo, p50_hi = quantile_ci(self.vote_s, 0.5)
        p95, p95_lo, p95_hi = quantile_ci(self.vote_s, 0.95)
        once = "yes" if not self.problems else f"NO: {self.problems[:3]}"
        return (
            f"{self.apps} app(s): {self.votes}/{self.expected} votes in {self.seconds:.1f} s = {self.rate:.2f} votes/s; "
            f"vote call p50 {p50 * 1000:.0f} ms [{p50_lo * 1000:.0f}, {p50_hi * 1000:.0f}], "
            f"p95 {p95 * 1000:.0f} ms [{p95_lo * 1000:.0f}, {p95_hi * 1000:.0f}] (n={len(self.vote_s)}); "
            f"stored exactly once: {once}; client errors: {len(self.errors)}"
        )


def run_layout(base_url: str, n_apps: int, n_users: int, n_battles: int, max_new_tokens: int) -> Layout:
    from tests.helpers.postgres import pg_schema  # a throwaway schema, dropped afterwards
    from vibestudio.db.session import Database

    with pg_schema(base_url) as url, tempfile.TemporaryDirectory() as tmp:
        homes = [Path(tmp) / f"app{k}" for k in range(n_apps)]  # one data home per replica, as on two hosts
        for h in homes:
            h.mkdir()
        names = prepare(homes[0], n_users, url)
        env = {
            "VIBESTUDIO_DATABASE_URL": url,
            "VIBESTUDIO_MAX_NEW_TOKENS": str(max_new_tokens),
            "VIBESTUDIO_PROMPTS_PER_MINUTE": "600",
            "VIBESTUDIO_VOTES_PER_MINUTE": "600",
        }
        apps = start_apps(homes, env)
        try:
            runs, took, _ = split_load([u for _, u in apps], names, n_battles)
        finally:
            for proc, _ in apps:
                stop_server(proc)
        db = Database(url)
        problems = check(db, runs)
        db.dispose()
    return Layout(
        n_apps,
        sum(len(r.acked) for r in runs),
        n_users * n_battles,
        took,
        [x for r in runs for x in r.vote_s],
        problems,
        [e for r in runs for e in r.errors],
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=8)
    ap.add_argument("--battles", type=int, default=4, help="battles (each with one vote) per user")
    ap.add_argument("--max-new-tokens", type=int, default=2)
    ap.add_argument(
        "--database-url",
        default=os.environ.get("VIBESTUDIO_TEST_PG_URL"),
        help="a PostgreSQL server (a fresh schema is made for each layout); default: $VIBESTUDIO_TEST_PG_URL",
    )
    args = ap.parse_args()
    if not args.database_url or not args.database_url.startswith("postgres"):
        print("needs a PostgreSQL URL: --database-url postgresql://... (or VIBESTUDIO_TEST_PG_URL)")
        return 2
    two = run_layout(args.database_url, 2, args.users, args.battles, args.max_new_tokens)
    one = run_layout(args.database_url, 1, args.users, args.battles, args.max_new_tokens)
    print(
        f"users={args.users} battles/user={args.battles} max_new_tokens={args.max_new_tokens} cpus={os.cpu_count()}"
    )
    print(two.line())
    print(one.line())
    p50_2, lo2, hi2 = quantile_ci(two.vote_s, 0.5)
    p50_1, lo1, hi1 = quantile_ci(one.vote_s, 0.5)
    overlap = not (hi2 < lo1 or hi1 < lo2)
    print(f"ratio two-app / one-app votes/s: {two.rate / one.rate:.2f}")
    print(
        f"ratio two-app / one-app vote-call p50: {p50_2 / p50_1:.2f}"
        + (" (intervals overlap: can't tell)" if overlap else "")
    )
    print(
        f"ratio two-app / one-app vote-call p95: {quantile_ci(two.vote_s, 0.95)[0] / quantile_ci(one.vote_s, 0.95)[0]:.2f}"
    )
    return 1 if two.problems or one.problems else 0


if __name__ == "__main__":
    sys.exit(main())
