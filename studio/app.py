"""The Gradio app composer: one tab per page module, built over a shared StudioContext."""

from __future__ import annotations

import os

import gradio as gr

from studio import headers
from studio.auth import check_serving
from studio.context import StudioContext, build_context
from studio.pages import admin, agreement, arena, data, label, leaderboard, models, probes, queues, train

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
"""
#: System fonts only: the default theme would fetch Google Fonts, which the Content-Security-Policy forbids
#: (and which an offline studio cannot reach).
THEME_FONTS = dict(
    font=["ui-sans-serif", "system-ui", "sans-serif"],
    font_mono=["ui-monospace", "Consolas", "monospace"],
)


def build_app(ctx: StudioContext) -> gr.Blocks:
    with gr.Blocks(title="Vibe Studio") as demo:
        gr.Markdown("# 🎛️ Vibe Studio\nWhich model do people actually like, and why?")
        # The two timers live outside the tabs. A tab's children mount only when it is first opened, and an update
        # that reaches a component while it mounts can be lost: in a loaded browser-test run the Train tab's job detail
        # stayed empty while its picked job ran and finished, as if the poll had never started.
        leaderboard_timer = gr.Timer(leaderboard.REFRESH_SECONDS, active=False)
        train_timer = gr.Timer(train.POLL_SECONDS, active=False)
        with gr.Tab("Arena", id="arena") as arena_tab:
            arena.build(ctx)
        with gr.Tab("Leaderboard", id="leaderboard") as leaderboard_tab:
            leaderboard.build(ctx, demo, leaderboard_timer, tab=leaderboard_tab)
        with gr.Tab("Data", id="data") as data_tab:
            data.build(ctx, demo)
        with gr.Tab("Annotate", id="annotate") as annotate_tab:
            queues.build(ctx, demo)
        with gr.Tab("Label", id="label") as label_tab:
            label.build(ctx, demo)
        with gr.Tab("Agreement", id="agreement") as agreement_tab:
            agreement.build(ctx, demo)
        with gr.Tab("Probes", id="probes") as probes_tab:
            probes.build(ctx, demo)
        with gr.Tab("Train", id="train") as train_tab:
            train.build(ctx, demo, train_timer)
        with gr.Tab("Models", id="models") as models_tab:
            models.build(ctx, demo)
        with gr.Tab("Admin", id="admin") as admin_tab:
            admin.build(ctx, demo)
        # The Leaderboard's refresh timer and the Train tab's job poll run only while their tab is open: nothing
        # polls in the background of a page that shows something else (and no poll fills a battle's network log).
        tabs = (
            arena_tab,
            leaderboard_tab,
            data_tab,
            annotate_tab,
            label_tab,
            agreement_tab,
            probes_tab,
            train_tab,
            models_tab,
            admin_tab,
        )
        for timer, owner in ((leaderboard_timer, leaderboard_tab), (train_timer, train_tab)):
            for tab in tabs:
                if tab is not owner:
                    tab.select(_stop_timer, None, timer, api_visibility="private")
        train_tab.select(_start_timer, None, train_timer, api_visibility="private")
    demo.queue(default_concurrency_limit=8)
    return demo


def _stop_timer() -> gr.Timer:
    return gr.Timer(active=False)


def _start_timer() -> gr.Timer:
    return gr.Timer(active=True)


def serve(
    host: str | None = None, port: int | None = None, block: bool = True, ctx: StudioContext | None = None
) -> tuple[gr.Blocks, str]:
    """Build and launch the app; returns the Blocks and the local URL."""
    ctx = ctx or build_context()
    host = host or ctx.settings.host
    check_serving(ctx.settings.auth, ctx.access.required, host)  # raises AuthConfigError with the fix
    demo = build_app(ctx)
    _, url, _ = demo.launch(
        server_name=host,
        server_port=port or ctx.settings.port,
        prevent_thread_lock=not block,
        css=CSS,
        theme=gr.themes.Default(**THEME_FONTS),  # type: ignore[arg-type]
        app_kwargs=headers.app_kwargs(),  # Content-Security-Policy and companions on every response
        show_error=False,  # an unexpected exception shows a generic message; its traceback goes to the log
        quiet=not block,
        auth=ctx.access.gradio_auth(),  # None in the open single-user mode
        max_file_size=f"{ctx.settings.max_upload_mb}mb",
        auth_message="Sign in with your Vibe Studio account." if ctx.access.required else None,
    )
    return demo, url
