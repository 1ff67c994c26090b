"""Votes under load and under a crash: nothing acknowledged is lost, nothing is stored twice.

- Concurrent votes on one battle turn (threads, SQLite and PostgreSQL): exactly one is stored, the others get a
  clear "already has a vote"; the unique constraint, not luck, decides.
- A small version of ``benchmarks/load_votes.py``: 5 signed-in users x 3 battles through the HTTP API on the
  real llama.cpp engine; every acknowledged vote is stored exactly once, under the right user.
- SIGKILL in the middle of a vote burst, then a restart on the same files: every acknowledged vote is there
  (at most one more per user, sent but never acknowledged), SQLite's integrity check is clean and the app
  takes votes again.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from sqlalchemy import func, select

from benchmarks.load_votes import UserRun, check, prepare, start_server, stop_server, vote_loop
from tests.helpers.postgres import PG_URL, pg_schema
from tests.helpers.servers import free_port
from vibestudio.arena.battles import ArenaService, BattleError
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.backup import integrity_check
from vibestudio.db.models import Battle, Turn, Vote
from vibestudio.db.session import Database


def test_concurrent_votes_on_one_turn_store_exactly_one(db):
    svc = ArenaService(db)
    with db.session() as s:
        a = register(s, ContestantSpec("c-a"))
        b = register(s, ContestantSpec("c-b"))
    view = svc.start_battle(pair=(a, b))
    with db.session() as s:  # a stored turn, without spending time on generation
        s.add(Turn(battle_id=view.battle_id, idx=0, user_msg="hi", answer_a="A", answer_b="B"))
    results: list[str] = []
    barrier = threading.Barrier(8)

    def vote(choice: str) -> None:
        barrier.wait()
        try:
            svc.record_vote(view.battle_id, choice)
            results.append("stored")
        except BattleError as exc:
            results.append(str(exc))

    threads = [threading.Thread(target=vote, args=(c,)) for c in ["left", "right"] * 4]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results.count("stored") == 1, results
    assert all(r == "stored" or "already has a vote" in r for r in results), results
    with db.session() as s:
        assert s.scalar(select(func.count(Vote.id))) == 1


def test_votes_belong_to_the_battles_user(db):
    from vibestudio.accounts import add_user

    svc = ArenaService(db)
    ann = add_user(db, "ann", "a long password", "annotator").id
    bob = add_user(db, "bob", "a long password", "annotator").id
    with db.session() as s:
        pair = (register(s, ContestantSpec("o-a")), register(s, ContestantSpec("o-b")))
    view = svc.start_battle(user_id=ann, pair=pair)
    with db.session() as s:
        s.add(Turn(battle_id=view.battle_id, idx=0, user_msg="hi", answer_a="A", answer_b="B"))
    with pytest.raises(BattleError, match="belongs to another user"):
        svc.record_vote(view.battle_id, "left", user_id=bob)
    svc.record_vote(view.battle_id, "left", user_id=ann)
    with db.session() as s:
        assert s.scalars(select(Vote.user_id)).all() == [ann]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_small_load_every_acknowledged_vote_stored_once(tmp_path, backend):
    home = tmp_path / "home"
    home.mkdir()
    if backend == "postgres":
        if not PG_URL:
            pytest.skip("VIBESTUDIO_TEST_PG_URL not set")
        with pg_schema(PG_URL) as url:
            _small_load(home, url)
    else:
        _small_load(home, f"sqlite:///{home / 'studio.sqlite'}")


def _small_load(home, url: str) -> None:
    names = prepare(home, 5, url)
    port = free_port()
    proc = start_server(home, port, {"VIBESTUDIO_MAX_NEW_TOKENS": "2", "VIBESTUDIO_DATABASE_URL": url})
    try:
        runs = [UserRun(n) for n in names]
        threads = [
            threading.Thread(target=vote_loop, args=(f"http://127.0.0.1:{port}", r, 3, i))
            for i, r in enumerate(runs)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
    finally:
        stop_server(proc)
    db = Database(url)
    assert [r.errors for r in runs] == [[]] * 5
    assert sum(len(r.acked) for r in runs) == 15
    assert check(db, runs) == []
    with db.session() as s:
        assert s.scalar(select(func.count(Vote.id))) == 15
        assert s.scalar(select(func.count(Battle.id)).where(Battle.user_id.is_(None))) == 0
    db.dispose()


@pytest.mark.slow
def test_sigkill_mid_vote_burst_loses_no_acknowledged_vote(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    names = prepare(home, 3)
    url_db = f"sqlite:///{home / 'studio.sqlite'}"
    port = free_port()
    proc = start_server(home, port, {"VIBESTUDIO_MAX_NEW_TOKENS": "2"})
    runs = [UserRun(n) for n in names]
    stop = threading.Event()
    threads = [
        threading.Thread(target=vote_loop, args=(f"http://127.0.0.1:{port}", r, 1000, i, stop), daemon=True)
        for i, r in enumerate(runs)
    ]
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + 300
        while sum(len(r.acked) for r in runs) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)  # no shutdown hooks, no flush: the process is gone
        stop.set()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    for t in threads:
        t.join(60)
    acked = sum(len(r.acked) for r in runs)
    assert acked >= 6, [r.errors for r in runs]

    assert integrity_check(url_db) == "ok"
    db = Database(url_db)
    assert check(db, runs, in_flight_ok=True) == []

    port2 = free_port()
    proc2 = start_server(home, port2, {"VIBESTUDIO_MAX_NEW_TOKENS": "2"})
    try:
        after = UserRun(names[0])
        vote_loop(f"http://127.0.0.1:{port2}", after, 1)
        assert after.errors == [] and len(after.acked) == 1
    finally:
        stop_server(proc2)
    stored = check_stored_total(db)
    assert acked + 1 <= stored <= acked + 1 + len(runs)
    assert integrity_check(url_db) == "ok"
    db.dispose()


def check_stored_total(db: Database) -> int:
    with db.session() as s:
        return s.scalar(select(func.count(Vote.id))) or 0
