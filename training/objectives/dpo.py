"""DPO job: TRL ``DPOTrainer`` on a frozen preference snapshot, LoRA by default, with metrics into the
database.

TRL logs its own: loss, rewards/chosen|rejected|margins|accuracies, logps/*, logits/*. Besides these, the
job measures KL(policy || reference) on held-out prompts (``training.objectives.kl``). TRL's DPO does not
log it. It is measured during training by default. When the config names one, a gold signal
(``training.objectives.gold``) is measured at the same steps. The job can then stop once gold falls and
publish the best-gold weights.
"""

from __future__ import annotations

from vibestudio.annotation.snapshots import load_snapshot
from vibestudio.training.jobs.config import DPOJobConfig
from vibestudio.training.jobs.metrics import make_callback
from vibestudio.training.objectives.context import (
    JobContext,
    TrainResult,
    common_args,
    load_model,
    run_trainer,
)


def run_dpo(ctx: JobContext) -> TrainResult:
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer

    cfg = ctx.cfg
    assert isinstance(cfg, DPOJobConfig)
    rows = load_snapshot(ctx.checked.snapshot_path, ctx.checked.snapshot_hash)
    print(
        f"[dpo] {len(rows)} pairs from snapshot {ctx.checked.snapshot_hash[:12]}; base {ctx.checked.base.model_ref}"
        + (f" + adapter {ctx.checked.base.adapter_ref}" if ctx.checked.base.adapter_ref else ""),
        flush=True,
    )
    loaded = load_model(ctx)
    args = DPOConfig(
        **common_args(ctx),
        beta=cfg.beta,
        loss_type=[cfg.loss_type],
        label_smoothing=cfg.label_smoothing,
        max_length=cfg.max_length,
    )
    kl = None
    if cfg.kl_prompts:
        from vibestudio.training.objectives.kl import KLCheck

        kl = KLCheck.for_job(ctx, loaded.tokenizer, exclude=rows)
    trainer_ref: list = []
    gold = None
    if cfg.gold != "none":
        from vibestudio.training.objectives.gold import GoldCheck, job_series, make_gold_callback

        check = GoldCheck.for_job(ctx, loaded.tokenizer)
        gold = make_gold_callback(
            check, cfg.gold_every, cfg.stop_at_best_gold, lambda: job_series(ctx.metrics)
        )

    def kl_due(step: int) -> bool:
        return bool(cfg.kl_every and step % cfg.kl_every == 0) or bool(gold and step % cfg.gold_every == 0)

    def on_step(state, _kw) -> None:  # type: ignore[no-untyped-def]
        if kl is not None and kl_due(state.global_step):
            kl.measure(trainer_ref[0], state.global_step)

    trainer = DPOTrainer(
        model=loaded.model,
        ref_model=loaded.ref_model,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=loaded.tokenizer,
        peft_config=loaded.peft_config,
        callbacks=[make_callback(ctx.metrics, on_step), *([gold] if gold else [])],
    )
    trainer_ref.append(trainer)
    if gold is not None:
        gold.trainer = trainer

    def final_eval(step: int) -> None:
        if kl is not None and not kl_due(step):
            kl.measure(trainer, step)
        if gold is not None and step % cfg.gold_every:
            gold._measure(step)
        if gold is not None and cfg.stop_at_best_gold:
            from vibestudio.training.objectives.overopt import gold_curve

            curve = gold_curve(job_series(ctx.metrics))
            best = gold.restore_best() if curve.state != "unmeasurable" else None
            ctx.metrics.log(step, {"published_step": float(step if best is None else best)})
            why = f"best gold ({curve.reason})" if best is not None else f"gold unmeasurable: {curve.reason}"
            print(
                f"[gold] publishing the weights of step {step if best is None else best}: {why}", flush=True
            )

    return run_trainer(ctx, trainer, final_eval)
