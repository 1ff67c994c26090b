"""Owner checks on every read of a job (``training.jobs.runner.job_view``, ``list_jobs``): a job's config, log, curves
and checkpoints are its launcher's. Another researcher reads them only as an admin, or with a reason that goes to
the audit log, as for cancel, resume and publish; the job list shows a researcher their own jobs."""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import select

from vibestudio.accounts import PermissionDenied, add_user
from vibestudio.db.models import Job, JobMetric, User
from vibestudio.training.jobs.runner import job_view, list_jobs

MARK = "JOB-READ-MARKER-5d1"


def _users(db) -> dict[str, int]:
    return {
        n: add_user(db, n, "a long test password", r).id
        for n, r in (("rita", "researcher"), ("rex", "researcher"), ("root", "admin"), ("ann", "annotator"))
    }


def _job(db, tmp_path, owner: int) -> int:
    log = tmp_path / f"job-{owner}.log"
    log.write_text(f"step 1 {MARK}\n")
    with db.session() as s:
        job = Job(
            kind="dpo",
            config={"kind": "dpo", "note": MARK},
            status="failed",
            created_by=owner,
            log_path=str(log),
        )
        s.add(job)
        s.flush()
        s.add(JobMetric(job_id=job.id, step=1, name="reward", value=0.5))
        return job.id


def test_another_researcher_reads_a_job_only_as_admin_or_with_a_recorded_reason(db, tmp_path, caplog):
    ids = _users(db)
    jid = _job(db, tmp_path, ids["rita"])
    mine = job_view(db, jid, user_id=ids["rita"])
    assert MARK in mine.log_tail and mine.config["note"] == MARK and mine.metrics["reward"]
    with pytest.raises(PermissionDenied, match="launched by another user: to read it you need admin"):
        job_view(db, jid, user_id=ids["rex"])
    with pytest.raises(PermissionDenied, match="needs researcher"):
        job_view(db, jid, user_id=ids["ann"])
    assert MARK in job_view(db, jid, user_id=ids["root"]).log_tail  # admin
    with caplog.at_level(logging.WARNING, logger="vibestudio.audit"):
        v = job_view(db, jid, user_id=ids["rex"], reason="reviewing the failed run for rita")
    assert MARK in v.log_tail
    assert any(
        "read job" in r.getMessage() and "reviewing the failed run" in r.getMessage() for r in caplog.records
    )
    assert MARK in job_view(db, jid).log_tail  # the local operator (CLI, Python API)


def test_the_job_list_shows_a_researcher_their_own_jobs(db, tmp_path):
    ids = _users(db)
    rita_job, rex_job = _job(db, tmp_path, ids["rita"]), _job(db, tmp_path, ids["rex"])
    assert [j.id for j in list_jobs(db, user_id=ids["rex"])] == [rex_job]
    assert [j.id for j in list_jobs(db, user_id=ids["rita"])] == [rita_job]
    assert {j.id for j in list_jobs(db, user_id=ids["root"])} == {rita_job, rex_job}
    assert {j.id for j in list_jobs(db)} == {rita_job, rex_job}
    with db.session() as s:
        assert s.scalar(select(User.id).where(User.name == "ann")) == ids["ann"]
    with pytest.raises(PermissionDenied):
        list_jobs(db, user_id=ids["ann"])
