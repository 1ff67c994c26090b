"""Slow: a few LoRA DPO steps on the real SmolLM2-135M (the HF conversion of the shipped GGUF), published and played."""

from __future__ import annotations

import pytest

from arena.engines.base import Sampling
from arena.registry import BUILTIN_HF, engine_for, ensure_defaults, get_contestant
from tests.helpers.training import pair_rows
from training.runner import wait
from training.service import launch_dpo


# SQLite only: this test is about the real model (seven minutes of CPU); the training loop's database path on
# PostgreSQL is covered by the tiny-model jobs (tests/training/test_dpo_job.py, tests/test_loop.py).
@pytest.mark.slow
@pytest.mark.parametrize("db", ["sqlite"], indirect=True)
def test_lora_dpo_on_smollm2(db, make_snapshot):
    with db.session() as s:
        ensure_defaults(s)
    snap = make_snapshot(rows=pair_rows(8))
    job_id = launch_dpo(db, "smollm2-plain", snap, max_steps=3, kl_prompts=2, kl_max_new_tokens=16)
    view = wait(db, job_id, timeout=900)
    assert view.status == "succeeded", view.error or view.log_tail
    assert len(view.metrics["loss"]) == 3 and "kl" in view.metrics
    with db.session() as s:
        info = get_contestant(s, view.contestant_id)
    assert info.model_ref == BUILTIN_HF and info.adapter_ref and info.engine == "transformers"
    assert info.public_name == f"smollm2-plain-dpo-j{job_id}"
    text = "".join(
        engine_for(info).stream_chat([{"role": "user", "content": "Say hi."}], Sampling(max_tokens=8, seed=0))
    )
    assert text.strip()
