"""Reward-model job: TRL ``RewardTrainer`` (Bradley-Terry loss on chosen vs rejected) on a preference
snapshot.

The model is the base checkpoint with a one-output score head (``AutoModelForSequenceClassification``).
With LoRA, the adapter trains together with the head; PEFT keeps the head in ``modules_to_save``. The
output folder's manifest lets ``training.objectives.rewards.RewardModelScorer`` load it for GRPO. TRL logs
``accuracy`` (chosen scored above rejected), ``margin`` and the reward range per step.
"""

from __future__ import annotations

from vibestudio.annotation.snapshots import load_snapshot
from vibestudio.training.jobs.config import RewardJobConfig
from vibestudio.training.objectives.context import JobContext, TrainResult, common_args, fit, load_model


def run_reward(ctx: JobContext) -> TrainResult:
    from transformers import AutoModelForSequenceClassification
    from trl import RewardConfig, RewardTrainer

    cfg = ctx.cfg
    assert isinstance(cfg, RewardJobConfig)
    rows = load_snapshot(ctx.checked.snapshot_path, ctx.checked.snapshot_hash)
    if ctx.checked.base.adapter_ref:
        note = f"the parent's adapter {ctx.checked.base.adapter_ref} is not used (reward models start from the base)"
        print(f"[reward] {note}", flush=True)
        ctx.checked.base.adapter_ref = None
    print(f"[reward] {len(rows)} pairs from snapshot {ctx.checked.snapshot_hash[:12]}", flush=True)
    loaded = load_model(ctx, lora_task="SEQ_CLS", model_cls=AutoModelForSequenceClassification, num_labels=1)
    args = RewardConfig(
        **common_args(ctx),
        max_length=cfg.max_length,
        center_rewards_coefficient=cfg.center_rewards_coefficient,
    )
    return fit(ctx, RewardTrainer, args, rows, loaded)
