"""Train tab, "Objectives side by side": train N objectives (DPO, KTO, ORPO, SimPO) from one parent, then
compare the children in one table (``training.compare``).

They train on one freeze of the votes, with matched budgets. The section launches through
``training.compare.launch_comparison``, which checks every config before any job is queued. It shows
``training.compare.comparison`` rendered by ``training.compare.markdown``. That is verdicts, eval change,
drift and KL to the parent, each with its interval and n. Per measure it names the objective that stands
out, or says "can't tell". With a planted taste named, it names the objective that moved that axis further,
or says how many prompts would tell (``training.compare_taste``).

A refusal answers next to the button. Examples are fewer than two objectives, or too few undesirable
answers for KTO. Only ids live in the page. The jobs are rows the job queue runs, so the view can be
refreshed any time.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import gradio as gr

from vibestudio.accounts import PermissionDenied, require_role
from vibestudio.studio.context import StudioContext
from vibestudio.studio.errors import require, user_error, wire
from vibestudio.studio.render import literal, to_html
from vibestudio.training.compare import (
    DEFAULT_OBJECTIVES,
    OBJECTIVES,
    comparison,
    launch_comparison,
    list_comparisons,
    markdown,
)
from vibestudio.training.jobs.config import JOB_KINDS
from vibestudio.training.jobs.errors import JobError

LABELS = [(JOB_KINDS[k].label, k) for k in OBJECTIVES]
INTRO = (
    "Train several objectives from one parent on the same votes, with the same steps and answers per step, and "
    "compare the children: verdicts, eval change, drift and KL to the parent with intervals. An objective is "
    "named better only when its interval is apart from every other's; otherwise the table says *can't tell*. Name "
    "the planted taste (a drift feature such as emoji) to learn which objective took it further, or how many "
    "prompts a run would need to tell."
)


class _Section(NamedTuple):
    objectives: Any
    parent: Any
    snapshot: Any
    steps: Any
    batch: Any
    axis: Any
    toward: Any
    launch: Any
    status: Any
    picker: Any
    refresh: Any
    view: Any


def build(ctx: StudioContext, demo: gr.Blocks | None = None) -> Any:
    """The section's layout (inside the Train tab) and its events; returns the launch event (the Train tab
    follows it with its job list). With ``demo``, the page load and each opening of the tab read the
    comparisons again (``studio.fresh``)."""
    with gr.Accordion("Objectives side by side", open=False, elem_id="objectives-section"):
        gr.Markdown(INTRO)
        with gr.Row():
            objectives = gr.CheckboxGroup(LABELS, value=list(DEFAULT_OBJECTIVES), label="Objectives")
            parent = gr.Textbox("smollm2-plain", label="Parent (name or id)")
            snapshot = gr.Textbox("", label="Snapshot (empty: freeze the current votes now)")
        with gr.Row():
            steps = gr.Number(16, label="Steps (every objective)", precision=0)
            batch = gr.Number(4, label="Pairs per step (KTO: twice as many answers)", precision=0)
            axis = gr.Textbox("", label="Planted taste (a drift feature, e.g. emoji; empty: none)")
            toward = gr.Radio(["higher", "lower"], value="higher", label="The taste moves it")
            launch = gr.Button("Train side by side", variant="primary", elem_id="objectives-launch")
        status = gr.HTML(elem_id="objectives-status")
        with gr.Row():
            picker = gr.Dropdown([], label="Comparison", interactive=True, elem_id="objectives-picker")
            refresh = gr.Button("Refresh", elem_id="objectives-refresh")
        view = gr.HTML(elem_id="objectives-view")
    section = _Section(
        objectives, parent, snapshot, steps, batch, axis, toward, launch, status, picker, refresh, view
    )
    launched = _wire(ctx, section)
    if demo is not None:
        demo.load(_open_handler(ctx), [picker], [picker, view], api_visibility="private")
    return launched


def _open_handler(ctx: StudioContext) -> Any:
    """The comparisons as they are now, and the picked one's view (nothing for a role below researcher)."""

    def on_open(cid: Any, request: gr.Request) -> tuple[Any, Any]:
        uid = None
        try:
            uid = ctx.access.user_id(request)
            require_role(ctx.db, uid, "researcher")
            choices = _choices(ctx, uid)
            if cid in (None, ""):
                return gr.update(choices=choices), gr.update()
            return gr.update(choices=choices), to_html(markdown(comparison(ctx.db, int(cid), user_id=uid)))
        except PermissionDenied:
            return gr.update(choices=[], value=None), ""
        except JobError as exc:  # the picked comparison is gone
            return gr.update(choices=_choices(ctx, uid), value=None), to_html(literal(str(exc)))

    return on_open


def _wire(ctx: StudioContext, p: _Section) -> Any:
    def on_launch(objectives, parent, snapshot, steps, batch, axis, toward, request: gr.Request):  # type: ignore[no-untyped-def]
        uid = require(ctx, request, "researcher")
        try:
            cid = launch_comparison(
                ctx.db,
                str(parent or "").strip(),
                list(objectives or []),
                str(snapshot or "").strip() or None,
                created_by=uid,
                max_steps=int(steps or 0),
                per_device_train_batch_size=int(batch or 0),
                axis=str(axis or "").strip() or None,
                toward=str(toward or "higher"),
            )
            view = comparison(ctx.db, cid, user_id=uid)
        except (JobError, PermissionDenied) as exc:
            raise user_error(exc) from exc
        jobs = ", ".join(str(c.job_id) for c in view.children)
        note = to_html(literal(f"Comparison {cid} launched: jobs {jobs}. Refresh to follow it."))
        return note, gr.update(choices=_choices(ctx, uid), value=cid), to_html(markdown(view))

    def on_show(cid, request: gr.Request):  # type: ignore[no-untyped-def]
        uid = require(ctx, request, "researcher")
        choices = _choices(ctx, uid)
        if cid in (None, ""):
            if not choices:
                return "", gr.update(choices=[]), to_html("No comparison yet: launch one above.")
            cid = choices[0][1]
        try:
            text = to_html(markdown(comparison(ctx.db, int(cid), user_id=uid)))
        except (JobError, PermissionDenied) as exc:
            raise user_error(exc) from exc
        return "", gr.update(choices=choices, value=int(cid)), text

    inputs = [p.objectives, p.parent, p.snapshot, p.steps, p.batch, p.axis, p.toward]
    outputs = [p.status, p.picker, p.view]
    launched = wire(p.launch.click, on_launch, inputs, outputs, p.status, api_name="objectives_launch")
    wire(p.refresh.click, on_show, [p.picker], outputs, p.status, api_name="objectives_show")
    wire(p.picker.input, on_show, [p.picker], outputs, p.status, api_visibility="private")
    return launched


def _choices(ctx: StudioContext, uid: int | None) -> list[tuple[str, int]]:
    return [
        (f"{c.id}: {', '.join(JOB_KINDS[o].label for o in c.objectives)} from {c.parent}", c.id)
        for c in list_comparisons(ctx.db, user_id=uid)
    ]
