"""Slow: LoRA DPO on the real SmolLM2-135M (the HF conversion of the shipped GGUF) and the gate it passes through.

A child of ``smollm2-warm`` is trained a few steps, published pending and reported on by the job's process
while this test keeps drawing anonymous battles; none draws the child before its verdict is recorded. The child is
a llama.cpp contestant in the form that keeps its training (``training.publishing.fidelity``), named after its job, and answers. Prints the time from training end to
the verdict (``release_seconds``). One real-model job covers both, so the slow lane trains SmolLM2 once."""

from __future__ import annotations

import random
import threading
import time

import pytest
from sqlalchemy import select

from tests.helpers.training import pair_rows
from vibestudio.arena.battles import ArenaService
from vibestudio.arena.engines.base import Sampling
from vibestudio.arena.registry import engine_for, ensure_defaults, get_contestant
from vibestudio.db.models import Battle, ContestantEvent
from vibestudio.training.jobs.runner import wait
from vibestudio.training.jobs.service import launch_dpo


@pytest.mark.slow
@pytest.mark.timeout(3000)  # training, then the report: minutes each on a CPU
@pytest.mark.parametrize("db", ["sqlite"], indirect=True)
def test_smollm2_child_plays_only_after_its_verdict(db, make_snapshot):
    with db.session() as s:
        ensure_defaults(s)
    snap = make_snapshot(rows=pair_rows(8))
    job_id = launch_dpo(
        db, "smollm2-warm", snap, max_steps=3, kl_prompts=2, kl_max_new_tokens=8,
        drift_prompts=20, drift_max_tokens=24, eval_items=4, eval_max_tokens=24,
    )  # fmt: skip
    arena, stop, draws = ArenaService(db, rng=random.Random(0)), threading.Event(), [0]

    def keep_drawing() -> None:
        while not stop.is_set():
            arena.start_battle()
            draws[0] += 1
            time.sleep(0.25)

    drawer = threading.Thread(target=keep_drawing, daemon=True)
    drawer.start()
    view = wait(db, job_id, timeout=3000)
    stop.set()
    drawer.join(10)
    assert view.status == "succeeded", view.error or view.log_tail
    child = view.contestant_id
    with db.session() as s:
        events = {
            e.action: e
            for e in s.scalars(select(ContestantEvent).where(ContestantEvent.contestant_id == child))
        }
        with_child = s.scalars(select(Battle).where((Battle.a_id == child) | (Battle.b_id == child))).all()
    decided = events["verdict"]
    assert events["publish"].to_state == "pending" and decided.to_state in ("released", "held")
    assert all(b.created_at >= decided.created_at for b in with_child)
    release = view.last("release_seconds")
    print(
        f"\n[gate] {draws[0]} anonymous draws during the job; child {decided.to_state} "
        f"{release:.1f} s after training ended (report {view.last('drift_seconds'):.1f} s); "
        f"{len(with_child)} battles drew it, none before its verdict"
    )
    assert draws[0] > 20 and release is not None and release > 0
    assert len(view.metrics["loss"]) == 3 and "kl" in view.metrics
    with db.session() as s:
        info = get_contestant(s, child)
    # published on its parent's engine in the form that keeps its training (training.publishing.fidelity): a few DPO
    # steps move SmolLM2 by less than a Q4_1 step, so it is the parent's file with the LoRA at run time
    from vibestudio.db.models import Checkpoint

    with db.session() as s:
        record = s.scalar(select(Checkpoint.fidelity).where(Checkpoint.contestant_id == child))
    assert info.engine == "llama_cpp" and record is not None
    chosen = next(f for f in record["forms"] if f["form"] == record["chosen"])
    assert chosen["passed"] and record["chosen"] != "transformers"
    assert "Plays on llama.cpp as " in info.description and "of the trained shift" in info.description
    assert info.public_name == f"smollm2-warm-dpo-j{job_id}"
    text = "".join(
        engine_for(info).stream_chat([{"role": "user", "content": "Say hi."}], Sampling(max_tokens=8, seed=0))
    )
    assert text.strip()
