"""Checkpoint publishing: a finished job's output becomes a Checkpoint row and (by default) an arena contestant.

The contestant plays with the transformers engine: the base model reference (``builtin:`` refs stay symbolic, so
the database holds no machine paths for the embedded model) plus the adapter folder, or the full checkpoint
folder. A LoRA child of a vLLM-served parent plays on the parent's server instead: the vLLM engine registers the
adapter with the running server (``/v1/load_lora_adapter``) on its first request. Lineage goes into the row: parent id, job id, snapshot hash; the description names config essentials.
Sampling is inherited from the parent, and so is the persona (system prompt, prefill) unless the job says
``inherit_persona: false``: a child of ``smollm2-warm`` plays warm, and its report compares like with like.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from arena.registry import ContestantSpec, register
from db.models import Checkpoint
from db.session import Database
from training.config import DPOJobConfig, GRPOJobConfig
from training.context import JobContext, TrainResult


@dataclass
class Published:
    checkpoint_id: int
    contestant_id: int | None
    public_name: str | None
    seconds: float  # training end -> contestant registered


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
    elif isinstance(cfg, GRPOJobConfig):
        extra = ", rewards " + "+".join(str(r.get("name") or r.get("type")) for r in cfg.rewards)
    parent = ctx.checked.parent.public_name if ctx.checked.parent else ctx.checked.base.model_ref
    return (
        f"{cfg.kind.upper()} ({how}{extra}, {result.step} steps, lr {cfg.effective_learning_rate():g}) of "
        f"{parent} on snapshot {ctx.checked.snapshot_hash[:12]} ({ctx.checked.n_pairs} pairs), job {ctx.job_id}."
    )


def publish(db: Database, ctx: JobContext, result: TrainResult) -> Published:
    """Record the checkpoint; register the contestant when ``cfg.publish``; record ``publish_seconds``."""
    parent = ctx.checked.parent
    engine, engine_config = "transformers", {}
    if result.adapter:
        model_ref, adapter_ref = ctx.checked.base.model_ref, str(result.output_dir)
        if parent is not None and parent.engine == "vllm":
            # The parent's vLLM server registers the new adapter on first use: no restart, no conversion.
            engine, engine_config, model_ref = "vllm", dict(parent.engine_config), parent.model_ref
    else:
        model_ref, adapter_ref = str(result.output_dir), None
    name = None
    with db.session() as s:
        ckpt = Checkpoint(job_id=ctx.job_id, step=result.step, path=str(result.output_dir))
        s.add(ckpt)
        s.flush()
        if ctx.cfg.publish:
            name = ctx.cfg.output_name or default_name(ctx)
            ckpt.contestant_id = register(
                s,
                ContestantSpec(
                    public_name=name,
                    engine=engine,
                    engine_config=engine_config,
                    model_ref=model_ref,
                    adapter_ref=adapter_ref,
                    description=describe(ctx, result),
                    sampling=dict(parent.sampling) if parent else {},
                    system_prompt=parent.system_prompt if parent and ctx.cfg.inherit_persona else "",
                    prefill=parent.prefill if parent and ctx.cfg.inherit_persona else "",
                    aliases=list(parent.aliases) if parent else [],
                    parent_id=parent.id if parent else None,
                    job_id=ctx.job_id,
                    snapshot_hash=ctx.checked.snapshot_hash,
                ),
            )
        checkpoint_id, contestant_id = ckpt.id, ckpt.contestant_id
    seconds = time.perf_counter() - result.ended_at
    ctx.metrics.log(result.step, {"publish_seconds": seconds})
    print(
        f"[publish] checkpoint {checkpoint_id}"
        + (f" -> contestant {name!r} (id {contestant_id})" if name else "")
        + f" in {seconds:.2f} s after training ended",
        flush=True,
    )
    return Published(checkpoint_id, contestant_id, name, seconds)


def publish_checkpoint(
    db: Database,
    job_id: int,
    step: int | None = None,
    name: str | None = None,
    user_id: int | None = None,
    reason: str | None = None,
) -> Published:
    """Publish a checkpoint the job saved on the way (``save_steps``; the newest when ``step`` is None) as a
    contestant, while the job runs or after it ended. Its lineage is the job's (parent, snapshot, job); the
    description names the step. Reward-model jobs score answers and cannot be published as contestants."""
    from arena.registry import RegistryError
    from db.models import Job
    from training.errors import JobError
    from training.preflight import choose_base, find_parent
    from training.runner import require_job_owner, saved_checkpoints

    require_job_owner(db, job_id, user_id, "publish", reason)  # another's job: admin, or a recorded reason
    t0 = time.perf_counter()
    with db.session() as s:
        job = s.get(Job, job_id)
        if job is None:
            raise JobError(f"no job {job_id}")
        if job.kind == "reward":
            raise JobError(
                f"job {job_id} trains a reward model; it scores answers and cannot play in the arena"
            )
        cfg = dict(job.config or {})
        saved = dict(saved_checkpoints(job_id))
        if not saved:
            raise JobError(
                f"job {job_id} has no saved checkpoint (set save_steps > 0 to keep some on the way)"
            )
        step = max(saved) if step is None else int(step)
        if step not in saved:
            raise JobError(
                f"job {job_id} has no checkpoint at step {step} (saved: {', '.join(map(str, sorted(saved)))})"
            )
        folder = _keep_copy(saved[step], job_id, step)  # the trainer rotates checkpoints (save_total_limit)
        parent = find_parent(s, cfg["parent_contestant"]) if cfg.get("parent_contestant") else None
        base = choose_base(parent, cfg.get("base_model") or "")
        adapter = (folder / "adapter_config.json").exists()
        engine, engine_config = "transformers", {}
        if adapter:
            model_ref, adapter_ref = base.model_ref, str(folder)
            if parent is not None and parent.engine == "vllm":
                engine, engine_config, model_ref = "vllm", dict(parent.engine_config), parent.model_ref
        else:
            model_ref, adapter_ref = str(folder), None
        stem = parent.public_name if parent else Path(base.model_ref.rstrip("/")).name
        name = name or f"{stem}-{job.kind}-j{job_id}-s{step}"
        snapshot_hash = str(cfg.get("snapshot_hash") or "")
        ckpt = Checkpoint(job_id=job_id, step=step, path=str(folder))
        s.add(ckpt)
        s.flush()
        try:
            ckpt.contestant_id = register(
                s,
                ContestantSpec(
                    public_name=name,
                    engine=engine,
                    engine_config=engine_config,
                    model_ref=model_ref,
                    adapter_ref=adapter_ref,
                    description=(
                        f"{job.kind.upper()} checkpoint at step {step} of job {job_id} "
                        f"({'LoRA' if adapter else 'full'}) of {stem} on snapshot {snapshot_hash[:12]}."
                    ),
                    sampling=dict(parent.sampling) if parent else {},
                    aliases=list(parent.aliases) if parent else [],
                    parent_id=parent.id if parent else None,
                    job_id=job_id,
                    snapshot_hash=snapshot_hash or None,
                ),
            )
        except RegistryError as exc:
            raise JobError(str(exc)) from exc
        checkpoint_id, contestant_id = ckpt.id, ckpt.contestant_id
    return Published(checkpoint_id, contestant_id, name, time.perf_counter() - t0)


_TRAINER_STATE = ("optimizer.pt", "scheduler.pt", "trainer_state.json", "training_args.bin", "rng_state")


def _keep_copy(folder: Path, job_id: int, step: int) -> Path:
    """Copy a checkpoint's model files (not the optimizer state) to ``jobs/<id>/published/step-<n>``."""
    import shutil

    from training.runner import job_dir

    target = job_dir(job_id) / "published" / f"step-{step}"
    if not target.exists():
        tmp = target.with_name(target.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(
            folder, tmp, ignore=lambda _d, names: [n for n in names if n.startswith(_TRAINER_STATE)]
        )
        tmp.replace(target)
    return target
