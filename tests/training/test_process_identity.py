"""Liveness by heartbeat and a process identity that cannot collide (``training.jobs.heartbeat.this_host``).

Two containers that share a host name but not a process space (a worker container on the host network) once
failed each other's running jobs: each read the other's pid as its own, found no such process, and failed the
job. The identity a job records is now the host name and a random token of the process that started it, so only
that very process reads the pid; any other judges by the heartbeat alone.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from datetime import timedelta

from sqlalchemy import update

from vibestudio.db.models import Job, utcnow
from vibestudio.training.jobs import heartbeat, runner
from vibestudio.training.jobs.heartbeat import db_now, this_host


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _running(db, host: str | None, pid: int, beating: bool = True) -> int:
    with db.session() as s:
        job = Job(
            kind="dpo", config={"kind": "dpo"}, status="running", host=host, pid=pid, started_at=utcnow()
        )
        s.add(job)
        s.flush()
        jid = job.id
        if beating:
            s.execute(update(Job).where(Job.id == jid).values(heartbeat_at=db_now(db)))
    return jid


def _status(db, jid: int) -> str:
    with db.session() as s:
        return s.get(Job, jid).status


def test_a_job_of_another_process_with_this_host_name_is_judged_by_its_heartbeat(db):
    pid = _dead_pid()  # no such process here: in the other container it is alive and beating
    same_name = _running(db, socket.gethostname(), pid)  # a bare host name (a row from before the token)
    other_process = _running(db, f"{socket.gethostname()}#0123456789ab", pid)
    assert runner.fail_lost(db) == []
    assert _status(db, same_name) == _status(db, other_process) == "running"
    assert not runner._is_here(socket.gethostname()) and runner._is_here(this_host())


def test_this_processs_own_job_is_still_failed_when_its_process_died(db):
    jid = _running(db, this_host(), _dead_pid())
    assert runner.fail_lost(db) == [jid]
    assert _status(db, jid) == "failed"


def test_another_processs_job_that_never_beat_is_failed_after_the_start_timeout(db):
    jid = _running(db, f"{socket.gethostname()}#feedfacecafe", _dead_pid(), beating=False)
    assert runner.fail_lost(db) == []  # its launcher may be starting it right now
    with db.session() as s:
        s.execute(update(Job).where(Job.id == jid).values(started_at=utcnow() - timedelta(minutes=10)))
    assert runner.fail_lost(db) == [jid]


def test_two_processes_on_one_host_name_never_share_an_identity():
    """Each process draws its token when it loads the module: two loads (two processes) get two identities on
    one host name; a worker's default name carries the token too (pid 1 in two containers)."""
    import importlib.util

    from vibestudio.training.jobs.workers import default_name

    tokens = set()
    for n in range(2):
        spec = importlib.util.spec_from_file_location(f"heartbeat_copy_{n}", heartbeat.__file__)
        assert spec is not None and spec.loader is not None
        copy = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = copy  # its dataclasses look their module up there
        try:
            spec.loader.exec_module(copy)
        finally:
            del sys.modules[spec.name]
        tokens.add(copy.this_host())
    assert len(tokens) == 2 and this_host() not in tokens
    assert {heartbeat.host_name(x) for x in tokens} == {socket.gethostname()}
    assert len(heartbeat.PROCESS_TOKEN) == 12 and default_name().endswith("#" + heartbeat.PROCESS_TOKEN)
