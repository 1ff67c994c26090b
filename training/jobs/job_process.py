"""The job process: ``python -m vibestudio.training.jobs.job_process <config.yaml> --job <id>``, one training
or report job.

Not to be confused with ``training.jobs.workers``: the worker service (``vibestudio worker``) that claims
jobs and starts this process for each.

It owns one job from start to end:
- marks it running (pid) and re-checks its inputs;
- runs the trainer for the job's kind;
- publishes the checkpoint (pending), runs its checkpoint report and records the verdict, which releases
  or holds it (``training.publishing.publish``, ``training.report.job``);
- records succeeded / failed (exception + log tail).
A ``report`` job, queued by a mid-run publish, runs only the report of the contestant it names. SIGTERM (a
cancel) ends it cleanly.

A heartbeat thread (``training.jobs.heartbeat.Beater``) writes the database's time on the row every few
seconds. When the row is no longer running (cancelled from any process), it sends this process group
SIGTERM. With ``--worker-pid`` (started by ``vibestudio worker``) it also stops the job when that worker
is gone. On exit it starts the next queued job, unless a worker owns it. So the queue drains without the
app. If an earlier attempt of the same job left ``checkpoints/checkpoint-*``, training resumes from the
newest.

Everything it prints goes to the job's ``train.log``; the runner redirects stdout and stderr.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import time
import traceback
from pathlib import Path

from vibestudio.training.jobs.config import JOB_KINDS

TRAINERS = {kind: k.trainer for kind, k in JOB_KINDS.items()}  # registered once, in training.jobs.config


class Cancelled(SystemExit):
    """Raised in the job process when it receives SIGTERM."""


def _on_sigterm(signum, frame) -> None:  # type: ignore[no-untyped-def]
    raise Cancelled(128 + signum)


def trainer_for(kind: str):  # type: ignore[no-untyped-def]
    if kind not in TRAINERS:
        raise ValueError(f"no trainer for job kind {kind!r}")
    module, func = TRAINERS[kind].split(":")
    return getattr(importlib.import_module(module), func)


def run_job(db, job_id: int, config_path: str, owner_pid: int | None = None) -> int:  # type: ignore[no-untyped-def]
    """Run job ``job_id`` to a terminal state; returns the process exit code. It heartbeats all along and stops
    when its row stops being running (a cancel from any process) or ``owner_pid`` (its worker) is gone."""
    from sqlalchemy import select

    from vibestudio.db.backup import shown_url
    from vibestudio.db.models import Job, utcnow
    from vibestudio.training.jobs import runner
    from vibestudio.training.jobs.config import load_config
    from vibestudio.training.jobs.heartbeat import Beater, this_host
    from vibestudio.training.jobs.metrics import MetricWriter
    from vibestudio.training.jobs.preflight import preflight
    from vibestudio.training.objectives.context import JobContext
    from vibestudio.training.publishing.publish import publish
    from vibestudio.training.report.job import ReportOptions, run_report, run_report_job

    with db.session() as s:
        job = s.get(Job, job_id)
        if job is None:
            print(f"[job process] no job {job_id} in {shown_url(db.url)}", flush=True)
            return 2
        if job.status in runner.TERMINAL:
            print(f"[job process] job {job_id} is already {job.status}; nothing to do", flush=True)
            return 0
        job.status = "running"
        if (
            job.pid is None or os.getpgid(0) == os.getpid()
        ):  # under accelerate launch the launcher is the leader
            job.pid = os.getpid()
        job.started_at = job.started_at or utcnow()
        job.host = job.host or this_host()
        kind, host = job.kind, job.host
    beater = Beater(db, job_id, owner_pid=owner_pid).start()
    code = 1
    try:
        if kind == "report":  # the report room runs it; finishing the job is the job machinery's part
            unusable = run_report_job(db, config_path)
            beater.close()
            runner.finish(db, job_id, "failed" if unusable else "succeeded", unusable, only_if="running")
            code = 1 if unusable else 0
            return code
        cfg = load_config(config_path)
        with db.session() as s:
            checked = preflight(s, cfg)
        ctx = JobContext(job_id, cfg, checked, Path(config_path).parent, MetricWriter(db, job_id))
        ctx.resume = ctx.last_checkpoint() is not None
        if ctx.resume:
            forget_metrics_after(db, job_id, ctx.last_checkpoint())
        result = trainer_for(cfg.kind)(ctx)
        print(
            f"[job process] trained {result.step} steps in {result.train_seconds:.1f} s "
            f"({result.train_seconds / max(result.step, 1):.2f} s/step)",
            flush=True,
        )
        published = publish(db, ctx, result)
        if published.contestant_id is not None and published.needs_report:
            step = result.step
            state = run_report(
                db,
                published.contestant_id,
                ReportOptions.from_config(cfg.to_dict()),
                on_metrics=lambda values: ctx.metrics.log(step, values),
            )
            ctx.metrics.log(step, {"release_seconds": time.perf_counter() - result.ended_at})
            print(f"[job process] {published.public_name} is {state}", flush=True)
        beater.close()  # from here the row leaving "running" is this process's own doing
        runner.finish(db, job_id, "succeeded", None, only_if="running")
        code = 0
    except Cancelled as exc:
        beater.close()
        if beater.orphaned:
            print("[job process] stopped: its worker is gone", flush=True)
            runner.finish(
                db,
                job_id,
                "failed",
                f"its worker (pid {owner_pid}) on host {host} stopped while it ran; the training stopped with it "
                "(resume the job to continue)",
                only_if="running",
            )
        else:
            print("[job process] cancelled (SIGTERM)", flush=True)
            runner.finish(db, job_id, "cancelled", "cancelled by user", only_if="running")
        code = int(exc.code or 143)
    except BaseException as exc:
        beater.close()
        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        with db.session() as s:
            log_path = s.scalar(select(Job.log_path).where(Job.id == job_id))
        reason = f"{type(exc).__name__}: {exc}"
        tail = runner.log_tail(log_path, lines=25)
        runner.finish(
            db, job_id, "failed", reason + ("\n--- log tail ---\n" + tail if tail else ""), only_if="running"
        )
    finally:
        beater.close()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            if owner_pid is None:  # a worker service starts its own next job
                runner.start_next(db)
        except Exception:
            traceback.print_exc()
    return code


def _quiet_libraries() -> None:
    """Progress bars write carriage returns into train.log; the metrics callback reports progress instead."""
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "warning")
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", message=".*gradient.checkpointing.*")


def run_replica(db, config_path: str) -> int:  # type: ignore[no-untyped-def]
    """A non-zero rank under ``accelerate launch``: train alongside rank 0; rank 0 alone writes status,
    metrics, checkpoints and publishes."""
    from vibestudio.training.jobs.config import load_config
    from vibestudio.training.jobs.metrics import MetricWriter
    from vibestudio.training.jobs.preflight import preflight
    from vibestudio.training.objectives.context import JobContext

    cfg = load_config(config_path)
    with db.session() as s:
        checked = preflight(s, cfg)
    ctx = JobContext(None, cfg, checked, Path(config_path).parent, MetricWriter(None, None))
    ctx.resume = ctx.last_checkpoint() is not None
    trainer_for(cfg.kind)(ctx)
    return 0


def forget_metrics_after(db, job_id: int, checkpoint: str | None) -> None:  # type: ignore[no-untyped-def]
    """On resume, drop the metrics an earlier attempt wrote after its last checkpoint (they are redone)."""
    from sqlalchemy import delete

    from vibestudio.db.models import JobMetric

    step = int(str(checkpoint).rsplit("-", 1)[-1])
    with db.session() as s:
        s.execute(delete(JobMetric).where(JobMetric.job_id == job_id, JobMetric.step > step))
    print(f"[job process] resuming from {checkpoint} (step {step})", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m vibestudio.training.jobs.job_process", description="Run one training job."
    )
    ap.add_argument("config", help="the job's config.yaml")
    ap.add_argument("--job", type=int, required=True, help="job id in the database")
    ap.add_argument("--worker-pid", type=int, default=None, help="the `vibestudio worker` that owns this job")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, _on_sigterm)
    print(
        f"[job process] job {args.job}: pid {os.getpid()}, config {args.config}, "
        f"started {time.strftime('%Y-%m-%d %H:%M:%S')}",
        flush=True,
    )
    _quiet_libraries()
    from vibestudio.common.settings import get_settings
    from vibestudio.common.threads import sleeping_thread_waits
    from vibestudio.db.session import Database

    sleeping_thread_waits()  # before torch loads

    settings = get_settings()
    db = Database(settings.database_url)
    try:
        if settings.rank != 0:
            return run_replica(db, args.config)
        return run_job(db, args.job, args.config, owner_pid=args.worker_pid)
    finally:
        db.dispose()


def exit_now(code: int) -> None:
    """Leave without interpreter teardown: everything is committed, saved and flushed by now, and unloading
    torch's operator registrations took over a minute on a busy 2-core machine (the queue does not wait for it,
    but a cancel or a test does)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
