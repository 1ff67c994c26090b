"""Login throttles: slow a guesser down without locking the real owner out.

Two rules, both checked *before* any password hashing (a refused try costs a dictionary look-up, not an argon2
hash):

- **Per name and client address**: the first ``free`` failures of one name from one address cost nothing; each
  further failure doubles the wait before that address may try that name again (``base_s``, ``2 * base_s``...,
  at most ``max_s``). A success clears it. The owner signing in from their own address is not slowed by a guesser
  elsewhere: the guesser's failures count against the guesser's address only.
- **Per client address, across names**: at most ``per_minute`` failures a minute from one address, whatever the
  names (a token bucket), so spraying one password over many names is slowed as much as guessing one name.

What this does not stop: many addresses guessing one name each slowly (each address pays its own delays, and
every try that is checked costs the server one hash: ``accounts.HASH_GATE`` bounds how many run at once). In
memory and per process, like ``accounts.RateLimiter``; a restart forgets it. The client address is the one the
web server reports (behind a reverse proxy on the same host, uvicorn reads ``X-Forwarded-For`` from loopback).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

MAX_KEYS = 50_000  # most (name, client) records kept; the oldest are forgotten first


@dataclass
class _Record:
    failures: int
    last: float


class LoginThrottle:
    def __init__(
        self,
        per_minute: float = 10,
        free: int = 3,
        base_s: float = 2.0,
        max_s: float = 900.0,
        burst: float | None = None,
    ) -> None:
        self.free, self.base_s, self.max_s = free, base_s, max_s
        self.rate = max(0.0, float(per_minute)) / 60.0
        self.burst = max(1.0, float(burst if burst is not None else per_minute))
        self._pairs: OrderedDict[tuple[str, str], _Record] = OrderedDict()
        self._clients: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(name: str, client: str) -> tuple[str, str]:
        return ((name or "").strip().lower()[:128], (client or "?")[:64])

    def _pair_wait(self, key: tuple[str, str], now: float) -> float:
        r = self._pairs.get(key)
        if r is None or r.failures < self.free:
            return 0.0
        delay = min(self.max_s, self.base_s * 2 ** (r.failures - self.free))
        return max(0.0, r.last + delay - now)

    def _tokens(self, client: str, now: float) -> float:
        tokens, last = self._clients.get(client, (self.burst, now))
        return min(self.burst, tokens + (now - last) * self.rate)

    def wait_s(self, name: str, client: str, now: float | None = None) -> float:
        """Seconds before a try of ``name`` from ``client`` will be checked; 0 = check it now."""
        now = time.monotonic() if now is None else now
        key = self._key(name, client)
        with self._lock:
            wait = self._pair_wait(key, now)
            if self.rate > 0 and self._tokens(key[1], now) < 1.0:
                wait = max(wait, (1.0 - self._tokens(key[1], now)) / self.rate)
            return wait

    def failed(self, name: str, client: str, now: float | None = None) -> None:
        """Count a failed try (a wrong password or an unknown name)."""
        now = time.monotonic() if now is None else now
        key = self._key(name, client)
        with self._lock:
            r = self._pairs.pop(key, None) or _Record(0, now)
            self._pairs[key] = _Record(r.failures + 1, now)
            if self.rate > 0:
                left = max(0.0, self._tokens(key[1], now) - 1.0)
                self._clients.pop(key[1], None)  # re-inserted last: the oldest entries are forgotten first
                self._clients[key[1]] = (left, now)
            for book in (self._pairs, self._clients):
                while len(book) > MAX_KEYS:
                    book.popitem(last=False)

    def succeeded(self, name: str, client: str) -> None:
        """A correct password: that name's delay from that address ends (the address's budget stays spent)."""
        with self._lock:
            self._pairs.pop(self._key(name, client), None)
