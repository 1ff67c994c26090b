"""``vibestudio worker``: claim queued training jobs from the database and run them on this host.

A thin layer over ``training.jobs.workers.WorkerService``. ``jobs workers`` (in ``jobs.py``) lists the
registered ones.
"""

import os
import signal
import threading
from pathlib import Path

import typer

from vibestudio.studio.cli._common import fail


def worker(
    gpus: str = typer.Option(
        None, help="Devices for the training processes, e.g. 0,1 (sets CUDA_VISIBLE_DEVICES); default: all."
    ),
    kinds: str = typer.Option(
        None,
        help="Job kinds to claim, e.g. dpo,grpo (checkpoint reports come with any); default: every kind.",
    ),
    max_jobs: int = typer.Option(1, min=1, help="Jobs this worker runs at once."),
    host_name: str = typer.Option(
        None,
        help="The identity jobs record as their host (default: this host's name, the process id and a random token).",
    ),
    data_home: Path = typer.Option(
        None,
        help="Data home of this worker: job folders, converted models (default: VIBESTUDIO_HOME). The published "
        "checkpoints are written here, so the app must be able to read this path.",
    ),
    exit_after: int = typer.Option(
        None,
        min=1,
        help="Stop after this many claimed jobs have ended (scripts and tests); default: serve on.",
    ),
) -> None:
    """Claim queued training jobs from the database and run them on this host.

    Claims are atomic (row locks that skip locked rows on PostgreSQL); each job heartbeats while it runs.
    A job cancelled from any host stops at its next heartbeat.
    The jobs' inputs (snapshot files, parent checkpoints) must be at the paths the app recorded.
    See docs/deployment.md, "Workers and checkpoints". SIGTERM or Ctrl-C stops it (its running jobs fail).
    """
    from vibestudio.training.jobs.workers import WorkerService, default_name, parse_gpus, parse_kinds

    try:
        served, devices = parse_kinds(kinds), parse_gpus(gpus)
    except ValueError as exc:
        fail(str(exc))
    name = (host_name or default_name()).strip()
    if not name or len(name) > 255 or any(not c.isprintable() for c in name):
        fail("--host-name must be 1 to 255 printable characters")
    if data_home is not None:  # what this process and its training processes read as their data home
        os.environ["VIBESTUDIO_HOME"] = str(data_home.expanduser().resolve())
    from vibestudio.db.session import Database
    from vibestudio.db.session import data_home as home

    db = Database()
    db.migrate()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    service = WorkerService(db, name, served, devices, max_jobs, home())
    try:
        service.run(stop, max_claims=exit_after)
    finally:
        db.dispose()


def register(root: typer.Typer) -> None:
    root.command("worker")(worker)
