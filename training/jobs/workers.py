"""The ``vibestudio worker`` service: claim queued jobs from the database and run each as a training process
here.

A launched job is a queued row. A worker claims the oldest queued job of a kind it serves, in one atomic
step.
- On PostgreSQL: ``SELECT ... FOR UPDATE SKIP LOCKED``. Two workers never wait on, or take, the same row.
- On SQLite: the conditional ``UPDATE ... WHERE id = ? AND status = 'queued'``. Its row count says who
  won.
The claim records the worker's identity (``jobs.host``). It writes a first heartbeat on the database's
clock (``training.jobs.heartbeat``).

Each job then runs as ``python -m vibestudio.training.jobs.job_process``, with this worker's data home. It
may run under ``accelerate launch`` instead, from the same saved config, with ``CUDA_VISIBLE_DEVICES`` set
to ``--gpus``. The job beats for itself. It stops when its row stops being ``running`` (a cancel from any
process). This service also:
- beats for the children it sees alive;
- fails the jobs of children that exit without a result;
- fails every job anywhere whose heartbeat went stale;
- keeps its ``workers`` row fresh, so the app can say when no live worker serves a kind.

**Where the job folder lives**: the worker's own data home (``<home>/jobs/<id>``). That may not be the
folder the app wrote (two data homes). Then the worker writes the config there from the database and
records its paths on the row. So the published checkpoint's path is the worker's, and the app must be able
to read it (docs/deployment.md, "Workers and checkpoints"). A job whose inputs this host cannot see is
failed with a message naming the path.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from sqlalchemy import select, update

from vibestudio.common.settings import get_settings
from vibestudio.db.models import Contestant, DatasetSnapshot, Job, utcnow
from vibestudio.db.session import Database
from vibestudio.training.jobs import runner
from vibestudio.training.jobs.config import JOB_KINDS
from vibestudio.training.jobs.heartbeat import (
    PROCESS_TOKEN,
    beat,
    db_now,
    register_worker,
    stale_jobs,
    touch_worker,
)

#: Job kinds a worker can serve; ``report`` (a checkpoint report queued by a publish) comes with any training kind.
KINDS = (*JOB_KINDS, "report")


def default_name() -> str:
    """This host's name, this process's id and a random token (``training.jobs.heartbeat.PROCESS_TOKEN``): unique per
    worker process even where two containers share a host name and both run as pid 1."""
    return f"{socket.gethostname()}:{os.getpid()}#{PROCESS_TOKEN}"


def parse_kinds(text: str | None) -> list[str]:
    """``dpo,grpo`` -> ["dpo", "grpo", "report"]; empty -> every kind. Unknown kinds raise ValueError."""
    kinds = [k.strip() for k in (text or "").split(",") if k.strip()] or list(KINDS)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown job kind(s) {', '.join(unknown)}; known: {', '.join(KINDS)}")
    if "report" not in kinds:
        kinds.append("report")
    return list(dict.fromkeys(kinds))


def parse_gpus(text: str | None) -> str | None:
    """``0,1`` -> "0,1" (for CUDA_VISIBLE_DEVICES); each entry must be a device index."""
    if not text:
        return None
    gpus = [g.strip() for g in text.split(",") if g.strip()]
    bad = [g for g in gpus if not g.isdigit()]
    if bad or not gpus:
        raise ValueError(f"--gpus takes comma-separated device indices such as 0,1; not {text!r}")
    return ",".join(gpus)


def claim(db: Database, host: str, kinds: list[str]) -> int | None:
    """Claim the oldest queued job of one of ``kinds`` for ``host``; its id, or None when there is none.

    Exactly one caller wins a job however many race (row lock that skips locked rows on PostgreSQL; the
    conditional UPDATE's row count on SQLite, where a lost race moves on to the next job)."""
    for _ in range(20):
        with db.session() as s:
            job_id = s.scalar(
                select(Job.id)
                .where(Job.status == "queued", Job.kind.in_(kinds))
                .order_by(Job.id)
                .limit(1)
                .with_for_update(skip_locked=True)
            )
            if job_id is None:
                return None
            won = s.execute(
                update(Job)
                .where(Job.id == job_id, Job.status == "queued")
                .values(status="running", host=host, heartbeat_at=db_now(db), started_at=utcnow(), pid=None)
            )
            if int(won.rowcount) == 1:  # type: ignore[attr-defined]
                return job_id
    return None


def unseen_inputs(db: Database, job_id: int) -> list[str]:
    """What job ``job_id`` reads that this host cannot see: its snapshot file, a parent checkpoint folder."""
    missing = []
    with db.session() as s:
        job = s.get(Job, job_id)
        assert job is not None
        snap = s.get(DatasetSnapshot, job.snapshot_id) if job.snapshot_id else None
        parent = s.get(Contestant, job.parent_contestant_id) if job.parent_contestant_id else None
        if snap is not None and snap.path and not Path(snap.path).exists():
            missing.append(f"the snapshot file {snap.path}")
        for ref in (parent.model_ref, parent.adapter_ref) if parent is not None else ():
            if ref and os.path.isabs(os.path.expanduser(ref)) and not Path(ref).expanduser().exists():
                missing.append(f"the parent checkpoint {ref}")
    return missing


def prepare_folder(db: Database, job_id: int, home: Path) -> str:
    """The job folder under this worker's data home, with its config; the row's paths point there. Returns the
    config path."""
    folder = home / "jobs" / str(job_id)
    with db.session() as s:
        job = s.get(Job, job_id)
        assert job is not None
        path = folder / "config.yaml"
        if job.config_path and Path(job.config_path).resolve() == path.resolve() and path.exists():
            return str(path)
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(dict(job.config or {}), sort_keys=False), encoding="utf-8")
        job.config_path, job.log_path = str(path), str(folder / "train.log")
        if job.kind != "report":
            job.output_dir = str(folder / "output")
        return str(path)


@dataclass
class WorkerService:
    """One worker: its identity, what it serves, and the training processes it runs now."""

    db: Database
    name: str
    kinds: list[str]
    gpus: str | None = None
    max_jobs: int = 1
    home: Path = field(default_factory=lambda: get_settings().data_home)
    poll_s: float = field(default_factory=lambda: get_settings().heartbeat_s)
    children: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)
    claimed: list[int] = field(default_factory=list)

    def run(self, stop: threading.Event | None = None, max_claims: int | None = None) -> None:
        """Serve until ``stop`` is set (SIGTERM/SIGINT in the CLI), or until ``max_claims`` jobs ran and ended."""
        stop = stop or threading.Event()
        register_worker(self.db, self.name, self.kinds, self.gpus, self.max_jobs, str(self.home))
        self.log(f"serving {', '.join(self.kinds)} (max {self.max_jobs} at once, gpus {self.gpus or 'all'})")
        try:
            while not stop.is_set():
                self.step(claim_more=max_claims is None or len(self.claimed) < max_claims)
                if max_claims is not None and len(self.claimed) >= max_claims and not self.children:
                    return
                stop.wait(self.poll_s)
        finally:
            self.shutdown()

    def step(self, claim_more: bool = True) -> None:
        """One look: refresh this worker's row, beat for live children, fail ended or stale jobs, claim more."""
        touch_worker(self.db, self.name)
        self.reap()
        for lost in stale_jobs(self.db):
            if runner.finish(self.db, lost.job_id, "failed", lost.reason, only_if="running"):
                self.log(f"job {lost.job_id} failed: {lost.reason}")
        while claim_more and len(self.children) < self.max_jobs:
            job_id = claim(self.db, self.name, self.kinds)
            if job_id is None:
                break
            self.claimed.append(job_id)
            self.start(job_id)

    def start(self, job_id: int) -> None:
        """Run a claimed job here, or fail it with the reason it cannot run on this host."""
        missing = unseen_inputs(self.db, job_id)
        if missing:
            reason = (
                f"worker host {self.name} cannot see {' and '.join(missing)} (its data home is {self.home}): "
                "mount the storage that holds them at the same path on this host (docs/deployment.md, "
                "'Workers and checkpoints')"
            )
            runner.finish(self.db, job_id, "failed", reason, only_if="running")
            self.log(f"job {job_id} failed: {reason}")
            return
        try:
            config_path = prepare_folder(self.db, job_id, self.home)
            proc = runner.spawn(
                self.db, job_id, config_path, home=self.home, gpus=self.gpus, worker_pid=os.getpid()
            )
        except Exception as exc:
            runner.finish(
                self.db,
                job_id,
                "failed",
                f"worker host {self.name} could not start it: {exc}",
                only_if="running",
            )
            self.log(f"job {job_id} could not start: {exc}")
            return
        self.children[job_id] = proc
        self.log(f"claimed job {job_id}: pid {proc.pid}")

    def reap(self) -> None:
        """Beat for children that live; a child that exited with its job still running failed it."""
        for job_id, proc in list(self.children.items()):
            code = proc.poll()
            if code is None:
                beat(self.db, job_id)
                continue
            self.children.pop(job_id)
            with self.db.session() as s:
                log_path = s.scalar(select(Job.log_path).where(Job.id == job_id))
            tail = runner.log_tail(log_path)
            reason = (
                f"its training process on worker host {self.name} exited with code {code} without a result"
            )
            if runner.finish(
                self.db,
                job_id,
                "failed",
                reason + ("\n--- log tail ---\n" + tail if tail else ""),
                only_if="running",
            ):
                self.log(f"job {job_id} failed: {reason}")
            else:
                self.log(f"job {job_id} ended (exit code {code})")

    def shutdown(self, grace: float = 10.0) -> None:
        """Leaving: the jobs still running here fail (resume continues them), their processes stop."""
        for job_id, proc in list(self.children.items()):
            runner.finish(
                self.db,
                job_id,
                "failed",
                f"worker host {self.name} was stopped while it ran; resume the job to continue",
                only_if="running",
            )
            runner.terminate_group(proc.pid, grace)
            self.children.pop(job_id, None)
        try:
            touch_worker(self.db, self.name, stopped=True)
        except Exception as exc:  # the database is gone too: nothing to record
            self.log(f"could not record the stop: {exc}")

    def log(self, msg: str) -> None:
        print(f"[worker {self.name}] {time.strftime('%H:%M:%S')} {msg}", flush=True)
