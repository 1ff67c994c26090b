"""``vibestudio train dpo|kto|orpo|simpo|reward|grpo`` and ``vibestudio jobs ...`` on real job processes (tiny model)."""

from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

from vibestudio.studio.cli import app
from vibestudio.training.jobs import runner

FAST = ["--set", "kl_prompts=0", "--set", "drift_prompts=0", "--lr", "5e-3"]


def _run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_help_for_every_command():
    for cmd in (
        ["train", "dpo"],
        ["train", "reward"],
        ["train", "grpo"],
        ["train", "kto"],
        ["train", "orpo"],
        ["train", "simpo"],
        ["jobs", "list"],
        ["jobs", "show"],
        ["jobs", "cancel"],
        ["jobs", "resume"],
        ["jobs", "logs"],
    ):
        r = _run(*cmd, "--help")
        assert r.exit_code == 0, r.output
        assert "Usage" in r.output


def test_bad_input_is_refused_before_anything_starts(home_db):
    db, snap = home_db
    r = _run("train", "grpo", "--parent", "tiny-parent", "--snapshot", snap)
    assert r.exit_code == 1 and "needs at least one reward function" in r.output
    r = _run(
        "train",
        "dpo",
        "--parent",
        "tiny-parent",
        "--snapshot",
        snap,
        "--set",
        "max_steps=lots",
        "--set",
        "colour=blue",
        "--json",
    )
    assert r.exit_code == 1
    out = json.loads(r.stdout)
    assert {e["field"] for e in out["errors"]} == {"max_steps", "colour"}
    r = _run("train", "grpo", "--parent", "tiny-parent", "--snapshot", snap, "--reward", "lenght:max=3")
    assert r.exit_code == 1 and "rewards" in r.output
    r = _run("jobs", "resume", "99")
    assert r.exit_code == 1 and "no job 99" in r.output
    assert runner.list_jobs(db) == []
    r = _run("train", "dpo", "--parent", "tiny-parent", "--snapshot", snap[:8], "--dry-run", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["ok"] and out["fits"] and out["config"]["snapshot_hash"] == snap[:8]
    assert "GiB" in out["estimate"] and out["pair_mix"]["unknown"] == 8
    assert runner.list_jobs(db) == []


def test_kto_dry_run_shows_the_classes_and_refuses_a_threshold_off_the_scale(home_db):
    db, snap = home_db
    r = _run("train", "kto", "--parent", "tiny-parent", "--snapshot", snap, "--dry-run", "--json")
    assert r.exit_code == 0, r.output
    balance = json.loads(r.stdout)["balance"]
    assert (balance["desirable"], balance["undesirable"], balance["in_range"]) == (8, 8, True)
    r = _run("train", "kto", "--parent", "tiny-parent", "--snapshot", snap, "--dry-run")
    assert "# KTO classes: 8 desirable / 8 undesirable answers" in r.output
    args = ("--score-criterion", "helpfulness", "--desirable-threshold", "6", "--json")
    r = _run("train", "kto", "--parent", "tiny-parent", "--snapshot", snap, *args)
    assert r.exit_code == 1
    assert [e["field"] for e in json.loads(r.stdout)["errors"]] == ["desirable_threshold"]
    r = _run(
        "train", "simpo", "--parent", "tiny-parent", "--snapshot", snap, "--simpo-gamma", "0.8", "--dry-run"
    )
    assert r.exit_code == 0 and "simpo_gamma: 0.8" in r.output
    assert runner.list_jobs(db) == []


def test_a_broken_config_file_is_named_with_its_line(home_db, tmp_path):
    db, _ = home_db
    bad = tmp_path / "job.yaml"
    bad.write_text("kind: dpo\nmax_steps: [1,\n", encoding="utf-8")
    r = _run("train", "dpo", "--config", str(bad), "--dry-run")
    assert r.exit_code == 1 and f"{bad}:2: not valid YAML: the '[' opened here is not closed" in r.output
    bad.write_bytes(b"kind: dpo\nparent_contestant: \xff\n")
    r = _run("train", "dpo", "--config", str(bad), "--dry-run")
    assert r.exit_code == 1 and "not valid utf-8" in r.output
    r = _run("train", "dpo", "--config", str(tmp_path / "missing.yaml"), "--dry-run")
    assert r.exit_code == 1 and "cannot read the file" in r.output
    assert runner.list_jobs(db) == []


@pytest.mark.slow
def test_grpo_then_cancel_and_resume_from_the_cli(home_db):
    db, snap = home_db
    r = _run(
        "train",
        "grpo",
        "--parent",
        "tiny-parent",
        "--snapshot",
        snap,
        "--steps",
        "2",
        "--batch-size",
        "2",
        "--num-generations",
        "2",
        "--max-completion-length",
        "8",
        "--reward",
        "length:max=5",
        "--reward",
        "{type: format, format: no_emoji, weight: 0.5}",
        "--set",
        "drift_prompts=0",
        "--lr",
        "5e-3",
        "--timeout",
        "300",
        "--json",
    )
    assert r.exit_code == 0, r.output
    done = json.loads(r.stdout)
    assert done["status"] == "succeeded" and done["contestant_id"]
    assert "rewards/length/mean" in done["metrics"]
    listed = json.loads(_run("jobs", "list", "--json").stdout)
    assert [j["id"] for j in listed] == [done["id"]]
    shown = json.loads(_run("jobs", "show", str(done["id"]), "--json").stdout)
    assert shown["config"]["rewards"][1] == {"type": "format", "format": "no_emoji", "weight": 0.5}
    assert "[grpo]" in _run("jobs", "logs", str(done["id"])).output

    # A longer DPO job saving every step: cancel it mid-way, then resume from its last checkpoint.
    r = _run(
        "train",
        "dpo",
        "--parent",
        "tiny-parent",
        "--snapshot",
        snap,
        "--steps",
        "12",
        "--save-steps",
        "2",
        *FAST,
        "--no-wait",
        "--json",
    )
    assert r.exit_code == 0, r.output
    job_id = json.loads(r.stdout)["id"]
    deadline = time.monotonic() + 180
    while len(runner.saved_checkpoints(job_id)) < 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert runner.saved_checkpoints(job_id), runner.job_view(db, job_id).log_tail
    r = _run("jobs", "cancel", str(job_id), "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["status"] == "cancelled"
    assert not runner.pid_alive(runner.job_view(db, job_id).pid)
    assert _run("jobs", "cancel", str(job_id)).exit_code == 1  # already cancelled: a clear refusal
    step = runner.saved_checkpoints(job_id)[-1][0]
    r = _run("jobs", "resume", str(job_id), "--timeout", "600", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["status"] == "succeeded"
    assert "resuming from" in runner.log_tail(runner.job_view(db, job_id).log_path, lines=400)
    assert step >= 1
