"""Workers: the time from launch to a worker's claim, and the time to notice a killed worker, on real processes.

- Claim: a real ``vibestudio worker`` process polls the queue every ``--poll`` seconds; each round queues one
  job (whose snapshot file the worker cannot see, so it fails it at once instead of training: the claim is what is
  timed) and measures until the row shows the worker as its host. Baseline: the poll interval (the claim
  waits on average half of it, at most all of it).
- Detect: a separate process beats for a running job (``training.jobs.heartbeat.Beater``, as a training process does);
  it is killed with SIGKILL, and this process runs ``runner.fail_lost`` every 50 ms (what a worker's loop and the
  app's reconcile do) until the job is failed. Baseline: the grace period (``VIBESTUDIO_HEARTBEAT_GRACE_S``).

Prints the median, the range and a 95% bootstrap interval of the median for each, and its ratio to the baseline.
Run: ``python benchmarks/workers.py [--db postgresql://...] [--n 20] [--kills 8] [--poll 0.5] [--grace 3]``
(default database: a temporary SQLite file; on PostgreSQL it works in a fresh schema, dropped at the end).
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VICTIM = """
import sys, time
from vibestudio.db.session import Database
from vibestudio.training.jobs.heartbeat import Beater
Beater(Database(sys.argv[1]), int(sys.argv[2]), interval=float(sys.argv[3]), on_stop=lambda: None).start()
time.sleep(3600)
"""


def median_ci(xs: list[float], rounds: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(rounds))
    return statistics.median(xs), meds[int(0.025 * rounds)], meds[int(0.975 * rounds) - 1]


def until(check, timeout: float, what: str, every: float = 0.01):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(every)
    raise SystemExit(f"timed out waiting for {what}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default=None, help="database URL (default: a temporary SQLite file)")
    ap.add_argument("--n", type=int, default=20, help="claims to time")
    ap.add_argument("--kills", type=int, default=8, help="killed workers to time")
    ap.add_argument("--poll", type=float, default=0.5, help="VIBESTUDIO_HEARTBEAT_S for the worker")
    ap.add_argument("--grace", type=float, default=3.0, help="VIBESTUDIO_HEARTBEAT_GRACE_S")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="vs-workers-bench-"))
    if args.db:
        schema = f"bench_workers_{os.urandom(6).hex()}"
        _schema(args.db, f"CREATE SCHEMA {schema}")
        try:
            run(args, tmp, f"{args.db}{'&' if '?' in args.db else '?'}options=-csearch_path%3D{schema}")
        finally:
            _schema(args.db, f"DROP SCHEMA {schema} CASCADE")
    else:
        run(args, tmp, f"sqlite:///{tmp / 'bench.sqlite'}")


def _schema(url: str, statement: str) -> None:
    from sqlalchemy import create_engine, text

    from vibestudio.db.session import Database

    engine = create_engine(Database(url).url)
    with engine.begin() as conn:
        conn.execute(text(statement))
    engine.dispose()


def run(args: argparse.Namespace, tmp: Path, url: str) -> None:
    os.environ.update(
        VIBESTUDIO_HOME=str(tmp / "home"),
        VIBESTUDIO_DATABASE_URL=url,
        VIBESTUDIO_HEARTBEAT_S=str(args.poll),
        VIBESTUDIO_HEARTBEAT_GRACE_S=str(args.grace),
        VIBESTUDIO_JOBS="workers",
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    )
    from sqlalchemy import update

    from vibestudio.db.models import DatasetSnapshot, Job
    from vibestudio.db.session import Database
    from vibestudio.training.jobs import runner
    from vibestudio.training.jobs.heartbeat import read_now

    db = Database(url)
    db.migrate()
    with db.session() as s:
        snap = DatasetSnapshot(
            hash=os.urandom(32).hex(), filter={}, n_pairs=1, path=str(tmp / "not-here.jsonl")
        )
        s.add(snap)
        s.flush()
        snap_id = snap.id

    def row(job_id: int) -> Job:
        with db.session() as s:
            job = s.get(Job, job_id)
            assert job is not None
            s.expunge(job)
            return job

    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vibestudio.studio.cli",
            "worker",
            "--host-name",
            "bench-worker",
            "--kinds",
            "dpo",
        ],
        stdout=open(tmp / "worker.log", "wb"),
        stderr=subprocess.STDOUT,
    )
    claims: list[float] = []
    try:
        for _ in range(args.n):
            time.sleep(random.uniform(0, args.poll))  # launches do not line up with the worker's polls
            with db.session() as s:
                job = Job(kind="dpo", config={"kind": "dpo"}, status="queued", snapshot_id=snap_id)
                s.add(job)
                s.flush()
                job_id = job.id
            t0 = time.perf_counter()
            until(lambda j=job_id: row(j).host == "bench-worker", 60, "a claim")
            claims.append(time.perf_counter() - t0)
            until(lambda j=job_id: row(j).status == "failed", 60, "the unseen-input failure")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(30)

    detects: list[float] = []
    for _ in range(args.kills):
        with db.session() as s:
            job = Job(kind="dpo", config={"kind": "dpo"}, status="running", host="bench-victim")
            s.add(job)
            s.flush()
            job_id = job.id
        victim = subprocess.Popen([sys.executable, "-c", VICTIM, url, str(job_id), str(args.poll)])
        until(lambda j=job_id: row(j).heartbeat_at is not None, 60, "a first heartbeat")
        time.sleep(random.uniform(args.poll, 2 * args.poll))
        victim.kill()
        t0 = time.perf_counter()
        until(
            lambda j=job_id: runner.fail_lost(db) or row(j).status == "failed",
            args.grace + 30,
            "detection",
            0.05,
        )
        detects.append(time.perf_counter() - t0)
        victim.wait(10)
    with db.session() as s:
        s.execute(update(Job).where(Job.status == "running").values(status="failed"))
    kind = "SQLite" if db.is_sqlite else "PostgreSQL"
    print(f"database: {kind}; database clock now {read_now(db):%H:%M:%S} UTC")
    for name, xs, base, base_name in (
        ("launch -> claim", claims, args.poll, f"poll interval {args.poll} s"),
        ("kill -> detected", detects, args.grace, f"grace {args.grace} s"),
    ):
        med, lo, hi = median_ci(xs)
        print(
            f"{name:<17} n={len(xs):<3} median {med:.3f} s (95% CI {lo:.3f}-{hi:.3f}), range "
            f"{min(xs):.3f}-{max(xs):.3f} s; ratio to the {base_name}: {med / base:.2f}"
        )
    db.dispose()


if __name__ == "__main__":
    main()
