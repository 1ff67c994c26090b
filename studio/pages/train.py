"""Train tab: the whole training API in one page.

Set up a job. The kinds are:
- DPO with its loss types, KTO with its class balance, ORPO, SimPO, reward model;
- GRPO with verifiable, learned and AI-judge rewards;
- GRPO on a task set: RLVR with its held-out accuracy curve.
Before launch, see the exact YAML that will run, editable and checked field by field. See the memory/time
estimate and the on-policy mix too. Then pick a job from the table to watch its curves and log. From
there:
cancel, resume, clone-and-edit, or publish a checkpoint saved on the way. Below, "Objectives side by side"
(``studio.pages.objectives``) trains several objectives on the same votes and compares their children.

The job runs in its own process. This page only reads its state and metrics from the database. So closing
the browser loses nothing, and reopening the tab re-attaches; the newest running or queued job is
selected.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import gradio as gr
import pandas as pd
import plotly.graph_objects as go
import yaml
from plotly.subplots import make_subplots

from vibestudio.accounts import PermissionDenied, require_role
from vibestudio.annotation.snapshots import list_snapshots
from vibestudio.annotation.unpaired import describe_balance
from vibestudio.arena.registry import list_contestants
from vibestudio.studio.context import StudioContext
from vibestudio.studio.errors import user_error
from vibestudio.studio.pages import objectives
from vibestudio.studio.pages.gold import gold_figure, gold_markdown
from vibestudio.studio.render import literal, to_html
from vibestudio.training.jobs.config import CONFIG_KINDS, DPO_LOSS_TYPES, JOB_KINDS, default, help_table
from vibestudio.training.jobs.errors import JobError
from vibestudio.training.jobs.runner import JobView, cancel, job_view, list_jobs, resume, saved_checkpoints
from vibestudio.training.jobs.service import ConfigCheck, check_config, launch_checked
from vibestudio.training.objectives.pairmix import describe_mix
from vibestudio.training.objectives.rewards import FORMATS
from vibestudio.training.publishing.lineage import job_alerts
from vibestudio.training.publishing.publish import publish_checkpoint
from vibestudio.training.report.verdict import current as verdict_status
from vibestudio.training.tasks.store import MIN_TASKS

NEW_SNAPSHOT = "new snapshot from current votes"
NONE = "(none)"
KINDS = {k.label: kind for kind, k in JOB_KINDS.items()}  # the one registry: DPO, KTO, ORPO, SimPO, ...
CURVES = {
    "dpo": ["loss", "rewards/margins", "rewards/accuracies", "kl"],
    "kto": ["loss", "rewards/chosen", "rewards/rejected", "kl", "kl_heldout"],
    "orpo": ["loss", "nll_loss", "rewards/margins", "rewards/accuracies", "kl_heldout"],
    "simpo": ["loss", "rewards/margins", "rewards/accuracies", "kl_heldout"],
    "reward": ["loss", "accuracy", "margin"],
    "grpo": [
        "reward",
        "kl",
        "loss",
        "completions/mean_length",
        "heldout/accuracy",  # RLVR: on held-out tasks, with its Wilson interval
        "heldout/low",
        "heldout/high",
        "kl_heldout",
    ],
}
JOB_COLUMNS = ["id", "kind", "status", "progress", "host", "parent", "result", "verdict", "alerts"]
PAIRS = ["all", "on_policy", "on_and_half", "off_policy"]


# ---- data for the widgets ---------------------------------------------------------------------------------------
def _names(ctx: StudioContext) -> dict[int, str]:
    with ctx.db.session() as s:
        return {c.id: c.public_name for c in list_contestants(s, active_only=False)}


def _jobs_table(ctx: StudioContext, uid: int | None = None) -> pd.DataFrame:
    names = _names(ctx)
    rows = []
    jobs = list_jobs(ctx.db, user_id=uid)
    alerts = job_alerts(ctx.db, [j.id for j in jobs])
    badges = {cid: st.badge for cid, st in verdict_status(ctx.db).items()}
    for j in jobs:
        result = (
            names.get(j.contestant_id, "")
            if j.contestant_id
            else (j.error or "").split("\n")[0][:60] or (j.waiting or "")
        )
        rows.append(
            {
                "id": j.id,
                "kind": j.kind,
                "status": j.status,
                "progress": f"{100 * j.progress:.0f}%" if j.progress is not None else "",
                "host": j.host or "",
                "parent": names.get(j.parent_contestant_id or -1, ""),
                "result": result,
                "verdict": badges.get(j.contestant_id or -1, ""),
                "alerts": " · ".join(f"⚠️ {a[:60]}" for a in alerts.get(j.id, [])),
            }
        )
    return pd.DataFrame(rows, columns=JOB_COLUMNS)


def _job_choices(ctx: StudioContext, uid: int | None = None) -> list[tuple[str, int]]:
    return [(f"#{j.id} {j.kind} · {j.status}", j.id) for j in list_jobs(ctx.db, user_id=uid)]


_STATE_WORDS = {  # what the lifecycle state means for the arena, in words (arena/lifecycle.py)
    "pending": "pending, its checkpoint report is running; it plays anonymously only after its verdict",
    "released": "it is now in the arena",
    "held": "held out of anonymous battles by its verdict (release it on the Models tab)",
    "hidden": "hidden from the arena",
}


def _live_job(ctx: StudioContext, uid: int | None = None) -> int | None:
    """The job a returning visitor wants to see: the newest running or queued one."""
    for j in list_jobs(ctx.db, user_id=uid):
        if j.status in ("running", "queued"):
            return j.id
    return None


def _task_sets(ctx: StudioContext) -> list[str]:
    from vibestudio.training.tasks import list_task_sets

    return [t.name for t in list_task_sets(ctx.db)]


def _snapshot_labels(s: Any) -> list[str]:
    """The snapshot picker's choices: a new one from the votes, then each frozen snapshot."""
    return [NEW_SNAPSHOT] + [f"{x['hash'][:16]} ({x['rows']})" for x in list_snapshots(s)]


def _choices(
    ctx: StudioContext, uid: int | None = None
) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    with ctx.db.session() as s:
        parents = [c.public_name for c in list_contestants(s)]
        snaps = _snapshot_labels(s)
    reward_jobs = [(NONE, NONE)] + [
        (f"job {j.id} ({j.status})", str(j.id))
        for j in list_jobs(ctx.db, user_id=uid)
        if j.kind == "reward" and j.status in ("queued", "running", "succeeded")
    ]
    return parents, snaps, reward_jobs


# ---- form -> config -----------------------------------------------------------------------------------------------
def form_config(
    kind_label: str,
    parent: str | None,
    snap_label: str | None,
    pairs: str,
    steps: float | None,
    lr: float | str | None,
    beta: float | None,
    lora: bool,
    save_steps: float | None,
    kl_every: float | None,
    loss_type: str | None,
    rewards: list[dict[str, Any]],
) -> dict[str, Any]:
    """The config mapping the form describes (the YAML editor shows it, the launch runs it)."""
    kind = KINDS.get(kind_label, "dpo")
    data: dict[str, Any] = {"kind": kind, "parent_contestant": parent or ""}
    data["snapshot_hash"] = "" if snap_label in (None, NEW_SNAPSHOT) else str(snap_label).split(" ", 1)[0]
    data["pairs"] = pairs or "all"
    if steps:
        data["max_steps"] = int(steps)
    if lr is not None and str(lr).strip():
        data["learning_rate"] = _number(lr)
    data["lora"] = bool(lora)
    data["save_steps"] = int(save_steps or 0)
    if kind == "dpo":
        data["beta"] = float(beta) if beta else default("dpo", "beta")
        data["loss_type"] = loss_type or default("dpo", "loss_type")
        data["kl_every"] = int(kl_every) if kl_every is not None else default("dpo", "kl_every")
    elif kind == "grpo":
        if beta is not None and beta != "":
            data["beta"] = float(beta)
        data["rewards"] = rewards
    elif _default_beta(kind) is not None and beta:
        data["beta"] = float(beta)  # KTO (its own fields: with_kto), ORPO, SimPO: the rest in the YAML editor
    return data


def _dpo(name: str) -> Any:
    """The form's starting value for ``name``: the DPO config's default (defined once, in the config)."""
    return default("dpo", name)


def _help(name: str, kind: str = "dpo") -> str:
    """The config's help for field ``name`` of ``kind``, shown under the form's field."""
    return next(h for n, _, h in help_table(CONFIG_KINDS[kind]) if n == name)


#: GRPO's default length reward, whose window the form starts from.
_LENGTH: dict[str, Any] = default("grpo", "rewards")[0]


def _default_beta(kind: str) -> float | None:
    """The kind's default beta (None for a kind without one)."""
    return next((d for name, d, _ in help_table(CONFIG_KINDS[kind]) if name == "beta"), None)


TASK_VERIFIERS = {
    "each task's own": None,
    "numeric": {"type": "numeric"},
    "numeric, any number counts (gameable)": {"type": "numeric", "match": "any"},
    "normalised exact": {"type": "exact"},
    "choice letter": {"type": "choice"},
}


def with_task_set(data: dict[str, Any], task_set: str | None, verifier: str | None) -> dict[str, Any]:
    """RLVR: a GRPO config on a task set (no snapshot) with the task reward first among its rewards."""
    if data.get("kind") != "grpo" or not task_set or task_set == NONE:
        return data
    reward: dict[str, Any] = {"type": "task"}
    if TASK_VERIFIERS.get(verifier or ""):
        reward["verifier"] = TASK_VERIFIERS[verifier or ""]
    return {**data, "snapshot_hash": "", "tasks": task_set, "rewards": [reward, *data.get("rewards", [])]}


def with_kto(
    data: dict[str, Any],
    desirable_weight: float | None = None,
    undesirable_weight: float | None = None,
    score_criterion: str | None = None,
    desirable_threshold: float | str | None = None,
) -> dict[str, Any]:
    """KTO's own fields from the form (the class weights, and a rubric criterion whose scores label answers);
    empty ones keep the kind's defaults. Other kinds are returned as they are."""
    if data.get("kind") != "kto":
        return data
    out = dict(data)
    if desirable_weight is not None and desirable_weight != "":
        out["desirable_weight"] = float(desirable_weight)
    if undesirable_weight is not None and undesirable_weight != "":
        out["undesirable_weight"] = float(undesirable_weight)
    if score_criterion and str(score_criterion).strip():
        out["score_criterion"] = str(score_criterion).strip()
    if desirable_threshold is not None and str(desirable_threshold).strip():
        out["desirable_threshold"] = _number(desirable_threshold)
    return out


def _number(text: float | str) -> float | str:
    """A typed number as a float; anything else as typed, so the config check names the field and the problem."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return str(text).strip()


def reward_specs(
    use_length: bool,
    length_min: float | None,
    length_max: float | None,
    length_w: float | None,
    use_format: bool,
    fmt: str | None,
    format_w: float | None,
    rm_job: str | None,
    rm_w: float | None,
    judge: str | None,
    judge_w: float | None,
) -> list[dict[str, Any]]:
    specs: list[dict[str, Any]] = []
    if use_length:
        spec: dict[str, Any] = {"type": "length", "unit": "words", "weight": float(length_w or 1.0)}
        if length_min:
            spec["min"] = int(length_min)
        if length_max:
            spec["max"] = int(length_max)
        specs.append(spec)
    if use_format and fmt:
        specs.append({"type": "format", "format": fmt, "weight": float(format_w or 1.0)})
    if rm_job and rm_job != NONE:
        specs.append({"type": "reward_model", "job": int(rm_job), "weight": float(rm_w or 1.0)})
    if judge and judge != NONE:
        specs.append({"type": "judge", "judge": judge, "weight": float(judge_w or 1.0)})
    return specs


def check_markdown(check: ConfigCheck) -> str:
    """Estimate, pair mix and problems by field, for the panel under the YAML editor."""
    lines = []
    if check.estimate is not None:
        verdict = "✅ fits" if check.estimate.fits else "⛔ **does not fit**"
        lines.append(f"**Estimate:** {check.estimate.summary()} — {verdict}")
    if check.mix is not None:
        fresh = check.config is not None and not check.config.snapshot_hash
        source = " from the current votes (frozen at launch)" if fresh else ""
        lines.append(
            f"**Pairs for the parent{source}:** {describe_mix(check.mix)} (on = both answers its own, "
            "half = one of them, off = neither)"
        )
    if check.balance is not None:
        lines.append(f"**KTO classes:** {literal(describe_balance(check.balance))}")
    if check.errors:
        lines.append("**Problems (nothing launched):**")
        lines += [f"- {literal(e.field or 'config')}: {literal(e.message)}" for e in check.errors]
    elif check.config is not None:
        lines.append("✅ Config valid: ready to launch.")
    return to_html("\n\n".join(lines))


#: Series drawn in another metric's panel: an interval's bounds beside its estimate.
_SAME_PANEL = {"heldout/low": "heldout/accuracy", "heldout/high": "heldout/accuracy"}


def _figure(kind: str, metrics: dict[str, list[tuple[int, float]]]) -> go.Figure:
    """One panel per metric, each on its own y axis (a loss near 0.7 and a reward near 0.01 on one axis
    flattened both), stacked over a shared step axis; an interval's bounds share their estimate's panel."""
    found = {
        name: series
        for name in CURVES.get(kind, CURVES["dpo"])
        if (series := metrics.get(name) or metrics.get(f"train/{name}"))
    }
    panels = [n for n in found if n not in _SAME_PANEL or _SAME_PANEL[n] not in found]
    if not panels:
        fig = go.Figure()
        fig.update_layout(height=200, title="Training metrics (none reported yet)")
        return fig
    fig = make_subplots(
        rows=len(panels), cols=1, shared_xaxes=True, subplot_titles=panels, vertical_spacing=0.08
    )
    for name, series in found.items():
        home = _SAME_PANEL.get(name)
        bound = home is not None and home in found  # drawn dotted in its estimate's panel
        row = panels.index(home if bound and home else name) + 1
        fig.add_scatter(
            x=[p[0] for p in series],
            y=[p[1] for p in series],
            name=name,
            mode="lines+markers",
            line={"dash": "dot"} if bound else None,
            row=row,
            col=1,
        )
    fig.update_layout(
        height=140 + 150 * len(panels),
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        title="Training metrics",
        showlegend=False,
    )
    fig.update_xaxes(title_text="step", row=len(panels), col=1)
    return fig


def _folder(v: JobView) -> Path | None:
    """The job's folder as recorded (a worker with its own data home writes it there)."""
    return Path(v.log_path).parent if v.log_path else None


def job_markdown(ctx: StudioContext, v: JobView, steps: list[int]) -> str:
    """The job's status line (with the steps of its saved checkpoints), result and over-optimisation alerts, as
    display-path HTML."""
    text = f"**Job {v.id}** · {v.kind} · **{v.status}**"
    if v.progress is not None:
        text += f" · {100 * v.progress:.0f}%"
    if v.host:
        text += f" · on {literal(v.host)}"
    if v.queue_position:
        text += f" · position {v.queue_position} in the queue"
    if v.waiting:
        text += f" · ⏳ {literal(v.waiting)}"
    if steps:
        text += f" · checkpoints saved at steps {', '.join(map(str, steps))}"
    if v.contestant_id:
        name = _names(ctx).get(v.contestant_id, v.contestant_id)
        where = _STATE_WORDS.get(getattr(v, "contestant_state", None) or "", "see its page on the Models tab")
        if v.contestant_step is None:
            text += f"\n\n✅ Published as contestant **{literal(name)}**: {where}."
        else:  # a checkpoint saved on the way plays; the job's own result is still to come (or never came)
            text += (
                f"\n\n✅ The checkpoint of step {v.contestant_step} is published as contestant "
                f"**{literal(name)}**: {where}."
            )
    if v.error:
        text += f"\n\n❌ {literal(v.error, limit=500)}"
    health = gold_markdown(v.metrics)
    if health:
        text += f"\n\n{health}"
    return to_html(text)


# ---- the page -----------------------------------------------------------------------------------------------------
FORM_LINE = "train-form"  # the events that write the config YAML, run one at a time in order
#: What Cancel shows the moment it is clicked (the launch note and the job's status line), before any answer.
CANCELLING_JS = (
    "() => ['<p>⏳ Cancelling the job: its process is stopping…</p>', "
    "'<p><strong>cancelling</strong>: the job is told to stop; its state follows.</p>']"
)
#: The page's load has a line of its own: on the form's line, one user's storm of form events (each a config check)
#: held every visitor's page load behind it.
LOAD_LINE = "train-load"
LOAD_CONCURRENCY = 4


class _FormWritten:
    """The sessions whose form has already written the YAML: the load, which no longer waits on the form's line,
    then leaves the YAML as that event wrote it (a late load would otherwise put the first form's YAML over an edit).
    Bounded: the least recently seen sessions are forgotten first."""

    def __init__(self, most: int = 10_000) -> None:
        from collections import OrderedDict
        from threading import Lock

        self.most = most
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._lock = Lock()

    def mark(self, session: str | None) -> None:
        if not session:
            return
        with self._lock:
            self._seen[session] = None
            self._seen.move_to_end(session)
            while len(self._seen) > self.most:
                self._seen.popitem(last=False)

    def __contains__(self, session: object) -> bool:
        with self._lock:
            return bool(session) and session in self._seen


FORM_WRITTEN = _FormWritten()


#: Seconds between two reads of the open job (the tab's poll, ``timer`` of ``build``).
POLL_SECONDS = 2.0


# ---- the page's sections: each builds its components and returns them by name --------------------------------
INTRO = (
    "Fine-tune a contestant on collected preferences. Set the job up with the form (or edit the YAML it "
    "writes), check it, launch it; when it succeeds the checkpoint joins the arena with its lineage."
)


class _JobForm(NamedTuple):
    """The fields every job kind has, in ``form_config``'s argument order (DPO's loss type last)."""

    kind: Any
    parent: Any
    snapshot: Any
    pairs: Any
    steps: Any
    lr: Any
    beta: Any
    lora: Any
    save_steps: Any
    kl_every: Any


def _job_form(parents: list[str], snaps: list[str]) -> _JobForm:
    with gr.Row():
        kind = gr.Radio(list(KINDS), value="DPO", label="Job kind", elem_id="train-kind")
        parent = gr.Dropdown(
            parents,
            value=parents[0] if parents else None,
            label="Start from (parent)",
            elem_id="train-parent",
        )
        snapshot = gr.Dropdown(snaps, value=NEW_SNAPSHOT, label="Dataset snapshot", elem_id="train-snapshot")
        pairs = gr.Dropdown(
            PAIRS, value=_dpo("pairs"), label="Pairs (seen from the parent)", elem_id="train-pairs"
        )
    with gr.Row():
        steps = gr.Number(
            _dpo("max_steps"),
            label="Steps",
            info=_help("max_steps"),
            precision=0,
            minimum=1,
            elem_id="train-steps",
        )
        # a Textbox: a Number shows an empty value as 0, which reads as "learning rate 0"
        lr = gr.Textbox(
            "",
            label="Learning rate (empty = default)",
            placeholder="default for the kind",
            elem_id="train-lr",
        )
        beta = gr.Number(_dpo("beta"), label="beta (KL strength)", info=_help("beta"), elem_id="train-beta")
        lora = gr.Checkbox(
            _dpo("lora"), label="LoRA (off = full fine-tune)", info=_help("lora"), elem_id="train-lora"
        )
        save_steps = gr.Number(
            _dpo("save_steps"),
            label="Save every N steps (0 = end only)",
            info=_help("save_steps"),
            precision=0,
            elem_id="train-save",
        )
        kl_every = gr.Number(
            _dpo("kl_every"),
            label="KL every N steps (DPO; 0 = end)",
            info=_help("kl_every"),
            precision=0,
            elem_id="train-kl-every",
        )
    return _JobForm(kind, parent, snapshot, pairs, steps, lr, beta, lora, save_steps, kl_every)


class _DpoBox(NamedTuple):
    box: Any
    loss_type: Any


def _dpo_box() -> _DpoBox:
    with gr.Group(visible=True) as box:
        loss_type = gr.Dropdown(
            list(DPO_LOSS_TYPES),
            value=_dpo("loss_type"),
            label="DPO loss",
            info=_help("loss_type"),
            elem_id="train-loss",
        )
    return _DpoBox(box, loss_type)


class _KtoBox(NamedTuple):
    """KTO's fields, in ``with_kto``'s argument order (hidden until that kind is picked)."""

    box: Any
    desirable_weight: Any
    undesirable_weight: Any
    score_criterion: Any
    desirable_threshold: Any

    @property
    def fields(self) -> list[Any]:
        return [
            self.desirable_weight,
            self.undesirable_weight,
            self.score_criterion,
            self.desirable_threshold,
        ]


def _kto_box() -> _KtoBox:
    with gr.Group(visible=False) as box, gr.Row():
        desirable = gr.Number(
            default("kto", "desirable_weight"),
            label="Desirable weight",
            info=_help("desirable_weight", "kto"),
            elem_id="train-kto-desirable",
        )
        undesirable = gr.Number(
            default("kto", "undesirable_weight"),
            label="Undesirable weight",
            info=_help("undesirable_weight", "kto"),
            elem_id="train-kto-undesirable",
        )
        # Textboxes: empty means "the votes alone" and "the middle of the scale" (a Number shows empty as 0)
        criterion = gr.Textbox(
            "",
            label="Label by a rubric criterion (empty = the votes alone)",
            placeholder="e.g. helpfulness",
            elem_id="train-kto-criterion",
        )
        threshold = gr.Textbox(
            "",
            label="Desirable at or above (empty = middle of the scale)",
            elem_id="train-kto-threshold",
        )
    return _KtoBox(box, desirable, undesirable, criterion, threshold)


class _Rewards(NamedTuple):
    """GRPO's reward fields, in ``reward_specs``'s argument order."""

    use_length: Any
    length_min: Any
    length_max: Any
    length_w: Any
    use_format: Any
    fmt: Any
    format_w: Any
    rm_job: Any
    rm_w: Any
    judge: Any
    judge_w: Any


class _GrpoBox(NamedTuple):
    box: Any
    task_set: Any
    task_verifier: Any
    rewards: _Rewards

    @property
    def tasks(self) -> list[Any]:
        return [self.task_set, self.task_verifier]


def _grpo_box(ctx: StudioContext, parents: list[str], reward_jobs: list[tuple[str, str]]) -> _GrpoBox:
    """GRPO's fields (hidden until that kind is picked): an optional task set (RLVR) and the rewards."""
    with gr.Group(visible=False) as box:
        with (
            gr.Row()
        ):  # RLVR: a task set replaces the snapshot; its held-out split is measured, never trained on
            task_set = gr.Dropdown(
                [NONE, *_task_sets(ctx)],
                value=NONE,
                label="Task set (RLVR; replaces the snapshot)",
                info=f"Import one on the Data tab: at least {MIN_TASKS} tasks, some held out.",
                elem_id="train-task-set",
            )
            task_verifier = gr.Dropdown(
                list(TASK_VERIFIERS), value="each task's own", label="Verifier", elem_id="train-task-verifier"
            )
        gr.Markdown("**GRPO rewards** (weighted sum; more types in the YAML: regex, exact_match, contains)")
        with gr.Row():
            use_length = gr.Checkbox(True, label="Length window (words)", elem_id="train-rw-length")
            length_min = gr.Number(_LENGTH["min"], label="min", precision=0)
            length_max = gr.Number(_LENGTH["max"], label="max", precision=0)
            length_w = gr.Number(1.0, label="weight")
        with gr.Row():
            use_format = gr.Checkbox(False, label="Format", elem_id="train-rw-format")
            fmt = gr.Dropdown(list(FORMATS), value="no_emoji", label="format")
            format_w = gr.Number(1.0, label="weight")
        with gr.Row():
            rm_job = gr.Dropdown(reward_jobs, value=NONE, label="Learned reward model (a reward job)")
            rm_w = gr.Number(1.0, label="weight")
            judge = gr.Dropdown([NONE, *parents], value=NONE, label="AI judge (a contestant)")
            judge_w = gr.Number(1.0, label="weight")
    rewards = _Rewards(
        use_length, length_min, length_max, length_w, use_format, fmt, format_w, rm_job, rm_w, judge, judge_w
    )
    return _GrpoBox(box, task_set, task_verifier, rewards)


class _ConfigPanel(NamedTuple):
    yaml: Any
    check: Any
    check_btn: Any
    launch: Any
    launched: Any


def _config_panel() -> _ConfigPanel:
    """The YAML that will run (editable), its check, and the Check / Launch buttons."""
    config_box = gr.Code(
        language="yaml", label="Config that will run (editable)", interactive=True, elem_id="train-yaml"
    )
    check_md = gr.HTML(elem_id="train-check")
    with gr.Row():
        check_btn = gr.Button("Check config", elem_id="train-check-btn")
        launch = gr.Button("Launch job", variant="primary", elem_id="train-launch")
    launched = gr.HTML(elem_id="train-launched")
    return _ConfigPanel(config_box, check_md, check_btn, launch, launched)


class _JobsPanel(NamedTuple):
    table: Any
    job: Any
    stop: Any
    again: Any
    clone: Any
    why: Any
    ckpt_step: Any
    publish: Any
    detail: Any
    plot: Any
    gold_plot: Any
    log: Any

    @property
    def follow(self) -> list[Any]:
        """What a read of the open job writes (``on_tick``'s order)."""
        return [self.table, self.detail, self.plot, self.log, self.ckpt_step, self.gold_plot]


def _jobs_panel(ctx: StudioContext, operator: bool) -> _JobsPanel:
    """The jobs table, the job picker with its actions, and the open job's status, curves and log."""
    gr.Markdown("### Jobs")
    table = gr.Dataframe(
        value=_jobs_table(ctx) if operator else pd.DataFrame(columns=JOB_COLUMNS),
        interactive=False,
        label="Jobs (click a row)",
        elem_id="train-jobs",
    )
    with gr.Row():
        job = gr.Dropdown(
            _job_choices(ctx) if operator else [],
            value=_live_job(ctx) if operator else None,
            label="Job",
            elem_id="train-job",
            allow_custom_value=True,
        )
        stop = gr.Button("Cancel", elem_id="train-cancel")
        again = gr.Button("Resume", elem_id="train-resume")
        clone = gr.Button("Clone and edit", elem_id="train-clone")
    why = gr.Textbox(
        label="Reason (needed to cancel, resume or publish another user's job unless you are an admin; recorded)",
        max_length=500,
        elem_id="train-reason",
    )
    with gr.Row():
        ckpt_step = gr.Dropdown(
            [], label="Saved checkpoint (step; empty = newest)", elem_id="train-ckpt", allow_custom_value=True
        )
        publish = gr.Button("Publish checkpoint as a contestant", elem_id="train-publish")
    detail = gr.HTML(elem_id="train-detail")
    plot = gr.Plot()
    gold_plot = gr.Plot(label="Gold vs √KL", elem_id="train-gold")
    log = gr.Textbox(label="Log (tail)", lines=8, max_lines=12, interactive=False, elem_id="train-log")
    return _JobsPanel(table, job, stop, again, clone, why, ckpt_step, publish, detail, plot, gold_plot, log)


@dataclass
class _TrainPage:
    """Every component the Train tab's events read or write, by section."""

    form: _JobForm
    dpo: _DpoBox
    grpo: _GrpoBox
    kto: _KtoBox
    config: _ConfigPanel
    jobs: _JobsPanel

    @property
    def form_inputs(self) -> list[Any]:
        """Everything the YAML is written from, in ``_form_yaml``'s order: the form, the rewards, the task set,
        KTO's fields."""
        return [*self.form, self.dpo.loss_type, *self.grpo.rewards, *self.grpo.tasks, *self.kto.fields]


def build(ctx: StudioContext, demo: gr.Blocks, timer: gr.Timer, tab: gr.Tab | None = None) -> None:
    """Lay out the tab and wire its job poll ``timer`` (made by the app outside the tabs, which runs it only while
    ``tab`` is open). Opening ``tab``, picking a job, launching one, or a page load that finds one running shows that
    job at once, without waiting for a tick."""
    # With login on, the page's first values carry no job or config (every visitor's page config holds them):
    # the load event fills them for a researcher. Open mode: everyone is the local operator.
    operator = not ctx.access.required
    parents, snaps, reward_jobs = _choices(ctx) if operator else ([], [NEW_SNAPSHOT], [(NONE, NONE)])
    gr.Markdown(INTRO)
    form = _job_form(parents, snaps)
    dpo = _dpo_box()
    grpo = _grpo_box(ctx, parents, reward_jobs)
    kto = _kto_box()
    config = _config_panel()
    jobs = _jobs_panel(ctx, operator)
    _wire(ctx, _TrainPage(form, dpo, grpo, kto, config, jobs), demo, timer, tab)
    launched = objectives.build(ctx, demo)  # after the tab's own events, which keep their order
    # the jobs a side-by-side launch queued are listed at once (the picker offered only the earlier ones)
    launched.then(_jobs_refresh(ctx), None, [jobs.table, jobs.job], api_visibility="private")


def _wire(ctx: StudioContext, p: _TrainPage, demo: gr.Blocks, timer: gr.Timer, tab: gr.Tab | None) -> None:
    """The tab's events, in the order the app has always registered them (the tests address the private ones by
    index): the kind, the form's YAML line, Check and Launch, the job poll and picks, the job actions, the load."""
    cfg, jobs = p.config, p.jobs
    config_events = _config_handlers(ctx)
    job_events = _job_handlers(ctx)
    p.form.kind.change(
        on_kind, [p.form.kind], [p.dpo.box, p.grpo.box, p.form.beta, p.kto.box], api_visibility="private"
    )
    # Every change of the form rewrites the YAML through one event with many triggers, so the page runs it one at a
    # time and, when fields change while it runs, once more afterwards with the form as it is then. With an event
    # per field, each read the form when the page got to it: a loaded page could send an older reading (the beta
    # the kind's change sets) after a newer one (the steps typed just after), and the older YAML stayed on screen
    # with no change left to correct it. The page's load has a line of its own (``LOAD_LINE``), so a storm of
    # form events cannot hold every visitor's page load; it leaves the YAML alone once an edit wrote it.
    gr.on(
        [comp.change for comp in p.form_inputs],
        config_events.on_form_event,
        p.form_inputs,
        [cfg.yaml, cfg.check],
        api_visibility="private",
        trigger_mode="always_last",
        concurrency_limit=1,
        concurrency_id=FORM_LINE,
    )
    cfg.check_btn.click(config_events.on_check, [cfg.yaml], [cfg.check], api_name="train_check")
    cfg.launch.click(
        config_events.on_launch,
        [cfg.yaml],
        [cfg.launched, cfg.check, jobs.job, jobs.table, p.form.snapshot],
        api_name="train_launch",
    )
    on_tick = job_events.on_tick
    timer.tick(on_tick, [jobs.job], jobs.follow, api_visibility="private", show_progress="hidden")
    if tab is not None:  # the app starts and stops ``timer`` as tabs open (``studio.app``)
        tab.select(on_tick, [jobs.job], jobs.follow, api_visibility="private", show_progress="hidden")
    # A job picked in the picker or the table, launched, or found running by the page load shows at once: the page
    # does not hang its first view of a job on the next tick.
    jobs.job.change(on_tick, [jobs.job], jobs.follow, api_visibility="private", show_progress="hidden")
    jobs.table.select(job_events.on_pick, [jobs.table], [jobs.job], api_visibility="private")
    # Cancel says so at once, in the browser, while the server stops the job's process (up to its grace
    # period); then the job is read again, so its real state replaces "running" without waiting for a tick.
    jobs.stop.click(
        None, None, [cfg.launched, jobs.detail], js=CANCELLING_JS, queue=False, api_visibility="private"
    )
    jobs.stop.click(
        job_events.on_cancel, [jobs.job, jobs.why], [cfg.launched, jobs.job], api_name="train_cancel"
    ).then(on_tick, [jobs.job], jobs.follow, api_visibility="private", show_progress="hidden")
    jobs.again.click(
        job_events.on_resume, [jobs.job, jobs.why], [cfg.launched, jobs.job], api_name="train_resume"
    )
    jobs.clone.click(
        job_events.on_clone, [jobs.job], [cfg.yaml, cfg.check, p.form.kind], api_name="train_clone"
    )
    jobs.publish.click(
        job_events.on_publish, [jobs.job, jobs.ckpt_step, jobs.why], [cfg.launched], api_name="train_publish"
    )
    demo.load(
        _load_handler(ctx),
        [cfg.yaml],
        [p.form.parent, p.form.snapshot, p.grpo.rewards.rm_job, p.grpo.rewards.judge, p.grpo.task_set]
        + [jobs.table, jobs.job, cfg.yaml, cfg.check],
        api_visibility="private",
        concurrency_limit=LOAD_CONCURRENCY,
        concurrency_id=LOAD_LINE,
    )


# ---- the handlers -----------------------------------------------------------------------------------------------
def refused(message: str) -> str:
    """A refused action's answer, in place (display-path HTML): what to do first. Never a red Error badge over
    the outputs, nor a traceback in the log: a user's mistake is not the server's error."""
    return to_html(f"⚠️ {literal(message)}")


#: How many of ``_form_yaml``'s values are the form (with DPO's loss type) and the rewards; the task set follows.
_FORM_FIELDS = len(_JobForm._fields) + 1
_REWARD_FIELDS = len(_Rewards._fields)


def _uid(ctx: StudioContext, request: gr.Request | None) -> int | None:
    try:
        return ctx.access.user_id(request) if request is not None else None
    except PermissionDenied as exc:
        raise user_error(exc) from exc


def _researcher(ctx: StudioContext, request: gr.Request | None) -> int | None:
    uid = ctx.access.user_id(request) if request is not None else None
    try:
        require_role(ctx.db, uid, "researcher")
    except PermissionDenied as exc:
        raise user_error(exc) from exc
    return uid


def _form_yaml(ctx: StudioContext, *values: Any, uid: int | None = None) -> tuple[str, str]:
    """The YAML the form describes and its check (``_TrainPage.form_inputs``'s values; the task set and KTO's
    fields may be left out)."""
    n = _FORM_FIELDS + _REWARD_FIELDS
    base, rw, rest = values[:_FORM_FIELDS], values[_FORM_FIELDS:n], list(values[n:])
    tk, kto = (rest[:2] + [NONE, None])[:2], rest[2:6]
    data = with_task_set(form_config(*base, reward_specs(*rw)), *tk)  # type: ignore[arg-type,call-arg]
    data = with_kto(data, *kto)
    try:
        check = check_config(ctx.db, data, user_id=uid)
    except PermissionDenied as exc:
        return "", to_html(literal(exc))
    text = check.yaml if check.config is not None else yaml.safe_dump(data, sort_keys=False)
    return text, check_markdown(check)


def on_kind(label: str) -> tuple[Any, Any, Any, Any]:
    """Show the picked kind's fields (DPO's, GRPO's or KTO's) and its default beta; reads nothing."""
    k = KINDS.get(label, "dpo")
    default_beta = _default_beta(k)
    return (
        gr.update(visible=k == "dpo"),
        gr.update(visible=k == "grpo"),
        gr.update(value=default_beta, info=_help("beta", k) if default_beta is not None else ""),
        gr.update(visible=k == "kto"),
    )


class _ConfigHandlers(NamedTuple):
    on_form_event: Callable[..., Any]
    on_check: Callable[..., Any]
    on_launch: Callable[..., Any]


def _config_handlers(ctx: StudioContext) -> _ConfigHandlers:
    """The form's YAML line, Check and Launch."""

    def on_form_event(request: gr.Request, *values: Any) -> tuple[str, str]:
        FORM_WRITTEN.mark(getattr(request, "session_hash", None))  # the page's load now leaves its YAML alone
        return _form_yaml(ctx, *values, uid=_uid(ctx, request))

    def on_check(text: str, request: gr.Request) -> str:
        uid = _researcher(ctx, request)
        return check_markdown(check_config(ctx.db, text or "", user_id=uid))

    def on_launch(text: str, request: gr.Request) -> tuple[str, str, Any, pd.DataFrame, Any]:
        uid = _researcher(ctx, request)
        check = check_config(ctx.db, text or "", user_id=uid)
        if check.errors:  # answered in place: the problems are listed under the estimate, which stays shown
            n = len(check.errors)
            return (
                refused(
                    f"Not launched: fix the {n} problem{'s' if n != 1 else ''} listed under the estimate."
                ),
                check_markdown(check),
                gr.update(),
                gr.update(),
                gr.update(),
            )
        try:
            jid = launch_checked(ctx.db, check, created_by=uid)  # the check above, not a second one
        except JobError as exc:
            return (
                refused(f"Not launched: {exc}"),
                check_markdown(check),
                gr.update(),
                gr.update(),
                gr.update(),
            )
        except PermissionDenied as exc:
            raise user_error(exc) from exc
        # a launch may have frozen a snapshot; the parents and reward jobs did not change
        with ctx.db.session() as s:
            new_snaps = _snapshot_labels(s)
        return (
            to_html(f"Job **{jid}** submitted."),
            check_markdown(check),
            gr.update(choices=_job_choices(ctx, uid), value=jid),
            _jobs_table(ctx, uid),
            gr.update(choices=new_snaps),
        )

    return _ConfigHandlers(on_form_event, on_check, on_launch)


def _follow_job(
    ctx: StudioContext, jid: Any, uid: int | None
) -> tuple[pd.DataFrame, str, Any, str, Any, Any]:
    """The jobs table and the open job's status, curves, log, saved steps and gold plot (``_JobsPanel.follow``)."""
    try:
        table = _jobs_table(ctx, uid)
    except PermissionDenied as exc:  # the Train tab is a researcher's: an annotator's poll gets nothing
        return pd.DataFrame(columns=JOB_COLUMNS), to_html(literal(exc)), None, "", gr.update(), None
    if not jid:
        return table, "", None, "", gr.update(), None
    try:
        v = job_view(ctx.db, int(jid), user_id=uid)
    except (JobError, PermissionDenied) as exc:  # another researcher's job: its config and log stay theirs
        return table, to_html(literal(exc)), None, "", gr.update(), None
    steps_saved = [step for step, _ in saved_checkpoints(v.id, _folder(v))]  # one look at the folder per tick
    return (
        table,
        job_markdown(ctx, v, steps_saved),
        _figure(v.kind, v.metrics),
        v.log_tail,
        gr.update(choices=[str(step) for step in steps_saved]),
        gold_figure(v.metrics),
    )


def _act(ctx: StudioContext, jid: Any, reason: str, request: gr.Request, what: str) -> tuple[str, Any]:
    """Cancel or resume the picked job (a refusal answers in place, under the config)."""
    if not jid:
        return refused(f"Pick a job from the table first, then {what} it."), gr.update()
    uid = _uid(ctx, request)
    try:
        v = (
            cancel(ctx.db, int(jid), user_id=uid, reason=reason)
            if what == "cancel"
            else resume(ctx.db, int(jid), user_id=uid, reason=reason)
        )
    except PermissionDenied as exc:  # a denial stays an error (studio.errors): what a lower role must get
        raise user_error(exc) from exc
    except JobError as exc:
        return refused(str(exc)), gr.update()
    return to_html(f"Job {v.id} is {literal(v.status)}."), gr.update(
        choices=_job_choices(ctx, uid), value=v.id
    )


def _publish(ctx: StudioContext, jid: Any, step: Any, reason: str, request: gr.Request) -> str:
    """Publish a saved checkpoint of the picked job as a contestant (pending its report)."""
    if not jid:
        return refused("Pick a job from the table first, then publish one of its saved checkpoints.")
    uid = _uid(ctx, request)
    try:
        p = publish_checkpoint(ctx.db, int(jid), int(step) if step else None, user_id=uid, reason=reason)
    except PermissionDenied as exc:  # a denial stays an error (studio.errors)
        raise user_error(exc) from exc
    except JobError as exc:
        return refused(str(exc))
    if p.already:
        return to_html(f"This checkpoint was published before, as **{literal(p.public_name)}** ({p.state}).")
    return to_html(
        f"✅ Step checkpoint published as contestant **{literal(p.public_name)}**, {p.state}: its checkpoint "
        f"report is queued (job {p.report_job}); it plays in anonymous battles once its verdict releases it."
    )


class _JobHandlers(NamedTuple):
    on_tick: Callable[..., Any]
    on_pick: Callable[..., Any]
    on_cancel: Callable[..., Any]
    on_resume: Callable[..., Any]
    on_clone: Callable[..., Any]
    on_publish: Callable[..., Any]


def _job_handlers(ctx: StudioContext) -> _JobHandlers:
    """The job poll, the table pick, and Cancel / Resume / Clone and edit / Publish."""

    def on_tick(jid: Any, request: gr.Request) -> tuple[pd.DataFrame, str, Any, str, Any, Any]:
        return _follow_job(ctx, jid, _uid(ctx, request))

    def on_pick(evt: gr.SelectData, table: pd.DataFrame, request: gr.Request) -> Any:
        uid = _researcher(ctx, request)
        row = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
        jid = int(table.iloc[int(row)]["id"])
        return gr.update(choices=_job_choices(ctx, uid), value=jid)

    def on_cancel(jid: Any, reason: str, request: gr.Request) -> tuple[str, Any]:
        return _act(ctx, jid, reason, request, "cancel")

    def on_resume(jid: Any, reason: str, request: gr.Request) -> tuple[str, Any]:
        return _act(ctx, jid, reason, request, "resume")

    def on_clone(jid: Any, request: gr.Request) -> tuple[Any, str, Any]:
        uid = _researcher(ctx, request)
        if not jid:  # the YAML stays as it is; the answer replaces the check under it
            return (
                gr.update(),
                refused("Pick a job from the table first, then Clone and edit it."),
                gr.update(),
            )
        try:
            cfg = dict(job_view(ctx.db, int(jid), tail_lines=1, user_id=uid).config)
        except PermissionDenied as exc:  # a denial stays an error (studio.errors)
            raise user_error(exc) from exc
        except JobError as exc:
            return gr.update(), refused(str(exc)), gr.update()
        cfg.pop("output_name", None)
        text = yaml.safe_dump(cfg, sort_keys=False)
        label = next((k for k, v in KINDS.items() if v == cfg.get("kind")), "DPO")
        return text, check_markdown(check_config(ctx.db, text, user_id=uid)), gr.update(value=label)

    def on_publish(jid: Any, step: Any, reason: str, request: gr.Request) -> str:
        return _publish(ctx, jid, step, reason, request)

    return _JobHandlers(on_tick, on_pick, on_cancel, on_resume, on_clone, on_publish)


#: The form's first values as the page lays it out (after the parent), in ``_form_yaml``'s order, for the YAML the
#: page load writes. The learning rate is None (the default), as the empty box means.
_FIRST_FORM = (
    NEW_SNAPSHOT,
    _dpo("pairs"),
    _dpo("max_steps"),
    None,
    _dpo("beta"),
    _dpo("lora"),
    _dpo("save_steps"),
    _dpo("kl_every"),
    _dpo("loss_type"),
)
_FIRST_REWARDS = (True, _LENGTH["min"], _LENGTH["max"], 1.0, False, "no_emoji", 1.0, NONE, 1.0, NONE, 1.0)


def _jobs_refresh(ctx: StudioContext) -> Callable[..., Any]:
    """The jobs table and the job picker's choices as they are now (the picked job stays picked)."""

    def on_jobs(request: gr.Request) -> tuple[Any, Any]:
        try:
            uid = _uid(ctx, request)
            return _jobs_table(ctx, uid), gr.update(choices=_job_choices(ctx, uid))
        except (PermissionDenied, gr.Error):  # a lower role's page lists no jobs
            return pd.DataFrame(columns=JOB_COLUMNS), gr.update(choices=[], value=None)

    return on_jobs


def _load_handler(ctx: StudioContext) -> Callable[..., Any]:
    """The page load: the visitor's choices, jobs, the running job and the first YAML (nothing for a non-researcher)."""

    def on_load(request: gr.Request, shown: str | None = None) -> tuple[Any, ...]:
        # also runs when the tab opens (``studio.fresh``): the choices and jobs are read again, and the YAML on
        # screen is kept and checked again (its snapshot's pairs, its parent may have changed meanwhile)
        uid = _uid(ctx, request)
        try:
            p, s, rj = _choices(ctx, uid)
            live = _live_job(ctx, uid)
        except PermissionDenied as exc:
            empty = pd.DataFrame(columns=JOB_COLUMNS)
            nothing = gr.update(choices=[], value=None)
            return (
                nothing,
                gr.update(),
                gr.update(),
                gr.update(),
                nothing,
                empty,
                nothing,
                "",
                to_html(literal(exc)),
            )
        text: Any
        md: Any
        session = getattr(request, "session_hash", None)
        if session in FORM_WRITTEN:  # an edit (or an earlier load) wrote it already: keep that
            text = gr.update()
            md = check_markdown(check_config(ctx.db, shown, user_id=uid)) if shown else gr.update()
        else:
            text, md = _form_yaml(ctx, "DPO", p[0] if p else None, *_FIRST_FORM, *_FIRST_REWARDS, uid=uid)
            FORM_WRITTEN.mark(session)
        return (
            gr.update(choices=p),
            gr.update(choices=s),
            gr.update(choices=rj),
            gr.update(choices=[NONE, *p]),
            gr.update(choices=[NONE, *_task_sets(ctx)]),
            _jobs_table(ctx, uid),
            # only a running job is worth jumping to: never clear a job the visitor picked or just launched
            gr.update(choices=_job_choices(ctx, uid), value=live)
            if live
            else gr.update(choices=_job_choices(ctx, uid)),
            text,
            md,
        )

    return on_load
