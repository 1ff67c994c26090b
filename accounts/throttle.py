"""Login throttles: slow a guesser down without locking the real owner out.

Two rules, both checked *before* any password hashing. A refused try costs a dictionary look-up, not an
argon2 hash.
- **Per name and client address.** The first ``free`` failures of one name from one address cost nothing.
  Each further failure doubles the wait before that address may try that name again: ``base_s``,
  ``2 * base_s``..., at most ``max_s``. A success clears it. The owner's own address is not slowed by a
  guesser elsewhere. The guesser's failures count against the guesser's address only.
- **Per client address, across names.** At most ``per_minute`` failures a minute from one address,
  whatever the names (a token bucket). So spraying one password over many names is slowed like guessing
  one name.

What this does not stop: many addresses each guessing one name slowly. Each address pays its own delays.
Every checked try costs the server one hash; ``accounts.HASH_GATE`` bounds how many run at once.

The records live in a shared store (``accounts.counters``: the database, or Redis), like
``accounts.RateLimiter``'s. So a guesser moved to another app process meets the same delays. With no store
given, they live in this process's memory. The client address is the one the web server reports. Behind a
reverse proxy on the same host, uvicorn reads ``X-Forwarded-For`` from loopback.
"""

from __future__ import annotations

import time

from vibestudio.accounts.counters import Counters, MemoryCounters


class LoginThrottle:
    def __init__(
        self,
        per_minute: float = 10,
        free: int = 3,
        base_s: float = 2.0,
        max_s: float = 900.0,
        burst: float | None = None,
        store: Counters | None = None,
    ) -> None:
        self.free, self.base_s, self.max_s = free, base_s, max_s
        self.rate = max(0.0, float(per_minute)) / 60.0
        self.burst = max(1.0, float(burst if burst is not None else per_minute))
        self.store: Counters = store if store is not None else MemoryCounters()

    @staticmethod
    def _keys(name: str, client: str) -> tuple[str, str]:
        """(the (name, client) streak's key, the client's bucket key)."""
        name, client = (name or "").strip().lower()[:128], (client or "?")[:64]
        return f"login-pair:{client}:{name}", f"login-client:{client}"

    def wait_s(self, name: str, client: str, now: float | None = None) -> float:
        """Seconds before a try of ``name`` from ``client`` will be checked; 0 = check it now."""
        now = time.time() if now is None else now
        pair, addr = self._keys(name, client)
        failures, last = self.store.streak(pair)
        wait = 0.0
        if failures >= self.free:
            delay = min(self.max_s, self.base_s * 2 ** (failures - self.free))
            wait = max(0.0, last + delay - now)
        if self.rate > 0:
            wait = max(wait, self.store.wait(addr, 1.0 / self.rate, self.burst, now))
        return wait

    def failed(self, name: str, client: str, now: float | None = None) -> None:
        """Count a failed try (a wrong password or an unknown name)."""
        now = time.time() if now is None else now
        pair, addr = self._keys(name, client)
        self.store.fail(pair, now)
        if self.rate > 0:
            self.store.spend(addr, 1.0 / self.rate, self.burst, now)

    def succeeded(self, name: str, client: str) -> None:
        """A correct password: that name's delay from that address ends (the address's budget stays spent)."""
        self.store.clear(self._keys(name, client)[0])
