"""Lineage of trained contestants and over-optimisation alerts from metric series."""

from __future__ import annotations

from tests.helpers.training import pair_rows
from vibestudio.annotation.snapshots import write_snapshot
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.models import Job
from vibestudio.training.publishing.lineage import lineage, overoptimisation_alerts


def test_lineage_walks_parents_with_jobs_and_votes(db, tiny_parent, tiny_model_dir):
    rows = pair_rows(4)
    for i, r in enumerate(rows):
        r["provenance"]["vote_id"] = 100 + i
    with db.session() as s:
        snap = write_snapshot(s, rows, {"source": "test"})
        job = Job(kind="dpo", config={"kind": "dpo", "beta": 0.1}, status="succeeded")
        s.add(job)
        s.flush()
        child = register(
            s,
            ContestantSpec(
                "tiny-child",
                engine="transformers",
                model_ref=str(tiny_model_dir),
                adapter_ref="/x/adapter",
                parent_id=tiny_parent,
                job_id=job.id,
                snapshot_hash=snap.hash,
            ),
        )
    chain = lineage(db, child)
    assert [a.public_name for a in chain] == ["tiny-child", "tiny-parent"]
    assert chain[0].job_kind == "dpo" and chain[0].config["beta"] == 0.1
    assert chain[0].n_pairs == 4 and chain[0].vote_ids == [100, 101, 102, 103]
    assert chain[1].job_id is None and chain[1].snapshot_hash is None


def test_alert_when_reward_rises_and_kl_runs_away():
    rising = [(i, 0.1 * i) for i in range(1, 9)]
    (alert,) = overoptimisation_alerts({"rewards/margins": rising, "kl": [(4, 2.0), (8, 14.0)]})
    assert alert.startswith("rewards/margins keeps rising while KL to the reference is 14.0 nats (limit 10)")
    assert not overoptimisation_alerts({"rewards/margins": rising, "kl": [(4, 0.5), (8, 1.0)]})
    assert not overoptimisation_alerts({"rewards/margins": rising})
    flat = [(i, 1.0) for i in range(1, 9)]
    assert not overoptimisation_alerts({"reward": flat, "kl": [(8, 20.0)]})
    assert overoptimisation_alerts({}, drift_flags=["tokens"]) == [
        "answers drifted from the parent's: tokens"
    ]
