"""Accounts and what each may do: users with argon2 password hashes, role checks for services, login
sessions and throttles, per-user rate limits shared by every web server, and users signed in by an
authenticating proxy.

Roles, lowest first:
- ``annotator``: arena battles and votes, labelling.
- ``researcher``: also contestants, imports, snapshots and exports, training jobs.
- ``admin``: also user management.

``require_role`` is the one check every guarded service calls at its top. It reads the user's current row.
So a role change or a disabled account takes effect on the next request, not the next login.

``user_id=None`` means the local operator: the CLI, the Python API and the web app's open single-user
mode. The web app in login mode always passes the signed-in user's id, never None.

This package knows nothing about the web app or HTTP. It stores no plain passwords and never logs one.
Imports db only.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from vibestudio.accounts.counters import Counters, MemoryCounters
from vibestudio.db.models import User, utcnow
from vibestudio.db.session import Database

ROLES = ("annotator", "researcher", "admin")
RANK = {r: i for i, r in enumerate(ROLES)}
MIN_PASSWORD = 8
MAX_PASSWORD = 1024  # argon2 takes any length; this bounds the work one login attempt can cause
MAX_NAME = 64
_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@-")

_hasher = PasswordHasher()  # argon2id with the library's current (RFC 9106 low-memory) parameters
_DUMMY_HASH = _hasher.hash("not a real password, used to spend the same time on unknown names")
#: At most this many password checks hash at once (each is ~50 ms of CPU and 64 MiB): a login flood waits here
#: instead of taking every core. Unknown names hash ``_DUMMY_HASH`` through the same gate, so timing is uniform.
HASH_GATE = threading.BoundedSemaphore(2)


class AccountError(ValueError):
    """A user-management request that cannot be done (bad name, weak password, unknown user...)."""


class PermissionDenied(PermissionError):
    """The acting user's role does not allow this action, or the account is disabled or unknown."""


class RateLimited(RuntimeError):
    """Too many requests of one kind from one user; ``retry_after`` says how many seconds to wait."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass
class UserInfo:
    id: int
    name: str
    role: str
    disabled: bool
    has_password: bool
    created_at: datetime | None = None
    last_login_at: datetime | None = None


def _info(u: User) -> UserInfo:
    return UserInfo(
        u.id, u.name, u.role, bool(u.disabled), bool(u.password_hash), u.created_at, u.last_login_at
    )


# -- passwords -------------------------------------------------------------------------------------------
def hash_password(password: str) -> str:
    check_password(password)
    return _hasher.hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    """True when ``password`` matches; False for a mismatch, a malformed hash or no hash at all."""
    if not isinstance(password, str) or len(password) > MAX_PASSWORD:
        return False
    try:
        with HASH_GATE:
            return _hasher.verify(password_hash or _DUMMY_HASH, password) and password_hash is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def check_password(password: str) -> None:
    if not isinstance(password, str) or len(password) < MIN_PASSWORD:
        raise AccountError(f"the password must have at least {MIN_PASSWORD} characters")
    if len(password) > MAX_PASSWORD:
        raise AccountError(f"the password must have at most {MAX_PASSWORD} characters")


def check_name(name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise AccountError("the user name is empty")
    if len(name) > MAX_NAME or not set(name) <= _NAME_CHARS:
        raise AccountError(
            f"user name {name[:80]!r}: use up to {MAX_NAME} letters, digits and . _ @ - (no spaces)"
        )
    return name


def check_role(role: str) -> str:
    if role not in RANK:
        raise AccountError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
    return role


# -- users -------------------------------------------------------------------------------------------------
@contextmanager
def _session(where: Session | Database) -> Iterator[Session]:
    if isinstance(where, Database):
        with where.session() as s:
            yield s
    else:
        yield where


def _row(s: Session, name: str) -> User:
    u = s.scalar(select(User).where(User.name == name))
    if u is None:
        raise AccountError(f"no user named {name!r}")
    return u


def add_user(
    where: Session | Database, name: str, password: str, role: str = "annotator", by: int | None = None
) -> UserInfo:
    """Create a user who can log in. A name that exists without a password (e.g. an annotator recorded by
    name) gets the password and role instead of a second row."""
    require_role(where, by, "admin")  # role before work: no name check, no hashing for a lower role
    name, role = check_name(name), check_role(role)
    pw_hash = hash_password(password)
    with _session(where) as s:
        u = s.scalar(select(User).where(User.name == name))
        if u is not None and u.password_hash:
            raise AccountError(f"user {name!r} already exists")
        if u is None:
            u = User(name=name)
            s.add(u)
        u.role, u.password_hash, u.disabled = role, pw_hash, False
        s.flush()
        return _info(u)


def list_users(where: Session | Database, by: int | None = None) -> list[UserInfo]:
    with _session(where) as s:
        require_role(s, by, "admin")
        return [_info(u) for u in s.scalars(select(User).order_by(User.name))]


def _active_admins(s: Session) -> int:
    q = select(func.count(User.id)).where(
        User.role == "admin", User.disabled.is_(False), User.password_hash.is_not(None)
    )
    return s.scalar(q) or 0


def _keep_an_admin(s: Session, u: User) -> None:
    if u.role == "admin" and not u.disabled and u.password_hash and _active_admins(s) <= 1:
        raise AccountError(f"{u.name!r} is the last active admin; make another admin first")


def set_role(where: Session | Database, name: str, role: str, by: int | None = None) -> UserInfo:
    role = check_role(role)
    with _session(where) as s:
        require_role(s, by, "admin")
        u = _row(s, name)
        if role != "admin":
            _keep_an_admin(s, u)
        u.role = role
        return _info(u)


def set_disabled(
    where: Session | Database, name: str, disabled: bool = True, by: int | None = None
) -> UserInfo:
    """Disable (or enable again) a user: a disabled user cannot log in and every request is refused."""
    with _session(where) as s:
        require_role(s, by, "admin")
        u = _row(s, name)
        if disabled:
            _keep_an_admin(s, u)
        u.disabled = disabled
        return _info(u)


def set_password(where: Session | Database, name: str, password: str, by: int | None = None) -> UserInfo:
    """Set a new password; admins may set anyone's, every user their own. (Changing it ends the user's web
    sessions at their next request: ``accounts.sessions``.)"""
    me = require_role(where, by, "annotator")  # role before work: no hashing for a refused request
    if me is not None and me.name != name:
        require_role(where, by, "admin")
    pw_hash = hash_password(password)
    with _session(where) as s:
        u = _row(s, name)
        u.password_hash = pw_hash
        return _info(u)


def login_enabled(where: Session | Database) -> bool:
    """True when at least one enabled user has a password (the web app then asks everyone to log in)."""
    with _session(where) as s:
        q = select(User.id).where(User.password_hash.is_not(None), User.disabled.is_(False)).limit(1)
        return s.scalar(q) is not None


def authenticate(where: Session | Database, name: str, password: str) -> UserInfo | None:
    """The user when ``name`` and ``password`` match an enabled account; None otherwise.

    Unknown names cost the same hashing time as wrong passwords, so timing does not tell which names exist.
    A hash made with older parameters is upgraded on a successful login.
    """
    with _session(where) as s:
        u = s.scalar(select(User).where(User.name == (name or "").strip())) if name else None
        ok = verify_password(u.password_hash if u is not None else None, password)
        if u is None or not ok or u.disabled:
            return None
        if _hasher.check_needs_rehash(u.password_hash or ""):
            u.password_hash = _hasher.hash(password)
        u.last_login_at = utcnow()
        return _info(u)


def get_user(where: Session | Database, name: str) -> UserInfo | None:
    with _session(where) as s:
        u = s.scalar(select(User).where(User.name == name))
        return _info(u) if u is not None else None


def require_role(where: Session | Database, user_id: int | None, role: str) -> UserInfo | None:
    """Refuse (``PermissionDenied``) unless ``user_id`` is an enabled user with ``role`` or a higher one.

    ``None`` is the local operator (CLI, Python API, open single-user mode) and passes. Returns the user.
    """
    need = RANK[check_role(role)]
    if user_id is None:
        return None
    with _session(where) as s:
        u = s.get(User, user_id)
        if u is None or u.disabled:
            raise PermissionDenied("this account is disabled or does not exist")
        if RANK.get(u.role, -1) < need:
            raise PermissionDenied(f"user {u.name!r} has the role {u.role!r}; this needs {role} or higher")
        return _info(u)


# -- rate limits --------------------------------------------------------------------------------------------
class RateLimiter:
    """A token bucket per key (a user id or name): ``per_minute`` requests on average, ``burst`` at once.

    The buckets live in a shared store (``accounts.counters``): the database or Redis for a served app, so every
    app process on one database enforces one budget per user; this process's memory when no store is given (the
    Python API, unit tests). ``per_minute <= 0`` turns it off.
    """

    def __init__(
        self,
        per_minute: float,
        burst: int | None = None,
        what: str = "requests",
        store: Counters | None = None,
    ) -> None:
        self.rate = max(0.0, float(per_minute)) / 60.0
        self.burst = float(burst if burst is not None else max(1, int(per_minute)))
        self.what = what
        self.store: Counters = store if store is not None else MemoryCounters()

    def _key(self, key: object) -> str:
        return f"{self.what}:{key}"[:255]

    def check(self, key: object, now: float | None = None) -> None:
        """Take one token for ``key`` or raise ``RateLimited`` (nothing is taken then)."""
        if self.rate <= 0:
            return
        got = self.store.take(self._key(key), 1.0 / self.rate, self.burst, now)
        if not got.ok:
            raise RateLimited(
                f"too many {self.what}: wait {max(1, round(got.wait_s))} s and try again", got.wait_s
            )

    def blocked(self, key: object, now: float | None = None) -> bool:
        """True when ``key`` has no token left (takes nothing)."""
        if self.rate <= 0:
            return False
        return self.store.wait(self._key(key), 1.0 / self.rate, self.burst, now) > 1e-9

    def spend(self, key: object, now: float | None = None) -> None:
        """Take a token if there is one (for counting failures; never raises)."""
        if self.rate <= 0:
            return
        self.store.spend(self._key(key), 1.0 / self.rate, self.burst, now)
