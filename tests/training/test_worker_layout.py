"""The team layout CI can build, job side: two data homes, one PostgreSQL database (runs with ``-m postgres``).

The app (this test, data home 1, ``VIBESTUDIO_JOBS=workers``) launches jobs; ``vibestudio worker`` runs as a
separate process with data home 2 and another host identity, claims them, trains and publishes into its own data
home, and the app plays the checkpoint from there. A second app process (data home 3) cancels a running job; the
worker, frozen and killed with SIGKILL together with its training process mid-job (a lost host), is detected by
its stale heartbeat alone. Prints the measured times (run with ``-s``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.helpers.postgres import KINDS
from tests.helpers.training import FAST
from vibestudio.arena.engines.base import Sampling
from vibestudio.arena.engines.hf import TransformersEngine
from vibestudio.common.processes import process_alive
from vibestudio.db.models import Contestant, Job
from vibestudio.db.session import data_home
from vibestudio.training.jobs import heartbeat, runner
from vibestudio.training.jobs.service import launch

pytestmark = pytest.mark.slow

HOST = "gpu-host-2"
GRACE_S = 4.0
BEAT_S = 0.5


def _until(check: Callable[[], object], timeout: float, what: str, log: Path | None = None) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
    raise AssertionError(f"timed out waiting for {what}\n{tail}")


def _row(db, job_id: int) -> Job:
    with db.session() as s:
        job = s.get(Job, job_id)
        assert job is not None
        s.expunge(job)
        return job


def _env(db, home: Path) -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[2])
    return {
        **os.environ,
        "VIBESTUDIO_DATABASE_URL": db.url,
        "VIBESTUDIO_HOME": str(home),
        "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p),
    }


def _claimed(db, job_id: int, log: Path) -> float:
    """Seconds from now (just after the launch) until the worker's claim shows on the row."""
    t0 = time.monotonic()
    _until(lambda: _row(db, job_id).host == HOST, 60, f"the worker to claim job {job_id}", log)
    return time.monotonic() - t0


def _child_beating(db, job_id: int, log: Path) -> int:
    """The training process's pid, once it has beaten for itself (its heartbeat moved past the claim's)."""
    first = _row(db, job_id).heartbeat_at
    _until(lambda: _row(db, job_id).pid and _row(db, job_id).heartbeat_at != first, 90, "a heartbeat", log)
    pid = _row(db, job_id).pid
    assert pid is not None
    return pid


# PostgreSQL only: the team layout's database (SQLite claims and heartbeats are covered by test_workers.py).
@pytest.mark.parametrize("db", [KINDS[1]], indirect=True)
def test_a_worker_on_another_data_home_claims_publishes_cancels_and_is_detected_when_killed(
    db, tiny_parent, make_snapshot, tmp_path, monkeypatch
):
    for name, value in (
        ("VIBESTUDIO_JOBS", "workers"),
        ("VIBESTUDIO_HEARTBEAT_S", str(BEAT_S)),
        ("VIBESTUDIO_HEARTBEAT_GRACE_S", str(GRACE_S)),
    ):
        monkeypatch.setenv(name, value)
    app_home, worker_home = data_home(), tmp_path / "worker-home"
    snap = make_snapshot(8)
    first = launch(db, "dpo", "tiny-parent", snap, **FAST)
    assert runner.job_view(db, first).waiting == "waiting for a worker that serves dpo"  # no worker yet

    log = tmp_path / "worker.log"
    argv = [sys.executable, "-m", "vibestudio.studio.cli", "worker", "--host-name", HOST, "--kinds", "dpo"]
    with open(log, "wb") as out:
        worker = subprocess.Popen(
            [*argv, "--data-home", str(worker_home)],
            env=_env(db, tmp_path / "ignored-home"),  # --data-home wins over VIBESTUDIO_HOME
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _claimed(db, first, log)
        view = runner.wait(db, first, timeout=300)
        assert view.status == "succeeded", f"{view.error}\n{log.read_text(errors='replace')[-3000:]}"
        assert view.host == HOST and view.waiting is None
        assert Path(view.output_dir or "").is_relative_to(worker_home)
        assert not (app_home / "jobs" / str(first) / "output").exists()  # nothing trained in the app's home
        with db.session() as s:
            ref = s.execute(
                select(Contestant.model_ref, Contestant.adapter_ref).where(
                    Contestant.id == view.contestant_id
                )
            ).one()
        assert Path(ref.adapter_ref).is_relative_to(worker_home)
        stream = TransformersEngine(ref.model_ref, ref.adapter_ref).stream_chat(
            [{"role": "user", "content": "Hi"}], Sampling(max_tokens=5, seed=1)
        )
        assert "".join(stream).strip(), "the app could not play the worker's checkpoint"

        claims = []
        # cancel from a second app process with its own data home, through the database
        second = launch(db, "dpo", "tiny-parent", snap, **{**FAST, "max_steps": 500, "seed": 1})
        claims.append(_claimed(db, second, log))
        pid = _child_beating(db, second, log)
        done = subprocess.run(
            [sys.executable, "-m", "vibestudio.studio.cli", "jobs", "cancel", str(second)],
            env=_env(db, tmp_path / "app-2-home"),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        _until(lambda: not process_alive(pid), 30, "the cancelled training process to stop", log)
        assert _row(db, second).status == "cancelled"

        # a lost host: the worker frozen, its training process and then the worker killed with SIGKILL
        third = launch(db, "dpo", "tiny-parent", snap, **{**FAST, "max_steps": 500, "seed": 2})
        claims.append(_claimed(db, third, log))
        pid = _child_beating(db, third, log)
        os.kill(worker.pid, signal.SIGSTOP)
        os.killpg(pid, signal.SIGKILL)
        os.kill(worker.pid, signal.SIGKILL)
        killed = time.monotonic()
        last_beat = _row(db, third).heartbeat_at
        _until(
            lambda: runner.fail_lost(db) or _row(db, third).status != "running",
            GRACE_S + 30,
            "the stale heartbeat to be noticed",
        )
        detect = time.monotonic() - killed
        with db.session() as s:
            since_beat = (s.scalar(select(heartbeat.db_now(db))) - last_beat).total_seconds()
        error = _row(db, third).error or ""
        assert _row(db, third).status == "failed" and error.startswith(
            f"worker host {HOST} stopped heartbeating"
        )
        # the grace period decides, counted on the database's clock from the last beat (a starved process may
        # have beaten late, so not from the kill; SQLite's clock has whole seconds), nothing earlier; and the
        # next look after it notices (10 s: a busy PostgreSQL, not the 30 s wait)
        assert since_beat >= GRACE_S - 1.1 and detect <= GRACE_S + 10, (since_beat, detect)
        print(
            f"\n[layout {db.url.split(':')[0]}] launch->claim (worker idle, polling every {BEAT_S} s): "
            f"{', '.join(f'{c:.2f}' for c in claims)} s; killed worker detected after {detect:.2f} s "
            f"(grace {GRACE_S} s)"
        )
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.wait(10)
