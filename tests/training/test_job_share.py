"""One user's share of the job queue (``training.jobs.runner.require_job_share``): a researcher who keeps launching
jobs through the service (as the Train tab's Launch and the CLI do) is refused once they have
``VIBESTUDIO_JOBS_PER_USER`` queued or running, with nothing written; resuming counts too; admins and the
operator are exempt; a finished or cancelled job frees a place."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select, update

from tests.helpers.training import FAST
from vibestudio.accounts import add_user
from vibestudio.db.models import Job
from vibestudio.training.jobs.errors import JobError
from vibestudio.training.jobs.runner import cancel, resume
from vibestudio.training.jobs.service import launch_dpo


def _jobs(db) -> int:
    with db.session() as s:
        return s.scalar(select(func.count()).select_from(Job)) or 0


def test_a_researcher_past_their_share_of_the_queue_is_refused(db, tiny_parent, make_snapshot, monkeypatch):
    monkeypatch.setenv("VIBESTUDIO_JOBS", "workers")  # jobs wait queued: nothing trains
    monkeypatch.setenv("VIBESTUDIO_JOBS_PER_USER", "2")
    rita = add_user(db, "rita", "a long test password", "researcher").id
    rex = add_user(db, "rex", "a long test password", "researcher").id
    root = add_user(db, "root", "a long test password", "admin").id
    snap = make_snapshot(8)
    mine = [launch_dpo(db, "tiny-parent", snap, created_by=rita, **{**FAST, "seed": i}) for i in range(2)]
    before = _jobs(db)
    with pytest.raises(JobError, match="VIBESTUDIO_JOBS_PER_USER"):
        launch_dpo(db, "tiny-parent", snap, created_by=rita, **{**FAST, "seed": 9})
    assert _jobs(db) == before  # nothing written
    # another researcher's share is their own; an admin and the operator are not capped
    launch_dpo(db, "tiny-parent", snap, created_by=rex, **{**FAST, "seed": 10})
    for i in range(3):
        launch_dpo(db, "tiny-parent", snap, created_by=root, **{**FAST, "seed": 20 + i})
    launch_dpo(db, "tiny-parent", snap, **{**FAST, "seed": 30})
    # a cancelled job frees a place; resuming it takes one again
    cancel(db, mine[0], user_id=rita)
    third = launch_dpo(db, "tiny-parent", snap, created_by=rita, **{**FAST, "seed": 9})
    with pytest.raises(JobError, match="VIBESTUDIO_JOBS_PER_USER"):
        resume(db, mine[0], user_id=rita)
    with db.session() as s:
        s.execute(update(Job).where(Job.id == third).values(status="failed"))
    assert resume(db, mine[0], user_id=rita).status == "queued"
    monkeypatch.setenv("VIBESTUDIO_JOBS_PER_USER", "0")  # 0 = no limit
    launch_dpo(db, "tiny-parent", snap, created_by=rita, **{**FAST, "seed": 40})
