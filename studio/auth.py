"""Who is asking: login for the web app and its HTTP API, and the map from a request to a user id.

Modes, from ``VIBESTUDIO_AUTH``:

- ``auto`` (default): login is required as soon as one enabled user has a password (``vibestudio users add``);
  with no such user the app runs in the open single-user mode, where everyone is the local operator.
- ``on``: login is always required; the server refuses to start while no enabled user has a password.
- ``off``: never ask (a trusted network, or a proxy in front that authenticates).

The mode is decided when the server starts. The open mode binds to loopback only: serving it on another
interface needs an explicit ``VIBESTUDIO_AUTH=off``.

Gradio does the login itself (``launch(auth=...)``, a session cookie for browsers, ``gradio_client``'s
``auth=(name, password)`` for scripts); this module checks the password with ``accounts`` and turns
``gr.Request.username`` into the user id that handlers pass to the services, which do the role checks.
Every request re-reads the user, so disabling an account stops it at its next action. Imports no gradio.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from accounts import PermissionDenied, RateLimiter, authenticate, get_user, login_enabled
from db.session import Database

log = logging.getLogger(__name__)
MODES = ("auto", "on", "off")


class AuthConfigError(RuntimeError):
    """The login settings do not allow serving (no users in ``on`` mode, open mode on a public interface)."""


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def login_required(mode: str, db: Database) -> bool:
    """Whether the web app asks for a login, for ``mode`` and the users in ``db``."""
    if mode not in MODES:
        raise AuthConfigError(f"VIBESTUDIO_AUTH={mode!r}: expected one of {', '.join(MODES)}")
    return mode != "off" and login_enabled(db)


def check_serving(mode: str, required: bool, host: str) -> None:
    """Refuse to serve when ``on`` has nobody to log in, or the open mode would face a non-loopback interface."""
    if mode == "on" and not required:
        raise AuthConfigError(
            "VIBESTUDIO_AUTH=on but no enabled user has a password: create one with "
            "`vibestudio users add NAME --role admin`"
        )
    if required or is_loopback(host):
        return
    if mode == "off":
        log.warning("serving WITHOUT login on %s (VIBESTUDIO_AUTH=off): everyone is an admin", host)
        return
    raise AuthConfigError(
        f"refusing to serve the open single-user mode on {host}: create an admin with "
        "`vibestudio users add NAME --role admin` (login is then required), or set VIBESTUDIO_AUTH=off "
        "if this network is trusted"
    )


@dataclass
class Access:
    """Login state of one server: whether login is on, and per-user rate limits for costly actions."""

    db: Database | None = None
    required: bool = False
    prompts: RateLimiter = field(default_factory=lambda: RateLimiter(0, what="prompts"))
    votes: RateLimiter = field(default_factory=lambda: RateLimiter(0, what="votes"))
    logins: RateLimiter = field(default_factory=lambda: RateLimiter(0, what="failed logins"))

    @classmethod
    def from_settings(cls, settings: Any, db: Database) -> Access:
        return cls(
            db,
            login_required(settings.auth, db),
            RateLimiter(settings.prompts_per_minute, what="prompts"),
            RateLimiter(settings.votes_per_minute, what="votes"),
            RateLimiter(settings.failed_logins_per_minute, what="failed logins"),
        )

    # -- login ---------------------------------------------------------------------------------------------
    def check_login(self, name: str, password: str) -> bool:
        """Gradio's login check. A name with too many recent failures is refused before any hashing."""
        if self.db is None:
            return False
        key = (name or "").strip().lower()[:128]
        if self.logins.blocked(key):
            log.warning("login throttled for %r after repeated failures", key[:64])
            return False
        if authenticate(self.db, name, password) is None:
            self.logins.spend(key)
            log.info("failed login for %r", key[:64])
            return False
        return True

    def gradio_auth(self) -> Callable[[str, str], Any] | None:
        """An async login check for ``launch(auth=...)`` (Gradio awaits it; hashing runs in a worker thread,
        not on the event loop), or None in the open mode."""
        if not self.required:
            return None

        async def check(name: str, password: str) -> bool:
            import anyio.to_thread

            return await anyio.to_thread.run_sync(self.check_login, name, password)

        return check

    # -- requests ------------------------------------------------------------------------------------------
    def user_id(self, request: Any) -> int | None:
        """The acting user's id for a request; None in the open mode (the local operator).

        Raises ``PermissionDenied`` when login is on and the request has no enabled user behind it.
        """
        if not self.required:
            return None
        name = getattr(request, "username", None)
        user = get_user(self.db, name) if (name and self.db is not None) else None
        if user is None or user.disabled or not user.has_password:
            raise PermissionDenied("log in first: this account is unknown or disabled")
        return user.id

    def limit(self, kind: str, user_id: int | None) -> None:
        """Take one ``prompts`` or ``votes`` token for the user (open mode: the local operator is not limited)."""
        if user_id is None:
            return
        {"prompts": self.prompts, "votes": self.votes}[kind].check(user_id)
