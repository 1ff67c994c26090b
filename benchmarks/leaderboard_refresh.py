"""Benchmark: refreshing the studio leaderboard over a 1M-vote SQLite store after one new vote (issue 4).

Ours: `standings.leaderboard.LeaderboardService` - an incremental column copy of the votes (`standings.vote_cache`), only
votes above the last id read per refresh, DuckDB grouping the rows into pair x outcome cells, Bradley-Terry +
bootstrap on those cells, online Elo carried forward. Baseline: what a plain implementation does on every refresh -
re-read every vote with SQLAlchemy + pandas (`pandas.read_sql` of the votes-battles-contestants join), then
`standings.ratings.leaderboard` on the frame (same fit, same bootstrap, online Elo replayed). Goal: < 1 s per refresh.

    python benchmarks/leaderboard_refresh.py                    # 1M votes, 50 contestants, 100 bootstrap rounds
    python benchmarks/leaderboard_refresh.py --votes 100000     # quicker
    python benchmarks/leaderboard_refresh.py --db /tmp/lb.sqlite  # keep (and reuse) the synthetic store

Also timed: the first build (every vote read once, Parquet written) and a restart that reads the Parquet file.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.orm import aliased

from vibestudio.common.outcomes import CODES, STORED_TO_FASTCHAT, stored_from_code
from vibestudio.db.models import Battle, Contestant, Vote
from vibestudio.db.session import Database
from vibestudio.standings.leaderboard import BoardOptions, LeaderboardService
from vibestudio.standings.ratings import leaderboard
from vibestudio.standings.vote_cache import VoteCache

OUTCOMES = np.array([stored_from_code(k) for k in range(len(CODES))])  # stored outcomes by code


def build_store(path: Path, n_votes: int, n_models: int, seed: int = 0) -> Database:
    """A migrated SQLite store with `n_models` contestants and `n_votes` battles of one vote each."""
    db = Database(f"sqlite:///{path}")
    db.migrate()
    with db.session() as s:
        have = s.scalar(select(func.count(Vote.id))) or 0
    if have >= n_votes:  # a store built before (earlier runs add a few votes of their own)
        return db
    if have:
        raise SystemExit(f"{path} holds {have} votes, fewer than {n_votes}; remove it or pass another --db")
    rng = np.random.default_rng(seed)
    skill = rng.normal(0.0, 150.0, n_models)
    a = rng.integers(0, n_models, n_votes)
    b = (a + rng.integers(1, n_models, n_votes)) % n_models
    p_a = 1.0 / (1.0 + 10.0 ** ((skill[b] - skill[a]) / 400.0))
    u = rng.random(n_votes)
    outcome = np.where(u < 0.08, 2, np.where(u < 0.1, 3, np.where(rng.random(n_votes) < p_a, 0, 1)))
    start = np.datetime64("2026-01-01T00:00:00")
    offsets = np.sort(rng.integers(0, 90 * 86400 * 1_000_000, n_votes)).astype("timedelta64[us]")
    stamps = np.char.replace(np.datetime_as_string(start + offsets, unit="us"), "T", " ")
    prob = rng.choice([0.002, 0.004, 0.01], n_votes)
    category = rng.choice(["coding", "writing", "math", "chat", "advice"], n_votes)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA synchronous=OFF")
        conn.executemany(
            "INSERT INTO contestants (id, public_name, engine, model_ref, persona, sampling, aliases, active, "
            "engine_config, created_at) VALUES (?, ?, 'llama_cpp', 'builtin:x', '{}', '{}', '[]', 1, '{}', ?)",
            [(k + 1, f"model-{k:03d}", str(stamps[0])) for k in range(n_models)],
        )
        for lo in range(0, n_votes, 200_000):
            hi = min(n_votes, lo + 200_000)
            ids = range(lo + 1, hi + 1)
            conn.executemany(
                "INSERT INTO battles (id, a_id, b_id, left_is_a, sampling_prob, mode, status, category, "
                "created_at) VALUES (?, ?, ?, 1, ?, 'anonymous', 'voted', ?, ?)",
                zip(
                    ids,
                    (a[lo:hi] + 1).tolist(),
                    (b[lo:hi] + 1).tolist(),
                    prob[lo:hi].tolist(),
                    category[lo:hi].tolist(),
                    stamps[lo:hi].tolist(),
                    strict=True,
                ),
            )
            conn.executemany(
                "INSERT INTO votes (id, battle_id, turn_idx, outcome, revealed_before_vote, created_at) "
                "VALUES (?, ?, 0, ?, 0, ?)",
                zip(ids, ids, OUTCOMES[outcome[lo:hi]].tolist(), stamps[lo:hi].tolist(), strict=True),
            )
    return db


def add_vote(db: Database, k: int) -> None:
    """One more battle with one vote, through the ORM like the arena writes it."""
    with db.session() as s:
        battle = Battle(
            a_id=1 + k % 7, b_id=2 + k % 5 + 7, left_is_a=True, sampling_prob=0.004, category="chat"
        )
        battle.status = "voted"
        battle.votes.append(Vote(turn_idx=0, outcome="a" if k % 3 else "b"))
        s.add(battle)


def baseline(db: Database, rounds: int) -> dict:
    """Re-read every vote with SQLAlchemy + pandas, then the same ratings (online Elo replayed)."""
    ca, cb = aliased(Contestant), aliased(Contestant)
    q = (
        select(
            ca.public_name.label("model_a"),
            cb.public_name.label("model_b"),
            Vote.outcome,
            Battle.sampling_prob,
            Vote.created_at,
        )
        .join(Battle, Vote.battle_id == Battle.id)
        .join(ca, Battle.a_id == ca.id)
        .join(cb, Battle.b_id == cb.id)
        .where(Battle.status != "errored", Battle.mode == "anonymous", Vote.revealed_before_vote.is_(False))
        .order_by(Vote.created_at, Vote.id)
    )
    with db.engine.connect() as conn:
        frame = pd.read_sql(q, conn)
    frame["winner"] = frame.pop("outcome").map(STORED_TO_FASTCHAT)
    frame["tstamp"] = pd.to_datetime(frame.pop("created_at")).astype("int64") / 1e9
    return leaderboard(frame, bootstrap_rounds=rounds).to_dict()


CPU: list[
    float
] = []  # process CPU seconds (all threads) of each timed call: steadier than wall time on a busy box


def timed(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    CPU.append(time.process_time() - c0)
    return out, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--votes", type=int, default=1_000_000)
    ap.add_argument("--models", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=100, help="bootstrap rounds (the studio's default is 100)")
    ap.add_argument("--repeat", type=int, default=5, help="refreshes timed, one new vote before each")
    ap.add_argument("--baseline-repeat", type=int, default=2)
    ap.add_argument(
        "--db", type=Path, default=None, help="SQLite file to build or reuse (default: a temp dir)"
    )
    args = ap.parse_args()

    tmp = tempfile.TemporaryDirectory()
    path = args.db or Path(tmp.name) / "store.sqlite"
    _, t_fill = timed(build_store, path, args.votes, args.models)
    db = Database(f"sqlite:///{path}")
    print(f"store: {args.votes:,} votes, {args.models} contestants ({path}, filled in {t_fill:.1f} s)")
    cache_dir = Path(tmp.name) / "cache"
    options = BoardOptions(bootstrap=args.rounds)

    service = LeaderboardService(db, VoteCache(db, cache_dir))
    first, t_first = timed(service.board, options)
    print(
        f"first build (read every vote once, Parquet written, fit): {t_first:.2f} s, {first['n_votes']:,} votes"
    )
    restarted = LeaderboardService(db, VoteCache(db, cache_dir))
    _, t_restart = timed(restarted.board, options)
    print(f"restart (Parquet read + new votes + fit):                  {t_restart:.2f} s")

    ours, ours_cpu = [], []
    for k in range(args.repeat):
        add_vote(db, k)
        out, t = timed(service.board, options)
        assert out["refresh"]["new_votes"] == 1 and not out["refresh"]["rebuilt"], out["refresh"]
        ours.append(t)
        ours_cpu.append(CPU[-1])
    refresh_only = []
    for k in range(args.repeat):
        add_vote(db, 100 + k)
        _, t = timed(service.refresh)
        refresh_only.append(t)
        service.board(options, refresh=False)
    ref, ref_cpu = [], []
    for _ in range(args.baseline_repeat):
        base, t = timed(baseline, db, args.rounds)
        ref.append(t)
        ref_cpu.append(CPU[-1])
    mine = service.board(options, refresh=False)
    gap = max(
        abs(m["rating"] - next(b["rating"] for b in base["models"] if b["name"] == m["name"]))
        for m in mine["models"]
    )
    med, t_ref = statistics.median(ours), statistics.median(ref)
    print(
        f"refresh after one new vote (read it + refit + Elo step):   median {med:.3f} s, max {max(ours):.3f} s, "
        f"CPU {statistics.median(ours_cpu):.3f} s (reading the new vote alone: "
        f"median {statistics.median(refresh_only) * 1000:.1f} ms)"
    )
    print(
        f"baseline (SQLAlchemy + pandas re-read, same fit, Elo):    median {t_ref:.2f} s, "
        f"CPU {statistics.median(ref_cpu):.2f} s"
    )
    cpu_ratio = statistics.median(ref_cpu) / statistics.median(ours_cpu)
    print(
        f"load average at the end: {', '.join(f'{v:.1f}' for v in os.getloadavg())} on {os.cpu_count()} cores"
    )
    print(
        f"ratio baseline / ours: {t_ref / med:.1f}x wall, {cpu_ratio:.1f}x CPU   "
        f"goal: ours < 1 s -> {'met' if max(ours) < 1.0 else 'NOT met'}"
    )
    print(f"largest rating difference ours vs baseline: {gap:.2e} points")
    db.dispose()
    tmp.cleanup()


if __name__ == "__main__":
    main()
