"""Train tab: launch a DPO job (LoRA by default) on a frozen snapshot, watch it live, see the new contestant.

The job runs in its own process; this page only reads its state and metrics from the database, so closing the
browser loses nothing and reopening the tab re-attaches.
"""

from __future__ import annotations

import gradio as gr
import pandas as pd
import plotly.graph_objects as go

from annotation.snapshots import SnapshotError, list_snapshots
from arena.accounts import PermissionDenied
from arena.registry import list_contestants
from studio.context import StudioContext
from studio.errors import user_error
from studio.pages.gold import gold_figure, gold_markdown
from studio.render import literal, to_html
from training.config import ConfigError
from training.errors import JobError
from training.lineage import job_alerts
from training.runner import cancel, job_view, list_jobs
from training.service import launch_dpo
from training.verdict import current as verdict_status

NEW_SNAPSHOT = "new snapshot from current votes"
CURVES = ["loss", "rewards/margins", "rewards/accuracies", "rewards/chosen", "rewards/rejected", "kl"]


def _jobs_table(ctx: StudioContext) -> pd.DataFrame:
    jobs = list_jobs(ctx.db)
    alerts = job_alerts(ctx.db, [j.id for j in jobs])
    badges = {cid: st.badge for cid, st in verdict_status(ctx.db).items()}
    rows = [
        {
            "id": j.id,
            "kind": j.kind,
            "status": j.status,
            "progress": f"{100 * j.progress:.0f}%" if j.progress is not None else "",
            "contestant": j.contestant_id or "",
            "verdict": badges.get(j.contestant_id or -1, ""),
            "error": (j.error or "")[:80],
            "alerts": " · ".join(f"⚠️ {a[:60]}" for a in alerts.get(j.id, [])),
        }
        for j in jobs
    ]
    return pd.DataFrame(
        rows, columns=["id", "kind", "status", "progress", "contestant", "verdict", "error", "alerts"]
    )


def _choices(ctx: StudioContext) -> tuple[list[str], list[str]]:
    with ctx.db.session() as s:
        parents = [c.public_name for c in list_contestants(s)]
        snaps = [NEW_SNAPSHOT] + [f"{x['hash'][:16]} ({x['n_pairs']} pairs)" for x in list_snapshots(s)]
    return parents, snaps


def _figure(metrics: dict[str, list[tuple[int, float]]]) -> go.Figure:
    fig = go.Figure()
    for name in CURVES:
        series = metrics.get(name) or metrics.get(f"train/{name}")
        if series:
            fig.add_scatter(
                x=[p[0] for p in series], y=[p[1] for p in series], name=name, mode="lines+markers"
            )
    fig.update_layout(
        height=360, margin={"l": 10, "r": 10, "t": 30, "b": 10}, xaxis_title="step", title="Training metrics"
    )
    return fig


def build(ctx: StudioContext, demo: gr.Blocks) -> None:
    parents, snaps = _choices(ctx)
    gr.Markdown(
        "Train a DPO (LoRA) checkpoint on collected preferences. When the job succeeds, the checkpoint "
        "joins the arena as a new contestant with its lineage recorded."
    )
    with gr.Row():
        parent = gr.Dropdown(
            parents,
            value=parents[0] if parents else None,
            label="Start from (parent)",
            elem_id="train-parent",
        )
        snapshot = gr.Dropdown(snaps, value=NEW_SNAPSHOT, label="Dataset snapshot", elem_id="train-snapshot")
    with gr.Row():
        steps = gr.Number(16, label="Steps", precision=0, minimum=1)
        beta = gr.Number(0.1, label="beta")
        lora = gr.Checkbox(True, label="LoRA")
        lr = gr.Number(None, label="Learning rate (empty = default)")
    launch = gr.Button("🚀 Launch DPO job", variant="primary", elem_id="train-launch")
    launched = gr.HTML(elem_id="train-launched")
    jobs = gr.Dataframe(interactive=False, label="Jobs", elem_id="train-jobs")
    with gr.Row():
        job_id = gr.Number(None, label="Job to watch", precision=0, elem_id="train-job-id")
        stop = gr.Button("⏹ Cancel job")
    detail = gr.HTML(elem_id="train-detail")
    plot = gr.Plot()
    gold_plot = gr.Plot(label="Gold vs √KL", elem_id="train-gold")
    log = gr.Textbox(label="Log (tail)", lines=8, max_lines=12, interactive=False)
    timer = gr.Timer(2.0)

    def on_launch(parent_name, snap_label, n_steps, b, use_lora, learning_rate, request: gr.Request):
        overrides = {"max_steps": int(n_steps or 16), "beta": float(b or 0.1), "lora": bool(use_lora)}
        if learning_rate:
            overrides["learning_rate"] = float(learning_rate)
        snap = None if snap_label in (None, NEW_SNAPSHOT) else snap_label.split(" ", 1)[0]
        try:
            uid = ctx.access.user_id(request)
            jid = launch_dpo(ctx.db, parent_name, snapshot=snap, created_by=uid, **overrides)
        except (SnapshotError, ConfigError, JobError, PermissionDenied) as exc:
            raise user_error(exc) from exc
        _, new_snaps = _choices(ctx)
        return (to_html(f"Job **{jid}** submitted."), jid, _jobs_table(ctx), gr.update(choices=new_snaps))

    def on_tick(jid):
        table = _jobs_table(ctx)
        if not jid:
            return table, "", None, "", None
        try:
            v = job_view(ctx.db, int(jid))
        except JobError as exc:
            return table, to_html(literal(exc)), None, "", None
        text = f"**Job {v.id}** · {v.kind} · **{v.status}**"
        if v.progress is not None:
            text += f" · {100 * v.progress:.0f}%"
        if v.queue_position:
            text += f" · position {v.queue_position} in the queue"
        if v.contestant_id:
            with ctx.db.session() as s:
                names = {c.id: c.public_name for c in list_contestants(s, active_only=False)}
            text += (
                f"\n\n✅ Published as contestant **{literal(names.get(v.contestant_id, v.contestant_id))}**: it is "
                "now in the arena."
            )
        if v.error:
            text += f"\n\n❌ {literal(v.error, limit=500)}"
        health = gold_markdown(v.metrics)
        if health:
            text += f"\n\n{health}"
        return table, to_html(text), _figure(v.metrics), v.log_tail, gold_figure(v.metrics)

    def on_cancel(jid, request: gr.Request):
        if not jid:
            raise gr.Error("Choose a job id to cancel.")
        try:
            v = cancel(ctx.db, int(jid), user_id=ctx.access.user_id(request))
        except (JobError, PermissionDenied) as exc:
            raise user_error(exc) from exc
        return to_html(f"Job {v.id} is {literal(v.status)}.")

    launch.click(
        on_launch,
        [parent, snapshot, steps, beta, lora, lr],
        [launched, job_id, jobs, snapshot],
        api_name="train_launch_dpo",
    )
    timer.tick(
        on_tick,
        [job_id],
        [jobs, detail, plot, log, gold_plot],
        api_visibility="private",
        show_progress="hidden",
    )
    stop.click(on_cancel, [job_id], [detail], api_name="train_cancel")

    def refresh_choices():
        p, s = _choices(ctx)
        return gr.update(choices=p), gr.update(choices=s), _jobs_table(ctx)

    demo.load(refresh_choices, None, [parent, snapshot, jobs], api_visibility="private")
