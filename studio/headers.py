"""Security headers on every response of the studio's web app: the second wall behind the display path.

Whatever a model writes is rendered by ``studio.render`` into HTML that loads nothing. This
Content-Security-Policy makes the browser refuse to load anything from elsewhere, even if some text ever
got through.
- Images, frames, fonts, styles, media, workers and connections come only from the studio itself.
  Connections are fetch, WebSocket and server-sent events. Images include ``data:`` and ``blob:``, which
  Gradio uses for its own icons and uploads.
- No page may frame the studio (``frame-ancestors 'none'``), against clickjacking on the vote buttons.
- Forms post only to it, and ``<base>`` cannot move it.

Gradio's page needs three things:
- inline scripts: its config is an inline ``<script>``;
- ``eval``: ``gr.HTML`` compiles its template with ``Function``;
- inline styles: Svelte sets ``style`` attributes.
So scripts and styles allow ``'unsafe-inline'`` (scripts also ``'unsafe-eval'``), but still come from no
other origin. Untrusted text never reaches the page as markup that could use that. ``studio.render`` emits
no ``<script>``, ``style`` or event attribute, and ``nh3`` strips them if it did.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[
    [Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]
]

CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self' 'unsafe-inline' 'unsafe-eval'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "media-src 'self' data: blob:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "frame-src 'self'",
        "worker-src 'self' blob:",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
HEADERS: dict[str, str] = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
}


class SecurityHeaders:
    """ASGI middleware that sets ``HEADERS`` on every HTTP response (replacing any the app set itself).
    Pure ASGI, so streamed responses (server-sent events) pass through untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._raw = [(k.lower().encode(), v.encode()) for k, v in HEADERS.items()]
        self._names = {k for k, _ in self._raw}

    async def __call__(
        self,
        scope: Scope,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in self._names]
                message["headers"] = kept + self._raw
            await send(message)

        await self.app(scope, receive, send_with_headers)


def app_kwargs() -> dict[str, Any]:
    """Keyword arguments for Gradio's FastAPI app (``launch(app_kwargs=...)``) that install the middleware."""
    from starlette.middleware import Middleware

    return {"middleware": [Middleware(SecurityHeaders)]}
