"""Load: many concurrent ``gradio_client`` users battling and voting against a running studio (login on, the real
llama.cpp engine, short answers), then a check that every acknowledged vote is stored exactly once.

Each simulated user signs in with their own account and repeats ``--battles`` times: send a prompt (both models
answer, ``VIBESTUDIO_MAX_NEW_TOKENS`` tokens at most), vote (a choice from a fixed cycle), start a new round.
Afterwards the database is read directly: per user, the stored votes (in order, mapped back to left/right with
the battle's stored coin flip) must equal the acknowledged choices, with no vote lost, added or duplicated.

Baseline (``--baseline``): the same work through ``ArenaService`` in-process with the same number of threads
(no HTTP, no Gradio queue); the ratio says what the web layer costs.

    python benchmarks/load_votes.py                           # 50 users x 20 battles
    python benchmarks/load_votes.py --users 5 --battles 3 --baseline
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vibestudio.common.outcomes import CHOICES, OUTCOMES, choice_from_stored

NO_RUBRIC = (None,) * 6
PASSWORD = "load test password"
ROOT = Path(__file__).resolve().parents[1]


@dataclass
class UserRun:
    name: str
    acked: list[str] = field(default_factory=list)  # choices the server confirmed, in order
    attempted: int = 0  # votes sent (acknowledged or not)
    errors: list[str] = field(default_factory=list)
    vote_s: list[float] = field(default_factory=list)


def prepare(home: Path, n_users: int, database_url: str | None = None) -> list[str]:
    """``n_users`` annotators (login is then on) in ``database_url`` (default: SQLite in ``home``)."""
    from vibestudio.accounts import add_user
    from vibestudio.db.session import Database

    db = Database(database_url or f"sqlite:///{home / 'studio.sqlite'}")
    db.migrate()
    names = [f"user{i:03d}" for i in range(n_users)]
    for name in names:
        add_user(db, name, PASSWORD, "annotator")
    db.dispose()
    return names


def start_server(home: Path, port: int, env_extra: dict[str, str], start_s: float = 180) -> subprocess.Popen:
    import httpx

    env = {**os.environ, "VIBESTUDIO_HOME": str(home), "GRADIO_ANALYTICS_ENABLED": "False"}
    env.pop("VIBESTUDIO_DATABASE_URL", None)
    env.update(env_extra)  # may name another database with VIBESTUDIO_DATABASE_URL
    log = open(home / "server.log", "ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "vibestudio.studio.cli", "serve", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
    )
    deadline = time.monotonic() + start_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {(home / 'server.log').read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"server did not start in {start_s:.0f} s")


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def vote_loop(
    url: str, run: UserRun, n_battles: int, offset: int = 0, stop: threading.Event | None = None
) -> None:
    """One user's session: battles and votes until ``n_battles`` are done, ``stop`` is set, or the server dies."""
    from gradio_client import Client

    try:
        client = Client(
            url,
            auth=(run.name, PASSWORD),
            verbose=False,
            download_files=False,
            max_workers=2,
            httpx_kwargs={"timeout": 120},  # a busy CPU answers slowly; slow is not lost
        )
    except Exception as exc:  # noqa: BLE001 - a dead server: nothing more to do for this user
        run.errors.append(f"login: {exc}")
        return
    for i in range(n_battles):
        if stop is not None and stop.is_set():
            return
        choice = CHOICES[(offset + i) % len(CHOICES)]
        try:
            client.predict(
                f"Say one word about the number {i}.", "Anonymous", None, None, api_name="/arena_send"
            )
            run.attempted += 1
            t0 = time.perf_counter()
            status = client.predict(*NO_RUBRIC, api_name=f"/arena_vote_{choice}")[0]
            run.vote_s.append(time.perf_counter() - t0)
            if "saved" not in str(status):
                raise RuntimeError(f"unexpected vote status {status!r}")
            run.acked.append(choice)
            client.predict(api_name="/arena_new")
        except Exception as exc:  # noqa: BLE001 - recorded; the check below decides what it means
            run.errors.append(f"battle {i}: {type(exc).__name__}: {str(exc)[:200]}")
            if stop is not None and stop.is_set():
                return


def stored_choices(db: Any) -> dict[str, list[str]]:
    """Per user name, the stored votes in insertion order, in left/right terms."""
    from sqlalchemy import select

    from vibestudio.db.models import Battle, User, Vote

    out: dict[str, list[str]] = defaultdict(list)
    with db.session() as s:
        rows = s.execute(
            select(User.name, Vote.outcome, Battle.left_is_a)
            .join(Vote, Vote.user_id == User.id)
            .join(Battle, Battle.id == Vote.battle_id)
            .order_by(Vote.id)
        )
        for name, outcome, left_is_a in rows:
            out[name].append(choice_from_stored(outcome, bool(left_is_a)) if outcome in OUTCOMES else outcome)
    return out


def check(db: Any, runs: list[UserRun], in_flight_ok: bool = False) -> list[str]:
    """Problems found: a user whose stored votes are not exactly their acknowledged ones (``in_flight_ok``:
    one extra vote after the acknowledged ones is allowed, sent but not acknowledged when the server died)."""
    from sqlalchemy import func, select

    from vibestudio.db.models import Vote

    stored = stored_choices(db)
    problems = []
    for r in runs:
        got = stored.get(r.name, [])
        extra = got[len(r.acked) :]
        if got[: len(r.acked)] != r.acked:
            problems.append(f"{r.name}: acknowledged {r.acked} but stored {got}")
        elif extra and not (in_flight_ok and len(extra) == 1 and r.attempted > len(r.acked)):
            problems.append(f"{r.name}: {len(extra)} vote(s) stored that were never acknowledged: {extra}")
    with db.session() as s:
        dupes = s.execute(
            select(Vote.battle_id, Vote.turn_idx)
            .group_by(Vote.battle_id, Vote.turn_idx)
            .having(func.count() > 1)
        ).all()
    problems += [f"battle {b} turn {t} has more than one vote" for b, t in dupes]
    return problems


def run_load(url: str, names: list[str], n_battles: int) -> tuple[list[UserRun], float]:
    runs = [UserRun(n) for n in names]
    threads = [threading.Thread(target=vote_loop, args=(url, r, n_battles, i)) for i, r in enumerate(runs)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return runs, time.perf_counter() - t0


def baseline(n_users: int, n_battles: int, max_new_tokens: int) -> float:
    """Seconds for the same battles and votes through ArenaService in-process, one thread per user."""
    from vibestudio.arena.battles import ArenaLimits, ArenaService
    from vibestudio.arena.registry import ensure_defaults
    from vibestudio.db.session import Database
    from vibestudio.standings.leaderboard import LeaderboardService

    with tempfile.TemporaryDirectory() as tmp:
        db = Database(f"sqlite:///{Path(tmp) / 'base.sqlite'}")
        db.migrate()
        with db.session() as s:
            ensure_defaults(s)
        board = LeaderboardService(db)  # the sampler reads ratings from it, as in the studio
        svc = ArenaService(db, ArenaLimits(max_new_tokens=max_new_tokens), ratings=board.sampler_inputs)

        def user(k: int) -> None:
            for i in range(n_battles):
                view = svc.start_battle()
                for _ in svc.generate_turn(view.battle_id, f"Say one word about the number {i}."):
                    pass
                svc.record_vote(view.battle_id, CHOICES[(k + i) % len(CHOICES)])
                svc.end_battle(view.battle_id)

        threads = [threading.Thread(target=user, args=(k,)) for k in range(n_users)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.perf_counter() - t0
        db.dispose()
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=50)
    ap.add_argument("--battles", type=int, default=20, help="battles (each with one vote) per user")
    ap.add_argument("--max-new-tokens", type=int, default=4)
    ap.add_argument("--port", type=int, default=7871)
    ap.add_argument("--baseline", action="store_true", help="also time the same work in-process")
    ap.add_argument("--database-url", help="an empty database for the server (default: SQLite in a temp dir)")
    args = ap.parse_args()

    from vibestudio.db.session import Database

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        names = prepare(home, args.users, args.database_url)
        url = args.database_url or f"sqlite:///{home / 'studio.sqlite'}"
        env = {
            "VIBESTUDIO_DATABASE_URL": url,
            "VIBESTUDIO_MAX_NEW_TOKENS": str(args.max_new_tokens),
            "VIBESTUDIO_PROMPTS_PER_MINUTE": "600",
            "VIBESTUDIO_VOTES_PER_MINUTE": "600",
        }
        proc = start_server(home, args.port, env)
        try:
            runs, took = run_load(f"http://127.0.0.1:{args.port}", names, args.battles)
        finally:
            stop_server(proc)
        db = Database(url)
        problems = check(db, runs)
        db.dispose()

    acked = sum(len(r.acked) for r in runs)
    errors = [e for r in runs for e in r.errors]
    lat = sorted(x for r in runs for x in r.vote_s)
    p50 = lat[len(lat) // 2] if lat else float("nan")
    p95 = lat[int(len(lat) * 0.95)] if lat else float("nan")
    print(
        f"users={args.users} battles/user={args.battles} max_new_tokens={args.max_new_tokens} db={url.split(':')[0]}"
    )
    print(f"acknowledged votes: {acked} of {args.users * args.battles} in {took:.1f} s")
    print(f"votes/s (battle + vote + new round, end to end): {acked / took:.2f}")
    print(f"vote call latency: p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms")
    print(f"client errors: {len(errors)}" + (f" (first: {errors[0]})" if errors else ""))
    print("stored exactly once: " + ("yes" if not problems else f"NO: {problems[:5]}"))
    if args.baseline:
        base = baseline(args.users, args.battles, args.max_new_tokens)
        print(f"baseline in-process ArenaService: {args.users * args.battles / base:.2f} votes/s")
        print(f"ratio web/in-process throughput: {(acked / took) / (args.users * args.battles / base):.2f}")
    return 1 if problems or acked < args.users * args.battles else 0


if __name__ == "__main__":
    sys.exit(main())
