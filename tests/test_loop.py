"""The whole loop on the CPU: votes -> frozen snapshot -> DPO (LoRA) on a tiny model -> new contestant -> battle."""

from __future__ import annotations

import random

from sqlalchemy import select

from vibestudio.annotation.snapshots import load_snapshot, snapshot_from_votes
from vibestudio.arena.battles import ArenaLimits, ArenaService
from vibestudio.arena.registry import ContestantSpec, get_contestant, register
from vibestudio.db.models import Battle, Contestant, Job
from vibestudio.training.jobs.runner import wait
from vibestudio.training.jobs.service import launch_dpo
from vibestudio.training.report.verdict import release


def test_votes_to_snapshot_to_dpo_to_new_contestant_that_battles(db, tiny_model_dir):
    with db.session() as s:
        # different seeds: two identical answers make no preference pair (the snapshot skips them)
        for name, temp, seed in (("tiny-a", 0.7, 1), ("tiny-b", 1.0, 2)):
            register(
                s,
                ContestantSpec(
                    name,
                    engine="transformers",
                    model_ref=str(tiny_model_dir),
                    sampling={"max_tokens": 8, "temperature": temp, "seed": seed},
                ),
            )
    svc = ArenaService(db, ArenaLimits(blind_max_tokens=8), rng=random.Random(0))  # one cap for both sides
    for i in range(6):
        bid = svc.start_battle().battle_id
        list(svc.generate_turn(bid, f"Question number {i}: what is {i} plus {i}?"))
        svc.vote(bid, "left" if i % 2 else "right")
    with db.session() as s:
        snap = snapshot_from_votes(s)
    rows = load_snapshot(snap.path, snap.hash)
    assert snap.n_pairs == 6 and len(rows) == 6
    assert set(rows[0]) == {"prompt", "chosen", "rejected"} and rows[0]["prompt"][0]["role"] == "user"

    job_id = launch_dpo(
        db,
        "tiny-a",
        snapshot=snap.hash,
        max_steps=2,
        per_device_train_batch_size=2,
        min_pairs=4,
        base_model=str(tiny_model_dir),
        kl_prompts=0,
    )
    view = wait(db, job_id, timeout=300)
    assert view.status == "succeeded", view.error or view.log_tail
    assert view.metrics.get("loss")

    with db.session() as s:
        new = get_contestant(s, view.contestant_id)
        parent = get_contestant(s, "tiny-a")
        assert new.parent_id == parent.id and new.job_id == job_id and new.snapshot_hash == snap.hash
        assert new.engine == "transformers" and new.adapter_ref
        assert s.get(Job, job_id).snapshot_id == snap.id
        others = [c.id for c in s.scalars(select(Contestant).where(Contestant.id != new.id))]
    # the job's report recorded a verdict before the job ended: released, or held until a researcher lets it in
    assert new.state in ("released", "held")
    if new.state == "held":
        release(db, new.public_name, None, "the loop plays its child whatever the verdict on a random model")
    bid = svc.start_battle(pair=(new.id, others[0])).battle_id
    last = list(svc.generate_turn(bid, "Say something."))[-1]
    assert last.done and last.error is None
    reveal = svc.vote(bid, "left")
    assert new.public_name in (reveal.left_name, reveal.right_name)
    with db.session() as s:
        assert s.get(Battle, bid).status == "voted"
