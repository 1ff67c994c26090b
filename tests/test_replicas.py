"""Two ``vibestudio serve`` processes on one PostgreSQL, each with its own data home (two hosts behind a balancer):

- a session signed in on one is accepted by the other, and signing out on one ends it on both;
- one prompt budget per user across both (the rate limit lives in the database, not in each process);
- the vote load of ``benchmarks/load_votes.py`` split across both: every acknowledged vote stored exactly once,
  and both serve the same leaderboard;
- one app killed with SIGKILL in the middle of a vote burst loses no acknowledged vote, and the other keeps
  taking votes.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import httpx
import pytest
from sqlalchemy import func, select

from benchmarks.load_votes import PASSWORD, UserRun, check, prepare, stop_server
from benchmarks.replicas import split_load, start_apps
from tests.helpers.postgres import PG_URL, pg_schema
from vibestudio.db.models import Vote
from vibestudio.db.session import Database

PROMPTS_PER_MINUTE = 30  # the shared budget the test spends


def _login(url: str, name: str) -> httpx.Client:
    c = httpx.Client(base_url=url, timeout=60, headers={"Origin": url})
    r = c.post("/login", data={"username": name, "password": PASSWORD})
    assert r.status_code == 200, r.text[:200]
    return c


def _spend_prompts(urls: list[str], name: str, tries: int) -> tuple[int, int, float]:
    """Send ``tries`` empty prompts, alternating between the apps: each takes a prompt token and is then refused
    as empty (no generation), until the budget is spent and the refusal is the rate limit. Returns (refused as
    empty, refused by the limit, seconds)."""
    from gradio_client import Client

    clients = [Client(u, auth=(name, PASSWORD), verbose=False, download_files=False) for u in urls]
    empty = limited = 0
    t0 = time.perf_counter()
    for i in range(tries):
        out = str(clients[i % len(clients)].predict("", "Anonymous", None, None, api_name="/arena_send"))
        if "too many prompts" in out.lower():
            limited += 1
        else:
            empty += 1
    return empty, limited, time.perf_counter() - t0


def _board(url: str, name: str) -> list[dict]:
    """The leaderboard's tables as one app serves them (not its status line, which says how long it took)."""
    from gradio_client import Client

    c = Client(url, auth=(name, PASSWORD), verbose=False, download_files=False)
    out = c.predict(api_name="/leaderboard")
    tables = [o for o in out if isinstance(o, dict) and o.get("data")]
    assert tables, f"no table in the leaderboard's answer: {str(out)[:300]}"
    return tables


@pytest.mark.postgres
@pytest.mark.slow
def test_two_apps_on_one_postgres(tmp_path):
    if not PG_URL:
        pytest.skip("VIBESTUDIO_TEST_PG_URL not set")
    with pg_schema(PG_URL) as url:
        homes = [tmp_path / "app1", tmp_path / "app2"]
        for h in homes:
            h.mkdir()
        names = prepare(homes[0], 7, url)
        env = {
            "VIBESTUDIO_DATABASE_URL": url,
            "VIBESTUDIO_MAX_NEW_TOKENS": "2",
            "VIBESTUDIO_PROMPTS_PER_MINUTE": str(PROMPTS_PER_MINUTE),
            "VIBESTUDIO_VOTES_PER_MINUTE": "600",
        }
        (p1, u1), (p2, u2) = start_apps(homes, env)
        try:
            _sessions_cross_replicas(u1, u2, names[6])
            _one_budget(u1, u2, names[5])
            db = Database(url)
            runs, _, _ = split_load([u1, u2], names[:4], 2)
            assert [r.errors for r in runs] == [[]] * 4
            assert check(db, runs) == [] and sum(len(r.acked) for r in runs) == 8
            assert _board(u1, names[0]) == _board(u2, names[1])
            _kill_mid_burst(db, u1, p2, u2, runs)
        finally:
            for p in (p1, p2):
                if p.poll() is None:
                    stop_server(p)
        db.dispose()


def _sessions_cross_replicas(u1: str, u2: str, name: str) -> None:
    one = _login(u1, name)
    assert {c.name for c in one.cookies.jar} >= {"access-token-studio"}  # one name on every replica
    two = httpx.Client(base_url=u2, timeout=60, cookies=one.cookies, headers={"Origin": u2})
    r = two.get("/config")
    assert r.status_code == 200 and r.json()["username"] == name  # signed in on app 1, accepted by app 2
    two.get("/logout", follow_redirects=False)
    assert one.get("/config").status_code == 401  # signed out on app 2: ended on app 1 too


def _one_budget(u1: str, u2: str, name: str) -> None:
    tries = PROMPTS_PER_MINUTE + 12
    passed, limited, took = _spend_prompts([u1, u2], name, tries)
    refills = took * PROMPTS_PER_MINUTE / 60.0
    # one budget: the burst plus what refilled meanwhile; two budgets would have let all 42 through (21 each)
    assert PROMPTS_PER_MINUTE <= passed <= PROMPTS_PER_MINUTE + refills + 1, (passed, limited, took)
    assert limited >= tries - PROMPTS_PER_MINUTE - refills - 1


def _kill_mid_burst(db: Database, u1: str, p2, u2: str, earlier: list[UserRun]) -> None:
    with db.session() as s:
        before = s.scalar(select(func.count(Vote.id))) or 0
    stop = threading.Event()
    runs, _, threads = split_load([u1, u2], [r.name for r in earlier], 1000, stop)
    on_two = runs[1::2]
    deadline = time.monotonic() + 240
    while sum(len(r.acked) for r in on_two) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(p2.pid, signal.SIGKILL)  # no shutdown hooks: the process is gone mid-burst
    p2.wait(10)
    killed_at = [len(r.acked) for r in runs[0::2]]
    time.sleep(3)  # app 1's users keep voting after app 2 is gone
    stop.set()
    for t in threads:
        t.join(120)
    assert sum(len(r.acked) for r in on_two) >= 3
    assert [len(r.acked) for r in runs[0::2]] > killed_at, "app 1 stopped taking votes"
    assert all(r.errors == [] for r in runs[0::2]), [r.errors for r in runs[0::2]]
    # every acknowledged vote is there exactly once, after the user's earlier ones; at most one per user on
    # app 2 was sent and never acknowledged
    merged = [
        UserRun(a.name, a.acked + b.acked, a.attempted + b.attempted)
        for a, b in zip(earlier, runs, strict=True)
    ]
    assert check(db, merged, in_flight_ok=True) == []
    stored = _stored_after(db, before)
    acked = sum(len(r.acked) for r in runs)
    assert acked <= stored <= acked + len(on_two), (acked, stored)


def _stored_after(db: Database, before: int) -> int:
    with db.session() as s:
        return (s.scalar(select(func.count(Vote.id))) or 0) - before
