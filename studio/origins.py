"""Which pages may talk to the studio: a ``Host`` and ``Origin`` policy on every request, before Gradio sees
it.

Two attacks, one rule each. An ASGI middleware applies them in login mode *and* in the open mode.
- **Another site's page**: cross-site request forgery, and reading the answers. A browser sends ``Origin``
  with every cross-origin ``fetch``, form post, preflight and WebSocket. Gradio would answer it with
  credentials. So a request is refused with 403, whatever its method (``OPTIONS`` preflights included),
  when its ``Origin`` is not allowed. Allowed are the app's own and those the operator listed in
  ``VIBESTUDIO_ALLOWED_ORIGINS``. ``Origin: null`` (sandboxed frames, ``file:`` pages) is refused too. So
  is a browser's ``Sec-Fetch-Site: cross-site`` without an ``Origin``. Origins are compared as the browser
  defines them: scheme, host and port. A missing port is the scheme's default. So ``Host: studio`` on
  plain http is ``http://studio:80``, and a page at ``http://studio:8080`` is another origin. Requests
  without ``Origin`` pass: ``gradio_client``, ``curl``, a typed address. They are not browsers acting for
  a page.
- **Outermost.** The guard wraps the whole app, outside Gradio's own CORS layer (``wrap``). So no
  preflight is answered, and no origin reflected with credentials, before the policy has admitted it.
- **DNS rebinding**: a name the attacker controls, resolved to this machine, so the page counts as
  same-origin. A ``Host`` is refused with 421 unless it is one of these: a loopback name, an IP address,
  this machine's own name, a host the operator listed in ``VIBESTUDIO_ALLOWED_HOSTS``, or the host of an
  allowed origin. An IP address cannot be rebound (there is no name to re-point), so any is accepted.

The refusal says which header was refused and which setting admits it. It does not echo the header's
value.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}


def split_list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


#: A WebSocket's scheme is its page's: ``ws`` pairs with ``http``, ``wss`` with ``https``.
WEB_SCHEME = {"http": "http", "https": "https", "ws": "http", "wss": "https"}


def origin_key(origin: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of an origin such as ``https://a.example:8443``, the port being the scheme's
    default when absent; None when it is not one (a path, a user, a query or a fragment make it not one)."""
    try:
        u = urlsplit(origin.strip())
        port = u.port
    except ValueError:
        return None
    if u.scheme not in DEFAULT_PORTS or not u.hostname or "@" in u.netloc:
        return None
    if u.path not in ("", "/") or u.query or u.fragment:
        return None
    return WEB_SCHEME[u.scheme], u.hostname.lower().rstrip("."), port or DEFAULT_PORTS[u.scheme]


def host_key(host: str, scheme: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of a ``Host`` header value (``[::1]:7860``, ``studio``) on a request that came
    over ``scheme``; None when malformed."""
    if not host or any(c in host for c in "/?#@\\ ") or host != host.strip():
        return None
    return origin_key(f"{scheme if scheme in DEFAULT_PORTS else 'http'}://{host}")


@functools.lru_cache(maxsize=1)
def _machine_names() -> tuple[str, ...]:
    """This machine's own names (``getfqdn`` may ask the resolver: looked up once per process)."""
    return socket.gethostname(), socket.getfqdn()


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        return False


class OriginPolicy:
    """The rules above for one server. ``allowed_origins`` and ``allowed_hosts`` come from the settings."""

    def __init__(self, allowed_origins: Iterable[str] = (), allowed_hosts: Iterable[str] = ()) -> None:
        self.origins: set[tuple[str, str, int]] = set()
        for o in allowed_origins:
            key = origin_key(o)
            if key is None:
                raise ValueError(
                    "VIBESTUDIO_ALLOWED_ORIGINS: each entry must look like https://host[:port] "
                    f"(got {o[:80]!r})"
                )
            self.origins.add(key)
        self.hosts = {
            h.lower().rstrip(".") for h in (*allowed_hosts, *_machine_names()) if h
        } | LOOPBACK_NAMES
        self.hosts |= {h for _, h, _ in self.origins}

    def host_ok(self, host: str | None, scheme: str) -> bool:
        key = host_key(host or "", scheme)
        if key is None:
            return False
        name = key[1]
        return _is_ip(name) or name in self.hosts

    def origin_ok(self, origin: str | None, host: str | None, scheme: str, fetch_site: str | None) -> bool:
        if origin is None:
            return fetch_site != "cross-site"
        key = origin_key(origin)
        if key is None:  # "null" and anything else that is not an http(s) origin
            return False
        # the app's own origin: the scheme the request came over (a proxy on this host that ends TLS says so in
        # X-Forwarded-Proto, which the server applies) and the Host it was sent to, with its effective port
        if key == host_key(host or "", scheme):
            return True
        return key in self.origins

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """``(status, message)`` when the request must be refused, else None."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        scheme = scope.get("scheme", "http")
        host = headers.get("host")
        if not self.host_ok(host, scheme):
            return 421, (
                "refused: this server does not answer to that Host name (add it to VIBESTUDIO_ALLOWED_HOSTS "
                "if it is this server's public name)"
            )
        if not self.origin_ok(headers.get("origin"), host, scheme, headers.get("sec-fetch-site")):
            return 403, (
                "refused: the request came from a page of another origin (list that origin in "
                "VIBESTUDIO_ALLOWED_ORIGINS if it is this server's public address)"
            )
        return None


def wrap(app: Any, policy: OriginPolicy) -> None:
    """Make an ``OriginGuard`` the outermost layer of a Starlette (FastAPI, Gradio) ``app``: it is inserted in
    front of every middleware the app has or gets (Gradio adds its CORS layer itself, outside the ones it is
    given), so a refused request reaches none of them. Call before the app serves its first request."""
    build = app.build_middleware_stack

    def guarded() -> ASGIApp:
        return OriginGuard(build(), policy)

    app.build_middleware_stack = guarded
    app.middleware_stack = None


async def send_refusal(
    send: Callable[[MutableMapping[str, Any]], Awaitable[None]], status: int, message: str
) -> None:
    """Answer an ASGI HTTP request with ``status`` and ``{"detail": message}`` as JSON (the guards' one refusal)."""
    body = json.dumps({"detail": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class OriginGuard:
    """ASGI middleware applying an ``OriginPolicy`` to HTTP requests and WebSocket handshakes."""

    def __init__(self, app: ASGIApp, policy: OriginPolicy | None = None) -> None:
        self.app = app
        self.policy = policy or OriginPolicy()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refused = self.policy.refusal(scope)
        if refused is not None:
            status, message = refused
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await send_refusal(send, status, message)
            return

        await self.app(scope, receive, send)
