"""``accelerate launch`` with two CPU processes (gloo): a DPO and a GRPO job both train on both ranks, end with
the same kind of checkpoint as one process, and publish it."""

from __future__ import annotations

import re

import pytest

from tests.helpers.postgres import ONE_KIND
from tests.helpers.training import FAST
from vibestudio.training.jobs import runner
from vibestudio.training.jobs.runner import wait
from vibestudio.training.jobs.service import launch

pytestmark = pytest.mark.slow

TWO = {"launcher": "accelerate", "num_processes": 2, "use_cpu": True, "drift_prompts": 0}


def _ranks(log: str) -> dict[int, tuple[int, int, int]]:
    """rank -> (per-device batch, global batch, steps trained), from the worker log."""
    batches = {
        int(r): (int(p), int(g))
        for r, p, g in re.findall(r"\[rank (\d) of 2\] per-device batch (\d+), global batch (\d+)", log)
    }
    steps = {int(r): int(n) for r, n in re.findall(r"\[rank (\d) of 2\] trained (\d+) steps", log)}
    return {r: (*batches[r], steps[r]) for r in batches if r in steps}


@pytest.mark.parametrize("db", ONE_KIND, indirect=True)
@pytest.mark.parametrize("kind", ["dpo", "grpo"])
def test_two_cpu_processes_train_and_publish(db, tiny_parent, make_snapshot, kind):
    extra = (
        {
            "rewards": [{"type": "length", "max": 5}],
            "num_generations": 2,
            "per_device_train_batch_size": 2,
            "max_completion_length": 8,
            "max_steps": 2,
            "learning_rate": 5e-3,
            "drift_prompts": 0,
        }
        if kind == "grpo"
        else {**FAST, "per_device_train_batch_size": 2}
    )
    job_id = launch(db, kind, "tiny-parent", make_snapshot(8), **{**extra, **TWO})
    assert runner.job_command(str(runner.job_dir(job_id) / "config.yaml"), job_id)[3:5] == [
        "--num_processes",
        "2",
    ]
    view = wait(db, job_id, timeout=600)
    log = runner.log_tail(view.log_path, lines=2000, max_chars=10**7)
    assert view.status == "succeeded", view.error or log[-3000:]
    ranks = _ranks(log)
    steps = view.config["max_steps"]
    assert ranks == {0: (2, 4, steps), 1: (2, 4, steps)}, log[-3000:]
    assert view.contestant_id is not None
    assert (runner.job_dir(job_id) / "output" / "adapter_model.safetensors").exists()
    assert [s for s, _ in view.metrics["progress"]][-1] == steps
