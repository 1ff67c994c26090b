"""Workers that claim jobs, without training: racing claims, kinds no worker serves, stale heartbeats judged by the
database's clock (never by this host's /proc for another host's job), cancel through the database, inputs a
worker cannot see."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest
from sqlalchemy import update

from vibestudio.db.models import DatasetSnapshot, Job, Worker
from vibestudio.training.jobs import runner
from vibestudio.training.jobs.heartbeat import (
    Beater,
    beat,
    read_now,
    register_worker,
    stale_jobs,
    waiting_reasons,
)
from vibestudio.training.jobs.workers import WorkerService, claim, parse_gpus, parse_kinds


def _queued(db, n: int, kind: str = "dpo") -> list[int]:
    with db.session() as s:
        jobs = [Job(kind=kind, config={"kind": kind, "n": i}, status="queued") for i in range(n)]
        s.add_all(jobs)
        s.flush()
        return [j.id for j in jobs]


def _row(db, job_id: int) -> Job:
    with db.session() as s:
        job = s.get(Job, job_id)
        assert job is not None
        s.expunge(job)
        return job


def test_racing_workers_claim_each_job_exactly_once(db):
    ids = _queued(db, 24)
    won: dict[str, list[int]] = {f"w{i}": [] for i in range(4)}
    start = threading.Barrier(len(won))
    errors: list[BaseException] = []

    def work(name: str) -> None:
        try:
            start.wait()
            while (job_id := claim(db, name, ["dpo"])) is not None:
                won[name].append(job_id)
        except BaseException as exc:  # surfaced below: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(name,)) for name in won]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    claimed = [j for jobs in won.values() for j in jobs]
    assert sorted(claimed) == ids  # every job once, none twice
    for name, jobs in won.items():
        for job_id in jobs:
            row = _row(db, job_id)
            assert (row.status, row.host) == ("running", name)
            assert row.heartbeat_at is not None  # the claim is the first heartbeat (database clock)


def test_a_worker_claims_only_the_kinds_it_serves_oldest_first(db):
    grpo = _queued(db, 1, "grpo")[0]
    first, second = _queued(db, 2, "dpo")
    assert claim(db, "gpu-1", ["dpo", "report"]) == first
    assert claim(db, "gpu-1", ["dpo", "report"]) == second
    assert claim(db, "gpu-1", ["dpo", "report"]) is None
    assert _row(db, grpo).status == "queued"
    assert claim(db, "gpu-2", ["grpo"]) == grpo


def test_a_kind_no_live_worker_serves_says_so(db, monkeypatch):
    grpo = _queued(db, 1, "grpo")[0]
    dpo = _queued(db, 1, "dpo")[0]
    assert waiting_reasons(db, {"grpo"}) == {}  # the app's own runner serves every kind
    monkeypatch.setenv("VIBESTUDIO_JOBS", "workers")
    assert runner.start_next(db) is None and _row(db, dpo).status == "queued"  # nothing starts here
    register_worker(db, "gpu-1", parse_kinds("dpo"), None, 1, "/data")
    jobs = {j.id: j for j in runner.list_jobs(db)}
    assert jobs[grpo].waiting == "waiting for a worker that serves grpo"
    assert jobs[dpo].waiting is None
    assert runner.job_view(db, grpo).waiting == "waiting for a worker that serves grpo"
    register_worker(db, "gpu-2", parse_kinds("grpo"), None, 1, "/data")
    assert runner.job_view(db, grpo).waiting is None
    with db.session() as s:  # gpu-2 last seen long ago (database clock): it no longer counts
        s.execute(
            update(Worker).where(Worker.name == "gpu-2").values(last_seen=read_now(db) - timedelta(hours=1))
        )
    assert runner.job_view(db, grpo).waiting == "waiting for a worker that serves grpo"


def _running_on(db, host: str, pid: int | None, beat_age_s: float | None) -> int:
    job_id = _queued(db, 1)[0]
    at = None if beat_age_s is None else read_now(db) - timedelta(seconds=beat_age_s)
    with db.session() as s:
        s.execute(
            update(Job)
            .where(Job.id == job_id)
            .values(status="running", host=host, pid=pid, heartbeat_at=at, started_at=at)
        )
    return job_id


def test_a_stale_heartbeat_fails_the_job_naming_host_and_time(db, monkeypatch):
    monkeypatch.setenv("VIBESTUDIO_HEARTBEAT_GRACE_S", "60")
    lost = _running_on(db, "gpu-7:4242", pid=999_999, beat_age_s=120)
    # another host's job whose pid does not exist here, beating: this host's /proc says nothing about it
    alive = _running_on(db, "gpu-8:17", pid=999_998, beat_age_s=1)
    assert runner.reconcile(db, start=False) == [lost]
    error = _row(db, lost).error or ""
    assert error.startswith("worker host gpu-7:4242 stopped heartbeating at ") and "grace 60 s" in error
    assert _row(db, alive).status == "running"


def test_staleness_is_measured_on_the_database_clock(db, monkeypatch):
    job_id = _running_on(db, "gpu-9", pid=None, beat_age_s=30)
    assert [x.job_id for x in stale_jobs(db, grace_s=10)] == [job_id]
    assert stale_jobs(db, grace_s=300) == []
    assert beat(db, job_id) is True  # a beat moves it to the database's now
    assert stale_jobs(db, grace_s=10) == []


def test_cancel_from_another_process_stops_the_beating_process(db):
    job_id = _running_on(db, "gpu-3:99", pid=999_997, beat_age_s=0)
    stopped = threading.Event()
    beater = Beater(db, job_id, interval=0.05, on_stop=stopped.set).start()
    try:
        time.sleep(0.2)
        assert not stopped.is_set()
        view = runner.cancel(db, job_id)  # not this host's job: no signal here, the row says it
        assert view.status == "cancelled"
        assert stopped.wait(5), "the job's process never noticed the cancel"
    finally:
        beater.close()


def test_a_training_process_stops_when_its_worker_is_gone(db):
    job_id = _running_on(db, "gpu-4:1", pid=None, beat_age_s=0)
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    stopped = threading.Event()
    beater = Beater(db, job_id, interval=0.05, on_stop=stopped.set, owner_pid=owner.pid).start()
    try:
        owner.wait(10)
        assert stopped.wait(5)
        assert beater.orphaned
    finally:
        beater.close()


def test_a_worker_that_cannot_see_the_snapshot_fails_the_job_saying_where(db, tmp_path):
    job_id = _queued(db, 1)[0]
    with db.session() as s:
        snap = DatasetSnapshot(hash="f" * 64, filter={}, n_pairs=1, path="/nowhere/snap.jsonl")
        s.add(snap)
        s.flush()
        s.execute(update(Job).where(Job.id == job_id).values(snapshot_id=snap.id))
    service = WorkerService(db, "gpu-5", ["dpo"], home=tmp_path / "home2", poll_s=0.1)
    service.step()
    row = _row(db, job_id)
    assert row.status == "failed" and not service.children
    assert "worker host gpu-5 cannot see the snapshot file /nowhere/snap.jsonl" in (row.error or "")


def test_worker_options_are_checked():
    assert parse_kinds("dpo,grpo") == ["dpo", "grpo", "report"]
    assert parse_kinds(None) == ["dpo", "kto", "orpo", "simpo", "reward", "grpo", "report"]
    assert parse_gpus("0, 1") == "0,1" and parse_gpus(None) is None
    with pytest.raises(ValueError, match="unknown job kind"):
        parse_kinds("dpo,ppo")
    with pytest.raises(ValueError, match="device indices"):
        parse_gpus("0,;rm")
