"""Lineage and health of trained checkpoints: where a contestant came from, and whether its job
over-optimised.

``lineage`` walks a contestant's ancestors (parent links). For each trained one it gives its job's config,
snapshot and the votes that fed it. For an RLVR job it gives the task set instead: name, hash, train /
held-out split.

``overoptimisation_alerts`` reads a job's metric series. It says when:
- the reward keeps rising while the measured KL to the reference runs away (the classic reward-hacking
  shape);
- the gold signal has peaked or falls while the reward still rises (``training.objectives.overopt``);
- the drift report flagged changes.
Both return plain data for the model page and the live job page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from vibestudio.arena.registry import get_contestant
from vibestudio.db.models import DatasetSnapshot, Job
from vibestudio.db.session import Database
from vibestudio.training.objectives.overopt import gold_curve


@dataclass
class Ancestor:
    contestant_id: int
    public_name: str
    engine: str
    model_ref: str
    adapter_ref: str | None
    job_id: int | None = None
    job_kind: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    snapshot_hash: str | None = None
    n_pairs: int | None = None
    vote_ids: list[int] = field(default_factory=list)
    pair_mix: dict[str, int] | None = (
        None  # on / half / off-policy pairs for its parent (training.objectives.pairmix)
    )
    # RLVR: the task set it trained on, its hash, and the split the job saw (train / held-out counts)
    task_set: dict[str, Any] | None = None


def lineage(db: Database, contestant: int | str, max_depth: int = 20) -> list[Ancestor]:
    """The contestant and its ancestors, newest first (the root is the untrained model)."""
    chain: list[Ancestor] = []
    with db.session() as s:
        ident: int | str | None = contestant
        while ident is not None and len(chain) < max_depth:
            info = get_contestant(s, ident)
            item = Ancestor(
                info.id, info.public_name, info.engine, info.model_ref, info.adapter_ref, info.job_id
            )
            if info.job_id is not None:
                job = s.get(Job, info.job_id)
                if job is not None:
                    item.job_kind, item.config = job.kind, dict(job.config or {})
                    if item.config.get("tasks"):
                        item.task_set = _task_split(s, item.config)
            if info.snapshot_hash:
                snap = s.scalar(select(DatasetSnapshot).where(DatasetSnapshot.hash == info.snapshot_hash))
                item.snapshot_hash = info.snapshot_hash
                if snap is not None:
                    item.n_pairs, item.vote_ids = snap.n_pairs, [int(v) for v in snap.source_vote_ids or []]
                    if info.parent_id is not None:
                        item.pair_mix = _mix(
                            snap.path, snap.hash, get_contestant(s, info.parent_id).public_name
                        )
            chain.append(item)
            ident = info.parent_id
    return chain


def _task_split(session: Any, config: dict[str, Any]) -> dict[str, Any]:
    """The task set a job trained on: name, the hash it launched on, and the split (train only was trained on)."""
    from vibestudio.db.models import TaskSet

    name, digest = str(config["tasks"]), str(config.get("tasks_hash") or "")
    ts = session.scalar(select(TaskSet).where(TaskSet.name == name))
    out: dict[str, Any] = {"name": name, "hash": digest, "trained_on": "train split only"}
    if ts is None:
        out["missing"] = "the task set no longer exists"
        return out
    out.update(n_train=ts.n_train, n_heldout=ts.n_heldout, heldout_fraction=ts.heldout_fraction)
    if digest and digest != ts.hash:
        out["changed"] = f"the set's hash is now {ts.hash[:12]}"
    return out


def _mix(path: str, digest: str, parent: str) -> dict[str, int] | None:
    from vibestudio.annotation.snapshots import SnapshotError, load_snapshot
    from vibestudio.training.objectives.pairmix import pair_mix

    try:
        return pair_mix(load_snapshot(path, digest, provenance=True), parent)
    except SnapshotError:
        return None  # the file is gone or changed: lineage still shows the hash


def _trend(series: list[tuple[int, float]], window: int = 3) -> float:
    """Mean of the last ``window`` values minus the mean of the first ``window`` (0 when too short)."""
    values = [v for _, v in series]
    if len(values) < 2 * window:
        return 0.0
    return sum(values[-window:]) / window - sum(values[:window]) / window


def overoptimisation_alerts(
    metrics: dict[str, list[tuple[int, float]]], kl_limit: float = 10.0, drift_flags: list[str] | None = None
) -> list[str]:
    """Human-readable alerts from a job's metric series (``JobView.metrics``)."""
    alerts = []
    reward_name = next((n for n in ("reward", "rewards/margins") if metrics.get(n)), None)
    kl = metrics.get("kl") or []
    if reward_name and kl:
        rising = _trend(metrics[reward_name]) > 0
        last_kl = kl[-1][1]
        kl_growing = len(kl) < 2 or kl[-1][1] > kl[0][1]
        if rising and last_kl > kl_limit and kl_growing:
            alerts.append(
                f"{reward_name} keeps rising while KL to the reference is {last_kl:.1f} nats (limit {kl_limit:g}) "
                "and growing: likely over-optimisation; compare the checkpoint with its parent in the arena"
            )
    if metrics.get("heldout/accuracy") and metrics.get("rewards/task/mean"):
        from vibestudio.training.tasks.report import reward_without_accuracy

        rise = reward_without_accuracy(metrics)
        if rise["flag"]:
            alerts.append(
                f"reward hacking? the train reward rose {rise['reward_first']:.2f} -> {rise['reward_last']:.2f} "
                f"(p={rise['p']:.2g}) while held-out accuracy changed {rise['heldout_delta']:+.1%} "
                f"(McNemar p={rise['heldout_p']:.2g}): the policy may be gaming the verifier"
            )
    gold = gold_curve(metrics)
    if gold.alert:
        alerts.append(f"over-optimisation: {gold.alert}")
    if drift_flags:
        alerts.append("answers drifted from the parent's: " + ", ".join(drift_flags))
    return alerts


def job_alerts(db: Database, job_ids: list[int]) -> dict[int, list[str]]:
    """``overoptimisation_alerts`` for several jobs at once (one query): what the jobs list shows per row."""
    from vibestudio.db.models import JobMetric

    series: dict[int, dict[str, list[tuple[int, float]]]] = {j: {} for j in job_ids}
    if not job_ids:
        return {}
    with db.session() as s:
        rows = s.execute(
            select(JobMetric.job_id, JobMetric.name, JobMetric.step, JobMetric.value)
            .where(JobMetric.job_id.in_(job_ids))
            .order_by(JobMetric.step, JobMetric.id)
        )
        for job_id, name, step, value in rows:
            series[job_id].setdefault(name, []).append((step, value))
    return {j: overoptimisation_alerts(m) for j, m in series.items()}
