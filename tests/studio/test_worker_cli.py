"""``vibestudio worker`` and ``jobs workers|list`` on the command line: bad options refused with a clear line,
the registry and the host column shown, a kind nobody serves said in ``jobs list``."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from vibestudio.db.models import Job
from vibestudio.db.session import Database
from vibestudio.studio.cli import app
from vibestudio.training.jobs.heartbeat import register_worker, touch_worker
from vibestudio.training.jobs.workers import claim, parse_kinds


def _run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_bad_worker_options_are_refused_before_anything_runs(tmp_path):
    for args, msg in (
        (["--kinds", "dpo,ppo"], "unknown job kind(s) ppo"),
        (["--gpus", "0;1"], "device indices"),
        (["--host-name", "bad\nname"], "--host-name must be 1 to 255 printable characters"),
    ):
        result = _run("worker", *args, "--data-home", str(tmp_path / "w"))
        assert result.exit_code == 1 and msg in result.output, result.output
    assert not (tmp_path / "w").exists()


def test_jobs_workers_and_jobs_list_show_hosts_and_what_waits(tmp_path, monkeypatch):
    monkeypatch.setenv("VIBESTUDIO_JOBS", "workers")
    db = Database()
    db.migrate()
    with db.session() as s:
        s.add_all([Job(kind="dpo", config={"kind": "dpo"}), Job(kind="grpo", config={"kind": "grpo"})])
    register_worker(db, "gpu-a", parse_kinds("dpo"), "0,1", 2, "/srv/vs")
    running = claim(db, "gpu-a", parse_kinds("dpo"))
    result = _run("jobs", "workers")
    assert result.exit_code == 0, result.output
    assert "gpu-a" in result.output and "live" in result.output and "1/2 running" in result.output
    listed = json.loads(_run("jobs", "list", "--json").output)
    by_kind = {j["kind"]: j for j in listed}
    assert by_kind["dpo"]["id"] == running and by_kind["dpo"]["host"] == "gpu-a"
    assert by_kind["grpo"]["waiting"] == "waiting for a worker that serves grpo"
    text = _run("jobs", "list").output
    assert "waiting for a worker that serves grpo" in text and "gpu-a" in text
    touch_worker(db, "gpu-a", stopped=True)  # it left cleanly: listed as gone, and grpo still waits
    assert "gone" in _run("jobs", "workers").output
    db.dispose()
