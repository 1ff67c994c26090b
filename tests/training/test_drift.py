"""Drift through a real training job: a planted change is flagged (slow lane; the default lane's report tests are
in test_checkpoint_report.py and test_report_stats.py)."""

from __future__ import annotations

import pytest

from tests.helpers.postgres import ONE_KIND
from tests.helpers.training import pair_rows
from vibestudio.training.jobs.runner import wait
from vibestudio.training.jobs.service import launch_dpo
from vibestudio.training.report.steps import drift_flags, load_report


@pytest.mark.slow
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)
def test_checkpoint_trained_to_answer_much_shorter_is_flagged(db, tiny_parent, make_snapshot):
    """A real planted change: the tiny model is fine-tuned (SFT loss on the chosen answers) to say 'Yes.'."""
    snap = make_snapshot(rows=pair_rows(8, chosen="short"))
    job = launch_dpo(
        db,
        "tiny-parent",
        snap,
        loss_type="sft",
        lora=False,
        learning_rate=1e-2,
        max_steps=10,
        kl_prompts=0,
        drift_prompts=24,
        drift_max_tokens=32,
        eval_items=8,
        eval_max_tokens=8,
        drift_thresholds={"tokens": {"abs": 4}},  # the parent plays with max_tokens 12
    )
    view = wait(db, job, timeout=600)
    assert view.status == "succeeded", view.error or view.log_tail
    assert "tokens" in drift_flags(db, view.contestant_id)
    assert view.last("drift/tokens") < -5
    report = load_report(db, view.contestant_id)
    assert report is not None and report.features["tokens"].high < 0
    assert any(d["significant"] and "yes" in d["phrase"] for d in report.discovered)
