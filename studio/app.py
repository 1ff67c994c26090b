"""The Gradio app composer: one tab per page module, built over a shared StudioContext."""

from __future__ import annotations

import atexit
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import gradio as gr

from vibestudio.studio import fresh, headers, roles, uploads
from vibestudio.studio.auth import SessionGuard, check_serving
from vibestudio.studio.context import StudioContext, build_context
from vibestudio.studio.gate import Limits, RequestGate
from vibestudio.studio.origins import OriginPolicy, split_list, wrap
from vibestudio.studio.pages import (
    admin,
    agreement,
    arena,
    data,
    label,
    leaderboard,
    models,
    probes,
    queues,
    train,
)
from vibestudio.studio.render import sanitize_html

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

CSS = """
#arena-reveal h3 {margin-top: 0.5em}
.vs-md {overflow-wrap: anywhere; unicode-bidi: isolate; position: relative; max-width: 100%; overflow-x: auto}
.vs-md.vs-plain {white-space: pre-wrap}
.vs-md pre {white-space: pre-wrap}
.vs-md ul, .vs-md ol {padding-left: 1.5em}
.vs-md table {border-collapse: collapse}
.vs-md th, .vs-md td {border: 1px solid var(--border-color-primary); padding: 2px 6px}
.vs-image {font-style: italic; opacity: 0.8}
.vs-plot .empty svg {display: none}
.vs-plot .empty::after {content: "No chart yet: nothing to draw here so far."; opacity: 0.7}
"""
#: System fonts only: the default theme would fetch Google Fonts, which the Content-Security-Policy forbids
#: (and which an offline studio cannot reach).
THEME_FONTS = dict(
    font=["ui-sans-serif", "system-ui", "sans-serif"],
    font_mono=["ui-monospace", "Consolas", "monospace"],
)


def build_app(ctx: StudioContext) -> gr.Blocks:
    # shaped by role (``studio.roles``): each tab and marked section shown only to the roles that may use it
    with roles.shaping(hidden_first=ctx.access.required) as shaped, gr.Blocks(title="Vibe Studio") as demo:
        gr.Markdown("# Vibe Studio\nWhich model do people actually like, and why?")
        # The timers live outside the tabs, so they exist before any tab is opened (a tab's children mount only
        # when it is first opened); ``_tab`` switches them as tabs open.
        timers = {
            "leaderboard": gr.Timer(leaderboard.REFRESH_SECONDS, active=False),
            "data": gr.Timer(data.REFRESH_SECONDS, active=False),
            "train": gr.Timer(train.POLL_SECONDS, active=False),
        }
        with _tab("Arena", "arena", timers):
            arena.build(ctx, demo)
        with _tab("Leaderboard", "leaderboard", timers) as tab:
            leaderboard.build(ctx, demo, timers["leaderboard"], tab=tab)
        with _tab("Data", "data", timers):
            data.build(ctx, demo, timers["data"])
        with _tab("Annotate", "annotate", timers):
            queues.build(ctx, demo)
        with _tab("Label", "label", timers):
            label.build(ctx, demo)
        with _tab("Agreement", "agreement", timers):
            agreement.build(ctx, demo)
        with _tab("Probes", "probes", timers):
            probes.build(ctx, demo)
        with _tab("Train", "train", timers) as tab:
            train.build(ctx, demo, timers["train"], tab=tab)
        with _tab("Models", "models", timers):
            models.build(ctx, demo)
        with _tab("Admin", "admin", timers):
            admin.build(ctx, demo)
        roles.shape(ctx, demo, shaped)
    fresh.refresh_on_open(demo)  # every view a page load fills is filled again when its tab opens
    demo.queue(default_concurrency_limit=8)
    sanitize_html_components(demo)
    mark_plots(demo)
    return demo


def sanitize_html_components(demo: gr.Blocks) -> int:
    """Route every ``gr.HTML`` of the app through the one display path's sanitizer (``render.sanitize_html``):
    its first value now, and every value a handler returns (the component's ``postprocess``). Returns how many."""
    n = 0
    for block in demo.blocks.values():
        if isinstance(block, gr.HTML) and not getattr(block, "_vs_sanitized", False):
            block.value = sanitize_html(block.value)
            block.postprocess = _sanitized(block.postprocess)  # type: ignore[method-assign]
            block._vs_sanitized = True  # type: ignore[attr-defined]
            n += 1
    return n


def mark_plots(demo: gr.Blocks) -> int:
    """Give every ``gr.Plot`` the ``vs-plot`` class, whose empty state says in words that there is nothing to
    draw yet (``CSS``; Gradio's own empty plot showed an icon that read as a broken image). Returns how many."""
    n = 0
    for block in demo.blocks.values():
        if isinstance(block, gr.Plot):
            classes = block.elem_classes
            have = [classes] if isinstance(classes, str) else list(classes or [])
            if "vs-plot" not in have:
                block.elem_classes = [*have, "vs-plot"]
                n += 1
    return n


def _sanitized(postprocess: Any) -> Any:
    def wrapped(value: Any) -> Any:
        return postprocess(sanitize_html(value))

    return wrapped


@contextmanager
def _tab(label: str, name: str, timers: dict[str, gr.Timer]) -> Iterator[gr.Tab]:
    """``gr.Tab(label, id=name)`` whose opening switches ``timers`` (``_runs_timers``) before the page's own events."""
    with gr.Tab(label, id=name) as tab:
        roles.restrict(tab, roles.TAB_ROLES[name])
        _runs_timers(tab, name, timers)
        yield tab


def _runs_timers(tab: gr.Tab, name: str, timers: dict[str, gr.Timer]) -> None:
    """Opening ``tab`` runs the timer of the page ``name`` (if it has one) and stops every other: the Leaderboard's
    refresh and the Train tab's job poll run only while their tab is open, so nothing polls in the background of a
    page that shows something else (and no poll fills a battle's network log).

    The switch runs in the browser (a JavaScript event with no server call) and switches each timer on or off, so
    the switches apply in the order the tabs were opened. Server events did not: the first tab fires
    its own select event as the page mounts, and its "stop the Train poll" could land after a quick click on Train
    had started the poll (seen in loaded browser runs: a Train tab whose job detail never moved), first with one
    event per timer run side by side on the server, then, less often, with one event per tab on an ordered line
    (the server ran them in order, so most likely the browser applied the two answers out of order)."""
    updates = [{"__type__": "update", "active": owner == name} for owner in timers]
    tab.select(None, None, list(timers.values()), js=f"() => {json.dumps(updates)}", api_visibility="private")


def origin_policy(ctx: StudioContext, host: str) -> OriginPolicy:
    """The Origin/Host policy of a server bound to ``host`` (``VIBESTUDIO_ALLOWED_ORIGINS`` / ``_HOSTS``)."""
    hosts = split_list(ctx.settings.allowed_hosts) + ([host] if host not in ("0.0.0.0", "::", "") else [])
    return OriginPolicy(split_list(ctx.settings.allowed_origins), hosts)


def app_kwargs(ctx: StudioContext, host: str) -> dict[str, Any]:
    """Keyword arguments for Gradio's FastAPI app: the middleware every request passes inside the Origin guard
    (which ``server_app`` puts outside everything, Gradio's CORS layer included), outermost first.

    1. ``headers.SecurityHeaders``: Content-Security-Policy and companions on every response (refusals too);
    2. ``downloads.FileRouteGuard``: Gradio's file routes serve nothing (files leave through the checked route);
    3. ``auth.SessionGuard``: login throttle context, sessions that expire or end on a password change, and the
       session cookie's ``SameSite=Lax; HttpOnly`` (login mode only);
    4. ``gate.RequestGate``: side routes off, no route without a session but the login page's, the login page
       without the API description, and body limits (``VIBESTUDIO_MAX_REQUEST_MB``, the upload limit, a small one
       and a per-address budget without a session), all before a body is read.
    """
    from starlette.middleware import Middleware

    from vibestudio.studio.downloads import FileRouteGuard

    return {
        "middleware": [
            *headers.app_kwargs()["middleware"],
            Middleware(FileRouteGuard),
            Middleware(SessionGuard, access=ctx.access),
            Middleware(RequestGate, access=ctx.access, limits=Limits.from_settings(ctx.settings)),
        ]
    }


def server_app(ctx: StudioContext, host: str) -> Any:
    """Gradio's FastAPI app for ``launch(_app=...)``, made here so that the Origin guard (``origins.wrap``) is its
    outermost layer, in front of the CORS layer and every route Gradio adds, and the checked download route
    (``studio.downloads``) is its first route."""
    from gradio.routes import App, ORJSONResponse

    from vibestudio.studio import downloads

    app = App(
        auth_dependency=ctx.access.gradio_auth_dependency(),
        default_response_class=ORJSONResponse,
        **app_kwargs(ctx, host),
    )
    wrap(app, origin_policy(ctx, host))
    downloads.install(app, ctx)
    return app


def serve(
    host: str | None = None, port: int | None = None, block: bool = True, ctx: StudioContext | None = None
) -> tuple[gr.Blocks, str]:
    """Build and launch the app; returns the Blocks and the local URL."""
    ctx = ctx or build_context()
    host = host or ctx.settings.host
    check_serving(ctx.settings.auth, ctx.access.required, host)  # raises AuthConfigError with the fix
    # Gradio's upload cache: a folder of this process's own outside the data home, leftovers of processes that
    # are gone removed first; set before the app is built (each component reads it when it is made)
    folder = uploads.claim_upload_folder()
    atexit.register(uploads.release_upload_folder, folder)
    uploads.StaleSweeper(folder).start()  # an upload no handler took leaves after uploads.UPLOAD_TTL_S
    demo = build_app(ctx)
    if ctx.access.proxy is not None:
        # The proxy check compares the TCP peer with VIBESTUDIO_PROXY_ADDRESSES: uvicorn must not replace the peer
        # with an X-Forwarded-For value (by default it does for a loopback peer, so a local process could claim
        # to be the proxy, and a proxy on this host would be seen as its users' addresses).
        os.environ["FORWARDED_ALLOW_IPS"] = ""
    ctx.start_idle_sweeper()  # idle battles end (and count) while the app runs
    _, url, _ = demo.launch(
        server_name=host,
        server_port=port or ctx.settings.port,
        prevent_thread_lock=not block,
        css=CSS + arena.CSS,
        theme=gr.themes.Default(**THEME_FONTS),  # type: ignore[arg-type]
        _app=server_app(ctx, host),  # the Origin/Host policy outermost, headers, the session guard, downloads
        show_error=False,  # an unexpected exception shows a generic message; its traceback goes to the log
        quiet=not block,
        auth=ctx.access.gradio_auth(),  # None in the open single-user mode and the proxy mode
        auth_dependency=ctx.access.gradio_auth_dependency(),  # the proxy mode's user, from the guard
        max_file_size=f"{ctx.settings.max_upload_mb}mb",
        enable_monitoring=False,  # Gradio's call counts and timings: off (``studio.gate`` refuses the routes too)
        run_history=False,  # its routes reach the Hugging Face hub; the studio keeps its own records
        auth_message="Sign in with your Vibe Studio account."
        if ctx.access.required and ctx.access.proxy is None
        else None,
    )
    return demo, url
