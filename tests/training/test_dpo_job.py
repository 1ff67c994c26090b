"""DPO through the real runner: a detached worker process trains the tiny model and publishes a contestant."""

from __future__ import annotations

from pathlib import Path

import pytest
from safetensors.torch import load_file

from arena.engines.base import Sampling
from arena.engines.hf import TransformersEngine
from arena.registry import get_contestant
from db.models import Checkpoint
from tests.training.conftest import FAST
from training import runner, verdict
from training.drift import load_report
from training.runner import job_view, list_jobs, wait
from training.service import estimate_job, launch_dpo


def test_dpo_job_trains_publishes_and_plays(db, tiny_parent, make_snapshot, tiny_model_dir: Path):
    snap = make_snapshot(8)
    job_id = launch_dpo(
        db,
        "tiny-parent",
        snap,
        **{**FAST, "drift_prompts": 20, "drift_max_tokens": 6, "eval_items": 8, "eval_max_tokens": 6},
    )
    view = wait(db, job_id, timeout=600)  # training + the checkpoint report (20 prompts, 8 eval items)
    assert view.status == "succeeded", view.error or view.log_tail

    # metrics: TRL's scalars per step, progress, measured KL, publish time
    for name in (
        "loss",
        "rewards/chosen",
        "rewards/rejected",
        "rewards/margins",
        "rewards/accuracies",
        "logps/chosen",
        "learning_rate",
        "grad_norm",
        "progress",
        "kl",
        "publish_seconds",
    ):
        assert name in view.metrics, name
    assert [s for s, _ in view.metrics["loss"]] == [1, 2, 3, 4]
    assert view.last("progress") == 1.0
    assert view.progress == 1.0

    # the adapter moved: LoRA B matrices start at zero and are non-zero after training
    out = Path(view.output_dir)
    weights = load_file(out / "adapter_model.safetensors")
    b_mats = [v for k, v in weights.items() if "lora_B" in k]
    assert b_mats and all(float(b.abs().max()) > 0 for b in b_mats)
    assert not (out / "ref").exists()  # only the trained adapter is saved

    # published with lineage, inheriting the parent's sampling, and it answers
    info = get_contestant_by_job(db, view.contestant_id)
    assert info.public_name == f"tiny-parent-dpo-j{job_id}"
    assert info.engine == "transformers" and info.model_ref == str(tiny_model_dir)
    assert info.adapter_ref == str(out)
    assert info.parent_id == tiny_parent and info.job_id == job_id and info.snapshot_hash == snap
    assert info.sampling["max_tokens"] == 12 and info.system_prompt == "" and "TinyLlama" in info.aliases
    with db.session() as s:
        ckpt = s.query(Checkpoint).filter_by(job_id=job_id).one()
        assert ckpt.contestant_id == info.id and ckpt.step == 4
    engine = TransformersEngine(info.model_ref, info.adapter_ref)
    text = "".join(engine.stream_chat([{"role": "user", "content": "Hi"}], Sampling(max_tokens=5, seed=1)))
    assert text.strip()

    assert [j.id for j in list_jobs(db)] == [job_id]
    assert "[publish]" in job_view(db, job_id).log_tail

    # a checkpoint report vs the parent (same engine and persona) and a verdict were made after publishing
    report = load_report(db, info.id)
    assert report is not None and report.n_prompts == 20 and report.parent_id == tiny_parent
    assert report.setup["fair"] and report.evals["n"] == 8
    assert report.verdict["verdict"] in ("pass", "watch", "regress")
    assert (
        "drift/flagged" in view.metrics and "drift/tokens" in view.metrics and "verdict/code" in view.metrics
    )
    assert verdict.current(db)[info.id].verdict == report.verdict["verdict"]

    # the next estimate for the same base uses this job's measured step time
    est = estimate_job(db, "dpo", "tiny-parent", **FAST)
    assert est.basis.startswith("measured") and est.fits and est.trainable_params < est.params


def get_contestant_by_job(db, contestant_id):
    with db.session() as s:
        return get_contestant(s, contestant_id)


@pytest.mark.slow
def test_the_same_config_runs_under_accelerate_launch(db, tiny_parent, make_snapshot):
    job_id = launch_dpo(
        db, "tiny-parent", make_snapshot(8), **{**FAST, "launcher": "accelerate", "use_cpu": True}
    )
    command = runner.worker_command(str(runner.job_dir(job_id) / "config.yaml"), job_id)
    assert command[1:3] == ["-m", "accelerate.commands.launch"] and "--cpu" in command
    view = wait(db, job_id, timeout=300)
    assert view.status == "succeeded", view.error or view.log_tail
    assert view.contestant_id is not None and [s for s, _ in view.metrics["loss"]] == [1, 2, 3, 4]
