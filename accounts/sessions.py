"""Login sessions that expire and end when the password changes.

A session is the random token the web server gives a browser (or a script) at login. The book records, per token,
the user name, when it was issued and a *fingerprint* of the password it was issued under (a hash of the stored
password hash, never the password). A token is valid while it is younger than ``hours`` and the user's current
fingerprint is the one recorded: a password change or reset (``accounts.set_password``) gives a new hash and so
ends every session of that user at its next request; a disabled or deleted user has no fingerprint at all.

In memory and per process, like the web server's own token table: a restart ends every session. Imports no web
framework; ``studio.auth`` applies it to requests.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from db.models import User
from db.session import Database

MAX_SESSIONS = 100_000


def fingerprint(where: Session | Database, name: str) -> str | None:
    """The current password fingerprint of ``name``; None for an unknown, disabled or password-less user."""
    if isinstance(where, Database):
        with where.session() as s:
            return fingerprint(s, name)
    u = where.scalar(select(User).where(User.name == name))
    if u is None or u.disabled or not u.password_hash:
        return None
    return hashlib.sha256(u.password_hash.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class SessionRecord:
    name: str
    issued: float
    fingerprint: str


class SessionBook:
    def __init__(self, hours: float = 12.0) -> None:
        self.max_age_s = max(0.0, float(hours)) * 3600.0
        self._book: OrderedDict[str, SessionRecord] = OrderedDict()
        self._lock = threading.Lock()

    def issue(self, token: str, name: str, fp: str | None, now: float | None = None) -> None:
        """Record a token given at login (a user without a fingerprint gets no session)."""
        if not token or fp is None:
            return
        with self._lock:
            self._book[token] = SessionRecord(name, time.monotonic() if now is None else now, fp)
            while len(self._book) > MAX_SESSIONS:
                self._book.popitem(last=False)

    def get(self, token: str) -> SessionRecord | None:
        with self._lock:
            return self._book.get(token)

    def valid(self, token: str, current_fp: str | None, now: float | None = None) -> bool:
        """Whether ``token`` is a recorded session, not expired, issued under ``current_fp``. An invalid one is
        forgotten (it never becomes valid again)."""
        now = time.monotonic() if now is None else now
        with self._lock:
            r = self._book.get(token)
            ok = (
                r is not None
                and current_fp is not None
                and r.fingerprint == current_fp
                and (self.max_age_s <= 0 or now - r.issued < self.max_age_s)
            )
            if not ok:
                self._book.pop(token, None)
            return ok

    def end(self, token: str) -> None:
        with self._lock:
            self._book.pop(token, None)
