"""Job runner: validate, queue and launch training jobs as detached job processes; cancel and re-attach.

State lives only in the database (``jobs``, ``job_metrics``) and the job folder ``<data_home>/jobs/<id>/``
(config.yaml, train.log, output/). So any process can look at a job: the app after a restart, the CLI, a
test.

Who runs a queued job is a setting (``VIBESTUDIO_JOBS``):
- ``local``, the default, so ``make demo`` is one command. One job runs at a time on this host.
  ``start_next`` claims the oldest queued job with a single conditional UPDATE. That is atomic on SQLite,
  and serialised by an advisory lock on PostgreSQL. So two launchers never start two job processes. A job
  process starts the next queued job when it exits.
- ``workers``: nothing starts here; ``vibestudio worker`` processes claim jobs
  (``training.jobs.workers``).
- ``ray``: every queued job is handed to a Ray cluster, which places it (``training.jobs.ray_jobs``).

Either way, a running job records its host and heartbeats on the database's clock
(``training.jobs.heartbeat``). ``reconcile`` fails a job whose heartbeat went stale: its host is lost. On
the host that started it, it also fails a job whose process is gone. It adds the tail of its log.

Cancel works through the database. The row turns ``cancelled``. The training process, wherever it runs,
stops at its next heartbeat, or at once on this host.

The runner knows nothing about TRL; ``training.jobs.job_process`` does the training.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import delete, exists, func, select, text, update
from sqlalchemy.orm import Session, aliased

import vibestudio
from vibestudio.accounts import PermissionDenied, require_role
from vibestudio.common.processes import process_alive
from vibestudio.common.settings import get_settings
from vibestudio.common.threads import sleeping_thread_waits
from vibestudio.db.models import Checkpoint, Contestant, Job, JobMetric, User, utcnow
from vibestudio.db.session import Database, data_home
from vibestudio.training.jobs import ray_jobs
from vibestudio.training.jobs.config import JobConfig, load_config, resolve_files
from vibestudio.training.jobs.errors import JobError
from vibestudio.training.jobs.heartbeat import stale_jobs, this_host, waiting_reasons
from vibestudio.training.jobs.launcher import write_launch_config
from vibestudio.training.jobs.pending import hold_orphans
from vibestudio.training.jobs.preflight import Checked, preflight

TERMINAL = ("succeeded", "failed", "cancelled")
STATUSES = ("queued", "running", *TERMINAL)
#: The folder that holds the ``vibestudio`` package (the checkout, or site-packages), for a job process's PYTHONPATH.
_PROJECT_ROOT = Path(vibestudio.__file__).parent.parent
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}  # job processes this process started (to reap them)
_START_TIMEOUT = timedelta(seconds=120)
audit = logging.getLogger("vibestudio.audit")  # who acted on another user's job, and why


@dataclass
class JobSummary:
    id: int
    kind: str
    status: str
    progress: float | None
    parent_contestant_id: int | None
    snapshot_id: int | None
    contestant_id: int | None
    # set when contestant_id plays a checkpoint saved on the way (its step), not the job's final one
    contestant_step: int | None
    created_at: datetime | None
    started_at: datetime | None
    ended_at: datetime | None
    error: str | None
    # the lifecycle state of contestant_id (arena.lifecycle): pending while its report runs, then released/held
    contestant_state: str | None = None
    # the worker identity that runs (or ran) it, and its last heartbeat (database clock, UTC)
    host: str | None = None
    heartbeat_at: datetime | None = None
    # a queued job no live worker can take: "waiting for a worker that serves grpo" (VIBESTUDIO_JOBS=workers)
    waiting: str | None = None


@dataclass
class JobView(JobSummary):
    config: dict[str, Any] = field(default_factory=dict)
    pid: int | None = None
    log_path: str | None = None
    output_dir: str | None = None
    log_tail: str = ""
    metrics: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    queue_position: int | None = None

    @property
    def done(self) -> bool:
        return self.status in TERMINAL

    def last(self, name: str) -> float | None:
        series = self.metrics.get(name)
        return series[-1][1] if series else None


def job_dir(job_id: int) -> Path:
    return data_home() / "jobs" / str(job_id)


def log_tail(path: str | Path | None, lines: int = 40, max_chars: int = 4000) -> str:
    """The last lines of a log (carriage-return progress bars collapsed)."""
    if not path or not Path(path).exists():
        return ""
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - 64_000))
        data = fh.read().decode("utf-8", errors="replace")
    out = [ln.rsplit("\r", 1)[-1] for ln in data.split("\n")]
    return "\n".join([ln for ln in out if ln.strip()][-lines:])[-max_chars:]


# ---- submit --------------------------------------------------------------------------------------------------
def require_job_share(s: Session, user_id: int | None) -> None:
    """One user's share of the job queue: a signed-in user below admin may have ``VIBESTUDIO_JOBS_PER_USER`` jobs
    queued or running at once (0 = no limit); one more is refused (JobError). The operator (``None``) and admins
    are exempt."""
    limit = get_settings().jobs_per_user
    if user_id is None or limit <= 0:
        return
    if s.scalar(select(User.role).where(User.id == user_id)) == "admin":
        return
    mine = s.scalar(
        select(func.count())
        .select_from(Job)
        .where(Job.created_by == user_id, Job.status.in_(("queued", "running")))
    )
    if (mine or 0) >= limit:
        raise JobError(
            f"you already have {mine} jobs queued or running, the most one user may have "
            "(VIBESTUDIO_JOBS_PER_USER); wait for one to finish or cancel one"
        )


def submit(
    db: Database,
    kind: str,
    config: JobConfig,
    created_by: int | None = None,
    start: bool = True,
    validated: bool = False,
    checked: Checked | None = None,
) -> int:
    """Validate ``config`` (unless the caller just did: ``validated``), record a queued job, save its config
    file and start it when nothing else runs. ``checked``: what the caller's pre-launch check resolved
    (``training.jobs.service.launch_checked``); without it the check runs here (``preflight``).

    Everything that can be checked before launch is (config ranges, parent contestant, snapshot exists and its
    file matches its hash, enough pairs, no empty answers, free output name); on any failure JobError is raised
    and nothing is written.
    """
    if config.kind != kind:
        raise JobError(f"job kind {kind!r} does not match a {config.kind!r} config")
    try:
        if not validated:
            config.validate()
        resolve_files(config)  # the files it names, as the resolved paths that were checked
    except ValueError as exc:
        raise JobError(str(exc)) from exc
    if get_settings().jobs == "ray":  # the cluster answers and has a node for it (training.jobs.ray_jobs)
        ray_jobs.check_cluster(config)
    with db.session() as s:
        require_job_share(s, created_by)
        if checked is None:
            checked = preflight(s, config)
        config.snapshot_hash = checked.snapshot_hash
        same = config.to_dict()
        for other_id, other_config in s.execute(
            select(Job.id, Job.config).where(Job.kind == kind, Job.status.in_(("queued", "running")))
        ):
            if other_config == same:
                raise JobError(
                    f"job {other_id} with exactly this config is already queued or running (launched twice?)"
                )
        job_id = queue(s, same, checked.snapshot_id, checked.parent_id, created_by)
    if start:
        start_next(db)
    return job_id


def queue(
    s: Session,
    settings: dict[str, Any],
    snapshot_id: int | None,
    parent_id: int | None,
    created_by: int | None,
) -> int:
    """Record a queued job in the caller's transaction, with its config file (``settings``, whose ``kind`` is
    the job's) in its folder; a worker or ``start_next`` starts it. The one way a job row is made: ``submit``
    for a training job, the publish path for a checkpoint's ``report`` job. Returns the job id."""
    kind = str(settings["kind"])
    job = Job(
        kind=kind,
        config=settings,
        status="queued",
        created_by=created_by,
        snapshot_id=snapshot_id,
        parent_contestant_id=parent_id,
    )
    s.add(job)
    s.flush()
    folder = job_dir(job.id)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(settings, sort_keys=False), encoding="utf-8")
    job.config_path, job.log_path = str(path), str(folder / "train.log")
    if kind != "report":  # a report writes beside its contestant, not in an output folder
        job.output_dir = str(folder / "output")
    return job.id


# ---- launching -----------------------------------------------------------------------------------------------
def start_next(db: Database) -> int | None:
    """Start the oldest queued job if no job is running; return its id (None when nothing was started).
    With ``VIBESTUDIO_JOBS=workers`` nothing starts here: the job waits for a ``vibestudio worker``."""
    reap()
    if get_settings().jobs == "workers":
        return None
    if get_settings().jobs == "ray":  # Ray places every queued job (training.jobs.ray_jobs); none starts here
        submitted, refused = ray_jobs.submit_queued(db, job_command)
        for r in refused:
            finish(db, r.job_id, r.status, r.reason, only_if=r.was)
        return submitted[0] if submitted else None
    while True:
        job_id = _claim_next(db)
        if job_id is None:
            return None
        try:
            _spawn(db, job_id)
            return job_id
        except Exception as exc:  # could not even start the process: fail it and try the next one
            finish(db, job_id, "failed", f"could not start the job process: {exc}", only_if="running")


def _claim_next(db: Database) -> int | None:
    with db.session() as s:
        if not db.is_sqlite:
            s.execute(text("SELECT pg_advisory_xact_lock(734601)"))
        nxt = s.scalar(select(Job.id).where(Job.status == "queued").order_by(Job.id).limit(1))
        if nxt is None:
            return None
        other = aliased(Job)
        busy = exists(select(other.id).where(other.status == "running"))
        result = s.execute(
            update(Job)
            .where(Job.id == nxt, Job.status == "queued", ~busy)
            .values(status="running", started_at=utcnow(), pid=None, host=this_host(), heartbeat_at=None)
        )
        return nxt if _rowcount(result) == 1 else None


def _spawn(db: Database, job_id: int) -> int:
    with db.session() as s:
        config_path = s.scalar(select(Job.config_path).where(Job.id == job_id))
    assert config_path
    return spawn(db, job_id, config_path).pid


def spawn(
    db: Database,
    job_id: int,
    config_path: str,
    home: Path | None = None,
    gpus: str | None = None,
    worker_pid: int | None = None,
) -> subprocess.Popen[bytes]:
    """Start the training process of a claimed job (its own process group, output to the job's log) and record
    its pid. ``home``: the data home it runs with (default this process's); ``gpus``: its CUDA_VISIBLE_DEVICES;
    ``worker_pid``: the ``vibestudio worker`` that owns it (the process stops when that one is gone)."""
    with db.session() as s:
        log_path = s.scalar(select(Job.log_path).where(Job.id == job_id))
    assert log_path
    sleeping_thread_waits()  # the job process inherits it (and so does every process accelerate starts)
    env = dict(os.environ)
    env["VIBESTUDIO_DATABASE_URL"] = db.url
    env["VIBESTUDIO_HOME"] = str(Path(home or data_home()).absolute())  # the job runs in its own folder
    if gpus is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpus
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    # one host: a process group meets on loopback, never at an address inherited from the server's environment
    for name in ("MASTER_ADDR", "MASTER_PORT", "PET_RDZV_ENDPOINT", "PET_MASTER_ADDR", "PET_MASTER_PORT"):
        env.pop(name, None)
    env["MASTER_ADDR"] = "127.0.0.1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_PROJECT_ROOT), env.get("PYTHONPATH")) if p)
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        argv = job_command(config_path, job_id)
        if worker_pid is not None:
            argv += ["--worker-pid", str(worker_pid)]
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(Path(config_path).parent),
            start_new_session=True,
            close_fds=True,
        )
    _CHILDREN[proc.pid] = proc
    with db.session() as s:
        s.execute(update(Job).where(Job.id == job_id, Job.pid.is_(None)).values(pid=proc.pid))
    return proc


def job_command(config_path: str, job_id: int) -> list[str]:
    """The argv that runs a job: the job process module, directly or under ``accelerate launch`` (never a shell)."""
    process = ["-m", "vibestudio.training.jobs.job_process", config_path, "--job", str(job_id)]
    if _is_report(config_path):  # a checkpoint report (training.report.job): one process, no launcher
        return [sys.executable, *process]
    cfg = load_config(config_path)
    if cfg.launcher != "accelerate":
        return [sys.executable, *process]
    # accelerate launch with the rendezvous and the workers' store bound to 127.0.0.1 (training.jobs.loopback_launch)
    launch = [
        sys.executable,
        "-m",
        "vibestudio.training.jobs.loopback_launch",
        "--num_processes",
        str(cfg.num_processes),
    ]
    if cfg.accelerate_config:  # the studio's own file, from the allowed keys of the one the config names
        written = write_launch_config(cfg.accelerate_config, cfg.num_processes, Path(config_path).parent)
        launch += ["--config_file", str(written)]
    if cfg.use_cpu and cfg.num_processes > 1:
        # `--cpu` makes accelerate start one process whatever --num_processes says (several CPU processes need
        # MPI there); torchrun's launcher starts them all, and the job's use_cpu keeps each on the CPU (gloo).
        launch.append("--multi_gpu")
    elif cfg.use_cpu:
        launch.append("--cpu")
    return [*launch, *process]


def _is_report(config_path: str) -> bool:
    from vibestudio.common.files import read_yaml

    data, _ = read_yaml(Path(config_path))
    return isinstance(data, dict) and data.get("kind") == "report"


def finish(db: Database, job_id: int, status: str, error: str | None, only_if: str | None = None) -> bool:
    """Move a job to a terminal status (conditionally on its current status); True when it changed. A pending
    checkpoint whose report this job ran, and got no verdict from it, is held at once with the reason
    (``training.jobs.pending.hold_orphans``): every way a job ends (cancel, failure, a lost job process) leaves none
    pending with no report to come."""
    with db.session() as s:
        q = update(Job).where(Job.id == job_id)
        if only_if:
            q = q.where(Job.status == only_if)
        changed = _rowcount(s.execute(q.values(status=status, error=error, ended_at=utcnow()))) == 1
    if changed and status in TERMINAL:
        hold_orphans(db, job_id)
    return changed


def _rowcount(result: Any) -> int:
    return int(result.rowcount)


# ---- process liveness ----------------------------------------------------------------------------------------
def reap() -> None:
    """Collect job processes this process started that have exited (no zombies pile up in a long-running app)."""
    for pid, proc in list(_CHILDREN.items()):
        if proc.poll() is not None:
            _CHILDREN.pop(pid, None)


def pid_alive(pid: int | None) -> bool:
    """True when ``pid`` is a live job process here (``common.processes``); reaps our own finished children.
    A pid whose command line is not a job's (``job_command``: the job process or its launcher) was reused."""
    proc = _CHILDREN.get(pid) if pid else None
    if proc is not None and proc.poll() is not None:
        _CHILDREN.pop(proc.pid, None)
        return False
    return process_alive(pid, command="vibestudio.training.jobs.")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return pid_alive(pgid) or _group_has_live_members(pgid)


def _group_has_live_members(pgid: int) -> bool:
    proc = Path("/proc")
    if not proc.exists():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False


# ---- reconcile / cancel / wait -------------------------------------------------------------------------------
def _is_here(host: str | None) -> bool:
    """A job started by this very process's runner: its pid is in this process space. Exactly this process's
    identity (host name and random token, ``heartbeat.this_host``); a bare host name (a row from before the
    token, or another container with this host name) is not enough, and a job without a host is judged by its
    heartbeat too."""
    return host is not None and host == this_host()


def fail_lost(db: Database) -> list[int]:
    """Fail the running jobs that are lost: a stale heartbeat on any host (database clock, grace period), or,
    for a job this host's runner started, a process that is gone. Returns the ids failed. A Ray job's row that
    its process failed first gets Ray's reason (which node was lost) before its error (``ray_jobs.Amend``)."""
    failed = [x.job_id for x in stale_jobs(db) if finish(db, x.job_id, "failed", x.reason, only_if="running")]
    for r in ray_jobs.ended(db):  # a Ray job that ended without its row (lost node): Ray's reason, log tail
        if isinstance(r, ray_jobs.Amend):  # its process failed it first (a lost peer): Ray's reason, once
            with db.session() as s:
                s.execute(
                    update(Job)
                    .where(Job.id == r.job_id, Job.status == "failed", func.coalesce(Job.error, "") == r.was)
                    .values(error=r.error)
                )
            continue
        tail = log_tail(r.log_path)
        reason = r.reason + ("\n--- log tail ---\n" + tail if tail else "")
        if finish(db, r.job_id, r.status, reason, only_if=r.was):
            failed.append(r.job_id)
    with db.session() as s:
        running = s.execute(
            select(Job.id, Job.pid, Job.started_at, Job.log_path, Job.host, Job.heartbeat_at).where(
                Job.status == "running"
            )
        ).all()
    for job_id, pid, started_at, log_path, host, heartbeat_at in running:
        if not _is_here(host):
            # another process's pid means nothing here, even under this host name: its heartbeat decides; one
            # that never beat is lost once its launcher has had the start time-out
            if heartbeat_at is None and started_at is not None and utcnow() - started_at > _START_TIMEOUT:
                reason = "its training process never sent a heartbeat (the process that started it is gone)"
                if finish(db, job_id, "failed", reason, only_if="running"):
                    failed.append(job_id)
            continue
        if pid is None:
            if heartbeat_at is not None or (
                started_at is not None and utcnow() - started_at < _START_TIMEOUT
            ):
                continue  # a launcher is starting it right now
            reason = "the job process was never started (the launcher died)"
        elif pid_alive(pid):
            continue
        else:
            reason = (
                f"the job process (pid {pid}) died without reporting a result (killed by the OS or a signal?)"
            )
        tail = log_tail(log_path)
        if finish(
            db, job_id, "failed", reason + ("\n--- log tail ---\n" + tail if tail else ""), only_if="running"
        ):
            failed.append(job_id)
    return failed


def reconcile(db: Database, start: bool = True) -> list[int]:
    """Fail running jobs that are lost (``fail_lost``: stale heartbeat, or a local process gone, with their
    log tail), hold the pending checkpoints whose report is gone with them
    (``training.jobs.pending.hold_orphans``), and start the next queued job.

    Call at app start and whenever a page wants fresh state. Returns the ids marked failed.
    """
    failed = fail_lost(db)
    hold_orphans(db)  # a checkpoint whose report died with its job process is held (with why), never released
    if start:
        start_next(db)
    return failed


MAX_REASON = 500


def require_job_owner(
    db: Database, job_id: int, user_id: int | None, action: str, reason: str | None = None
) -> str:
    """Allow ``action`` (cancel, resume, publish) on a job: its owner (the researcher who launched it), an admin,
    or another researcher who gives a ``reason``, which goes to the audit log. Returns who acted, for the record.

    ``user_id=None`` is the local operator (CLI, Python API, open mode) and passes. Refuses with
    ``PermissionDenied`` (below researcher, or another's job without a reason) or ``JobError`` (no such job).
    """
    me = require_role(db, user_id, "researcher")
    if me is None:
        return "the local operator"
    with db.session() as s:
        job = s.get(Job, job_id)
        if job is None:
            raise JobError(f"no job {job_id}")
        owner = job.created_by
    if owner == me.id or me.role == "admin":
        return me.name
    why = " ".join((reason or "").split())[:MAX_REASON]
    if not why:
        raise PermissionDenied(
            f"job {job_id} was launched by another user: to {action} it you need admin, or give a reason "
            "(it is recorded)"
        )
    audit.warning("user %r %s job %d launched by user id %s: %s", me.name, action, job_id, owner, why)
    return f"{me.name} ({why})"


def cancel(
    db: Database, job_id: int, grace: float = 10.0, user_id: int | None = None, reason: str | None = None
) -> JobView:
    """Cancel a queued or running job through the database: its row turns ``cancelled`` and its training
    process, on whatever host, stops at its next heartbeat (``VIBESTUDIO_HEARTBEAT_S``); on the host that started
    it, SIGTERM to its process group at once, SIGKILL after ``grace`` seconds. Another user's job needs admin
    or a reason (``require_job_owner``). A checkpoint whose report it was running is held at once, with the
    reason (``finish``)."""
    who = require_job_owner(db, job_id, user_id, "cancel", reason)
    with db.session() as s:
        job = s.get(Job, job_id)
        if job is None:
            raise JobError(f"no job {job_id}")
        status, pid, host = job.status, job.pid, job.host
    if status in TERMINAL:
        raise JobError(f"job {job_id} already {status}")
    if not finish(db, job_id, "cancelled", f"cancelled by {who}", only_if=status):
        return cancel(db, job_id, grace)  # it moved on (queued -> running) while we looked: try again
    ray_jobs.stop(host)  # a job Ray holds or runs is stopped there too (training.jobs.ray_jobs)
    if status == "running" and pid and _is_here(host):
        _terminate_group(pid, grace)
        start_next(db)
    return job_view(db, job_id)


def saved_checkpoints(job_id: int, folder: Path | None = None) -> list[tuple[int, Path]]:
    """The job's complete ``checkpoints/checkpoint-<step>`` folders (oldest first): what resume continues from
    and what can be published before the job ends. ``folder``: the job folder when a worker with another data
    home ran it (the folder of its recorded config)."""
    found = []
    for p in ((folder or job_dir(job_id)) / "checkpoints").glob("checkpoint-*"):
        step = p.name.rsplit("-", 1)[-1]
        if step.isdigit() and (p / "trainer_state.json").exists():
            found.append((int(step), p))
    return sorted(found)


def resume(
    db: Database,
    job_id: int,
    user_id: int | None = None,
    from_scratch: bool = False,
    reason: str | None = None,
) -> JobView:
    """Queue a failed or cancelled job again; its job process continues from the newest saved checkpoint. Another
    user's job needs admin or a reason (``require_job_owner``).

    Refused (JobError) when the job saved checkpoints but none is left on disk (deleted): ``from_scratch=True``
    then starts it over, dropping the earlier attempt's metrics. A job that never saved one starts over.
    """
    require_job_owner(db, job_id, user_id, "resume", reason)
    with db.session() as s:
        job = s.get(Job, job_id)
        if job is None:
            raise JobError(f"no job {job_id}")
        if job.status not in ("failed", "cancelled"):
            raise JobError(f"job {job_id} is {job.status}; only failed or cancelled jobs can be resumed")
        require_job_share(s, user_id)
        if job.config_path and not Path(job.config_path).exists():
            raise JobError(f"job {job_id}: its config file {job.config_path} is gone; clone the job instead")
        save_steps = int((job.config or {}).get("save_steps") or 0)
        reached = s.scalar(
            select(func.max(JobMetric.step)).where(JobMetric.job_id == job_id, JobMetric.name == "progress")
        )
        folder = Path(job.config_path).parent if job.config_path else job_dir(job_id)
        checkpoints = saved_checkpoints(job_id, folder)
        if from_scratch or not checkpoints:
            if not from_scratch and save_steps and reached and reached >= save_steps:
                raise JobError(
                    f"job {job_id} reached step {reached} saving every {save_steps} steps, but no checkpoint is "
                    f"left in {folder / 'checkpoints'} (deleted?); resume from scratch to start over"
                )
            s.execute(delete(JobMetric).where(JobMetric.job_id == job_id))
            shutil.rmtree(folder / "checkpoints", ignore_errors=True)
        changed = s.execute(
            update(Job)
            .where(Job.id == job_id, Job.status == job.status)
            .values(
                status="queued",
                error=None,
                ended_at=None,
                pid=None,
                started_at=None,
                host=None,
                heartbeat_at=None,
            )
        )
        if _rowcount(changed) != 1:
            raise JobError(f"job {job_id} changed while resuming; try again")
    start_next(db)
    return job_view(db, job_id)


def terminate_group(pgid: int, grace: float) -> None:
    """SIGTERM the process group ``pgid``, SIGKILL after ``grace`` seconds; wait for our own child."""
    _terminate_group(pgid, grace)


def _terminate_group(pgid: int, grace: float) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + (grace if sig == signal.SIGTERM else 10.0)
        while time.monotonic() < deadline and _group_alive(pgid):
            time.sleep(0.1)
        if not _group_alive(pgid):
            break
    proc = _CHILDREN.pop(pgid, None)
    if proc is not None:
        proc.wait(timeout=10)


def wait(db: Database, job_id: int, timeout: float = 600.0, poll: float = 0.5) -> JobView:
    """Block until the job ends (reconciling a dead job process); TimeoutError after ``timeout`` seconds.

    Polls only the job's status and pid (one small query), so a tight poll does not compete with training.
    """
    deadline = time.monotonic() + timeout
    while True:
        with db.session() as s:
            row = s.execute(select(Job.status, Job.pid, Job.host).where(Job.id == job_id)).first()
        if row is None:
            raise JobError(f"no job {job_id}")
        status, pid, host = row
        if status in TERMINAL:
            return job_view(db, job_id)
        if status == "running" and pid and _is_here(host) and not pid_alive(pid):
            time.sleep(poll)  # give the job process's last write a moment, then reconcile
            reconcile(db)
            continue
        if (status == "running" or ray_jobs.submission_of(host)) and fail_lost(db):
            continue
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id} still {status} after {timeout:.0f} s")
        time.sleep(poll)


# ---- views ---------------------------------------------------------------------------------------------------
def _progress(s: Session, job_id: int) -> float | None:
    return s.scalar(
        select(JobMetric.value)
        .where(JobMetric.job_id == job_id, JobMetric.name == "progress")
        .order_by(JobMetric.step.desc(), JobMetric.id.desc())
        .limit(1)
    )


def _result(s: Session, job_id: int) -> tuple[int | None, int | None]:
    """The contestant the job's final checkpoint became (step None), else the newest one published from it with
    the step of the checkpoint saved on the way that it plays (``publish_checkpoint``)."""
    final = s.scalar(
        select(Checkpoint.contestant_id)
        .join(Job, Job.id == Checkpoint.job_id)
        .where(
            Checkpoint.job_id == job_id,
            Checkpoint.path == Job.output_dir,
            Checkpoint.contestant_id.is_not(None),
        )
        .limit(1)
    )
    if final is not None:
        return final, None
    cid = s.scalar(
        select(Contestant.id).where(Contestant.job_id == job_id).order_by(Contestant.id.desc()).limit(1)
    )
    if cid is None:
        cid = s.scalar(
            select(Checkpoint.contestant_id)
            .where(Checkpoint.job_id == job_id, Checkpoint.contestant_id.is_not(None))
            .limit(1)
        )
    step = None
    if cid is not None:
        step = s.scalar(
            select(Checkpoint.step)
            .where(Checkpoint.job_id == job_id, Checkpoint.contestant_id == cid)
            .limit(1)
        )
    return cid, step


def _summary_fields(s: Session, job: Job, waiting: dict[str, str] | None = None) -> dict[str, Any]:
    contestant_id, contestant_step = _result(s, job.id)
    if job.kind == "report" and (job.config or {}).get("contestant_id") is not None:
        contestant_id, contestant_step = int(job.config["contestant_id"]), job.config.get("step")
    state = (
        s.scalar(select(Contestant.state).where(Contestant.id == contestant_id)) if contestant_id else None
    )
    return dict(
        id=job.id,
        kind=job.kind,
        status=job.status,
        progress=_progress(s, job.id),
        parent_contestant_id=job.parent_contestant_id,
        snapshot_id=job.snapshot_id,
        contestant_id=contestant_id,
        contestant_step=contestant_step,
        created_at=job.created_at,
        started_at=job.started_at,
        ended_at=job.ended_at,
        error=job.error,
        contestant_state=state,
        host=job.host,
        heartbeat_at=job.heartbeat_at,
        waiting=(waiting or {}).get(job.kind) if job.status == "queued" else None,
    )


def job_view(
    db: Database, job_id: int, tail_lines: int = 40, user_id: int | None = None, reason: str | None = None
) -> JobView:
    """Everything a job page shows: status, error, metric series {name: [(step, value)]}, log tail, result.
    Needs researcher, and the job's owner: its config, log, curves and checkpoints are its launcher's (paths,
    data, errors). An admin, or another researcher who gives a ``reason`` (audited), may read it too
    (``require_job_owner``, as for actions)."""
    require_job_owner(db, job_id, user_id, "read", reason)
    reap()
    with db.session() as s:
        job = s.get(Job, job_id)
        if job is None:
            raise JobError(f"no job {job_id}")
        metrics: dict[str, list[tuple[int, float]]] = {}
        rows = s.execute(
            select(JobMetric.name, JobMetric.step, JobMetric.value)
            .where(JobMetric.job_id == job_id)
            .order_by(JobMetric.step, JobMetric.id)
        )
        for name, step, value in rows:
            metrics.setdefault(name, []).append((step, value))
        position = None
        if job.status == "queued":
            position = (
                s.scalar(select(func.count(Job.id)).where(Job.status == "queued", Job.id < job.id)) or 0
            )
        waiting = waiting_reasons(db, {job.kind}) if job.status == "queued" else {}
        return JobView(
            **_summary_fields(s, job, waiting),
            config=dict(job.config or {}),
            pid=job.pid,
            log_path=job.log_path,
            output_dir=job.output_dir,
            log_tail=log_tail(job.log_path, tail_lines),
            metrics=metrics,
            queue_position=position,
        )


def list_jobs(db: Database, limit: int = 100, user_id: int | None = None) -> list[JobSummary]:
    """Newest first: id, kind, status, progress, lineage ids and times. Needs researcher (errors hold log text),
    and lists a researcher's own jobs only (an admin and the local operator see every job)."""
    me = require_role(db, user_id, "researcher")
    with db.session() as s:
        q = select(Job).order_by(Job.id.desc()).limit(limit)
        if me is not None and me.role != "admin":
            q = q.where(Job.created_by == me.id)
        jobs = s.scalars(q).all()
        waiting = waiting_reasons(db, {j.kind for j in jobs if j.status == "queued"})
        return [JobSummary(**_summary_fields(s, j, waiting)) for j in jobs]
