"""Which pages may talk to the studio: a ``Host`` and ``Origin`` policy on every request, before Gradio sees it.

Two attacks, one rule each, applied by an ASGI middleware in login mode *and* in the open mode:

- **Another site's page** (cross-site request forgery, and reading the answers): a browser sends ``Origin`` with
  every cross-origin ``fetch``, form post and WebSocket, and Gradio would answer it with credentials. A request
  whose ``Origin`` is not the app's own (the scheme-less ``host:port`` it was sent to) nor one the operator
  listed in ``VIBESTUDIO_ALLOWED_ORIGINS`` is refused with 403, whatever its method; so is ``Origin: null``
  (sandboxed frames, ``file:`` pages) and a browser's ``Sec-Fetch-Site: cross-site`` without an ``Origin``.
  Requests without ``Origin`` (``gradio_client``, ``curl``, a typed address) are not browsers acting for a page
  and pass. Gradio's own CORS middleware then only ever reflects an origin this policy admitted.
- **DNS rebinding** (a name the attacker controls, resolved to this machine, so the page counts as same-origin):
  a ``Host`` that is not a loopback name, an IP address, this machine's own name, a host the operator listed in
  ``VIBESTUDIO_ALLOWED_HOSTS`` or the host of an allowed origin is refused with 421. An IP address cannot be
  rebound (there is no name to re-point), so any is accepted.

The refusal says which header was refused and which setting admits it; it does not echo the header's value.
"""

from __future__ import annotations

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


def origin_key(origin: str) -> tuple[str, int] | None:
    """``(host, port)`` of an origin such as ``https://a.example:8443``; None when it is not one."""
    try:
        u = urlsplit(origin.strip())
        port = u.port
    except ValueError:
        return None
    if u.scheme not in DEFAULT_PORTS or not u.hostname:
        return None
    return u.hostname.lower().rstrip("."), port or DEFAULT_PORTS[u.scheme]


def host_key(host: str, scheme: str) -> tuple[str, int] | None:
    """``(host, port)`` of a ``Host`` header value (``[::1]:7860``, ``studio``); None when malformed."""
    return origin_key(f"{scheme if scheme in DEFAULT_PORTS else 'http'}://{host}")


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        return False


class OriginPolicy:
    """The rules above for one server. ``allowed_origins`` and ``allowed_hosts`` come from the settings."""

    def __init__(self, allowed_origins: Iterable[str] = (), allowed_hosts: Iterable[str] = ()) -> None:
        self.origins: set[tuple[str, int]] = set()
        for o in allowed_origins:
            key = origin_key(o)
            if key is None:
                raise ValueError(
                    "VIBESTUDIO_ALLOWED_ORIGINS: each entry must look like https://host[:port] "
                    f"(got {o[:80]!r})"
                )
            self.origins.add(key)
        names = {socket.gethostname(), socket.getfqdn()}
        self.hosts = {h.lower().rstrip(".") for h in (*allowed_hosts, *names) if h} | LOOPBACK_NAMES
        self.hosts |= {h for h, _ in self.origins}

    def host_ok(self, host: str | None, scheme: str) -> bool:
        key = host_key(host or "", scheme)
        if key is None:
            return False
        name = key[0]
        return _is_ip(name) or name in self.hosts

    def origin_ok(self, origin: str | None, host: str | None, scheme: str, fetch_site: str | None) -> bool:
        if origin is None:
            return fetch_site != "cross-site"
        key = origin_key(origin)
        if key is None:  # "null" and anything else that is not an http(s) origin
            return False
        own = host_key(host or "", scheme)
        if own is not None and key[0] == own[0]:
            # same host: the port must match too (another port on this host is another origin); an origin
            # whose scheme differs from ours (TLS ended at a proxy) has its own default port, so compare both
            if key[1] == own[1] or ":" not in (host or "").rsplit("]", 1)[-1]:
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
            body = json.dumps({"detail": message}).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return

        await self.app(scope, receive, send)
