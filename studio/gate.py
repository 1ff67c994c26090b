"""Identity before bytes: who is asking, and how much they may send, decided before any request body is read.

``RequestGate`` is an ASGI middleware on the FastAPI app Gradio serves the studio from.
``studio.app.app_kwargs`` puts it inside ``auth.SessionGuard``, which has already looked at the session
cookie or the proxy's header. Nothing outside it reads a body. For every request, in this order:

1. **Side routes answer nothing** (``SIDE_ROUTES``, 404 for everyone). The studio uses none of them:
   - Gradio's monitoring dashboard and its summary (every function's call counts and timings);
   - the token route: it would put the ``HttpOnly`` session token in a body that a script can read;
   - the run history: it reaches the Hugging Face hub with a token of the host's;
   - screen-recording processing, profiling, the development reload stream and the vibe editor.
2. **No session, no route** (login on). A request without a valid session may reach a short list: the
   login page, the login form, the page's static files, ``/logout``, and the start-up call Gradio makes to
   itself (``PRE_LOGIN_EXACT``, ``PRE_LOGIN_PREFIXES``). Anything else is refused with 401 before its body
   is read, whatever its size. Gradio would read and parse a body (an event's JSON, a form) before its own
   login check answers. The login page goes out without the API description Gradio embeds in every page
   (``without_api_info``).
3. **Size before bytes.** A request is refused with 413 when its ``Content-Length`` is over its limit. A
   body sent without one (chunked) is counted as it streams, and refused when it grows past. The limits:
   - ``LOGIN_BODY_LIMIT`` (64 KiB) for a request without a session;
   - ``VIBESTUDIO_MAX_UPLOAD_MB`` plus 1 MiB of form overhead on Gradio's upload route;
   - ``VIBESTUDIO_MAX_REQUEST_MB`` on every other route.
4. **A budget per address before login.** What one client address sends without a session (the login form)
   is charged to a byte budget. That is ``VIBESTUDIO_LOGIN_KB_PER_MINUTE``, each request at least 1 KiB,
   kept in this process. Over it: 429 with ``Retry-After``, before the body is read. Failed logins are
   throttled separately (``accounts.throttle``).
5. **A share of uploads per user.** What one signed-in user uploads is charged to ``UploadQuota`` before
   the body is read. That is its ``Content-Length``, or a chunked body as it streams. The caps are
   ``VIBESTUDIO_UPLOAD_MB_PER_HOUR`` an hour, and ``VIBESTUDIO_UPLOAD_MB_HELD`` waiting at once. An upload
   counts as held until it has expired (``studio.uploads.UPLOAD_TTL_S``), even when a handler removed it
   sooner. Over either cap: 429 with ``Retry-After``, nothing stored. Kept per process; the local operator
   of the open mode is not charged.

A refusal of a request that may carry a body says ``Connection: close``. So the server does not read what
is left of it. Imports no gradio.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from starlette.exceptions import HTTPException

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Where ``auth.SessionGuard`` leaves the name of a request's signed-in user: a valid session (login mode), or
#: the user the authenticating proxy named (proxy mode; ``Access.gradio_auth_dependency`` reads it too).
SESSION_USER_SCOPE = "vibestudio.user"
PROXY_USER_SCOPE = "vibestudio.proxy_user"
MIB = 1024 * 1024
#: Largest body of a request without a session (the login form is a few hundred bytes).
LOGIN_BODY_LIMIT = 64 * 1024
#: Room for the multipart form around an uploaded file.
UPLOAD_OVERHEAD = MIB
#: Least a request without a session that sends a body is charged against its address's budget.
MIN_CHARGE = 1024
#: Addresses whose pre-login budget is remembered (the least recently seen are forgotten first).
MAX_ADDRESSES = 10_000

#: Gradio routes the studio does not use and no one may reach (the path, with or without a trailing slash, and
#: everything under it).
SIDE_ROUTES = (
    "/monitoring",
    "/gradio_api/monitoring",
    "/token",
    "/gradio_api/token",
    "/gradio_api/runs",
    "/gradio_api/run-history",
    "/gradio_api/process_recording",
    "/gradio_api/profiling",
    "/gradio_api/dev",
    "/gradio_api/vibe-edit",
    "/gradio_api/undo-vibe-edit",
    "/gradio_api/vibe-code",
    "/gradio_api/vibe-starter-queries",
)
#: What a visitor without a session may reach: the login page, the login form and the page's own files, and
#: the start-up call Gradio makes to itself (it carries no user in any mode and is idempotent).
PRE_LOGIN_EXACT = {
    ("GET", "/"),
    ("POST", "/login"),
    ("GET", "/logout"),
    ("GET", "/favicon.ico"),
    ("GET", "/manifest.json"),
    ("GET", "/robots.txt"),
    ("GET", "/theme.css"),
    ("GET", "/gradio_api/theme.css"),
    ("GET", "/gradio_api/startup-events"),
}
PRE_LOGIN_PREFIXES = ("/assets/", "/static/", "/svelte/", "/pwa_icon", "/gradio_api/pwa_icon")
UPLOAD_ROUTES = {"/gradio_api/upload", "/upload"}


def clean_path(path: str) -> str:
    """A request path as the rules compare it: repeated slashes as one, no trailing slash (``/`` stays)."""
    path = re.sub(r"/+", "/", path or "/")
    return path.rstrip("/") or "/"


def is_side_route(path: str) -> bool:
    p = clean_path(path)
    return any(p == r or p.startswith(r + "/") for r in SIDE_ROUTES)


def is_pre_login(method: str, path: str) -> bool:
    """Whether a request without a session may reach ``path`` (``PRE_LOGIN_EXACT``, ``PRE_LOGIN_PREFIXES``)."""
    method = "GET" if method.upper() == "HEAD" else method.upper()
    if (method, clean_path(path)) in PRE_LOGIN_EXACT:
        return True
    return method == "GET" and path.startswith(PRE_LOGIN_PREFIXES)


@dataclass(frozen=True)
class Limits:
    """The byte limits of the gate: signed-in requests, uploads, requests without a session, and the budget of
    one address without a session (bytes a minute; 0 = no budget)."""

    request_bytes: int = 16 * MIB
    upload_bytes: int = 100 * MIB + UPLOAD_OVERHEAD
    login_bytes: int = LOGIN_BODY_LIMIT
    login_bytes_per_minute: int = MIB
    upload_bytes_per_hour: int = 1024 * MIB
    upload_bytes_held: int = 256 * MIB

    @classmethod
    def from_settings(cls, settings: Any) -> Limits:
        return cls(
            request_bytes=int(settings.max_request_mb * MIB),
            upload_bytes=int(settings.max_upload_mb * MIB) + UPLOAD_OVERHEAD,
            login_bytes_per_minute=int(settings.login_kb_per_minute * 1024),
            upload_bytes_per_hour=int(settings.upload_mb_per_hour * MIB),
            upload_bytes_held=int(settings.upload_mb_held * MIB),
        )


class UploadQuota:
    """Bytes each signed-in user uploaded, with their times: at most ``per_hour`` in the last hour and ``held``
    in the last ``held_s`` (how long an upload may wait before it is removed). In memory, per process; 0 = no
    limit."""

    HOUR = 3600.0

    def __init__(self, per_hour: int, held: int, held_s: float | None = None) -> None:
        from vibestudio.studio.uploads import UPLOAD_TTL_S

        self.per_hour, self.held = per_hour, held
        self.held_s = float(UPLOAD_TTL_S if held_s is None else held_s)
        self._log: dict[str, deque[tuple[float, int]]] = {}
        self._lock = threading.Lock()

    def take(self, user: str, n: int, now: float | None = None, force: bool = False) -> str | None:
        """Charge ``n`` bytes to ``user``: None when they fit, else the refusal (nothing charged then; with
        ``force`` they are charged either way, for bytes already received)."""
        if n <= 0 or (self.per_hour <= 0 and self.held <= 0):
            return None
        now = time.monotonic() if now is None else now
        with self._lock:
            log = self._log.setdefault(user, deque())
            while log and log[0][0] <= now - max(self.HOUR, self.held_s):
                log.popleft()
            refusal = None
            for limit, window, setting in (
                (self.per_hour, self.HOUR, "VIBESTUDIO_UPLOAD_MB_PER_HOUR"),
                (self.held, self.held_s, "VIBESTUDIO_UPLOAD_MB_HELD"),
            ):
                if limit <= 0:
                    continue
                recent = [(t, b) for t, b in log if t > now - window]
                if sum(b for _, b in recent) + n > limit:
                    refusal = quota_spent(limit, setting, self._wait(recent, n, limit, window, now))
                    break
            if refusal is None or force:
                log.append((now, n))
            if not log:
                self._log.pop(user, None)
            return refusal

    @staticmethod
    def _wait(recent: list[tuple[float, int]], n: int, limit: int, window: float, now: float) -> float:
        """Seconds until ``n`` more bytes would fit (as the oldest uploads leave the window)."""
        total = sum(b for _, b in recent)
        for t, b in recent:
            total -= b
            if total + n <= limit:
                return t + window - now
        return window


def quota_spent(limit: int, setting: str, wait_s: float) -> str:
    size = f"{limit // MIB} MB" if limit >= MIB else f"{limit} bytes"
    what = "an hour" if setting.endswith("PER_HOUR") else "waiting at once"
    return (
        f"refused: you have uploaded too much (at most {size} {what}; {setting}); "
        f"try again in {max(1, math.ceil(wait_s))} s"
    )


class UploadQuotaSpent(HTTPException):
    def __init__(self, message: str) -> None:
        super().__init__(429, message)


class AddressBudget:
    """A token bucket of bytes per client address: ``per_minute`` bytes a minute, as many at once. In memory
    (what it protects is this process's memory and time), at most ``MAX_ADDRESSES`` addresses."""

    def __init__(self, per_minute: int, max_addresses: int = MAX_ADDRESSES) -> None:
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.max_addresses = max_addresses
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, address: str, n: int, now: float | None = None) -> float:
        """Charge ``n`` bytes to ``address``: 0.0 when they fit, else the seconds until they would (nothing is
        charged then). No budget (``per_minute <= 0``) always fits."""
        if self.capacity <= 0:
            return 0.0
        now = time.monotonic() if now is None else now
        with self._lock:
            level, at = self._buckets.pop(address, (self.capacity, now))
            level = min(self.capacity, level + (now - at) * self.rate)
            wait = 0.0
            if n <= level:
                level -= n
            else:
                wait = (min(n, self.capacity) - level) / self.rate if self.rate > 0 else math.inf
            self._buckets[address] = (level, now)
            while len(self._buckets) > self.max_addresses:
                self._buckets.popitem(last=False)
            return wait


class BodyTooLarge(HTTPException):
    """Raised from ``receive`` when a body grows past its limit; FastAPI passes it on as it is (an
    ``HTTPException``), so the route answers 413 and parses nothing."""

    def __init__(self, limit: int, setting: str) -> None:
        super().__init__(413, too_large(limit, setting))


class BudgetSpent(HTTPException):
    def __init__(self, wait_s: float) -> None:
        super().__init__(429, spent(wait_s), headers={"Retry-After": str(max(1, math.ceil(wait_s)))})


def too_large(limit: int, setting: str) -> str:
    size = f"{limit // MIB} MB" if limit >= MIB else f"{limit // 1024} KB"
    return f"refused: the request body is too large (this route takes at most {size}; {setting})"


def spent(wait_s: float) -> str:
    return (
        "refused: too much sent from this address without signing in; try again in "
        f"{max(1, math.ceil(wait_s))} s (VIBESTUDIO_LOGIN_KB_PER_MINUTE)"
    )


async def refuse(
    send: Send, status: int, message: str, close: bool, headers: dict[str, str] | None = None
) -> None:
    """Answer with ``status`` and ``{"detail": message}``; ``close`` asks the server to drop the connection
    instead of reading the rest of the request."""
    import json

    body = json.dumps({"detail": message}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    if close:
        raw.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


#: The API description Gradio embeds in its page (every endpoint, its parameters, a dropdown's choices). Gradio
#: writes it as JSON with ``<`` escaped, so the first ``;</script>`` after it ends it.
API_INFO = re.compile(rb"(<script>window\.gradio_api_info = ).*?(;</script>)", re.S)


def without_api_info(send: Send) -> Send:
    """A ``send`` for the page a visitor without a session gets (the login page): the embedded API description
    becomes ``null`` (the page's script then asks ``/gradio_api/info``, which refuses a visitor). A page that
    still holds endpoints after that (another Gradio's layout) is not sent at all."""
    start: Message | None = None
    chunks: list[bytes] = []

    async def filtered(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            start = message
            return
        if message["type"] != "http.response.body" or start is None:
            await send(message)
            return
        chunks.append(bytes(message.get("body", b"")))
        if message.get("more_body"):
            return
        body = API_INFO.sub(rb"\1null\2", b"".join(chunks))
        status = start["status"]
        if b"named_endpoints" in body or b"unnamed_endpoints" in body:
            status, body = 500, b"the login page could not be served without the app's API description"
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({**start, "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return filtered


def _declared(scope: Scope) -> tuple[int | None, bool]:
    """``(Content-Length, chunked)`` of a request; a malformed length reads as -1."""
    length: int | None = None
    chunked = False
    for k, v in scope.get("headers", []):
        k = k.lower()
        if k == b"content-length":
            try:
                length = int(v)
            except ValueError:
                length = -1
        elif k == b"transfer-encoding":
            chunked = b"chunked" in v.lower()
    return length, chunked


class RequestGate:
    """ASGI middleware: side routes off, no route without a session but the login page's, and body limits and
    the pre-login budget applied before and while a body is read (see the module docstring)."""

    def __init__(self, app: ASGIApp, access: Any, limits: Limits | None = None) -> None:
        self.app = app
        self.access = access
        self.limits = limits or Limits()
        self.budget = AddressBudget(self.limits.login_bytes_per_minute)
        self.uploads = UploadQuota(self.limits.upload_bytes_per_hour, self.limits.upload_bytes_held)

    @staticmethod
    def user(scope: Scope) -> str | None:
        """The request's signed-in user as the session guard found it (None: nobody)."""
        return scope.get(SESSION_USER_SCOPE) or scope.get(PROXY_USER_SCOPE)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        method: str = scope.get("method", "GET") if kind == "http" else "GET"
        length, chunked = _declared(scope)
        has_body = chunked or (length is not None and length != 0)
        if is_side_route(path):
            await self._refuse(scope, send, 404, "not found: this studio does not serve that route", has_body)
            return
        anonymous = bool(self.access.required) and self.user(scope) is None
        if anonymous and not is_pre_login(method, path):
            await self._refuse(
                scope, send, 401, "not signed in: sign in on the studio's login page first", has_body
            )
            return
        if kind == "websocket":
            await self.app(scope, receive, send)
            return
        if anonymous:
            limit, setting = self.limits.login_bytes, "without signing in"
        elif clean_path(path) in UPLOAD_ROUTES:
            limit, setting = self.limits.upload_bytes, "VIBESTUDIO_MAX_UPLOAD_MB"
        else:
            limit, setting = self.limits.request_bytes, "VIBESTUDIO_MAX_REQUEST_MB"
        if length is not None and (length < 0 or length > limit):
            if length < 0:
                await self._refuse(
                    scope, send, 400, "refused: the Content-Length header is not a number", True
                )
            else:
                await self._refuse(scope, send, 413, too_large(limit, setting), True)
            return
        address = str((scope.get("client") or ("?",))[0])
        if anonymous and has_body:
            wait = self.budget.take(address, max(MIN_CHARGE, length or 0))
            if wait > 0:
                await self._refuse(scope, send, 429, spent(wait), True, {"Retry-After": str(math.ceil(wait))})
                return
        uploader = self.user(scope) if clean_path(path) in UPLOAD_ROUTES and not anonymous else None
        if uploader is not None and length:
            refusal = self.uploads.take(uploader, length)
            if refusal is not None:
                await self._refuse(scope, send, 429, refusal, True, {"Retry-After": _retry_after(refusal)})
                return
        if anonymous and clean_path(path) == "/":
            send = without_api_info(send)  # the login page: no endpoints, no names
        await self._counted(
            scope,
            receive,
            send,
            limit,
            setting,
            address if anonymous and chunked else None,
            uploader if chunked and length is None else None,
            close=anonymous and has_body,
        )

    async def _counted(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        limit: int,
        setting: str,
        charge: str | None,
        uploader: str | None = None,
        close: bool = False,
    ) -> None:
        """Run the app with a ``receive`` that counts the body and stops it past ``limit`` (and, for a chunked
        body without a session, charges what streams in past the first ``MIN_CHARGE`` to ``charge``'s budget;
        for a chunked upload, charges each piece to ``uploader``'s upload quota). With ``close`` (a body sent
        without a session), and whenever the body was stopped, the response says ``Connection: close``: the
        server then drops the connection instead of reading the rest of a body nobody will parse (a chunked
        body past its limit, or one the route never reads)."""
        seen = 0
        started = False
        stopped = False

        async def counted() -> Message:
            nonlocal seen, stopped
            message = await receive()
            if message["type"] == "http.request":
                n = len(message.get("body", b""))
                before, seen = seen, seen + n
                if seen > limit:
                    stopped = True
                    raise BodyTooLarge(limit, setting)
                if uploader is not None:
                    refusal = self.uploads.take(uploader, n, force=True)
                    if refusal is not None:
                        raise UploadQuotaSpent(refusal)
                if charge is not None and seen > MIN_CHARGE:
                    wait = self.budget.take(charge, seen - max(before, MIN_CHARGE))
                    if wait > 0:
                        raise BudgetSpent(wait)
            return message

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = list(message.get("headers") or [])
                if (close or stopped) and not any(k.lower() == b"connection" for k, _ in headers):
                    message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        try:
            await self.app(scope, counted, tracked)
        except HTTPException as exc:  # raised from ``counted`` and not turned into a response by the route
            if started or not isinstance(exc, BodyTooLarge | BudgetSpent | UploadQuotaSpent):
                raise
            headers = dict(exc.headers or {})
            if isinstance(exc, UploadQuotaSpent):
                headers["Retry-After"] = _retry_after(str(exc.detail))
            await refuse(send, exc.status_code, str(exc.detail), True, headers)

    async def _refuse(
        self,
        scope: Scope,
        send: Send,
        status: int,
        message: str,
        has_body: bool,
        headers: dict[str, str] | None = None,
    ) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
            return
        await refuse(send, status, message, has_body, headers)


def _retry_after(refusal: str) -> str:
    """The seconds a quota refusal names (``try again in N s``)."""
    found = re.search(r"try again in (\d+) s", refusal)
    return found.group(1) if found else "60"
