"""Reward-model and GRPO jobs on the tiny model through the runner; GRPO scores with the trained reward model."""

from __future__ import annotations

from pathlib import Path

from safetensors.torch import load_file

from vibestudio.arena.registry import get_contestant
from vibestudio.db.models import Checkpoint
from vibestudio.training.jobs.runner import job_view, wait
from vibestudio.training.jobs.service import launch
from vibestudio.training.publishing.artifacts import read_manifest


def _lora_b_nonzero(folder: str) -> bool:
    weights = load_file(Path(folder) / "adapter_model.safetensors")
    b = [v for k, v in weights.items() if "lora_B" in k]
    return bool(b) and all(float(t.abs().max()) > 0 for t in b)


def test_reward_model_then_grpo_with_verifiable_and_learned_rewards(db, tiny_parent, make_snapshot):
    snap = make_snapshot(8)
    rm_job = launch(db, "reward", "tiny-parent", snap, max_steps=3, learning_rate=1e-3)
    rewards = [
        {"type": "length", "min": 1, "max": 4, "weight": 0.5},
        {"type": "format", "format": "no_emoji", "weight": 0.1},
        {"type": "reward_model", "job": rm_job, "weight": 1.0},
        {"type": "judge", "judge": "tiny-parent", "weight": 0.2},
    ]
    grpo_job = launch(
        db,
        "grpo",
        "tiny-parent",
        snap,
        max_steps=2,
        max_completion_length=8,
        rewards=rewards,
        learning_rate=1e-3,
    )
    assert job_view(db, grpo_job).status == "queued"  # one job at a time

    rm = wait(db, rm_job, timeout=180)
    assert rm.status == "succeeded", rm.error or rm.log_tail
    assert {"loss", "accuracy", "margin", "progress"} <= set(rm.metrics)
    assert rm.contestant_id is None  # a reward model does not play
    with db.session() as s:
        ckpt = s.query(Checkpoint).filter_by(job_id=rm_job).one()
    manifest = read_manifest(ckpt.path)
    assert manifest["kind"] == "reward" and manifest["adapter"] is True
    assert _lora_b_nonzero(ckpt.path)
    score_head = [k for k in load_file(Path(ckpt.path) / "adapter_model.safetensors") if "score" in k]
    assert score_head, "the score head is saved with the adapter"

    grpo = wait(db, grpo_job, timeout=300)
    assert grpo.status == "succeeded", grpo.error or grpo.log_tail
    for name in (
        "reward",
        "rewards/length/mean",
        "rewards/format_no_emoji/mean",
        "rewards/reward_model/mean",
        "kl",
    ):
        assert name in grpo.metrics, (name, sorted(grpo.metrics))
    assert _lora_b_nonzero(grpo.output_dir)
    with db.session() as s:
        info = get_contestant(s, grpo.contestant_id)
    assert info.public_name == f"tiny-parent-grpo-j{grpo_job}" and info.parent_id == tiny_parent
    assert "rewards length+format+reward_model+judge" in info.description
