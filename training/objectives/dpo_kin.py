"""DPO's kin as job kinds: KTO, ORPO and SimPO.
- KTO (TRL ``KTOTrainer``) trains on unpaired desirable / undesirable answers.
- ORPO (TRL ``ORPOTrainer``) is reference-free, on the same preference snapshots as DPO.
- SimPO (TRL ``CPOTrainer`` with ``loss_type="simpo"`` and ``cpo_alpha=0``) is reference-free too, on the
  same snapshots.

Each reads its snapshot and loads the model the way every trainer does (``training.objectives.context``).
It hands the job process a ``TrainResult``. Curves, checkpoints, resume, publishing and the report are the
job process's, as for DPO. A KTO job on a paired snapshot takes each pair's chosen answer as desirable and
its rejected one as undesirable (``annotation.unpaired.from_pairs``). ORPO and CPO live in
``trl.experimental`` in the installed TRL; KTO is stable there.

TRL logs ``loss``, ``rewards/chosen|rejected|margins`` and ``logps/*``. KTO also logs ``kl``, its own
batch estimate. When training ends, each job measures KL(child || parent) on held-out prompts
(``training.objectives.kl``). It is filed as ``kl_heldout``, ``kl_heldout_se`` and
``kl_heldout_per_token``, so TRL's ``kl`` keeps its meaning. ``kl_unmeasured`` says when there is no
parent to measure against.
"""

from __future__ import annotations

from typing import Any

from vibestudio.annotation.snapshots import load_snapshot
from vibestudio.annotation.unpaired import from_pairs, is_unpaired
from vibestudio.training.jobs.config import JOB_KINDS, JobConfig, KTOJobConfig, ORPOJobConfig, SimPOJobConfig
from vibestudio.training.objectives.context import JobContext, TrainResult, common_args, fit, load_model


def kl_unmeasured(cfg: JobConfig, parent_adapter: bool) -> str | None:
    """Why the end-of-training KL to the parent cannot be measured for ``cfg`` (None: it can). Reference-free
    objectives keep no frozen parent: with LoRA on a plain base, turning the adapter off gives the parent back;
    a full fine-tune has nothing to turn off, and a LoRA continued from the parent's adapter has the
    grandparent under it."""
    if not getattr(cfg, "kl_prompts", 0):
        return "kl_prompts is 0"
    if JOB_KINDS[cfg.kind].reference:
        return None
    if not cfg.lora:
        return f"{cfg.kind} keeps no copy of the parent in a full fine-tune (its memory saving)"
    if parent_adapter:
        return f"{cfg.kind} keeps no copy of the parent's adapter; under the trained one is the grandparent"
    return None


def _end_kl(ctx: JobContext, loaded: Any, exclude: list[dict[str, Any]]) -> Any:
    """The final evaluation ``(trainer, step)`` that measures KL(child || parent) once training ends, or None
    (saying why in the job's log)."""
    why = kl_unmeasured(ctx.cfg, bool(ctx.checked.base.adapter_ref))
    if why is not None:
        print(f"[kl] not measured: {why}", flush=True)
        return None
    from vibestudio.training.objectives.kl import KLCheck
    from vibestudio.training.tasks.heldout import renamed_heldout

    check = KLCheck.for_job(ctx, loaded.tokenizer, exclude)
    check.metrics = renamed_heldout(ctx.metrics)
    return check.measure


def kto_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The TRL columns of a KTO dataset (prompt, completion, label) from either snapshot layout."""
    single = rows if all(is_unpaired(r) for r in rows) else from_pairs(rows)
    return [{"prompt": r["prompt"], "completion": r["completion"], "label": bool(r["label"])} for r in single]


def _say(ctx: JobContext, what: str) -> None:
    base = ctx.checked.base
    print(
        f"[{ctx.cfg.kind}] {what} from snapshot {ctx.checked.snapshot_hash[:12]}; base {base.model_ref}"
        + (f" + adapter {base.adapter_ref}" if base.adapter_ref else ""),
        flush=True,
    )


def run_kto(ctx: JobContext) -> TrainResult:
    from trl import KTOConfig, KTOTrainer

    cfg = ctx.cfg
    assert isinstance(cfg, KTOJobConfig)
    rows = kto_rows(load_snapshot(ctx.checked.snapshot_path, ctx.checked.snapshot_hash))
    good = sum(r["label"] for r in rows)
    _say(ctx, f"{good} desirable + {len(rows) - good} undesirable answers")
    loaded = load_model(ctx)
    args = KTOConfig(
        **common_args(ctx),
        beta=cfg.beta,
        loss_type=cfg.loss_type,
        desirable_weight=cfg.desirable_weight,
        undesirable_weight=cfg.undesirable_weight,
        max_length=cfg.max_length,
    )
    return fit(ctx, KTOTrainer, args, rows, loaded, _end_kl(ctx, loaded, rows), ref_model=loaded.ref_model)


def _pairs(ctx: JobContext) -> list[dict[str, Any]]:
    rows = load_snapshot(ctx.checked.snapshot_path, ctx.checked.snapshot_hash)
    if any(is_unpaired(r) for r in rows):
        raise ValueError(
            f"snapshot {ctx.checked.snapshot_hash[:12]} holds unpaired rows; {ctx.cfg.kind} needs pairs"
        )
    _say(ctx, f"{len(rows)} pairs")
    return rows


def run_orpo(ctx: JobContext) -> TrainResult:
    from trl.experimental.orpo import ORPOConfig, ORPOTrainer

    cfg = ctx.cfg
    assert isinstance(cfg, ORPOJobConfig)
    rows = _pairs(ctx)
    loaded = load_model(ctx)
    args = ORPOConfig(**common_args(ctx), beta=cfg.beta, max_length=cfg.max_length)
    return fit(ctx, ORPOTrainer, args, rows, loaded, _end_kl(ctx, loaded, rows))


def run_simpo(ctx: JobContext) -> TrainResult:
    from trl.experimental.cpo import CPOConfig, CPOTrainer

    cfg = ctx.cfg
    assert isinstance(cfg, SimPOJobConfig)
    rows = _pairs(ctx)
    loaded = load_model(ctx)
    args = CPOConfig(
        **common_args(ctx),
        loss_type="simpo",
        cpo_alpha=0.0,
        beta=cfg.beta,
        simpo_gamma=cfg.simpo_gamma,
        max_length=cfg.max_length,
    )
    return fit(ctx, CPOTrainer, args, rows, loaded, _end_kl(ctx, loaded, rows))
