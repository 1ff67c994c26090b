"""Heartbeats on the database's clock: a running job's sign of life, the worker registry, and stale
detection.

Hosts' clocks disagree, so no time written here comes from a host. A heartbeat is
``UPDATE ... SET heartbeat_at = <the database's now>``. Staleness compares it with the database's now
again (``db_now``, UTC on both SQLite and PostgreSQL).

A job is failed as lost only when its heartbeat is older than the grace period
(``VIBESTUDIO_HEARTBEAT_GRACE_S``). It is never failed because this host's ``/proc`` lacks a pid that
lives on another host. Nor is it failed because a pid recorded under the same host name is missing here. A
job records the host name *and* a random token of the process that started it (``this_host``). So only
that very process reads the job's pid; every other judges by the heartbeat.

The training process beats for itself (``Beater``, a thread in ``training.jobs.job_process``). Its beat
may find the row no longer running: cancelled from any process, or failed as lost. Then it stops its own
process group.

Knows the ``jobs`` and ``workers`` tables; knows nothing about TRL or how a job is started.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import DateTime, func, select, update
from sqlalchemy.sql.elements import ColumnElement

from vibestudio.common.processes import process_alive
from vibestudio.common.settings import get_settings
from vibestudio.db.models import Job, Worker
from vibestudio.db.session import Database

#: Drawn once per process: with the host name it is the identity of the process that starts a job, so two
#: processes that share a host name but not a process space (containers on one host network, pid 1 in each of
#: two containers) never read each other's pids as their own.
PROCESS_TOKEN = secrets.token_hex(6)


def this_host() -> str:
    """The identity the app's own (local) jobs record: this machine's name and this process's random token
    (``name#token``). A job whose ``host`` is not exactly this is judged by its heartbeat alone."""
    return f"{socket.gethostname()}#{PROCESS_TOKEN}"


def host_name(identity: str | None) -> str | None:
    """The machine name of a recorded identity (``name#token`` -> ``name``), for messages and tables."""
    return identity.split("#", 1)[0] if identity else identity


def db_now(db: Database) -> ColumnElement[datetime]:
    """The database server's current time in UTC, as an SQL expression (``CURRENT_TIMESTAMP`` is UTC on SQLite;
    PostgreSQL's ``now()`` is converted to UTC whatever the session's time zone)."""
    if db.is_sqlite:
        return func.current_timestamp(type_=DateTime)
    return func.timezone("UTC", func.now(), type_=DateTime)


def read_now(db: Database) -> datetime:
    """The database server's clock, read once."""
    with db.session() as s:
        now = s.scalar(select(db_now(db)))
    assert now is not None
    return now


def beat(db: Database, job_id: int) -> bool:
    """Record one heartbeat of a running job; False when the job was stopped from outside (cancelled, or failed
    as lost): its process should stop. A job that succeeded meanwhile counts as running on (nothing to stop)."""
    with db.session() as s:
        done = s.execute(
            update(Job).where(Job.id == job_id, Job.status == "running").values(heartbeat_at=db_now(db))
        )
        if int(done.rowcount) == 1:  # type: ignore[attr-defined]
            return True
        return s.scalar(select(Job.status).where(Job.id == job_id)) == "succeeded"


class Beater:
    """A daemon thread that beats for ``job_id`` every ``interval`` seconds and calls ``on_stop`` once when the
    row is no longer running (the default sends SIGTERM to this process group, which a cancel does too), or when
    ``owner_pid`` (the ``vibestudio worker`` that started this process) is gone: then ``orphaned`` is set.
    A database that does not answer for a while is not a stop: the grace period decides that, elsewhere."""

    def __init__(
        self,
        db: Database,
        job_id: int,
        interval: float | None = None,
        on_stop: Callable[[], None] | None = None,
        owner_pid: int | None = None,
    ) -> None:
        self.db, self.job_id, self.owner_pid = db, job_id, owner_pid
        self.interval = interval or get_settings().heartbeat_s
        self.on_stop = on_stop or _stop_own_group
        self.orphaned = False
        self.stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-job-{job_id}", daemon=True)

    def start(self) -> Beater:
        self._thread.start()
        return self

    def close(self) -> None:
        self.stopped.set()

    def _run(self) -> None:
        while not self.stopped.is_set():
            if self.owner_pid is not None and not process_alive(self.owner_pid):
                print(f"[job process] its worker (pid {self.owner_pid}) is gone: stopping", flush=True)
                self.orphaned = True
                self.stopped.set()
                self.on_stop()
                return
            try:
                alive = beat(self.db, self.job_id)
            except Exception as exc:  # the database is away: keep trying; the grace period judges
                print(f"[job process] heartbeat of job {self.job_id} failed: {exc}", flush=True)
                alive = True
            if not alive and not self.stopped.is_set():
                print(
                    f"[job process] job {self.job_id} is no longer running in the database: stopping",
                    flush=True,
                )
                self.stopped.set()
                self.on_stop()
                return
            self.stopped.wait(self.interval)


def _stop_own_group() -> None:
    """SIGTERM this process group: the job process (and, under ``accelerate launch``, every rank) ends as on cancel."""
    try:
        os.killpg(os.getpgid(0), signal.SIGTERM)
    except OSError:
        os.kill(os.getpid(), signal.SIGTERM)


@dataclass
class Lost:
    """A running job whose heartbeat stopped: its id and why it is failed."""

    job_id: int
    reason: str


def stale_jobs(db: Database, grace_s: float | None = None) -> list[Lost]:
    """Running jobs whose last heartbeat is older than the grace period by the database's clock."""
    grace = timedelta(seconds=grace_s if grace_s is not None else get_settings().heartbeat_grace_s)
    with db.session() as s:
        now = s.scalar(select(db_now(db)))
        rows = s.execute(
            select(Job.id, Job.host, Job.heartbeat_at, Job.pid).where(
                Job.status == "running", Job.heartbeat_at.is_not(None)
            )
        ).all()
    assert now is not None
    lost = []
    for job_id, host, at, pid in rows:
        if now - at > grace:
            lost.append(
                Lost(
                    job_id,
                    f"worker host {host_name(host) or '(unknown)'} stopped heartbeating at {at:%Y-%m-%d %H:%M:%S} UTC "
                    f"(no sign of life for {(now - at).total_seconds():.0f} s, grace {grace.total_seconds():.0f} s;"
                    f" its training process was pid {pid} there); resume the job to run it again",
                )
            )
    return lost


# ---- the worker registry --------------------------------------------------------------------------------------
def register_worker(
    db: Database, name: str, kinds: list[str], gpus: str | None, max_jobs: int, data_home: str
) -> None:
    """Insert or refresh the ``workers`` row of ``name`` (a restarted worker keeps its row)."""
    with db.session() as s:
        row = s.scalar(select(Worker).where(Worker.name == name))
        if row is None:
            row = Worker(name=name)
            s.add(row)
        row.kinds, row.gpus, row.max_jobs, row.data_home = list(kinds), gpus, max_jobs, data_home
        row.stopped_at = None
        s.flush()
        s.execute(
            update(Worker).where(Worker.id == row.id).values(started_at=db_now(db), last_seen=db_now(db))
        )


def touch_worker(db: Database, name: str, stopped: bool = False) -> None:
    """The worker is alive (or, with ``stopped``, has left cleanly)."""
    values: dict[str, object] = {"last_seen": db_now(db)}
    if stopped:
        values["stopped_at"] = db_now(db)
    with db.session() as s:
        s.execute(update(Worker).where(Worker.name == name).values(**values))


@dataclass
class WorkerRow:
    name: str
    kinds: list[str]
    gpus: str | None
    max_jobs: int
    data_home: str | None
    last_seen: datetime | None
    alive: bool
    running: int


def list_workers(db: Database, grace_s: float | None = None) -> list[WorkerRow]:
    """Registered workers, newest sign of life first; ``alive`` when seen within the grace period and not
    stopped, ``running`` the jobs they run now."""
    grace = timedelta(seconds=grace_s if grace_s is not None else get_settings().heartbeat_grace_s)
    with db.session() as s:
        now = s.scalar(select(db_now(db)))
        workers = s.scalars(select(Worker).order_by(Worker.last_seen.desc())).all()
        busy = dict(
            s.execute(
                select(Job.host, func.count(Job.id)).where(Job.status == "running").group_by(Job.host)
            ).all()
        )
        assert now is not None
        return [
            WorkerRow(
                w.name,
                list(w.kinds or []),
                w.gpus,
                w.max_jobs,
                w.data_home,
                w.last_seen,
                w.stopped_at is None and w.last_seen is not None and now - w.last_seen <= grace,
                int(busy.get(w.name, 0)),
            )
            for w in workers
        ]


def waiting_reasons(db: Database, kinds: set[str]) -> dict[str, str]:
    """For each job kind in ``kinds`` that no live worker serves: the line a queued job of it shows (only in
    ``VIBESTUDIO_JOBS=workers``; the app's own runner serves every kind otherwise)."""
    if get_settings().jobs != "workers" or not kinds:
        return {}
    served = {k for w in list_workers(db) if w.alive for k in w.kinds}
    return {k: f"waiting for a worker that serves {k}" for k in kinds if k not in served}
