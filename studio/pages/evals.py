"""Verifiable evals section of the Probes tab: start an eval run over a contestant, with a progress bar.

The run is ``standings.evals.run_evals``. Running evals is work started on purpose. So it lives with the
probes, the tab that measures a contestant. The Leaderboard's Goldilocks board only reads the stored runs.
The same run is ``vibestudio evals run`` (CLI), the ``/evals_run`` API endpoint, and
``standings.evals.run_evals`` (Python).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import gradio as gr

from vibestudio.accounts import PermissionDenied
from vibestudio.arena.registry import list_contestants
from vibestudio.standings.evals import EvalError, run_evals
from vibestudio.studio.context import StudioContext
from vibestudio.studio.errors import refuse, require, user_error, wire
from vibestudio.studio.render import count, literal, to_html


class _EvalsSection(NamedTuple):
    who: Any
    limit: Any
    button: Any
    status: Any


def _evals_section() -> _EvalsSection:
    """A contestant, how many items, Run evals, and the status line under them (where refusals answer)."""
    gr.Markdown(
        "### Verifiable evals\nAsk a contestant the eval set (answers checked, not judged); the scores feed the "
        "Leaderboard's Goldilocks board."
    )
    with gr.Row():
        who = gr.Dropdown(
            [], label="Run the verifiable evals for", allow_custom_value=True, scale=2, elem_id="evals-who"
        )
        limit = gr.Textbox(  # a Number would show "empty" as 0
            "",
            label="Only the first N items (empty: all)",
            placeholder="all items",
            scale=1,
            elem_id="evals-limit",
        )
        button = gr.Button("Run evals", variant="primary", elem_id="evals-run", scale=1)
    status = gr.HTML(elem_id="evals-status")
    return _EvalsSection(who, limit, button, status)


def build_section(ctx: StudioContext, demo: gr.Blocks) -> None:
    """Lay out the section and wire it: Run evals (researchers), and the contestant picker filled on load."""
    s = _evals_section()
    wire(s.button.click, _run_handler(ctx), [s.who, s.limit], [s.status], s.status, api_name="evals_run")
    demo.load(_names_handler(ctx), None, [s.who], api_visibility="private")


def _names_handler(ctx: StudioContext) -> Callable[..., Any]:
    def contestant_names():  # type: ignore[no-untyped-def]
        with ctx.db.session() as s:
            return gr.update(choices=[c.public_name for c in list_contestants(s)])

    return contestant_names


def _run_handler(ctx: StudioContext) -> Callable[..., Any]:
    """Run the eval set over one contestant, ``limit`` items (empty: all), and say how it scored."""

    def on_run_evals(who: str | None, limit, request: gr.Request, progress=gr.Progress()):  # type: ignore[no-untyped-def]
        require(ctx, request, "researcher")
        if not who:
            raise refuse("Pick a contestant first.")

        def report(done: int, total: int, item: str) -> None:
            progress((done, total), desc=f"{who}: {item or 'starting'}")

        text = str(limit or "").strip()
        if text and not (text.isdigit() and int(text) > 0):
            return to_html("Not run: type a whole number of items above 0, or leave the box empty for all.")
        try:
            run = run_evals(
                ctx.db,
                who,
                limit=int(text) if text else None,
                progress=report,
                user_id=ctx.access.user_id(request),
            )
        except (EvalError, PermissionDenied) as exc:
            raise user_error(exc) from exc
        s = run.summary()
        score = "n/a" if s["score"] is None else f"{100 * s['score']:.0f}%"
        text = (
            f"**{literal(s['contestant'])}**: {s['passed']} of {count(s['answered'], 'answer')} passed ({score}) "
            f"in {s['seconds']:.0f} s. The Leaderboard's Goldilocks board shows it when drawn again."
        )
        if s["stopped"]:
            text += f"\n\n⚠️ Stopped early: {literal(s['stopped'])}"
        return to_html(text)

    return on_run_evals
