"""The job estimate includes the checkpoint report and learns from the jobs this studio already ran: in a fresh
studio it is the formula with a stated uncertainty; once jobs have run, it is calibrated on their measured times
(started / ended, the report's ``drift_seconds``) per kind and base, and says its own error on the last jobs,
each estimated only from the jobs before it. The form, the CLI's dry run and the API share one summary."""

from __future__ import annotations

from datetime import timedelta

from vibestudio.arena.registry import BUILTIN_HF, ContestantSpec, register
from vibestudio.db.models import Job, JobMetric, utcnow
from vibestudio.training.jobs.config import make_config
from vibestudio.training.jobs.estimate import (
    Timing,
    at_share,
    calibrate,
    estimate,
    expected_share,
    formula_seconds,
    past_error,
)
from vibestudio.training.jobs.preflight import past_timings
from vibestudio.training.jobs.service import check_config, estimate_job

BASE = BUILTIN_HF


def _parent(db) -> None:
    with db.session() as s:
        register(s, ContestantSpec("p0"))


def _ran(db, seconds: float, report: float | None, steps: int = 1, kind: str = "dpo", parent: int = 1,
         **report_metrics: float) -> int:  # fmt: skip
    """A finished job as the worker leaves it: started, ended, and the report's own time as a metric (with
    ``report_decoded_share`` and ``report_parent_kept`` when given)."""
    cfg = make_config(kind, parent_contestant="p0", snapshot_hash="x" * 64, max_steps=steps)
    end = utcnow()
    with db.session() as s:
        job = Job(kind=kind, config=cfg.to_dict(), status="succeeded", started_at=end - timedelta(seconds=seconds),
                  ended_at=end, parent_contestant_id=parent)  # fmt: skip
        s.add(job)
        s.flush()
        if report is not None:
            s.add(JobMetric(job_id=job.id, step=steps, name="drift_seconds", value=report))
        for name, value in report_metrics.items():
            s.add(JobMetric(job_id=job.id, step=steps, name=name, value=value))
        return job.id


def test_a_fresh_studio_gets_the_formula_with_its_report_and_a_stated_uncertainty(db):
    _parent(db)
    est = estimate_job(db, "dpo", "p0", max_steps=1)
    assert est.report_seconds > 0 and est.report_prompts == 80
    assert abs(est.total_seconds - (est.train_seconds + est.report_seconds)) < 1e-6
    text = est.summary()
    assert "checkpoint report on 80 prompts" in text and "uncalibrated: could be x10" in text
    assert "no past jobs" in text
    skipped = estimate_job(db, "dpo", "p0", max_steps=1, drift_prompts=0)
    assert skipped.report_seconds == 0 and "no checkpoint report" in skipped.summary()


def test_the_issue_one_step_job_is_estimated_from_what_such_jobs_took(db):
    _parent(db)
    cfg = make_config("dpo", parent_contestant="p0", max_steps=1)
    train, report = formula_seconds(cfg, BASE)
    before = estimate(cfg, BASE).total_seconds
    for _ in range(4):  # each took 155 s to train and the report 600 s more: far from the formula
        _ran(db, 155 + 600, 600)
    est = estimate_job(db, "dpo", "p0", max_steps=1)
    assert abs(est.train_seconds - 155) < 1 and abs(est.report_seconds - 600) < 1, est
    assert "calibrated on 4 past jobs" in est.basis
    assert est.error is not None and est.error.n == 4
    # the first was estimated by the formula alone; the three after it from the ones before them: exact
    assert est.error.median < 1.01 and est.error.worst > 1.5
    ratio = 755 / (train + report)
    assert abs(est.error.worst - max(ratio, 1 / ratio)) < 0.01
    assert abs(est.total_seconds - 755) < 1 and abs(before - 755) > 100  # the formula alone was far off
    assert "last 4 jobs: median error x1.0" in est.summary()


def test_calibration_reads_jobs_like_this_one_first():
    t = [Timing(1, "dpo", BASE, True, 10, 10, 40, 20), Timing(2, "grpo", BASE, True, 10, 10, 400, 200),
         Timing(3, "dpo", "other", True, 10, 10, 80, 40)]  # fmt: skip
    assert calibrate(t, "dpo", BASE, True) == (2.0, 2.0, 1)  # same kind and base: only job 1
    assert calibrate(t, "dpo", "third", True) == (3.0, 3.0, 2)  # no such base: every dpo job
    assert calibrate(t, "reward", BASE, True) == (11.0, 11.0, 2)  # a new kind: every job on this base
    assert calibrate(t, "reward", "third", True) is None  # a new kind on a new base: nothing to go by
    # a job that recorded no report time: its whole run calibrates both parts
    assert calibrate([Timing(1, "dpo", BASE, True, 10, 10, 60, None)], "dpo", BASE, True) == (6.0, 6.0, 1)


def test_past_error_uses_only_the_jobs_before_each():
    t = [Timing(i, "dpo", BASE, True, 10, 0, 20 * (i + 1), None) for i in range(12)]
    err = past_error(t)
    assert err is not None and err.n == 10 and [r["job"] for r in err.jobs] == list(range(2, 12))
    assert all(r["error"] >= 1 for r in err.jobs)
    assert past_error([]) is None


def test_the_form_and_the_dry_run_show_the_error_on_past_jobs(db):
    _parent(db)
    for took in (100, 120, 140):
        _ran(db, took, None)
    assert len(past_timings_of(db)) == 3
    check = check_config(db, {"kind": "dpo", "parent_contestant": "p0", "max_steps": 1, "snapshot_hash": ""})
    if check.estimate is not None:  # the check needs a snapshot; the estimate comes with it when there is one
        assert "last 3 jobs: median error" in check.estimate.summary()
    est = estimate_job(db, "dpo", "p0", max_steps=1)
    assert "last 3 jobs: median error" in est.summary()


def past_timings_of(db):
    with db.session() as s:
        return past_timings(s)


def test_a_reward_model_has_no_report_and_a_first_one_calibrates_on_the_jobs_of_its_base(db):
    """A reward job publishes no contestant, so no report follows it: none is estimated (the estimate once added
    a 36 s report to an 8 s reward job, x11.7 off); the first one borrows the calibration of the base's DPO jobs."""
    _parent(db)
    assert estimate_job(db, "reward", "p0", max_steps=4, drift_prompts=20).report_seconds == 0
    fresh = estimate_job(db, "reward", "p0", max_steps=4)
    assert "uncalibrated" in fresh.summary()
    dpo = make_config("dpo", parent_contestant="p0", max_steps=1)
    train, report = formula_seconds(dpo, BASE)
    for _ in range(3):  # DPO jobs that ran in a quarter of the formula's time, report included
        _ran(db, (train + report) / 4, report / 4)
    est = estimate_job(db, "reward", "p0", max_steps=4)
    assert "on this base (none of this kind yet)" in est.basis and est.report_seconds == 0
    assert abs(est.total_seconds - fresh.total_seconds / 4) < 1, (est.total_seconds, fresh.total_seconds)


def test_a_report_against_a_parent_whose_answers_were_kept_is_estimated_at_half_the_decoding(db):
    """The first child of a llama.cpp parent decodes both sides and keeps the parent's answers; the next child's
    report with the same settings decodes only its own half. Calibration counts only what each report decoded, so
    a fast second report does not make the estimate for a first child of another parent too short."""
    _parent(db)
    with db.session() as s:
        register(s, ContestantSpec("q0"))
    cfg = make_config("dpo", parent_contestant="p0", max_steps=1)
    formula = formula_seconds(cfg, BASE)[1]
    full, half = 600.0, 600.0 * at_share(formula, 0.5) / formula  # one speed per decoded answer
    _ran(db, 100 + full, full, report_decoded_share=1.0, report_parent_kept=1.0)
    _ran(db, 100 + half, half, report_decoded_share=0.5, report_parent_kept=1.0)
    same = estimate_job(db, "dpo", "p0", max_steps=1)
    assert abs(same.report_seconds - half) < 1, same
    assert same.report_reuses_parent and "the parent's answers kept from an earlier report" in same.summary()
    other = estimate_job(db, "dpo", "q0", max_steps=1)  # no report against q0 kept anything
    assert abs(other.report_seconds - full) < 1 and not other.report_reuses_parent, other
    assert "kept from an earlier report" not in other.summary()
    # other report settings ask the parent other questions: nothing to reuse
    longer = estimate_job(db, "dpo", "p0", max_steps=1, drift_max_tokens=128)
    assert not longer.report_reuses_parent
    # the estimate's own error on the second job knew the first had kept the parent's answers: exact
    assert same.error is not None and same.error.jobs[-1]["error"] < 1.01


def test_expected_share_needs_the_same_parent_settings_and_a_kept_parent():
    t = [Timing(1, "dpo", BASE, True, 10, 100, 200, 100, 1.0, parent=7, report_key="k", parent_kept=True),
         Timing(2, "dpo", BASE, True, 10, 100, 200, 100, 1.0, parent=8, report_key="k", parent_kept=False)]  # fmt: skip
    assert expected_share(t, 7, "k") == 0.5
    assert expected_share(t, 7, "other") == 1.0 and expected_share(t, 8, "k") == 1.0
    assert expected_share(t, None, "k") == 1.0 and expected_share([], 7, "k") == 1.0
    assert at_share(0.0, 0.5) == 0.0 and at_share(100.0, 1.0) == 100.0
