"""Shared counters for rate limits and login throttles: one budget per key for every app process.

Two kinds of state, both keyed by a string (``votes:12``, ``login-client:203.0.113.7``...):
- **A token bucket** kept as GCRA (the generic cell rate algorithm). It stores one number per key, the
  *theoretical arrival time* ``tat``. Take a key with rate ``1/T`` per second and ``burst`` tokens. It may
  take a token at ``now`` when ``max(tat, now) + T - now <= burst * T``. Taking one sets
  ``tat = max(tat, now) + T``. That is exactly a token bucket, stored as one value:
  ``tokens = (burst * T - max(0, tat - now)) / T``. So one conditional update decides atomically. Two
  processes taking the last token at once get one yes and one no.
- **A failure streak**: a count and the time of the last failure, cleared by a success. It is the login
  throttle's delay per name and address.

Stores:
- ``DatabaseCounters``, the default on SQLite and PostgreSQL alike: the ``rate_limits`` table. It does an
  upsert with a condition, under PostgreSQL's row lock or SQLite's write lock.
- ``RedisCounters``, when ``VIBESTUDIO_REDIS_URL`` is set: small Lua scripts, atomic in Redis.
- ``MemoryCounters``: one process only, for the Python API's default and the unit tests.

**Clocks.** Times come from the store, not the app host, when the store has a clock. That is PostgreSQL's
``clock_timestamp()`` or Redis' ``TIME``. So two app hosts whose clocks disagree still share one budget.
SQLite lives on one host, whose clock every process shares. Callers may pass ``now`` (tests do).

This module knows nothing about users or HTTP. ``accounts.RateLimiter`` and ``accounts.throttle`` use it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import delete, select, text

from vibestudio.db.models import RateLimit
from vibestudio.db.session import Database

#: A streak record is forgotten this long after its last failure (a guesser idle for a day starts again).
STREAK_TTL_S = 86_400.0
_GC_EVERY_S = 60.0  # how often one store deletes expired rows


@dataclass(frozen=True)
class Take:
    """The answer of ``take``: whether a token was taken, and if not, how long until one will be there."""

    ok: bool
    wait_s: float = 0.0


class Counters(Protocol):
    """What the limiters need from a store (see the module docstring)."""

    def take(self, key: str, interval_s: float, burst: float, now: float | None = None) -> Take: ...

    def spend(self, key: str, interval_s: float, burst: float, now: float | None = None) -> None: ...

    def wait(self, key: str, interval_s: float, burst: float, now: float | None = None) -> float: ...

    def fail(self, key: str, now: float | None = None) -> tuple[int, float]: ...

    def streak(self, key: str) -> tuple[int, float]: ...

    def clear(self, key: str) -> None: ...


def _decide(tat: float | None, now: float, interval_s: float, burst: float) -> tuple[float, float]:
    """(the new ``tat`` if a token is taken, seconds past the allowance: > 0 = refused, wait that long)."""
    new = max(tat if tat is not None else now, now) + interval_s
    return new, (new - now) - burst * interval_s


def _wait_for(tat: float | None, now: float, interval_s: float, burst: float) -> float:
    """Seconds before one token is there (0 = now)."""
    return max(0.0, _decide(tat, now, interval_s, burst)[1])


class MemoryCounters:
    """The counters in this process's memory (``MAX_KEYS`` at most; the oldest are forgotten first)."""

    MAX_KEYS = 50_000

    def __init__(self) -> None:
        self._tat: dict[str, float] = {}
        self._streak: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _now(now: float | None) -> float:
        return time.time() if now is None else now

    def _bound(self) -> None:
        for book in (self._tat, self._streak):
            while len(book) > self.MAX_KEYS:
                book.pop(next(iter(book)))

    def take(self, key: str, interval_s: float, burst: float, now: float | None = None) -> Take:
        now = self._now(now)
        with self._lock:
            new, over = _decide(self._tat.get(key), now, interval_s, burst)
            if over > 1e-9:
                return Take(False, over)
            self._tat.pop(key, None)
            self._tat[key] = new
            self._bound()
            return Take(True)

    def spend(self, key: str, interval_s: float, burst: float, now: float | None = None) -> None:
        now = self._now(now)
        with self._lock:
            new, _ = _decide(self._tat.pop(key, None), now, interval_s, burst)
            self._tat[key] = min(new, now + burst * interval_s)  # the bucket never goes below empty
            self._bound()

    def wait(self, key: str, interval_s: float, burst: float, now: float | None = None) -> float:
        with self._lock:
            return _wait_for(self._tat.get(key), self._now(now), interval_s, burst)

    def fail(self, key: str, now: float | None = None) -> tuple[int, float]:
        now = self._now(now)
        with self._lock:
            n, _ = self._streak.pop(key, (0, now))
            self._streak[key] = (n + 1, now)
            self._bound()
            return self._streak[key]

    def streak(self, key: str) -> tuple[int, float]:
        with self._lock:
            return self._streak.get(key, (0, 0.0))

    def clear(self, key: str) -> None:
        with self._lock:
            self._streak.pop(key, None)
            self._tat.pop(key, None)


class DatabaseCounters:
    """The counters in the ``rate_limits`` table: every process on the database shares them.

    ``take`` is one conditional upsert (``INSERT ... ON CONFLICT DO UPDATE ... WHERE`` the token is there,
    ``RETURNING``): no row back means refused. Both SQLite and PostgreSQL run that statement atomically per key
    (PostgreSQL locks the row; SQLite holds its write lock), so concurrent takers never overdraw a bucket."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._pg = not db.is_sqlite
        self._next_gc = 0.0

    def _clock(self, conn: Any, now: float | None) -> float:
        if now is not None:
            return now
        if self._pg:  # the database's clock: app hosts whose clocks disagree still share one budget
            return float(conn.execute(text("SELECT extract(epoch from clock_timestamp())")).scalar_one())
        return time.time()

    def _gc(self, conn: Any, now: float) -> None:
        if time.monotonic() < self._next_gc:
            return
        self._next_gc = time.monotonic() + _GC_EVERY_S
        conn.execute(delete(RateLimit).where(RateLimit.expires_at < now))

    _TAKE = """
        INSERT INTO rate_limits (key, tat, n, last, expires_at) VALUES (:key, :first, 0, 0, :first)
        ON CONFLICT (key) DO UPDATE SET
            tat = (CASE WHEN rate_limits.tat > :now THEN rate_limits.tat ELSE :now END) + :t,
            expires_at = (CASE WHEN rate_limits.tat > :now THEN rate_limits.tat ELSE :now END) + :t
        WHERE (CASE WHEN rate_limits.tat > :now THEN rate_limits.tat ELSE :now END) + :t - :now <= :cap
        RETURNING tat
    """
    _SPEND = """
        INSERT INTO rate_limits (key, tat, n, last, expires_at) VALUES (:key, :first, 0, 0, :first)
        ON CONFLICT (key) DO UPDATE SET
            tat = CASE WHEN (CASE WHEN rate_limits.tat > :now THEN rate_limits.tat ELSE :now END) + :t > :full
                  THEN :full ELSE (CASE WHEN rate_limits.tat > :now THEN rate_limits.tat ELSE :now END) + :t END,
            expires_at = :full
    """
    _FAIL = """
        INSERT INTO rate_limits (key, tat, n, last, expires_at) VALUES (:key, 0, 1, :now, :expires)
        ON CONFLICT (key) DO UPDATE SET n = rate_limits.n + 1, last = :now, expires_at = :expires
        RETURNING n, last
    """

    def take(self, key: str, interval_s: float, burst: float, now: float | None = None) -> Take:
        with self.db.engine.begin() as conn:
            now = self._clock(conn, now)
            self._gc(conn, now)
            args = {"key": key, "now": now, "t": interval_s, "cap": burst * interval_s + 1e-9}
            if burst * interval_s + 1e-9 < interval_s:  # a bucket that holds less than one token
                return Take(False, interval_s)
            got = conn.execute(text(self._TAKE), {**args, "first": now + interval_s}).first()
            if got is not None:
                return Take(True)
            tat = conn.execute(select(RateLimit.tat).where(RateLimit.key == key)).scalar()
            return Take(False, max(1e-3, _wait_for(tat, now, interval_s, burst)))

    def spend(self, key: str, interval_s: float, burst: float, now: float | None = None) -> None:
        with self.db.engine.begin() as conn:
            now = self._clock(conn, now)
            full = now + burst * interval_s
            conn.execute(
                text(self._SPEND),
                {"key": key, "now": now, "t": interval_s, "full": full, "first": min(now + interval_s, full)},
            )

    def wait(self, key: str, interval_s: float, burst: float, now: float | None = None) -> float:
        with self.db.engine.connect() as conn:
            now = self._clock(conn, now)
            tat = conn.execute(select(RateLimit.tat).where(RateLimit.key == key)).scalar()
            return _wait_for(tat, now, interval_s, burst)

    def fail(self, key: str, now: float | None = None) -> tuple[int, float]:
        with self.db.engine.begin() as conn:
            now = self._clock(conn, now)
            row = conn.execute(
                text(self._FAIL), {"key": key, "now": now, "expires": now + STREAK_TTL_S}
            ).one()
            return int(row[0]), float(row[1])

    def streak(self, key: str) -> tuple[int, float]:
        with self.db.engine.connect() as conn:
            row = conn.execute(select(RateLimit.n, RateLimit.last).where(RateLimit.key == key)).first()
            return (int(row[0]), float(row[1])) if row is not None else (0, 0.0)

    def clear(self, key: str) -> None:
        with self.db.engine.begin() as conn:
            conn.execute(delete(RateLimit).where(RateLimit.key == key))


# -- Redis ----------------------------------------------------------------------------------------------------
_LUA_NOW = """
local now
if ARGV[1] ~= '' then now = tonumber(ARGV[1]) else
  local t = redis.call('TIME'); now = tonumber(t[1]) + tonumber(t[2]) / 1000000 end
"""
_LUA_TAKE = (
    _LUA_NOW
    + """
local t, cap = tonumber(ARGV[2]), tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local new = tat + t
if new - now > cap + 1e-9 then return {0, tostring(new - now - cap)} end
redis.call('SET', KEYS[1], string.format('%.6f', new), 'PX', math.ceil((new - now) * 1000) + 1000)
return {1, '0'}
"""
)
_LUA_SPEND = (
    _LUA_NOW
    + """
local t, cap = tonumber(ARGV[2]), tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local new = math.min(tat + t, now + cap)
redis.call('SET', KEYS[1], string.format('%.6f', new), 'PX', math.ceil((new - now) * 1000) + 1000)
return 1
"""
)
_LUA_WAIT = (
    _LUA_NOW
    + """
local t, cap = tonumber(ARGV[2]), tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
return tostring(math.max(0, tat + t - now - cap))
"""
)
_LUA_FAIL = (
    _LUA_NOW
    + """
local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
redis.call('HSET', KEYS[1], 'last', string.format('%.6f', now))
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
return {n, string.format('%.6f', now)}
"""
)


class RedisCounters:
    """The counters in Redis (``VIBESTUDIO_REDIS_URL``), each operation one Lua script run atomically by the
    server, on the server's clock. Needs the ``redis`` package (``pip install 'vibe-studio[redis]'``)."""

    PREFIX = "vibestudio:"

    def __init__(self, url: str) -> None:
        try:
            import redis
        except ImportError as exc:  # the optional extra is missing: say how to get it
            raise RuntimeError(
                "VIBESTUDIO_REDIS_URL is set but the `redis` package is not installed: "
                "pip install 'vibe-studio[redis]' (or unset VIBESTUDIO_REDIS_URL to keep the counters in the database)"
            ) from exc
        self.client = redis.Redis.from_url(url, socket_timeout=5, decode_responses=True)
        self._take = self.client.register_script(_LUA_TAKE)
        self._spend = self.client.register_script(_LUA_SPEND)
        self._wait = self.client.register_script(_LUA_WAIT)
        self._fail = self.client.register_script(_LUA_FAIL)

    def _k(self, key: str) -> str:
        return self.PREFIX + key

    @staticmethod
    def _n(now: float | None) -> str:
        return "" if now is None else repr(float(now))

    def take(self, key: str, interval_s: float, burst: float, now: float | None = None) -> Take:
        ok, over = self._take(keys=[self._k(key)], args=[self._n(now), interval_s, burst * interval_s])
        return Take(True) if int(ok) else Take(False, max(1e-3, float(over)))

    def spend(self, key: str, interval_s: float, burst: float, now: float | None = None) -> None:
        self._spend(keys=[self._k(key)], args=[self._n(now), interval_s, burst * interval_s])

    def wait(self, key: str, interval_s: float, burst: float, now: float | None = None) -> float:
        return float(self._wait(keys=[self._k(key)], args=[self._n(now), interval_s, burst * interval_s]))

    def fail(self, key: str, now: float | None = None) -> tuple[int, float]:
        n, last = self._fail(keys=[self._k(key) + ":streak"], args=[self._n(now), int(STREAK_TTL_S)])
        return int(n), float(last)

    def streak(self, key: str) -> tuple[int, float]:
        got = self.client.hgetall(self._k(key) + ":streak")
        return (int(got["n"]), float(got["last"])) if got else (0, 0.0)

    def clear(self, key: str) -> None:
        self.client.delete(self._k(key), self._k(key) + ":streak")


def counters_for(db: Database | None, redis_url: str | None = None) -> Counters:
    """The store the settings ask for: Redis when a URL is given, else the database, else this process."""
    if redis_url:
        return RedisCounters(redis_url)
    if db is not None:
        return DatabaseCounters(db)
    return MemoryCounters()
