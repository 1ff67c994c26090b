"""Checkpoint publishing, one path for every checkpoint.

That covers a job's final output (end of job, and again on resume). It also covers a checkpoint saved on
the way (``publish_checkpoint``, the Train tab's mid-run publish).

Each becomes a Checkpoint row and, by default, an arena contestant, registered **pending**
(`arena.lifecycle`). It is never drawn for an anonymous battle until its checkpoint report has recorded a
verdict. The verdict releases it (pass / watch) or holds it. Regress holds it, and by default so do
unknown and a failed or skipped report; the rules file's ``hold`` section decides. The same persona
inheritance, report and verdict apply on every path:
- **End of job**: the job process publishes and runs the report in its own process. Then it marks the job
  succeeded.
- **Mid-run** (or after the job): ``publish_checkpoint`` registers the contestant and queues a ``report``
  job in the same transaction. The job queue's job process
  (``python -m vibestudio.training.jobs.job_process``) runs it when its turn comes. On a one-job-at-a-time
  queue that is after the running training job. So the request returns at once.

The report itself, its settings and the ``report`` job are ``training.report.job``. Publishing decides
when it runs. Publishing a checkpoint twice (a double click, a resumed job) returns the contestant it
already became. One the sweep held for want of a verdict goes back to pending, and its report runs again.

The sweep is ``training.jobs.pending.hold_orphans``. ``runner.reconcile`` runs it at start-up and on every
reconcile, and it runs whenever a job ends. It holds a pending contestant whose report is no longer queued
or running, with the reason. So a crashed or killed job process never leaves one released without a
verdict.

**The playing form.** A child of a GGUF parent on llama.cpp plays as the fastest form that keeps its
training (``training.publishing.fidelity``). The candidates are the merged weights at the parent's
quantization, the parent's GGUF with the LoRA applied at run time, Q8_0 and F16. Each is made beside the
checkpoint, load-checked and measured against the trained model. The first that keeps the rules file's
floor of the trained shift is registered; the rest are deleted. Every measurement goes into the checkpoint
row (``Checkpoint.fidelity``) and the description. When none does, and for every other parent, the
contestant plays with the transformers engine, the trained computation itself. It takes the base model
reference (``builtin:`` refs stay symbolic) plus the adapter folder, or the full checkpoint folder. A LoRA
child of a vLLM-served parent plays on the parent's server. The vLLM engine registers the adapter on its
first request.

**Lineage** goes into the row: parent id, job id, snapshot hash. Sampling is inherited from the parent. So
is the persona (system prompt, prefill), unless the job says ``inherit_persona: false``. So a child of
``smollm2-warm`` plays warm, and its report compares like with like.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select

from vibestudio.arena import lifecycle
from vibestudio.arena.registry import ContestantInfo, ContestantSpec, RegistryError, register
from vibestudio.db.models import Checkpoint, Contestant, Job
from vibestudio.db.session import Database
from vibestudio.standings.words import counted
from vibestudio.training.jobs.config import (
    JOB_KINDS,
    DPOJobConfig,
    GRPOJobConfig,
    KTOJobConfig,
    ORPOJobConfig,
    SimPOJobConfig,
)
from vibestudio.training.jobs.errors import JobError
from vibestudio.training.jobs.pending import report_running
from vibestudio.training.jobs.preflight import choose_base, find_parent
from vibestudio.training.jobs.runner import job_dir, queue, require_job_owner, saved_checkpoints, start_next
from vibestudio.training.objectives.context import JobContext, TrainResult
from vibestudio.training.report.job import report_job_settings


@dataclass
class Published:
    checkpoint_id: int
    contestant_id: int | None
    public_name: str | None
    seconds: float  # training end (or the request) -> contestant registered
    state: str | None = None  # its lifecycle state right after publishing (pending, or what it already was)
    already: bool = False  # this checkpoint had been published before: the same contestant is returned
    report_job: int | None = None  # the queued job that runs its report (mid-run publish)
    needs_report: bool = False  # the caller (the job process) runs the report now


@dataclass
class Target:
    """What one publish needs, whichever path it came from."""

    job_id: int
    kind: str
    folder: Path
    step: int
    name: str
    description: str
    parent: ContestantInfo | None
    base_ref: str
    adapter: bool
    snapshot_hash: str | None
    inherit_persona: bool
    config: dict[str, Any] = field(default_factory=dict)
    engine: str | None = (
        None  # the engine of the form chosen by ``training.publishing.fidelity`` (None: decided by _spec)
    )
    deployed_model: str | None = None  # that form's model file (or the parent's ref for a run-time adapter)
    deployed_adapter: str | None = None  # that form's llama.cpp adapter, when it is one
    fidelity: dict[str, Any] | None = (
        None  # ``training.publishing.fidelity.Fidelity`` as a dict: every form measured
    )
    engine_note: str = ""  # which engine it plays on and why, added to its description


def on_parents_engine(t: Target, contestant: bool = True) -> Target:
    """``t`` with the form it plays as: for a child of a llama.cpp parent, the fastest form that keeps its
    training (``training.publishing.fidelity.choose``: the merged weights at the parent's quantization, the parent's GGUF
    with the LoRA at run time, Q8_0, F16, or the transformers engine), with every form's measurement in
    ``t.fidelity``; other children are unchanged (they play their trained weights as they are)."""
    if not contestant or t.parent is None or t.parent.engine != "llama_cpp":
        return t
    from vibestudio.training.publishing import fidelity
    from vibestudio.training.report import verdict

    try:
        policy = verdict.load_rules(t.config.get("verdict_rules") or None).fidelity
    except Exception:  # the report says what is wrong with the rules file; the defaults choose the form
        policy = fidelity.Policy()
    choice = fidelity.choose(
        t.parent.model_ref, t.base_ref, str(t.folder) if t.adapter else None, t.folder, policy
    )
    t.fidelity, t.engine_note = choice.fidelity.to_dict(), choice.note
    t.engine, t.deployed_model, t.deployed_adapter = choice.engine, choice.model_ref, choice.adapter_ref
    return t


def default_name(ctx: JobContext) -> str:
    parent = ctx.checked.parent
    stem = parent.public_name if parent else Path(ctx.checked.base.model_ref.rstrip("/")).name
    return f"{stem}-{ctx.cfg.kind}-j{ctx.job_id}"


def describe(ctx: JobContext, result: TrainResult) -> str:
    cfg = ctx.cfg
    how = f"LoRA r{cfg.lora_r}" if result.adapter else "full fine-tune"
    extra = ""
    if isinstance(cfg, DPOJobConfig):
        extra = f", beta {cfg.beta}, {cfg.loss_type} loss"
    elif isinstance(cfg, KTOJobConfig):
        extra = f", beta {cfg.beta}, weights {cfg.desirable_weight:g} / {cfg.undesirable_weight:g}"
    elif isinstance(cfg, ORPOJobConfig | SimPOJobConfig):
        extra = f", beta {cfg.beta}, reference-free"
    elif isinstance(cfg, GRPOJobConfig):
        extra = ", rewards " + "+".join(str(r.get("name") or r.get("type")) for r in cfg.rewards)
    parent = ctx.checked.parent.public_name if ctx.checked.parent else ctx.checked.base.model_ref
    unit = "single answer" if isinstance(cfg, KTOJobConfig) else "pair"  # KTO reads unpaired rows
    return (
        f"{JOB_KINDS[cfg.kind].label or cfg.kind.upper()} ({how}{extra}, {result.step} steps, lr {cfg.effective_learning_rate():g}) of "
        f"{parent} on {trained_on(getattr(cfg, 'tasks', ''), ctx.checked.snapshot_hash, ctx.checked.n_pairs, unit)}, "
        f"job {ctx.job_id}."
    )


def trained_on(tasks: str, snapshot_hash: str, n_pairs: int | None = None, unit: str = "pair") -> str:
    """What a child learned from, in words: a task set (RLVR) by its name, a snapshot by hash and its rows, named
    for what one row is (`unit`: "pair", or "single answer" for KTO's unpaired rows)."""
    if tasks:
        return f"task set {tasks}"
    pairs = f" ({counted(n_pairs, unit)})" if n_pairs is not None else ""
    return f"snapshot {snapshot_hash[:12]}{pairs}" if snapshot_hash else "no snapshot"


def _spec(t: Target) -> ContestantSpec:
    parent = t.parent
    engine, engine_config = "transformers", {}
    if t.engine == "llama_cpp" and t.deployed_model:  # the form ``training.publishing.fidelity`` chose
        model_ref, adapter_ref, engine = t.deployed_model, t.deployed_adapter, "llama_cpp"
    elif t.adapter:
        model_ref, adapter_ref = t.base_ref, str(t.folder)
        if parent is not None and parent.engine == "vllm":
            # The parent's vLLM server registers the new adapter on first use: no restart, no conversion.
            engine, engine_config, model_ref = "vllm", dict(parent.engine_config), parent.model_ref
    else:
        model_ref, adapter_ref = str(t.folder), None
    persona = parent is not None and t.inherit_persona
    return ContestantSpec(
        public_name=t.name,
        engine=engine,
        engine_config=engine_config,
        model_ref=model_ref,
        adapter_ref=adapter_ref,
        description=f"{t.description} {t.engine_note}".strip(),
        sampling=dict(parent.sampling) if parent else {},
        system_prompt=parent.system_prompt if persona and parent else "",
        prefill=parent.prefill if persona and parent else "",
        aliases=list(parent.aliases) if parent else [],
        parent_id=parent.id if parent else None,
        job_id=t.job_id,
        snapshot_hash=t.snapshot_hash or None,
    )


def _register(s: Any, t: Target, *, contestant: bool) -> tuple[Checkpoint, bool]:
    """The Checkpoint row for ``t.folder`` (made, or the one made before) and whether it already existed;
    a new one is registered as a pending contestant when ``contestant``."""
    old = s.scalar(
        select(Checkpoint)
        .where(Checkpoint.job_id == t.job_id, Checkpoint.path == str(t.folder))
        .order_by(Checkpoint.id)
        .limit(1)
    )
    if old is not None and (old.contestant_id is not None or not contestant):
        return old, True
    ckpt = old or Checkpoint(job_id=t.job_id, step=t.step, path=str(t.folder))
    if t.fidelity is not None:
        ckpt.fidelity = t.fidelity
    s.add(ckpt)
    s.flush()
    if contestant:
        try:
            ckpt.contestant_id = register(s, _spec(t), state="pending")
        except RegistryError as exc:
            raise JobError(str(exc)) from exc
        s.flush()
    return ckpt, False


def _queue_report(s: Any, contestant_id: int, t: Target) -> int:
    """A queued ``report`` job for a checkpoint published on the way, through the runner's one queue path, in
    the publish's transaction (no sweep sees the child pending with no report to come)."""
    source = s.get(Job, t.job_id)
    return queue(
        s,
        report_job_settings(contestant_id, t.job_id, t.step, t.config),
        source.snapshot_id if source else None,
        t.parent.id if t.parent else None,
        source.created_by if source else None,
    )


def _publish(db: Database, t: Target, *, contestant: bool, queue_report: bool) -> Published:
    t0 = time.perf_counter()
    with db.session() as s:
        ckpt, already = _register(s, t, contestant=contestant)
        cid = ckpt.contestant_id
        state, report_job, needs = None, None, False
        name = None
        if cid is not None:
            row = s.get_one(Contestant, cid)
            # the job process republishing its own final checkpoint (resume) always reruns a missing verdict
            stuck = row.state == "pending" and (not queue_report or not report_running(s, cid))
            retry = already and (stuck or (row.state == "held" and lifecycle.without_verdict(s, cid)))
            if not already or retry:
                report_job = _queue_report(s, cid, t) if queue_report else None
                why = (
                    f"published from job {t.job_id} at step {t.step}"
                    + (" again (its report runs again)" if already else "")
                    + ": pending until its checkpoint report records a verdict"
                )
                details: dict[str, Any] = {"job": t.job_id, "step": t.step}
                if report_job is not None:
                    details["report_job"] = report_job
                lifecycle.published(s, cid, why, details)
                needs = not queue_report
            s.refresh(row)
            state, name = row.state, row.public_name
        checkpoint_id = ckpt.id
    return Published(checkpoint_id, cid, name, time.perf_counter() - t0, state, already, report_job, needs)


def publish(db: Database, ctx: JobContext, result: TrainResult) -> Published:
    """End of job (and resume): record the final checkpoint; register it pending when ``cfg.publish``. The
    job process then runs ``run_report`` in its own process. Records ``publish_seconds`` (training end -> row)."""
    parent = ctx.checked.parent
    assert ctx.job_id is not None
    target = Target(
        job_id=ctx.job_id,
        kind=ctx.cfg.kind,
        folder=Path(result.output_dir),
        step=result.step,
        name=ctx.cfg.output_name or default_name(ctx),
        description=describe(ctx, result),
        parent=parent,
        base_ref=ctx.checked.base.model_ref,
        adapter=result.adapter,
        snapshot_hash=ctx.checked.snapshot_hash,
        inherit_persona=ctx.cfg.inherit_persona,
        config=ctx.cfg.to_dict(),
    )
    out = _publish(
        db, on_parents_engine(target, ctx.cfg.publish), contestant=ctx.cfg.publish, queue_report=False
    )
    out.seconds = time.perf_counter() - result.ended_at
    ctx.metrics.log(result.step, {"publish_seconds": out.seconds})
    print(
        f"[publish] checkpoint {out.checkpoint_id}"
        + (
            f" -> contestant {out.public_name!r} (id {out.contestant_id}, {out.state})"
            if out.public_name
            else ""
        )
        + (" (published before)" if out.already else "")
        + f" in {out.seconds:.2f} s after training ended",
        flush=True,
    )
    return out


def publish_checkpoint(
    db: Database,
    job_id: int,
    step: int | None = None,
    name: str | None = None,
    user_id: int | None = None,
    reason: str | None = None,
) -> Published:
    """Publish a checkpoint the job saved on the way (``save_steps``; the newest when ``step`` is None) as a
    pending contestant, while the job runs or after it ended, and queue its report (a ``report`` job). Its
    lineage and persona are the job's (parent, snapshot, job, ``inherit_persona``); the description names the
    step. Reward-model jobs score answers and cannot be published as contestants. Another user's job needs
    admin, or a recorded ``reason`` (``training.jobs.runner.require_job_owner``)."""
    require_job_owner(db, job_id, user_id, "publish", reason)  # another's job: admin, or a recorded reason
    with db.session() as s:
        job = s.get(Job, job_id)
        if job is None:
            raise JobError(f"no job {job_id}")
        if job.kind in JOB_KINDS and not JOB_KINDS[job.kind].publishes:
            raise JobError(
                f"job {job_id} trains a reward model; it scores answers and cannot play in the arena"
            )
        if job.kind == "report":
            raise JobError(f"job {job_id} is a checkpoint report; it has no checkpoints to publish")
        cfg = dict(job.config or {})
        parent = find_parent(s, cfg["parent_contestant"]) if cfg.get("parent_contestant") else None
        base = choose_base(parent, cfg.get("base_model") or "")
        folder = Path(job.config_path).parent if job.config_path else None  # a worker's data home ran it
    published_dir = _published_dir(job_id)
    saved = dict(saved_checkpoints(job_id, folder))
    kept = {
        int(p.name.split("-")[-1]): p for p in published_dir.glob("step-*") if p.name.split("-")[-1].isdigit()
    }
    step = (max(saved) if saved else None) if step is None else int(step)
    if step is None or (step not in saved and step not in kept):
        if not saved and not kept:
            raise JobError(
                f"job {job_id} has no saved checkpoint (set save_steps > 0 to keep some on the way)"
            )
        have = ", ".join(map(str, sorted(set(saved) | set(kept))))
        raise JobError(f"job {job_id} has no checkpoint at step {step} (saved: {have})")
    folder = kept[step] if step in kept else _keep_copy(saved[step], job_id, step)
    adapter = (folder / "adapter_config.json").exists()
    stem = parent.public_name if parent else Path(base.model_ref.rstrip("/")).name
    snapshot_hash = str(cfg.get("snapshot_hash") or "")
    target = Target(
        job_id=job_id,
        kind=job.kind,
        folder=folder,
        step=step,
        name=name or f"{stem}-{job.kind}-j{job_id}-s{step}",
        description=(
            f"{job.kind.upper()} checkpoint at step {step} of job {job_id} "
            f"({'LoRA' if adapter else 'full'}) of {stem} on "
            f"{trained_on(str(cfg.get('tasks') or ''), snapshot_hash)}."
        ),
        parent=parent,
        base_ref=base.model_ref,
        adapter=adapter,
        snapshot_hash=snapshot_hash or None,
        inherit_persona=bool(cfg.get("inherit_persona", True)),
        config=cfg,
    )
    out = _publish(db, on_parents_engine(target), contestant=True, queue_report=True)
    if out.report_job is not None:
        start_next(db)  # starts it now when nothing else runs; otherwise the running job's process will
    return out


_TRAINER_STATE = ("optimizer.pt", "scheduler.pt", "trainer_state.json", "training_args.bin", "rng_state")


def _published_dir(job_id: int) -> Path:
    return job_dir(job_id) / "published"


def _keep_copy(folder: Path, job_id: int, step: int) -> Path:
    """Copy a checkpoint's model files (not the optimizer state) to ``jobs/<id>/published/step-<n>``."""
    import shutil

    from vibestudio.common.filelocks import unique_tmp

    target = _published_dir(job_id) / f"step-{step}"
    if (
        not target.exists()
    ):  # each writer copies into its own folder; the first rename wins, the rest are dropped
        tmp = unique_tmp(target)
        try:
            shutil.copytree(
                folder, tmp, ignore=lambda _d, names: [n for n in names if n.startswith(_TRAINER_STATE)]
            )
            try:
                tmp.rename(target)
            except OSError:
                if not target.exists():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target
