"""The shared counters behind rate limits and login throttles (``accounts.counters``), on every store: this
process's memory, the database (SQLite, and PostgreSQL with ``-m postgres``) and Redis (when the ``redis`` package
is installed and a server answers at ``VIBESTUDIO_TEST_REDIS_URL``, default 127.0.0.1:6379)."""

from __future__ import annotations

import os
import threading
import uuid

import pytest

from vibestudio.accounts import RateLimited, RateLimiter
from vibestudio.accounts.counters import DatabaseCounters, MemoryCounters, RedisCounters, counters_for
from vibestudio.accounts.throttle import LoginThrottle
from vibestudio.db.session import Database

REDIS_URL = os.environ.get("VIBESTUDIO_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def _redis():
    pytest.importorskip("redis")
    store = RedisCounters(REDIS_URL)
    try:
        store.client.ping()
    except Exception as exc:  # noqa: BLE001 - no server here: the Redis cases skip
        pytest.skip(f"no Redis at {REDIS_URL}: {exc}")
    return store


@pytest.fixture(params=["memory", "database", "redis"])
def store(request, db):
    if request.param == "memory":
        return MemoryCounters()
    if request.param == "database":
        return DatabaseCounters(db)
    return _redis()


def _key() -> str:
    return f"test:{uuid.uuid4().hex[:10]}"  # Redis is shared between runs: every test its own keys


def test_a_bucket_gives_its_burst_then_refuses_then_refills(store):
    k = _key()
    assert [store.take(k, 1.0, 3, now=100.0).ok for _ in range(4)] == [True, True, True, False]
    refused = store.take(k, 1.0, 3, now=100.0)
    assert not refused.ok and 0.9 <= refused.wait_s <= 1.0
    assert store.take(_key(), 1.0, 3, now=100.0).ok  # another key has its own bucket
    assert store.take(k, 1.0, 3, now=101.0).ok  # one token back after one interval
    assert not store.take(k, 1.0, 3, now=101.0).ok
    assert store.wait(k, 1.0, 3, now=101.5) == pytest.approx(0.5, abs=1e-3)


def test_spending_never_digs_below_empty(store):
    k = _key()
    for _ in range(50):
        store.spend(k, 10.0, 5, now=200.0)
    # fifty failures with a burst of five: one interval until the next token, not 46
    assert store.wait(k, 10.0, 5, now=200.0) == pytest.approx(10.0, abs=1e-3)
    assert store.take(k, 10.0, 5, now=210.0).ok


def test_a_failure_streak_counts_and_clears(store):
    k = _key()
    assert store.streak(k) == (0, 0.0)
    store.fail(k, now=10.0)
    assert store.fail(k, now=12.5) == (2, 12.5)
    assert store.streak(k) == (2, 12.5)
    store.clear(k)
    assert store.streak(k) == (0, 0.0)


def test_the_store_clock_is_used_when_no_time_is_given(store):
    k = _key()
    assert store.take(k, 3600.0, 1).ok
    refused = store.take(k, 3600.0, 1)
    assert not refused.ok and 3500 < refused.wait_s <= 3600


def test_racing_processes_never_overdraw_one_budget(db, tmp_path):
    """Eight threads, each with its own engine (as separate processes have), take 40 tokens from a bucket of 10
    that does not refill during the test: exactly 10 are given, on SQLite and PostgreSQL."""
    k = _key()
    got: list[bool] = []
    barrier = threading.Barrier(8)

    def worker() -> None:
        own = Database(db.url)
        store = DatabaseCounters(own)
        barrier.wait()
        for _ in range(5):
            got.append(store.take(k, 3600.0, 10).ok)
        own.dispose()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(got) == 40 and got.count(True) == 10


def test_racing_redis_clients_never_overdraw_one_budget():
    first = _redis()
    k = _key()
    got: list[bool] = []
    barrier = threading.Barrier(8)

    def worker() -> None:
        store = RedisCounters(REDIS_URL)
        barrier.wait()
        for _ in range(5):
            got.append(store.take(k, 3600.0, 10).ok)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert got.count(True) == 10 and len(got) == 40
    first.clear(k)


def test_limiters_on_a_shared_store_share_one_budget(db):
    """Two limiters (two app processes) on one database: one user's budget, not one each."""
    one = RateLimiter(60, burst=3, what="votes", store=DatabaseCounters(db))
    two = RateLimiter(60, burst=3, what="votes", store=DatabaseCounters(Database(db.url)))
    one.check(7, now=50.0)
    two.check(7, now=50.0)
    one.check(7, now=50.0)
    with pytest.raises(RateLimited, match="too many votes"):
        two.check(7, now=50.0)
    two.check(8, now=50.0)  # another user
    t1 = LoginThrottle(per_minute=100, free=2, base_s=30, store=DatabaseCounters(db))
    t2 = LoginThrottle(per_minute=100, free=2, base_s=30, store=DatabaseCounters(Database(db.url)))
    for _ in range(2):
        t1.failed("ann", "203.0.113.5", now=1000.0)
    assert t2.wait_s("ann", "203.0.113.5", now=1000.0) == 30.0  # the other process sees the streak
    t2.succeeded("ann", "203.0.113.5")
    assert t1.wait_s("ann", "203.0.113.5", now=1000.0) == 0.0


def test_the_settings_pick_the_store(db, monkeypatch):
    assert isinstance(counters_for(None), MemoryCounters)
    assert isinstance(counters_for(db), DatabaseCounters)
    import builtins

    real = builtins.__import__

    def no_redis(name, *a, **k):
        if name == "redis":
            raise ImportError("no redis")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_redis)
    with pytest.raises(RuntimeError, match=r"pip install 'vibe-studio\[redis\]'"):
        counters_for(db, "redis://127.0.0.1:6379/0")
