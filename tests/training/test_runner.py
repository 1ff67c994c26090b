"""Runner lifecycle on real processes: bad input writes nothing, a killed worker is reconciled, cancel, the queue."""

from __future__ import annotations

import os
import signal

import pytest
from sqlalchemy import func, select

from tests.helpers.training import FAST, pair_rows
from tests.helpers.waiting import until
from vibestudio.db.models import Contestant, Job
from vibestudio.training.jobs import runner
from vibestudio.training.jobs.errors import JobError
from vibestudio.training.jobs.service import launch, launch_dpo
from vibestudio.training.publishing.publish import publish_checkpoint


def _count_jobs(db) -> int:
    with db.session() as s:
        return s.scalar(select(func.count(Job.id)))


def _running_pid(db, job_id: int) -> int:
    return until(lambda: runner.job_view(db, job_id).pid, what="worker pid")


def _gone(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_too_few_pairs_is_refused_before_anything_is_written(db, tiny_parent, make_snapshot, tmp_path):
    snap = make_snapshot(3)
    with pytest.raises(JobError, match=r"has 3 pair\(s\) to train on \(all\); at least 4 are needed"):
        launch_dpo(db, "tiny-parent", snap)
    assert _count_jobs(db) == 0
    assert not (tmp_path / "home" / "jobs").exists()


def test_no_votes_and_bad_inputs_give_clear_errors(db, tiny_parent, make_snapshot):
    with pytest.raises(JobError, match=r"the current votes make 0 pair\(s\) to train on"):
        launch_dpo(db, "tiny-parent")  # no snapshot given, and the arena has no votes
    snap = make_snapshot(8)
    with pytest.raises(JobError, match="parent contestant 'nobody' not found"):
        launch_dpo(db, "nobody", snap)
    with pytest.raises(JobError, match="no snapshot 'feedbeef'"):
        launch_dpo(db, "tiny-parent", "feedbeef")
    with pytest.raises(JobError, match="unknown field.*'bta'"):
        launch_dpo(db, "tiny-parent", snap, bta=0.2)
    with pytest.raises(JobError, match="beta must be > 0"):
        launch_dpo(db, "tiny-parent", snap, beta=0)
    with pytest.raises(JobError, match="already exists"):
        launch_dpo(db, "tiny-parent", snap, output_name="tiny-parent")
    with pytest.raises(JobError, match=r"reward 0 \(judge\): no contestant 'oracle'"):
        launch(db, "grpo", "tiny-parent", snap, rewards=[{"type": "judge", "judge": "oracle"}])
    with pytest.raises(JobError, match="job 99 is not a reward-model job"):
        launch(db, "grpo", "tiny-parent", snap, rewards=[{"type": "reward_model", "job": 99}])
    with pytest.raises(JobError, match="rewards: reward 0 .* 'pattern' is required"):
        launch(db, "grpo", "tiny-parent", snap, rewards=[{"type": "regex"}])
    assert _count_jobs(db) == 0


def test_empty_answer_in_snapshot_is_refused(db, tiny_parent, make_snapshot):
    rows = pair_rows(6)
    rows[2]["rejected"][0]["content"] = "   "
    snap = make_snapshot(rows=rows)
    with pytest.raises(JobError, match="an answer is empty"):
        launch_dpo(db, "tiny-parent", snap)
    assert _count_jobs(db) == 0


def test_killed_worker_is_marked_failed_with_log_tail(db, tiny_parent, make_snapshot):
    job_id = launch_dpo(db, "tiny-parent", make_snapshot(8), **{**FAST, "max_steps": 500})
    pid = _running_pid(db, job_id)
    until(
        lambda: "[job process] job" in runner.log_tail(runner.job_view(db, job_id).log_path), what="log line"
    )
    os.kill(pid, signal.SIGKILL)  # what the OOM killer does
    until(lambda: not runner.pid_alive(pid), what="worker death")
    assert runner.job_view(db, job_id).status == "running"  # nobody has noticed yet
    assert runner.reconcile(db) == [job_id]
    view = runner.job_view(db, job_id)
    assert view.status == "failed" and view.ended_at is not None
    assert (
        f"pid {pid}" in view.error and "--- log tail ---" in view.error and "[job process] job" in view.error
    )


def test_cancel_running_and_queued_jobs_leaves_no_process_and_the_queue_moves_on(
    db, tiny_parent, make_snapshot
):
    snap = make_snapshot(8)
    first = launch_dpo(db, "tiny-parent", snap, **{**FAST, "max_steps": 500})
    second = launch_dpo(db, "tiny-parent", snap, **FAST)
    with pytest.raises(JobError, match="already queued or running"):  # the same config twice is a slip
        launch_dpo(db, "tiny-parent", snap, **FAST)
    third = launch_dpo(db, "tiny-parent", snap, **{**FAST, "seed": 1})
    assert [runner.job_view(db, j).queue_position for j in (second, third)] == [0, 1]
    assert runner.cancel(db, second).status == "cancelled"  # queued: just marked
    pid = _running_pid(db, first)
    view = runner.cancel(db, first, grace=5.0)
    assert view.status == "cancelled" and view.error == "cancelled by the local operator"
    assert not runner.pid_alive(pid) and _gone(pid)
    # the queue moved on: the third job runs (and finishes) after the cancel
    done = runner.wait(db, third, timeout=180)
    assert done.status == "succeeded", done.error
    with pytest.raises(JobError, match="already succeeded"):
        runner.cancel(db, third)
    assert [j.status for j in runner.list_jobs(db)] == ["succeeded", "cancelled", "cancelled"]


def test_resume_continues_from_the_last_checkpoint(db, tiny_parent, make_snapshot):
    job_id = launch_dpo(
        db, "tiny-parent", make_snapshot(8), **{**FAST, "max_steps": 6, "save_steps": 2, "kl_prompts": 0}
    )
    folder = runner.job_dir(job_id) / "checkpoints" / "checkpoint-2" / "trainer_state.json"
    until(folder.exists, timeout=120, what="first checkpoint")
    runner.cancel(db, job_id, grace=5.0)
    # A checkpoint saved on the way plays in the arena; the job view says it is that step's, not the job's result.
    early = publish_checkpoint(db, job_id, step=2)
    view = runner.job_view(db, job_id)
    assert (view.contestant_id, view.contestant_step) == (early.contestant_id, 2)
    # it is pending; its report job runs in a job process (drift_prompts 0: a skipped report, held)
    assert early.state == "pending" and early.report_job is not None
    assert runner.wait(db, early.report_job, timeout=120).status == "succeeded"
    with db.session() as s:
        assert s.get_one(Contestant, early.contestant_id).state == "held"
    queued = launch_dpo(db, "tiny-parent", make_snapshot(8), **FAST)
    with pytest.raises(JobError, match="only failed or cancelled"):
        runner.resume(db, queued)  # queued: not resumable
    runner.cancel(db, queued)
    assert runner.resume(db, job_id).status in ("queued", "running")
    view = runner.wait(db, job_id, timeout=240)
    assert view.status == "succeeded", view.error
    assert view.contestant_step is None and view.contestant_id not in (None, early.contestant_id)
    assert "resuming from" in runner.log_tail(view.log_path, lines=200)
    steps = [s for s, _ in view.metrics["loss"]]
    assert steps == sorted(set(steps)) and steps[-1] == 6  # no step logged twice


def test_memory_estimate_refuses_a_batch_that_cannot_fit(db, tiny_parent, make_snapshot):
    snap = make_snapshot(8)
    with pytest.raises(
        JobError, match=r"needs about .* GiB but .* GiB is available.*lower per_device_train_batch"
    ):
        launch_dpo(db, "tiny-parent", snap, per_device_train_batch_size=4096, max_length=4096)
    assert _count_jobs(db) == 0
