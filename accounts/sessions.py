"""Login sessions that expire and end when the password changes.

A session is the random token the web server gives a browser (or a script) at login. The book records, per
token:
- the user name;
- when it was issued;
- a *fingerprint* of the password it was issued under (a hash of the stored hash, never the password).

A token is valid while it is younger than ``hours`` and the user's fingerprint is unchanged. A password
change or reset (``accounts.set_password``) gives a new hash. That ends every session of the user at its
next request. A disabled or deleted user has no fingerprint at all.

With a database (a served app), the book is the ``web_sessions`` table. It holds the SHA-256 of each
token, never the token. Every app process on the database accepts a session any of them issued. So a user
the load balancer moves, or whose process restarted, stays signed in. Signing out or a password change
ends the session everywhere. Without a database (the Python API, unit tests) the book is in memory.

Ages are measured on the app host's clock. Hosts whose clocks differ by ``s`` seconds differ by ``s`` on
when a session expires. Imports no web framework; ``studio.auth`` applies it to requests.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from vibestudio.db.models import User, WebSession
from vibestudio.db.session import Database

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


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


class SessionBook:
    """The sessions: in ``db``'s ``web_sessions`` table when given, else in this process's memory."""

    def __init__(self, hours: float = 12.0, db: Database | None = None) -> None:
        self.max_age_s = max(0.0, float(hours)) * 3600.0
        self.db = db
        self._book: OrderedDict[str, SessionRecord] = OrderedDict()
        self._lock = threading.Lock()
        self._next_prune = 0.0

    def issue(self, token: str, name: str, fp: str | None, now: float | None = None) -> None:
        """Record a token given at login (a user without a fingerprint gets no session)."""
        if not token or fp is None:
            return
        now = time.time() if now is None else now
        if self.db is not None:
            with self.db.session() as s:
                s.merge(WebSession(token_hash=token_hash(token), user_name=name, issued=now, fingerprint=fp))
                self._prune(s, now)
            return
        with self._lock:
            self._book[token] = SessionRecord(name, now, fp)
            while len(self._book) > MAX_SESSIONS:
                self._book.popitem(last=False)

    def _prune(self, s: Session, now: float) -> None:
        """Delete expired sessions now and then (each is refused anyway; this keeps the table small)."""
        if self.max_age_s <= 0 or time.monotonic() < self._next_prune:
            return
        self._next_prune = time.monotonic() + 300
        s.execute(delete(WebSession).where(WebSession.issued < now - self.max_age_s))

    def get(self, token: str) -> SessionRecord | None:
        if self.db is not None:
            with self.db.session() as s:
                row = s.get(WebSession, token_hash(token))
                return SessionRecord(row.user_name, row.issued, row.fingerprint) if row is not None else None
        with self._lock:
            return self._book.get(token)

    def valid(
        self,
        token: str,
        current_fp: str | None,
        now: float | None = None,
        record: SessionRecord | None = None,
    ) -> bool:
        """Whether ``token`` is a recorded session, not expired, issued under ``current_fp``. An invalid one is
        forgotten (it never becomes valid again). ``record``: the token's record, when the caller has read it."""
        now = time.time() if now is None else now
        r = record if record is not None else self.get(token)
        ok = (
            r is not None
            and current_fp is not None
            and r.fingerprint == current_fp
            and (self.max_age_s <= 0 or now - r.issued < self.max_age_s)
        )
        if not ok:
            self.end(token)
        return ok

    def end(self, token: str) -> None:
        if self.db is not None:
            with self.db.session() as s:
                s.execute(delete(WebSession).where(WebSession.token_hash == token_hash(token)))
            return
        with self._lock:
            self._book.pop(token, None)

    def end_user(self, name: str) -> None:
        """End every session of ``name`` (signing out signs out all of that user's sessions, as Gradio does)."""
        if self.db is not None:
            with self.db.session() as s:
                s.execute(delete(WebSession).where(WebSession.user_name == name))
            return
        with self._lock:
            for t in [t for t, r in self._book.items() if r.name == name]:
                self._book.pop(t, None)
