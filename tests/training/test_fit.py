"""Real model sizes: per-GPU memory against published figures, and the refusal of a job that cannot fit.

The published figures and their sources live in ``training.jobs.fit.PUBLISHED`` (docs/training.md prints them)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.postgres import ONE_KIND
from vibestudio.training.jobs import fit
from vibestudio.training.jobs.config import config_from_dict
from vibestudio.training.jobs.estimate import Shape
from vibestudio.training.jobs.launcher import launch_dir
from vibestudio.training.jobs.service import check_config


def test_every_published_figure_is_matched_within_its_tolerance():
    rows = [(row, fit.agrees(row)) for row in fit.PUBLISHED]
    assert [(r.model, r.note) for r, ok in rows if ok is False] == []
    held = {r.model for r, ok in rows if ok}
    assert {"1.5B params", "7.5B params", "Llama-3.1-8B", "Llama-3.1-70B", "LLaMA-65B"} <= held
    assert "| 7.5B params | full fine-tuning in bf16 with ZeRO-3 on 64 GPUs" in fit.table()


def test_per_parameter_bytes_are_the_zero_papers_sixteen():
    shape = replace(Shape.from_config(fit.SHAPES["Llama-3.1-8B"]), params=10**9)
    full = fit.Setup(method="full")
    assert fit.model_states(shape, full) == 16e9
    assert fit.model_states(shape, replace(full, bf16=False)) == 16e9  # fp32: 4 + 4 + 8
    assert fit.model_states(shape, replace(full, zero=3, gpus=4)) == 4e9


@settings(max_examples=60, deadline=None)
@given(
    method=st.sampled_from(fit.METHODS),
    zero=st.integers(0, 3),
    gpus=st.sampled_from(fit.GPU_COUNTS),
    seq_len=st.integers(16, 4096),
    checkpointing=st.booleans(),
)
def test_more_sharding_lighter_methods_and_checkpointing_never_need_more(
    method, zero, gpus, seq_len, checkpointing
):
    shape = Shape.from_config(fit.SHAPES["Llama-3.1-8B"])
    setup = fit.Setup(method=method, zero=zero, gpus=gpus, seq_len=seq_len, checkpointing=checkpointing)
    need = fit.needed(shape, setup)
    assert fit.needed(shape, replace(setup, zero=min(zero + 1, 3))) <= need
    assert fit.needed(shape, replace(setup, gpus=gpus * 2)) <= need
    assert fit.needed(shape, replace(setup, checkpointing=True)) <= need
    lighter = fit.METHODS[min(fit.METHODS.index(method) + 1, 2)]
    assert fit.needed(shape, replace(setup, method=lighter)) <= need


def _base(folder: Path, name: str) -> str:
    """A base model folder holding only its config.json: the shape, no weights."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({**fit.SHAPES[name], "model_type": "llama"}))
    return str(folder)


@pytest.mark.parametrize("db", ONE_KIND, indirect=True)
def test_a_70b_full_fine_tune_on_one_gpu_is_refused_with_the_reason_and_what_fits(
    db, tiny_parent, make_snapshot, tmp_path
):
    config = {
        "kind": "dpo",
        "parent_contestant": "tiny-parent",
        "snapshot_hash": make_snapshot(8),
        "base_model": _base(tmp_path / "llama-70b", "Llama-3.1-70B"),
        "lora": False,
        "gpu_memory_gb": 80,
    }
    check = check_config(db, config)
    (refusal,) = [e.message for e in check.errors if "per GPU" in e.message]
    assert refusal.startswith("full fine-tuning in bf16 with ZeRO-0 on 1 GPU of a 70.6B model needs ~")
    assert "the GPUs: 1x80 GB (the config's gpu_memory_gb)" in refusal
    assert "would fit: QLoRA" in refusal and "ZeRO-3 on 64 GPUs" in refusal
    # the same base with QLoRA and checkpointing on that GPU passes the fit (QLoRA itself needs CUDA here)
    lighter = check_config(db, {**config, "lora": True, "qlora": True, "gradient_checkpointing": True})
    assert not [e for e in lighter.errors if "per GPU" in e.message]
    assert [e.field for e in lighter.errors] == ["qlora"]
    assert lighter.estimate is not None and lighter.estimate.fit.fits
    assert "per GPU: QLoRA r16" in lighter.estimate.summary()


def test_the_gpu_facts_come_from_torch_cuda_when_present_else_the_config(monkeypatch):
    import torch

    cfg = config_from_dict({"kind": "dpo", "gpu_memory_gb": 24})
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert fit.gpus_for(config_from_dict({"kind": "dpo"})) is None
    assert fit.gpus_for(cfg) == fit.Gpus(1, 24e9, "the config's gpu_memory_gb")

    class Props:  # what torch.cuda reports for an H100 (no GPU on the machine that runs this test)
        name, total_memory = "NVIDIA H100 80GB HBM3", 85_045_231_616

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 8)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: Props())
    found = fit.gpus_for(cfg)
    assert found == fit.Gpus(1, 85_045_231_616.0, "torch.cuda: NVIDIA H100 80GB HBM3, 8 visible")


def test_the_zero_stage_comes_from_the_jobs_accelerate_config():
    launch_dir().mkdir(parents=True, exist_ok=True)
    (launch_dir() / "z3.yaml").write_text(
        "distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\n", encoding="utf-8"
    )
    (launch_dir() / "fsdp.yaml").write_text(
        "distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: SHARD_GRAD_OP\n", encoding="utf-8"
    )
    on = {"kind": "dpo", "launcher": "accelerate", "num_processes": 4}
    assert fit.zero_stage(config_from_dict({**on, "accelerate_config": "z3.yaml"})) == 3
    assert fit.zero_stage(config_from_dict({**on, "accelerate_config": "fsdp.yaml"})) == 2
    assert fit.zero_stage(config_from_dict({"kind": "dpo"})) == 0


def test_the_docs_hold_the_table_the_script_prints():
    docs = (Path(__file__).resolve().parents[2] / "docs" / "training.md").read_text(encoding="utf-8")
    assert fit.table() in docs
