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

Around Gradio's login, ``SessionGuard`` (an ASGI middleware) adds what Gradio lacks:

- **Throttled login** (``accounts.throttle``): the check sees the client's address and refuses, before hashing,
  a name that failed too often from that address or an address that failed too often across names.
- **Sessions that end** (``accounts.sessions``): each token Gradio issues is recorded with its time and the
  user's password fingerprint; a request whose token is older than ``VIBESTUDIO_SESSION_HOURS``, whose user's
  password changed since, or whose user is disabled reaches Gradio without its cookie (so it is not signed in),
  and the token is forgotten for good. Signing out forgets it too.
- **Cookie attributes**: Gradio sets its session cookie ``SameSite=None``; the guard rewrites it to
  ``SameSite=Lax; HttpOnly`` (plus ``Secure`` when the request came over https), so no other site's page sends it.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any

from accounts import PermissionDenied, RateLimiter, authenticate, get_user, login_enabled
from accounts.sessions import SessionBook, fingerprint
from accounts.throttle import LoginThrottle
from db.session import Database

log = logging.getLogger(__name__)
MODES = ("auto", "on", "off")
#: Per request, set by ``SessionGuard``: {"client": address} and, after a good password, {"user": name}. A dict,
#: so the login check can write into it from the worker thread Gradio may run it in.
LOGIN_CONTEXT: ContextVar[dict[str, str] | None] = ContextVar("vibestudio_login", default=None)
COOKIE_PREFIX = "access-token"  # Gradio's session cookies: access-token-<id> and access-token-unsecure-<id>


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
    """Login state of one server: whether login is on, the login throttle, the sessions, per-user rate limits."""

    db: Database | None = None
    required: bool = False
    prompts: RateLimiter = field(default_factory=lambda: RateLimiter(0, what="prompts"))
    votes: RateLimiter = field(default_factory=lambda: RateLimiter(0, what="votes"))
    throttle: LoginThrottle = field(default_factory=LoginThrottle)
    sessions: SessionBook = field(default_factory=SessionBook)

    @classmethod
    def from_settings(cls, settings: Any, db: Database) -> Access:
        return cls(
            db,
            login_required(settings.auth, db),
            RateLimiter(settings.prompts_per_minute, what="prompts"),
            RateLimiter(settings.votes_per_minute, what="votes"),
            LoginThrottle(settings.failed_logins_per_minute),
            SessionBook(settings.session_hours),
        )

    # -- login ---------------------------------------------------------------------------------------------
    def check_login(self, name: str, password: str, client: str = "?") -> bool:
        """Gradio's login check. A throttled (name, client) is refused before any hashing."""
        if self.db is None:
            return False
        wait = self.throttle.wait_s(name, client)
        if wait > 0:
            log.warning("login throttled for %r from %s (%.0f s left)", (name or "")[:64], client, wait)
            return False
        if authenticate(self.db, name, password) is None:
            self.throttle.failed(name, client)
            log.info("failed login for %r from %s", (name or "")[:64], client)
            return False
        self.throttle.succeeded(name, client)
        return True

    def gradio_auth(self) -> Callable[[str, str], Any] | None:
        """An async login check for ``launch(auth=...)`` (Gradio awaits it; hashing runs in a worker thread,
        not on the event loop), or None in the open mode."""
        if not self.required:
            return None

        async def check(name: str, password: str) -> bool:
            import anyio.to_thread

            holder = LOGIN_CONTEXT.get()
            client = holder.get("client", "?") if holder is not None else "?"
            ok = await anyio.to_thread.run_sync(self.check_login, name, password, client)
            if ok and holder is not None:
                holder["user"] = (name or "").strip()
            return ok

        return check

    def session_ok(self, token: str) -> bool:
        """Whether a session token may still act (recorded, not expired, the user's password unchanged)."""
        rec = self.sessions.get(token)
        if rec is None or self.db is None:
            return False
        return self.sessions.valid(token, fingerprint(self.db, rec.name))

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


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]
]
_PUBLIC = ("/assets/", "/static/", "/favicon", "/manifest.json", "/theme.css", "/svelte/")


def _session_tokens(headers: list[tuple[bytes, bytes]]) -> tuple[list[str], list[tuple[bytes, bytes]]]:
    """The session tokens in the request's cookies, and the headers with those cookies removed."""
    tokens: list[str] = []
    kept: list[tuple[bytes, bytes]] = []
    for k, v in headers:
        if k.lower() != b"cookie":
            kept.append((k, v))
            continue
        parts = []
        for part in v.decode("latin-1").split(";"):
            name, _, value = part.strip().partition("=")
            if name.startswith(COOKIE_PREFIX):
                tokens.append(value.strip().strip('"'))
            elif part.strip():
                parts.append(part.strip())
        if parts:
            kept.append((k, "; ".join(parts).encode("latin-1")))
    return tokens, kept


def _secure_cookie(value: bytes, https: bool) -> bytes:
    """A session ``Set-Cookie`` value with ``SameSite=Lax; HttpOnly`` (and ``Secure`` over https only)."""
    text = value.decode("latin-1")
    first, *attrs = [p.strip() for p in text.split(";")]
    kept = [a for a in attrs if a.split("=", 1)[0].strip().lower() not in ("samesite", "secure", "httponly")]
    out = [first, *kept, "HttpOnly", "SameSite=Lax"] + (["Secure"] if https else [])
    return "; ".join(out).encode("latin-1")


class SessionGuard:
    """ASGI middleware: the login context for the throttle, session expiry, and the session cookie's attributes
    (see the module docstring). Does nothing in the open mode."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access

    async def __call__(
        self,
        scope: Scope,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        if scope["type"] not in ("http", "websocket") or not self.access.required:
            await self.app(scope, receive, send)
            return
        import anyio.to_thread

        path: str = scope.get("path", "")
        headers = list(scope.get("headers", []))
        tokens, without = _session_tokens(headers)
        if tokens and not path.startswith(_PUBLIC):
            ended = [t for t in set(tokens) if not await anyio.to_thread.run_sync(self.access.session_ok, t)]
            if ended:  # expired, password changed, disabled, signed out or never issued: not signed in
                scope = {**scope, "headers": without}
                self._forget(scope, ended)
        if path.rstrip("/").endswith("/logout"):
            for t in tokens:
                self.access.sessions.end(t)
        client = (scope.get("client") or ("?",))[0]
        holder = {"client": str(client)}
        reset = LOGIN_CONTEXT.set(holder)
        https = scope.get("scheme") in ("https", "wss")
        login = path.rstrip("/").endswith("/login")

        async def send_guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                out = []
                for k, v in message.get("headers", []):
                    if k.lower() == b"set-cookie" and v.decode("latin-1").startswith(COOKIE_PREFIX):
                        if login and holder.get("user"):
                            self._issue(v, holder["user"])
                        v = _secure_cookie(v, https)
                    out.append((k, v))
                message["headers"] = out
            await send(message)

        try:
            await self.app(scope, receive, send_guarded)
        finally:
            LOGIN_CONTEXT.reset(reset)

    def _issue(self, set_cookie: bytes, name: str) -> None:
        jar: SimpleCookie = SimpleCookie()
        jar.load(set_cookie.decode("latin-1"))
        for morsel in jar.values():
            if morsel.key.startswith(COOKIE_PREFIX) and morsel.value and self.access.db is not None:
                self.access.sessions.issue(morsel.value, name, fingerprint(self.access.db, name))

    @staticmethod
    def _forget(scope: Scope, tokens: list[str]) -> None:
        """Drop ended tokens from Gradio's own table too, so they cannot be replayed past this guard."""
        table = getattr(scope.get("app"), "tokens", None)
        if isinstance(table, dict):
            for t in tokens:
                table.pop(t, None)
