"""Checks before launch, without starting anything: field-level errors, GRPO without rewards, a judge that is
down, a deleted checkpoint on resume, a double launch, the on-policy mix, a reward that raises on some answers."""

from __future__ import annotations

import socket

import pytest
from sqlalchemy import func, select

from tests.helpers.training import pair_rows
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.models import Job, JobMetric
from vibestudio.training.jobs import runner
from vibestudio.training.jobs.config import parse_config_text
from vibestudio.training.jobs.errors import JobError
from vibestudio.training.jobs.service import check_config, launch, launch_config, snapshot_mix
from vibestudio.training.objectives.pairmix import filter_rows, pair_mix
from vibestudio.training.objectives.rewards import build_rewards


def _jobs(db) -> int:
    with db.session() as s:
        return s.scalar(select(func.count(Job.id))) or 0


def test_every_bad_field_is_reported_by_name():
    cfg, errors = parse_config_text(
        "kind: dpo\nmax_steps: many\nbeta: [1]\nfavourite_colour: blue\nlora: 3\n"
    )
    assert cfg is None
    assert {e.field for e in errors} == {"max_steps", "beta", "favourite_colour", "lora"}
    _, errors = parse_config_text("kind: dpo\nmax_steps: 0\n")
    assert [e.field for e in errors] == ["max_steps"]
    _, errors = parse_config_text("kind: grpo\nrewards: []\n")
    assert errors[0].field == "rewards" and "at least one reward" in errors[0].message
    _, errors = parse_config_text("kind: grpo\nnum_generations: 3\n")
    assert errors[0].field == "per_device_train_batch_size"
    _, errors = parse_config_text("kind: dpo\nbeta: 0.1\n  steps: [\n")
    assert errors[0].field == "" and "line 3" in errors[0].message
    _, errors = parse_config_text("- just\n- a list\n")
    assert "mapping" in errors[0].message
    _, errors = parse_config_text("kind: ppo\n")
    assert errors[0].field == "kind"


def test_check_config_shows_estimate_and_mix_and_writes_nothing(db, tiny_parent, make_snapshot):
    snap = make_snapshot(8)
    check = check_config(db, {"kind": "dpo", "parent_contestant": "tiny-parent", "snapshot_hash": snap[:10]})
    assert check.ok, check.errors
    assert check.estimate is not None and check.estimate.fits
    assert check.mix == {"on": 0, "half": 0, "off": 0, "unknown": 8, "total": 8}
    assert "kind: dpo" in check.yaml and "snapshot_hash" in check.yaml
    bad = check_config(
        db,
        "kind: dpo\nparent_contestant: nobody\nsnapshot_hash: feedbeef\noutput_name: tiny-parent\n",
    )
    assert {e.field for e in bad.errors} >= {"parent_contestant", "snapshot_hash", "output_name"}
    huge = check_config(
        db,
        {
            "kind": "dpo",
            "parent_contestant": "tiny-parent",
            "snapshot_hash": snap,
            "per_device_train_batch_size": 100000,
            "max_length": 100000,
        },
    )
    assert [e.field for e in huge.errors] == ["per_device_train_batch_size"]
    assert "GiB" in huge.errors[0].message
    assert _jobs(db) == 0


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_grpo_with_a_judge_that_is_down_is_refused_before_launch(db, tiny_parent, make_snapshot):
    snap = make_snapshot(8)
    with db.session() as s:
        register(
            s,
            ContestantSpec(
                "remote-judge",
                engine="openai",
                model_ref="judge-model",
                engine_config={"base_url": f"http://127.0.0.1:{_dead_port()}/v1"},
            ),
        )
    rewards = [{"type": "judge", "judge": "remote-judge"}]
    with pytest.raises(JobError, match="contestant 'remote-judge' is down.*does not answer"):
        launch(db, "grpo", "tiny-parent", snap, rewards=rewards)
    with pytest.raises(JobError, match="at least one reward function"):
        launch(db, "grpo", "tiny-parent", snap, rewards=[])
    check = check_config(
        db, {"kind": "grpo", "parent_contestant": "tiny-parent", "snapshot_hash": snap, "rewards": rewards}
    )
    assert [e.field for e in check.errors] == ["rewards"]
    assert _jobs(db) == 0


def test_resume_refuses_when_the_saved_checkpoint_was_deleted(db, tiny_parent, make_snapshot):
    snap = make_snapshot(8)
    cfg = {"kind": "dpo", "parent_contestant": "tiny-parent", "snapshot_hash": snap, "save_steps": 2}
    job_id = runner.submit(db, "dpo", check_config(db, cfg).config, start=False)
    runner.finish(db, job_id, "failed", "boom")
    with db.session() as s:
        s.add(JobMetric(job_id=job_id, step=3, name="progress", value=3 / 16))
    with pytest.raises(JobError, match="no checkpoint is left .*deleted"):
        runner.resume(db, job_id)
    assert runner.job_view(db, job_id).status == "failed"
    # A double launch of the same config is refused while the first is queued.
    queued = runner.submit(db, "dpo", check_config(db, {**cfg, "save_steps": 3}).config, start=False)
    with pytest.raises(JobError, match=f"job {queued} with exactly this config is already queued"):
        runner.submit(db, "dpo", check_config(db, {**cfg, "save_steps": 3}).config, start=False)


def test_pair_mix_counts_and_filters_by_who_wrote_the_answers(db, tiny_parent, make_snapshot):
    rows = pair_rows(6)
    writers = [
        ("tiny-parent", "tiny-parent"),
        ("tiny-parent", "other"),
        ("other", "tiny-parent"),
        ("other", "third"),
        ("tiny-parent", "tiny-parent"),
        (None, None),
    ]
    for r, (a, b) in zip(rows, writers, strict=True):
        r["provenance"] = {"source": "arena_vote", "chosen_model": a, "rejected_model": b}
    assert pair_mix(rows, "tiny-parent") == {"on": 2, "half": 2, "off": 1, "unknown": 1, "total": 6}
    assert len(filter_rows(rows, "tiny-parent", "on_and_half")) == 4
    snap = make_snapshot(rows=rows)
    assert snapshot_mix(db, snap, "tiny-parent")["on"] == 2
    with pytest.raises(JobError, match="on_policy keeps 2 of 6 pairs"):
        launch_config(
            db,
            {"kind": "dpo", "parent_contestant": "tiny-parent", "snapshot_hash": snap, "pairs": "on_policy"},
        )
    check = check_config(
        db, {"kind": "dpo", "parent_contestant": "tiny-parent", "snapshot_hash": snap, "pairs": "on_policy"}
    )
    assert [e.field for e in check.errors] == ["pairs"]


def test_a_reward_that_raises_on_some_answers_scores_the_rest():
    funcs, _ = build_rewards(
        [{"type": "exact_match", "extract": r"answer: (\d+)"}, {"type": "length", "max": 5}]
    )

    def picky(prompts, completions, **_):
        return [1.0 / (len(completion) - 3) for completion in completions]  # "abc" divides by zero

    from vibestudio.training.objectives.rewards import Guarded

    guarded = Guarded(picky, "picky")
    assert guarded(["p", "p", "p"], ["abcd", "abc", "abcde"]) == [1.0, None, 0.5]
    assert guarded.errors == 1
    with pytest.raises(RuntimeError, match="picky failed on every answer"):
        guarded(["p"], ["abc"])
    assert [f.__name__ for f in funcs] == ["exact_match", "length"]


def test_one_check_reports_every_problem_at_once_for_the_page_and_the_worker(db, tiny_parent, make_snapshot):
    """A config wrong in four ways: the Train tab's check and the launch-time preflight are one check, so both
    name all four (and the same four), instead of the first one they meet."""
    from vibestudio.training.jobs.config import make_config
    from vibestudio.training.jobs.preflight import preflight

    make_snapshot(8)
    bad = {
        "kind": "grpo",
        "parent_contestant": "nobody",
        "snapshot_hash": "feedbeef",
        "output_name": "tiny-parent",
        "rewards": [{"type": "reward_model", "job": 99}],
    }
    check = check_config(db, bad)
    assert sorted(e.field for e in check.errors) == [
        "output_name",
        "parent_contestant",
        "rewards",
        "snapshot_hash",
    ]
    cfg = make_config(**bad)
    with db.session() as s, pytest.raises(JobError) as info:
        preflight(s, cfg)
    said = str(info.value)
    for e in check.errors:
        assert f"{e.field}: {e.message}" in said
    blank = check_config(db, {"kind": "dpo", "parent_contestant": " ", "snapshot_hash": ""})
    assert blank.errors[0].field == "parent_contestant" and "base_model" in blank.message()


def test_a_job_kind_is_registered_once_for_its_config_and_its_trainer():
    from pathlib import Path

    from vibestudio.training.jobs import job_process
    from vibestudio.training.jobs.config import CONFIG_KINDS, JOB_KINDS

    assert set(job_process.TRAINERS) == set(CONFIG_KINDS) == set(JOB_KINDS)
    root = Path(__file__).resolve().parents[2]
    for kind, registered in JOB_KINDS.items():
        assert CONFIG_KINDS[kind] is registered.config and registered.config.kind == kind
        module, func = registered.trainer.split(":")
        source = (root / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8")
        assert f"def {func}(" in source  # without importing torch
    with pytest.raises(ValueError, match="no trainer for job kind 'ppo'"):
        job_process.trainer_for("ppo")
