"""KTO, ORPO and SimPO through the real runner on the tiny model: each job trains a few steps, records its
curves, saves a LoRA checkpoint that moved, and publishes a contestant with its lineage, as a DPO job does."""

from __future__ import annotations

from pathlib import Path

import pytest
from safetensors.torch import load_file

from tests.helpers.postgres import ONE_KIND
from vibestudio.arena.registry import get_contestant
from vibestudio.training.jobs.runner import wait
from vibestudio.training.jobs.service import launch

STEPS = {"max_steps": 2, "learning_rate": 5e-3, "drift_prompts": 0, "eval_items": 0, "save_steps": 1}


def _moved(folder: str) -> bool:
    weights = load_file(Path(folder) / "adapter_model.safetensors")
    b = [v for k, v in weights.items() if "lora_B" in k]
    return bool(b) and all(float(t.abs().max()) > 0 for t in b)


CURVES = {"kto": "rewards/chosen", "orpo": "nll_loss", "simpo": "rewards/margins"}


@pytest.mark.slow  # three real jobs, about 15-25 s each on a CPU
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)
def test_each_objective_trains_records_curves_and_publishes(db, tiny_parent, make_snapshot):
    snap = make_snapshot(8)
    for kind, curve in CURVES.items():
        job_id = launch(db, kind, "tiny-parent", snap, **STEPS)
        view = wait(db, job_id, timeout=300)
        assert view.status == "succeeded", (kind, view.error or view.log_tail)
        assert [s for s, _ in view.metrics["loss"]] == [1, 2], kind
        assert curve in view.metrics and view.last("progress") == 1.0, kind
        assert _moved(view.output_dir), kind
        saved = sorted(p.name for p in (Path(view.output_dir).parent / "checkpoints").glob("checkpoint-*"))
        assert saved == ["checkpoint-1", "checkpoint-2"], kind
        with db.session() as s:
            info = get_contestant(s, view.contestant_id)
        assert info.public_name == f"tiny-parent-{kind}-j{job_id}"
        assert (info.parent_id, info.snapshot_hash) == (tiny_parent, snap)


@pytest.mark.slow  # a real job cancelled after its first checkpoint and resumed: about a minute
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)
@pytest.mark.parametrize("kind", ["kto"])  # KTO keeps TRL's "ref" adapter copy: the resume must restore both
def test_cancel_and_resume_continue_from_the_last_checkpoint(db, tiny_parent, make_snapshot, kind):
    import time

    from vibestudio.training.jobs import runner

    job_id = launch(db, kind, "tiny-parent", make_snapshot(8), **{**STEPS, "max_steps": 6, "save_steps": 2})
    state = runner.job_dir(job_id) / "checkpoints" / "checkpoint-2" / "trainer_state.json"
    deadline = time.monotonic() + 300
    while not state.exists() and time.monotonic() < deadline:
        assert runner.job_view(db, job_id).status in ("queued", "running"), runner.job_view(db, job_id).error
        time.sleep(0.2)
    assert state.exists(), "no first checkpoint"
    assert runner.cancel(db, job_id, grace=5.0).status == "cancelled"
    assert runner.resume(db, job_id).status in ("queued", "running")
    view = wait(db, job_id, timeout=300)
    assert view.status == "succeeded", view.error or view.log_tail
    assert "resuming from" in runner.log_tail(view.log_path, lines=300)
    steps = [s for s, _ in view.metrics["loss"]]
    assert steps == sorted(set(steps)) and steps[-1] == 6  # no step logged twice, none lost
    # KL(child || parent) on held-out prompts once training ended, with its standard error
    assert view.last("kl_heldout") is not None and view.last("kl_heldout_se") is not None
