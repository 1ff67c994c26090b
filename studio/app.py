"""The Gradio app composer: one tab per page module, built over a shared StudioContext."""

from __future__ import annotations

import os

import gradio as gr

from studio.auth import check_serving
from studio.context import StudioContext, build_context
from studio.pages import admin, agreement, arena, data, label, leaderboard, models, queues, train

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

CSS = "#arena-reveal h3 {margin-top: 0.5em}"


def build_app(ctx: StudioContext) -> gr.Blocks:
    with gr.Blocks(title="Vibe Studio") as demo:
        gr.Markdown("# 🎛️ Vibe Studio\nWhich model do people actually like, and why?")
        with gr.Tab("Arena", id="arena"):
            arena.build(ctx)
        with gr.Tab("Leaderboard", id="leaderboard"):
            leaderboard.build(ctx, demo)
        with gr.Tab("Data", id="data"):
            data.build(ctx, demo)
        with gr.Tab("Annotate", id="annotate"):
            queues.build(ctx, demo)
        with gr.Tab("Label", id="label"):
            label.build(ctx, demo)
        with gr.Tab("Agreement", id="agreement"):
            agreement.build(ctx, demo)
        with gr.Tab("Train", id="train"):
            train.build(ctx, demo)
        with gr.Tab("Models", id="models"):
            models.build(ctx, demo)
        with gr.Tab("Admin", id="admin"):
            admin.build(ctx, demo)
    demo.queue(default_concurrency_limit=8)
    return demo


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
        show_error=True,
        quiet=not block,
        auth=ctx.access.gradio_auth(),  # None in the open single-user mode
        max_file_size=f"{ctx.settings.max_upload_mb}mb",
        auth_message="Sign in with your Vibe Studio account." if ctx.access.required else None,
    )
    return demo, url
