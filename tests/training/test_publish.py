"""Publishing without training: lineage fields, vLLM parents, reward models stay out of the arena."""

from __future__ import annotations

import time
from pathlib import Path

from vibestudio.arena.registry import ContestantSpec, get_contestant, register
from vibestudio.db.models import Checkpoint, Job
from vibestudio.training.jobs.config import make_config
from vibestudio.training.jobs.metrics import MetricWriter
from vibestudio.training.jobs.preflight import preflight
from vibestudio.training.objectives.context import JobContext, TrainResult
from vibestudio.training.publishing.publish import publish


def _publish(db, cfg, tmp_path: Path, adapter: bool = True):
    with db.session() as s:
        checked = preflight(s, cfg)
        job = Job(kind=cfg.kind, config=cfg.to_dict(), status="running")
        s.add(job)
        s.flush()
        job_id = job.id
    ctx = JobContext(job_id, cfg, checked, tmp_path, MetricWriter(db, job_id))
    result = TrainResult(tmp_path / "output", adapter, 3, 1.0, time.perf_counter())
    return checked, publish(db, ctx, result)


def test_lora_child_of_a_vllm_parent_plays_on_the_parents_server(db, tiny_model_dir, make_snapshot, tmp_path):
    config = {"base_url": "http://127.0.0.1:8000/v1"}
    with db.session() as s:
        register(
            s,
            ContestantSpec(
                "served",
                engine="vllm",
                model_ref=str(tiny_model_dir),
                engine_config=config,
                sampling={"max_tokens": 40},
            ),
        )
    cfg = make_config(
        "dpo", parent_contestant="served", snapshot_hash=make_snapshot(4), output_name="served-v2"
    )
    checked, published = _publish(db, cfg, tmp_path)
    assert checked.base.model_ref == str(tiny_model_dir)  # the checkpoint the server loads is what trains
    with db.session() as s:
        child = get_contestant(s, published.contestant_id)
        ckpt = s.get(Checkpoint, published.checkpoint_id)
    assert child.engine == "vllm" and child.engine_config == config
    assert child.adapter_ref == str(tmp_path / "output") and child.model_ref == str(tiny_model_dir)
    assert child.sampling == {"max_tokens": 40} and child.public_name == "served-v2"
    assert ckpt.contestant_id == child.id and ckpt.step == 3
    assert published.seconds >= 0 and child.job_id == ckpt.job_id


def test_reward_model_is_a_checkpoint_not_a_contestant(db, tiny_parent, make_snapshot, tmp_path):
    cfg = make_config("reward", parent_contestant="tiny-parent", snapshot_hash=make_snapshot(4))
    _, published = _publish(db, cfg, tmp_path)
    assert published.contestant_id is None and published.public_name is None
    with db.session() as s:
        assert s.get(Checkpoint, published.checkpoint_id).contestant_id is None
