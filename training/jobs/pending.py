"""A pending checkpoint always has a report coming, or it is held with the reason why none is.

A published checkpoint is *pending* (``arena.lifecycle``) until its report records a verdict. The job that
runs that report is the ``report`` job of its newest publish event. Otherwise it is the training job that
published it; its job process runs the report before it ends.

That job may be no longer queued or running: cancelled, failed, or lost with its process. Then no verdict
is coming. ``hold_orphans`` holds the contestant at once. It says which job and why, and how to get a
verdict (rerun the report, or resume the job). Two callers:
- ``runner.finish`` calls it for the job it ends, whichever way it ends: a cancel, a failure, a lost job
  process. So a cancel during a report holds the child in the cancel's own request.
- ``runner.reconcile`` calls it for every pending contestant. That catches a job process killed or crashed
  between publish and verdict, or a report job deleted.
It never releases anything. A later verdict moves the contestant on as any verdict does: a rerun report,
or a resumed job that publishes again.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from vibestudio.arena import lifecycle
from vibestudio.db.models import Contestant
from vibestudio.db.session import Database

ACTIVE_JOB = lifecycle.ACTIVE_JOB


def report_job_status(s: Any, contestant_id: int) -> tuple[int | None, str | None, str | None]:
    """(job id, status, error) of the job that runs this contestant's report (``arena.lifecycle.report_job``)."""
    return lifecycle.report_job(s, contestant_id)


def report_running(s: Any, contestant_id: int) -> bool:
    """True when the job that will record this contestant's verdict is queued or running."""
    return report_job_status(s, contestant_id)[1] in ACTIVE_JOB


def hold_orphans(db: Database, job_id: int | None = None) -> list[dict[str, Any]]:
    """Hold every pending contestant whose report job is not queued or running any more (only those whose
    report ``job_id`` runs, when given), saying why. Returns the changes (``lifecycle.Change`` as dicts)."""
    held = []
    with db.session() as s:
        pending = list(s.scalars(select(Contestant.id).where(Contestant.state == "pending")))
    for cid in pending:
        with db.session() as s:
            jid, status, error = report_job_status(s, cid)
            if status in ACTIVE_JOB or (job_id is not None and jid != job_id):
                continue
            first = (error or "").splitlines()[0] if error else ""
            what = f"job {jid} is {status}" + (f" ({first})" if first else "") if jid and status else ""
            try:
                done = lifecycle.change(
                    s,
                    cid,
                    "held",
                    action="sweep",
                    by="cancel" if status == "cancelled" else "sweep",
                    reason=f"no verdict was recorded and none is coming: {what or 'no job runs its report'}; "
                    "rerun the report (`vibestudio drift NAME --record`) or resume the job",
                    details={"job": jid, "status": status},
                    allowed_from=("pending",),
                )
            except lifecycle.LifecycleError:
                continue  # its verdict arrived meanwhile
            held.append(done.as_dict())
    return held
