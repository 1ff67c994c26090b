"""GRPO job: TRL ``GRPOTrainer`` with verifiable rewards (``training.objectives.rewards``).

It trains on the prompts of a snapshot, or on the train split of a task set (RLVR, ``tasks: NAME``).
- **On a snapshot**, each distinct prompt is a training prompt. Its chosen answer is kept as the
  ``reference`` column for ``exact_match`` rewards.
- **On a task set**, each train task is a prompt with its ``answer``, ``verifier`` and ``choices``
  columns, for the ``task`` reward. The job process re-checks the set before training: no held-out task
  among them. Every ``heldout_every`` steps, ``training.tasks.heldout`` measures held-out accuracy and the
  studio's own KL. Accuracy has a Wilson interval, and its change since step 0 an exact McNemar test.

A ``reward_model`` spec naming a job (``{type: reward_model, job: 7}``) is resolved here to that job's
checkpoint folder. A ``judge`` spec naming a contestant is resolved to that contestant's engine. TRL logs
``reward``, ``rewards/<function>/mean``, ``kl`` (when beta > 0), completion lengths and clip ratios. They
all land in ``job_metrics``.
"""

from __future__ import annotations

from typing import Any

from vibestudio.annotation.snapshots import load_snapshot
from vibestudio.db.models import Checkpoint
from vibestudio.training.jobs.config import GRPOJobConfig
from vibestudio.training.jobs.metrics import make_callback
from vibestudio.training.jobs.vllm_server import grpo_args
from vibestudio.training.objectives.context import (
    JobContext,
    TrainResult,
    common_args,
    load_model,
    run_trainer,
)
from vibestudio.training.objectives.rewards import build_rewards


def prompt_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per distinct prompt: ``prompt`` (messages) and ``reference`` (the first chosen answer)."""
    seen: dict[str, dict[str, Any]] = {}
    for r in rows:
        key = repr(r["prompt"])
        if key not in seen:
            seen[key] = {"prompt": r["prompt"], "reference": r["chosen"][-1]["content"]}
    return list(seen.values())


def resolve_reward_specs(ctx: JobContext, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Turn ``{type: reward_model, job: N}`` into ``{type: reward_model, path: <that job's checkpoint>}``."""
    out = []
    for spec in specs:
        spec = dict(spec)
        if spec.get("type") == "reward_model" and spec.get("job") and not spec.get("path"):
            db = ctx.metrics.db
            assert db is not None
            with db.session() as s:
                path = (
                    s.query(Checkpoint.path).filter_by(job_id=int(spec["job"])).order_by(Checkpoint.id.desc())
                )
                found = path.first()
            if found is None:
                raise ValueError(f"reward_model: job {spec['job']} has no checkpoint")
            spec["path"] = found[0]
        if spec.get("type") == "judge" and not spec.get("engine"):
            spec["engine"] = judge_engine(ctx, spec.pop("judge"))
        spec.pop("job", None)
        out.append(spec)
    return out


def judge_engine(ctx: JobContext, ident: Any) -> dict[str, Any]:
    """The engine description of the judge contestant ``ident`` (resolved here, built lazily by the reward)."""
    from vibestudio.arena.registry import resolve_model_ref
    from vibestudio.training.jobs.preflight import find_parent

    db = ctx.metrics.db
    assert db is not None
    with db.session() as s:
        try:
            info = find_parent(s, ident)
        except ValueError as exc:
            raise ValueError(f"judge {ident!r}: no such contestant") from exc
    return {
        "kind": info.engine,
        "model_ref": resolve_model_ref(info.model_ref),
        "adapter_ref": info.adapter_ref,
        "engine_config": info.engine_config,
    }


def run_grpo(ctx: JobContext) -> TrainResult:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    cfg = ctx.cfg
    assert isinstance(cfg, GRPOJobConfig)
    if cfg.tasks:
        from vibestudio.training.tasks.heldout import task_rows

        rows = task_rows(ctx)
    else:
        rows = prompt_rows(load_snapshot(ctx.checked.snapshot_path, ctx.checked.snapshot_hash))
    funcs, weights = build_rewards(resolve_reward_specs(ctx, cfg.rewards))
    names = ", ".join(f"{f.__name__} x{w:g}" for f, w in zip(funcs, weights, strict=True))
    print(f"[grpo] {len(rows)} prompts; rewards {names}", flush=True)
    loaded = load_model(ctx)
    args = GRPOConfig(
        **common_args(ctx),
        num_generations=cfg.num_generations,
        max_completion_length=cfg.max_completion_length,
        temperature=cfg.temperature,
        beta=cfg.beta,
        loss_type=cfg.loss_type,
        scale_rewards=cfg.scale_rewards,
        reward_weights=weights,
        **grpo_args(cfg),
    )
    callbacks = [make_callback(ctx.metrics)]
    check = None
    if cfg.tasks:
        from vibestudio.training.tasks.heldout import HeldoutCheck

        check = HeldoutCheck.for_job(ctx, loaded.tokenizer, funcs)
        callbacks.append(check.callback())
    trainer = GRPOTrainer(
        model=loaded.model,
        reward_funcs=list(funcs),  # type: ignore[arg-type]
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=loaded.tokenizer,
        peft_config=loaded.peft_config,
        callbacks=callbacks,
    )
    if check is not None:
        check.trainer = trainer
    return run_trainer(ctx, trainer)
