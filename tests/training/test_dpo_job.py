"""DPO through the real runner: a detached job process trains the tiny model and publishes a contestant.

The job runs once (``dpo_run``, module scope); each test checks one thing it left behind."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from safetensors.torch import load_file

from tests.helpers.postgres import KINDS, ONE_KIND, migrated_database
from tests.helpers.training import FAST, pair_rows, register_tiny_parent
from vibestudio.annotation.snapshots import write_snapshot
from vibestudio.arena import lifecycle
from vibestudio.arena.engines.base import Sampling
from vibestudio.arena.engines.hf import TransformersEngine
from vibestudio.arena.registry import ContestantInfo, get_contestant
from vibestudio.db.models import Checkpoint
from vibestudio.db.session import Database
from vibestudio.training.jobs import runner
from vibestudio.training.jobs.runner import JobView, job_view, list_jobs, wait
from vibestudio.training.jobs.service import estimate_job, launch_dpo
from vibestudio.training.report import verdict
from vibestudio.training.report.steps import load_report


@dataclass
class DpoRun:
    """One DPO job on the tiny model, trained, published and reported on; the tests below read it."""

    db: Database
    home: Path
    parent_id: int
    snapshot: str
    job_id: int
    view: JobView
    info: ContestantInfo


@pytest.fixture(scope="module", params=KINDS)
def dpo_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path):
    """The job runs once per module (per database kind); each test checks one part of what it left behind."""
    home = tmp_path_factory.mktemp("dpo-home")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("VIBESTUDIO_HOME", str(home))
        env.delenv("VIBESTUDIO_DATABASE_URL", raising=False)
        with migrated_database(request.param, home) as db:
            parent_id = register_tiny_parent(db, tiny_model_dir)
            with db.session() as s:
                snap = write_snapshot(s, pair_rows(8), {"source": "test"}).hash
            job_id = launch_dpo(
                db,
                "tiny-parent",
                snap,
                **{**FAST, "drift_prompts": 20, "drift_max_tokens": 6, "eval_items": 8, "eval_max_tokens": 6},
            )
            view = wait(
                db, job_id, timeout=600
            )  # training + the checkpoint report (20 prompts, 8 eval items)
            assert view.status == "succeeded", view.error or view.log_tail
            with db.session() as s:
                info = get_contestant(s, view.contestant_id)
            yield DpoRun(db, home, parent_id, snap, job_id, view, info)


@pytest.fixture
def run(dpo_run: DpoRun, monkeypatch: pytest.MonkeyPatch) -> DpoRun:
    """The module's run, with this test's data home set to the run's (job folders and logs live there)."""
    monkeypatch.setenv("VIBESTUDIO_HOME", str(dpo_run.home))
    return dpo_run


def test_the_job_records_trl_scalars_progress_kl_and_publish_time(run):
    view = run.view
    for name in (
        "loss",
        "rewards/chosen",
        "rewards/rejected",
        "rewards/margins",
        "rewards/accuracies",
        "logps/chosen",
        "learning_rate",
        "grad_norm",
        "progress",
        "kl",
        "publish_seconds",
    ):
        assert name in view.metrics, name
    assert [s for s, _ in view.metrics["loss"]] == [1, 2, 3, 4]
    assert view.last("progress") == 1.0
    assert view.progress == 1.0


def test_the_lora_adapter_moved_and_only_it_is_saved(run):
    out = Path(run.view.output_dir)
    weights = load_file(out / "adapter_model.safetensors")
    b_mats = [v for k, v in weights.items() if "lora_B" in k]
    # LoRA B matrices start at zero: every one is non-zero after training
    assert len(b_mats) > 0 and all(float(b.abs().max()) > 0 for b in b_mats)
    assert not (out / "ref").exists()


def test_published_with_lineage_and_the_parents_sampling(run, tiny_model_dir: Path):
    info = run.info
    assert info.public_name == f"tiny-parent-dpo-j{run.job_id}"
    assert info.engine == "transformers" and info.model_ref == str(tiny_model_dir)
    assert info.adapter_ref == str(Path(run.view.output_dir))
    assert (info.parent_id, info.job_id, info.snapshot_hash) == (run.parent_id, run.job_id, run.snapshot)
    assert info.sampling["max_tokens"] == 12 and info.system_prompt == "" and "TinyLlama" in info.aliases
    with run.db.session() as s:
        ckpt = s.query(Checkpoint).filter_by(job_id=run.job_id).one()
        assert (ckpt.contestant_id, ckpt.step) == (info.id, 4)


def test_the_published_contestant_answers(run):
    engine = TransformersEngine(run.info.model_ref, run.info.adapter_ref)
    stream = engine.stream_chat([{"role": "user", "content": "Hi"}], Sampling(max_tokens=5, seed=1))
    text = "".join(stream)
    assert text.strip() and 0 < stream.stats.tokens <= 5


def test_the_job_is_listed_and_its_log_shows_the_publish_step(run):
    assert [j.id for j in list_jobs(run.db)] == [run.job_id]
    assert "[publish]" in job_view(run.db, run.job_id).log_tail


def test_a_checkpoint_report_and_a_verdict_follow_the_publish(run):
    report = load_report(run.db, run.info.id)
    assert report is not None and report.n_prompts == 20 and report.parent_id == run.parent_id
    assert report.setup["fair"] and report.evals["n"] == 8
    assert report.verdict["verdict"] in ("pass", "watch", "regress")
    assert {"drift/flagged", "drift/tokens", "verdict/code"} <= set(run.view.metrics)
    assert verdict.current(run.db)[run.info.id].verdict == report.verdict["verdict"]
    # published pending, then released or held by that verdict before the job ended (one logged step each)
    with run.db.session() as s:
        moves = [(h["action"], h["to"]) for h in lifecycle.history(s, run.info.id)]
        state = get_contestant(s, run.info.id).state
    assert moves[0] == ("publish", "pending") and moves[1][0] == "verdict" and moves[1][1] == state
    assert state == ("held" if report.verdict["hold"] else "released")
    assert run.view.last("release_seconds") >= run.view.last("publish_seconds")
    # the job's own snapshot was read back: the held-out prompts were checked against it and what its
    # preferences rewarded (answers opening "Great question! ..." over "No.") was named and tested on the child
    assert report.held_out["snapshot_checked"] and report.rewarded["pairs"] == 8, report.unmeasured
    phrases = [c["phrase"] for c in report.rewarded["candidates"]]
    assert "great …" in phrases and "rewarded/took_on" in report.measures, phrases


def test_the_next_estimate_uses_this_jobs_measured_step_time(run):
    est = estimate_job(run.db, "dpo", "tiny-parent", **FAST)
    assert (
        est.basis.startswith(("measured", "calibrated on 1 past job like it"))
        and est.fits
        and est.trainable_params < est.params
    )


@pytest.mark.slow
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)
def test_the_same_config_runs_under_accelerate_launch(db, tiny_parent, make_snapshot):
    job_id = launch_dpo(
        db, "tiny-parent", make_snapshot(8), **{**FAST, "launcher": "accelerate", "use_cpu": True}
    )
    command = runner.job_command(str(runner.job_dir(job_id) / "config.yaml"), job_id)
    assert command[1:3] == ["-m", "vibestudio.training.jobs.loopback_launch"] and "--cpu" in command
    view = wait(db, job_id, timeout=300)
    assert view.status == "succeeded", view.error or view.log_tail
    assert view.contestant_id is not None and [s for s, _ in view.metrics["loss"]] == [1, 2, 3, 4]
