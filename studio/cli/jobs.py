"""``vibestudio jobs list|show|cancel|resume|logs|workers``: training jobs after launch, and the progress bar
that follows one.

A thin layer over ``training.jobs.runner``. ``job_dict`` is the JSON shape of a job that ``train`` and
``jobs`` print.
"""

import time
from pathlib import Path
from typing import Any

import typer

from vibestudio.studio.cli._common import echo_json, fail, group, open_db

jobs_app = group(help="Training jobs: list, inspect, cancel, resume, logs.", no_args_is_help=True)

JSON_OPTION = typer.Option(False, "--json", help="Print JSON (progress bars go to stderr).")
WAIT_OPTION = typer.Option(True, "--wait/--no-wait", help="Follow the job with a progress bar until it ends.")
TIMEOUT_OPTION = typer.Option(3600.0, help="Seconds to wait with --wait.")


def job_dict(v: Any) -> dict[str, Any]:
    """A job view as JSON-ready data (last value of each metric, not the whole series)."""
    return {
        "id": v.id,
        "kind": v.kind,
        "status": v.status,
        "progress": v.progress,
        "error": v.error,
        "parent_contestant_id": v.parent_contestant_id,
        "snapshot_id": v.snapshot_id,
        "contestant_id": v.contestant_id,
        "contestant_step": v.contestant_step,
        "contestant_state": v.contestant_state,
        "created_at": v.created_at,
        "started_at": v.started_at,
        "ended_at": v.ended_at,
        "host": v.host,
        "heartbeat_at": v.heartbeat_at,
        "waiting": v.waiting,
        **(
            {
                "queue_position": v.queue_position,
                "log_path": v.log_path,
                "output_dir": v.output_dir,
                "metrics": {name: series[-1][1] for name, series in v.metrics.items() if series},
                "config": v.config,
            }
            if hasattr(v, "metrics")
            else {}
        ),
    }


def follow(db, job_id: int, timeout: float, as_json: bool) -> None:  # type: ignore[no-untyped-def]
    """A progress bar until the job ends (or ``timeout``); exit 1 unless it succeeded."""
    from tqdm import tqdm

    from vibestudio.training.jobs.runner import fail_lost, job_view

    bar = tqdm(total=100, desc=f"job {job_id}", unit="%")
    deadline = time.monotonic() + timeout
    while True:
        v = job_view(db, job_id, tail_lines=1)
        bar.n = int(100 * (v.progress or 0))
        loss = v.last("loss") if v.last("loss") is not None else v.last("reward")
        bar.set_postfix(status=v.status, **({"loss/reward": f"{loss:.3g}"} if loss is not None else {}))
        bar.refresh()
        if v.done or time.monotonic() > deadline:
            break
        if v.status == "running":
            fail_lost(db)  # a stale heartbeat (any host) or a gone local process
        time.sleep(1.0)
    bar.close()
    if as_json:
        echo_json(job_dict(v))
    if v.status != "succeeded":
        fail(f"job {job_id} {v.status}" + (f": {v.error}" if v.error else " (still running: --timeout)"))
    if not as_json:
        extra = f"; published as contestant id {v.contestant_id}" if v.contestant_id else ""
        typer.echo(f"Job {job_id} succeeded{extra}.")


def _view(db, job_id: int):  # type: ignore[no-untyped-def]
    from vibestudio.training.jobs.errors import JobError
    from vibestudio.training.jobs.runner import job_view

    try:
        return job_view(db, job_id)
    except JobError as exc:
        fail(str(exc))


@jobs_app.command("list")
def jobs_list(
    status: str = typer.Option(None, help="Only jobs with this status (queued, running, succeeded, ...)."),
    limit: int = typer.Option(50, help="Newest N jobs."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Jobs, newest first: kind, status, progress, the host that runs it, parent, result (or what it waits for)."""
    from vibestudio.training.jobs.runner import list_jobs, reconcile

    db = open_db()
    reconcile(db, start=False)
    jobs = [j for j in list_jobs(db, limit=limit) if status is None or j.status == status]
    if as_json:
        echo_json([job_dict(j) for j in jobs])
        return
    if not jobs:
        typer.echo("No jobs yet: `vibestudio train dpo --help`.")
    for j in jobs:
        progress = f"{100 * j.progress:3.0f}%" if j.progress is not None else "    "
        result = (
            f"contestant {j.contestant_id} ({j.contestant_state})"
            if j.contestant_id
            else (j.error or "").splitlines()[0][:60]
            if j.error
            else j.waiting or ""
        )
        typer.echo(
            f"{j.id:>4}  {j.kind:<6} {j.status:<9} {progress}  {(j.host or '-')[:24]:<24}  "
            f"parent {j.parent_contestant_id}  {result}"
        )


@jobs_app.command("show")
def jobs_show(job_id: int = typer.Argument(..., help="Job id."), as_json: bool = JSON_OPTION) -> None:
    """One job: status, config, last metrics, result, log tail."""
    from vibestudio.training.jobs.runner import reconcile

    db = open_db()
    reconcile(db, start=False)
    v = _view(db, job_id)
    if as_json:
        echo_json({**job_dict(v), "log_tail": v.log_tail})
        return
    progress = f" {100 * v.progress:.0f}%" if v.progress is not None else ""
    typer.echo(f"Job {v.id} · {v.kind} · {v.status}{progress}")
    if v.host:
        beat = f", last heartbeat {v.heartbeat_at:%Y-%m-%d %H:%M:%S} UTC" if v.heartbeat_at else ""
        typer.echo(f"host {v.host}{beat}")
    if v.queue_position is not None:
        typer.echo(f"position {v.queue_position} in the queue" + (f"; {v.waiting}" if v.waiting else ""))
    if v.contestant_id:
        step = f" (the checkpoint of step {v.contestant_step})" if v.contestant_step is not None else ""
        typer.echo(f"published as contestant id {v.contestant_id}{step}")
    if v.error:
        typer.echo(f"error: {v.error}")
    for name, value in sorted(job_dict(v)["metrics"].items()):
        typer.echo(f"  {name:<28} {value:.4g}")
    typer.echo(
        f"config: {v.config.get('kind')} from {v.config.get('parent_contestant')}, snapshot "
        f"{str(v.config.get('snapshot_hash'))[:12]}, {v.config.get('max_steps')} steps; log {v.log_path}"
    )


@jobs_app.command("cancel")
def jobs_cancel(job_id: int = typer.Argument(..., help="Job id."), as_json: bool = JSON_OPTION) -> None:
    """Cancel a queued or running job, from any host.

    It is cancelled in the database; its training process stops at its next heartbeat.
    """
    from vibestudio.training.jobs.errors import JobError
    from vibestudio.training.jobs.runner import cancel

    db = open_db()
    try:
        v = cancel(db, job_id)
    except JobError as exc:
        fail(str(exc))
    if as_json:
        echo_json(job_dict(v))
    else:
        typer.echo(f"Job {v.id} {v.status}.")


@jobs_app.command("resume")
def jobs_resume(
    job_id: int = typer.Argument(..., help="Job id (failed or cancelled)."),
    from_scratch: bool = typer.Option(False, help="Start over when its checkpoints are gone."),
    wait: bool = WAIT_OPTION,
    timeout: float = TIMEOUT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Continue a failed or cancelled job from its newest saved checkpoint."""
    from vibestudio.training.jobs.errors import JobError
    from vibestudio.training.jobs.runner import resume

    db = open_db()
    try:
        v = resume(db, job_id, from_scratch=from_scratch)
    except JobError as exc:
        fail(str(exc))
    if not wait:
        if as_json:
            echo_json(job_dict(v))
        else:
            typer.echo(f"Job {v.id} {v.status}.")
        return
    follow(db, job_id, timeout, as_json)


@jobs_app.command("logs")
def jobs_logs(
    job_id: int = typer.Argument(..., help="Job id."),
    lines: int = typer.Option(40, help="Last N lines."),
    follow_: bool = typer.Option(False, "--follow", "-f", help="Keep printing new lines until the job ends."),
) -> None:
    """The job's train.log (the job process's output)."""
    from vibestudio.training.jobs.runner import log_tail

    db = open_db()
    v = _view(db, job_id)
    typer.echo(log_tail(v.log_path, lines=lines, max_chars=1_000_000))
    if not follow_ or not v.log_path:
        return
    pos = Path(v.log_path).stat().st_size if Path(v.log_path).exists() else 0
    while True:
        time.sleep(1.0)
        if Path(v.log_path).exists():
            with open(v.log_path, "rb") as fh:
                fh.seek(pos)
                chunk = fh.read()
                pos += len(chunk)
            if chunk:
                typer.echo(chunk.decode("utf-8", errors="replace"), nl=False)
        if _view(db, job_id).done:
            return


@jobs_app.command("workers")
def jobs_workers(as_json: bool = JSON_OPTION) -> None:
    """The registered `vibestudio worker` processes: kinds served, live or not (heartbeat grace), jobs running."""
    from dataclasses import asdict

    from vibestudio.training.jobs.heartbeat import list_workers

    db = open_db(seed=False)
    rows = list_workers(db)
    if as_json:
        echo_json([asdict(w) for w in rows])
        return
    if not rows:
        typer.echo("No worker has registered: start one with `vibestudio worker`.")
    for w in rows:
        seen = f"{w.last_seen:%Y-%m-%d %H:%M:%S} UTC" if w.last_seen else "never"
        typer.echo(
            f"{w.name:<32} {'live' if w.alive else 'gone':<5} {','.join(w.kinds):<24} "
            f"{w.running}/{w.max_jobs} running  gpus {w.gpus or 'all'}  last seen {seen}"
        )
