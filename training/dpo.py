"""DPO job: TRL ``DPOTrainer`` on a frozen preference snapshot, LoRA by default, with metrics into the database.

Besides TRL's own logs (loss, rewards/chosen|rejected|margins|accuracies, logps/*, logits/*), the job measures
KL(policy || reference) on held-out prompts (``training.kl``), which TRL's DPO does not log.
"""

from __future__ import annotations

from annotation.snapshots import load_snapshot
from training.config import DPOJobConfig
from training.context import JobContext, TrainResult, common_args, load_model, run_trainer
from training.metrics import make_callback


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
        from training.kl import KLProbe

        kl = KLProbe.for_job(ctx, loaded.tokenizer, exclude=rows)
    trainer_ref: list = []

    def on_step(state, _kw) -> None:  # type: ignore[no-untyped-def]
        if kl is not None and cfg.kl_every and state.global_step % cfg.kl_every == 0:
            kl.measure(trainer_ref[0], state.global_step)

    trainer = DPOTrainer(
        model=loaded.model,
        ref_model=loaded.ref_model,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=loaded.tokenizer,
        peft_config=loaded.peft_config,
        callbacks=[make_callback(ctx.metrics, on_step)],
    )
    trainer_ref.append(trainer)

    def final_eval(step: int) -> None:
        if kl is not None and (not cfg.kl_every or step % cfg.kl_every):
            kl.measure(trainer, step)

    return run_trainer(ctx, trainer, final_eval)
