"""Who is asking: login for the web app and its HTTP API, and the map from a request to a user id.

Modes, from ``VIBESTUDIO_AUTH``:
- ``auto`` (default): login is required as soon as one enabled user has a password
  (``vibestudio users add``). With no such user, the app runs in the open single-user mode: everyone is
  the local operator.
- ``on``: login is always required. The server refuses to start while no enabled user has a password.
- ``off``: never ask (a trusted network); everyone is the local operator.
- ``proxy``: an authenticating proxy in front signs users in (oauth2-proxy, Authelia, a company gateway).
  It names each in a header (``VIBESTUDIO_PROXY_USER_HEADER``, default ``X-Forwarded-User``). The header
  is believed only from the proxy's addresses (``VIBESTUDIO_PROXY_ADDRESSES``: addresses or CIDR ranges).
  They are compared with the TCP peer, not with ``X-Forwarded-For``. A request carrying it from any other
  address is refused with 403 and logged. A request without it gets 401. The name becomes a studio user
  (``accounts.proxy``).

The mode is decided when the server starts. The open mode binds to loopback only. Serving it on another
interface needs an explicit ``VIBESTUDIO_AUTH=off``.

Gradio does the login itself: ``launch(auth=...)``, a session cookie for browsers, ``gradio_client``'s
``auth=(name, password)`` for scripts. This module checks the password with ``accounts``. It turns
``gr.Request.username`` into the user id that handlers pass to the services, which do the role checks.
Every request re-reads the user, so disabling an account stops it at its next action. Imports no gradio.

Around Gradio's login, ``SessionGuard`` (an ASGI middleware) adds what Gradio lacks:
- **Throttled login** (``accounts.throttle``). The check sees the client's address. Before hashing, it
  refuses a name that failed too often from that address. It also refuses an address that failed too often
  across names.
- **Sessions that end** (``accounts.sessions``). Each token Gradio issues is recorded with its time and
  the user's password fingerprint. Some requests reach Gradio without their cookie, so they are not signed
  in: a token older than ``VIBESTUDIO_SESSION_HOURS``, a user whose password changed since, a disabled
  user. Such a token is forgotten for good. Signing out ends every session of the user.
- **Sessions any replica accepts.** The book is a database table. Gradio's cookie names carry a random id
  per process. So the guard renames the session cookies to fixed names on the way out
  (``access-token-studio``), and back to this process's names on the way in. It enters a session issued by
  another process into this process's token table.
- **Cookie attributes.** Gradio sets its session cookie ``SameSite=None``. The guard rewrites it to
  ``SameSite=Lax; HttpOnly``, plus ``Secure`` when the request came over https. So no other site's page
  sends it.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any

from vibestudio.accounts import (
    AccountError,
    PermissionDenied,
    RateLimiter,
    authenticate,
    get_user,
    login_enabled,
)
from vibestudio.accounts.counters import counters_for
from vibestudio.accounts.proxy import parse_role_groups, proxy_user
from vibestudio.accounts.sessions import SessionBook, fingerprint
from vibestudio.accounts.throttle import LoginThrottle
from vibestudio.db.session import Database
from vibestudio.studio.gate import PROXY_USER_SCOPE, SESSION_USER_SCOPE

log = logging.getLogger(__name__)
MODES = ("auto", "on", "off", "proxy")
#: Per request, set by ``SessionGuard``: {"client": address} and, after a good password, {"user": name}. A dict,
#: so the login check can write into it from the worker thread Gradio may run it in.
LOGIN_CONTEXT: ContextVar[dict[str, str] | None] = ContextVar("vibestudio_login", default=None)
COOKIE_PREFIX = "access-token"  # Gradio's session cookies: access-token-<id> and access-token-unsecure-<id>
SHARED_COOKIE_ID = "studio"  # the fixed id the browser sees instead of each process's random one


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
    if mode == "proxy":
        return True
    return mode != "off" and login_enabled(db)


def check_serving(mode: str, required: bool, host: str) -> None:
    """Refuse to serve when ``on`` has nobody to log in, or the open mode would face a non-loopback interface."""
    if mode == "proxy":
        return  # ProxyPolicy.from_settings has refused a proxy mode without addresses
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


@dataclass(frozen=True)
class ProxyPolicy:
    """``VIBESTUDIO_AUTH=proxy``: which peers may name the user, in which headers, and the role rules."""

    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
    user_header: str = "X-Forwarded-User"
    groups_header: str = "X-Forwarded-Groups"
    default_role: str = "annotator"
    role_groups: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: Any) -> ProxyPolicy:
        """The policy, or ``AuthConfigError`` naming the setting that is missing or wrong."""
        nets = []
        for part in (settings.proxy_addresses or "").split(","):
            if not part.strip():
                continue
            try:
                nets.append(ipaddress.ip_network(part.strip(), strict=False))
            except ValueError as exc:
                raise AuthConfigError(
                    f"VIBESTUDIO_PROXY_ADDRESSES: {part.strip()!r} is not an address or CIDR range ({exc})"
                ) from exc
        if not nets:
            raise AuthConfigError(
                "VIBESTUDIO_AUTH=proxy needs VIBESTUDIO_PROXY_ADDRESSES: the addresses (or CIDR ranges) of the "
                "authenticating proxy, the only peers whose user header is believed"
            )
        try:
            roles = parse_role_groups(settings.proxy_roles)
            from vibestudio.accounts import check_role

            default = check_role(settings.proxy_default_role)
        except AccountError as exc:
            raise AuthConfigError(f"VIBESTUDIO_PROXY_ROLES / VIBESTUDIO_PROXY_DEFAULT_ROLE: {exc}") from exc
        return cls(tuple(nets), settings.proxy_user_header, settings.proxy_groups_header, default, roles)

    def trusts(self, peer: str) -> bool:
        try:
            addr = ipaddress.ip_address(peer)
        except ValueError:
            return False
        if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
            addr = addr.ipv4_mapped
        return any(addr in net for net in self.networks)


@dataclass
class Access:
    """Login state of one server: whether login is on, the login throttle, the sessions, per-user rate limits
    (the last three in the database or Redis, shared by every app process), and the proxy policy in proxy mode."""

    db: Database | None = None
    required: bool = False
    prompts: RateLimiter = field(default_factory=lambda: RateLimiter(0, what="prompts"))
    votes: RateLimiter = field(default_factory=lambda: RateLimiter(0, what="votes"))
    throttle: LoginThrottle = field(default_factory=LoginThrottle)
    sessions: SessionBook = field(default_factory=SessionBook)
    proxy: ProxyPolicy | None = None

    @classmethod
    def from_settings(cls, settings: Any, db: Database) -> Access:
        store = counters_for(db, settings.redis_url)
        return cls(
            db,
            login_required(settings.auth, db),
            RateLimiter(settings.prompts_per_minute, what="prompts", store=store),
            RateLimiter(settings.votes_per_minute, what="votes", store=store),
            LoginThrottle(settings.failed_logins_per_minute, store=store),
            SessionBook(settings.session_hours, db=db),
            ProxyPolicy.from_settings(settings) if settings.auth == "proxy" else None,
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
        not on the event loop), or None in the open mode and the proxy mode."""
        if not self.required or self.proxy is not None:
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

    def gradio_auth_dependency(self) -> Callable[[Any], str | None] | None:
        """In proxy mode, Gradio's ``auth_dependency``: the user ``SessionGuard`` took from the trusted header."""
        if self.proxy is None:
            return None

        def user(request: Any) -> str | None:
            return request.scope.get(PROXY_USER_SCOPE)

        return user

    def session_user(self, token: str) -> str | None:
        """The user of a session token that may still act (recorded, not expired, password unchanged); None
        otherwise (and the token is forgotten)."""
        rec = self.sessions.get(token)
        if rec is None or self.db is None:
            return None
        return rec.name if self.sessions.valid(token, fingerprint(self.db, rec.name), record=rec) else None

    def session_ok(self, token: str) -> bool:
        """Whether a session token may still act (recorded, not expired, the user's password unchanged)."""
        return self.session_user(token) is not None

    def proxy_sign_in(self, name: str, groups: str | None) -> str:
        """The studio user for a name from the trusted header (created on first sight; ``accounts.proxy``).
        Raises ``PermissionDenied`` for a disabled user or a name the studio does not accept."""
        assert self.proxy is not None and self.db is not None
        try:
            info = proxy_user(
                self.db,
                name,
                [g for g in (groups or "").split(",")],
                self.proxy.default_role,
                self.proxy.role_groups or None,
            )
        except AccountError as exc:
            raise PermissionDenied(f"the proxy's user name is not accepted: {exc}") from exc
        if info.disabled:
            raise PermissionDenied(f"the account {info.name!r} is disabled in this studio")
        return info.name

    # -- requests ------------------------------------------------------------------------------------------
    def user_id(self, request: Any) -> int | None:
        """The acting user's id for a request; None in the open mode (the local operator).

        Raises ``PermissionDenied`` when login is on and the request has no enabled user behind it.
        """
        if not self.required:
            return None
        name = getattr(request, "username", None)
        user = get_user(self.db, name) if (name and self.db is not None) else None
        if user is None or user.disabled or (not user.has_password and self.proxy is None):
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
#: Gradio's launch calls this once from the server itself, with no user (it answers in every mode, runs the
#: start-up events once, and is idempotent after): the proxy mode lets it through without the header.
_STARTUP = "/gradio_api/startup-events"


def _session_tokens(
    headers: list[tuple[bytes, bytes]],
) -> tuple[list[str], list[str], list[tuple[bytes, bytes]]]:
    """The session tokens in the request's cookies, its other cookies, and its headers other than ``Cookie``."""
    tokens: list[str] = []
    cookies: list[str] = []
    kept: list[tuple[bytes, bytes]] = []
    for k, v in headers:
        if k.lower() != b"cookie":
            kept.append((k, v))
            continue
        for part in v.decode("latin-1").split(";"):
            name, _, value = part.strip().partition("=")
            if name.startswith(COOKIE_PREFIX):
                tokens.append(value.strip().strip('"'))
            elif part.strip():
                cookies.append(part.strip())
    return tokens, cookies, kept


def _with_cookies(headers: list[tuple[bytes, bytes]], cookies: list[str]) -> list[tuple[bytes, bytes]]:
    """``headers`` plus one ``Cookie`` header holding ``cookies`` (Starlette reads only the first one)."""
    return headers + ([(b"cookie", "; ".join(cookies).encode("latin-1"))] if cookies else [])


def _secure_cookie(value: bytes, https: bool) -> bytes:
    """A session ``Set-Cookie`` value with ``SameSite=Lax; HttpOnly`` (and ``Secure`` over https only)."""
    text = value.decode("latin-1")
    first, *attrs = [p.strip() for p in text.split(";")]
    kept = [a for a in attrs if a.split("=", 1)[0].strip().lower() not in ("samesite", "secure", "httponly")]
    out = [first, *kept, "HttpOnly", "SameSite=Lax"] + (["Secure"] if https else [])
    return "; ".join(out).encode("latin-1")


def _shared_name(value: bytes, cookie_id: str | None) -> bytes:
    """A session ``Set-Cookie`` with this process's cookie id replaced by the fixed one every replica reads."""
    if not cookie_id:
        return value
    name, eq, rest = value.decode("latin-1").partition("=")
    if name.endswith("-" + cookie_id):
        name = name[: -len(cookie_id)] + SHARED_COOKIE_ID
    return (name + eq + rest).encode("latin-1")


async def _refuse(scope: Scope, send: Callable[[Message], Awaitable[None]], status: int, text: str) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": text[:120]})
        return
    body = text.encode("utf-8")
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class SessionGuard:
    """ASGI middleware: the login context for the throttle, sessions that expire and that any replica accepts,
    the session cookie's attributes, and in proxy mode the trusted header (see the module docstring). Does
    nothing in the open mode."""

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
        if self.access.proxy is not None:
            await self._proxied(scope, receive, send)
            return
        import anyio.to_thread

        path: str = scope.get("path", "")
        app = scope.get("app")
        cookie_id = getattr(app, "cookie_id", None)
        tokens, cookies, others = _session_tokens(list(scope.get("headers", [])))
        user: str | None = None
        if tokens and not path.startswith(_PUBLIC):
            good: str | None = None
            ended = []
            for t in dict.fromkeys(tokens):
                name = await anyio.to_thread.run_sync(self.access.session_user, t)
                if name is None:
                    ended.append(t)  # expired, password changed, disabled, signed out or never issued
                elif good is None:
                    good, user = t, name
            if ended:
                self._forget(scope, ended)
            if good is not None and user is not None:
                # A session issued by any process: in this process's token table, under this process's name.
                table = getattr(app, "tokens", None)
                if isinstance(table, dict):
                    table[good] = user
                if cookie_id:
                    cookies = [*cookies, f"{COOKIE_PREFIX}-{cookie_id}={good}"]
            scope = {**scope, "headers": _with_cookies(others, cookies)}
            if user is not None:
                scope[SESSION_USER_SCOPE] = user  # for the request gate (``studio.gate``), inside this guard
        if path.rstrip("/").endswith("/logout"):
            await anyio.to_thread.run_sync(self._end, tokens, user)
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
                            await anyio.to_thread.run_sync(self._issue, v, holder["user"])
                        v = _secure_cookie(_shared_name(v, cookie_id), https)
                    out.append((k, v))
                message["headers"] = out
            await send(message)

        try:
            await self.app(scope, receive, send_guarded)
        finally:
            LOGIN_CONTEXT.reset(reset)

    async def _proxied(
        self,
        scope: Scope,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        """Proxy mode: the user header is believed from a proxy address only; anything else is refused."""
        import anyio.to_thread

        policy = self.access.proxy
        assert policy is not None
        peer = str((scope.get("client") or ("?",))[0])
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        raw = headers.get(policy.user_header.lower().encode("latin-1"))
        path: str = scope.get("path", "")
        if raw is not None and not policy.trusts(peer):
            log.warning(
                "refused a %s header from %s: not one of VIBESTUDIO_PROXY_ADDRESSES (path %s)",
                policy.user_header,
                peer,
                path[:200],
            )
            await _refuse(
                scope,
                send,
                403,
                f"refused: the {policy.user_header} header is accepted only from the studio's authenticating "
                f"proxy, and this request came from {peer}, which is not one of its addresses "
                "(VIBESTUDIO_PROXY_ADDRESSES). Sign in through the proxy's address.",
            )
            return
        name = raw.decode("latin-1").strip() if raw is not None else ""
        if name:
            groups = headers.get(policy.groups_header.lower().encode("latin-1"), b"").decode("latin-1")
            try:
                user = await anyio.to_thread.run_sync(self.access.proxy_sign_in, name, groups)
            except PermissionDenied as exc:
                log.warning("refused the proxy user %r from %s: %s", name[:64], peer, exc)
                await _refuse(scope, send, 403, f"refused: {exc}")
                return
            scope = {**scope, PROXY_USER_SCOPE: user}
        elif not path.startswith(_PUBLIC) and path.rstrip("/") != _STARTUP:
            await _refuse(
                scope,
                send,
                401,
                "not signed in: this studio takes its users from its authenticating proxy "
                f"(the {policy.user_header} header); open it through the proxy's address.",
            )
            return
        await self.app(scope, receive, send)

    def _end(self, tokens: list[str], user: str | None) -> None:
        """Signing out: end the cookie's sessions and, as Gradio does, every other session of the user."""
        for t in tokens:
            self.access.sessions.end(t)
        if user is not None:
            self.access.sessions.end_user(user)

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
