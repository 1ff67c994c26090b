"""Launch checks for a GRPO job on a task set: everything that can be refused before training starts is
refused here.

They run inside the submitting transaction (``training.jobs.preflight``), and again by the job process
before it trains.
- The set exists, and is the one the job was launched on (its content hash, ``tasks_hash``).
- It has at least ``min_pairs`` train tasks.
- None of its train tasks is held out in any stored set (same content hash). A job never trains on a
  held-out task.
- No task needs a code check while code checks are off (``VIBESTUDIO_CODE_CHECKS``). That holds for its
  own verifier and for the one the task reward imposes.
- A verifier the task reward imposes can read every train task's reference. A numeric verifier on word
  answers fails this.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from vibestudio.db.models import Task, TaskSet
from vibestudio.training.jobs.errors import JobError
from vibestudio.training.tasks.verifiers import VerifierError, check_reference, check_spec


def _where(t: Task) -> str:
    return f"line {t.line}" if t.line is not None else f"task {t.idx}"


def heldout_leaks(session: Session, rows: list[Task]) -> dict[str, str]:
    """{content hash: name of a set that holds it out} for the given train tasks."""
    hashes = [t.content_hash for t in rows]
    held: dict[str, str] = {}
    for i in range(0, len(hashes), 500):
        q = (
            select(Task.content_hash, TaskSet.name)
            .join(TaskSet, TaskSet.id == Task.set_id)
            .where(Task.split == "heldout", Task.content_hash.in_(hashes[i : i + 500]))
        )
        held.update({h: n for h, n in session.execute(q)})
    return held


def task_reward_override(cfg: Any) -> dict[str, Any] | None:
    for r in getattr(cfg, "rewards", None) or []:
        if isinstance(r, dict) and r.get("type") == "task" and r.get("verifier"):
            return check_spec(r["verifier"])
    return None


def check_task_job(session: Session, cfg: Any) -> int:
    """Raise JobError (naming the set, task line and field) unless the job may train on ``cfg.tasks``; returns
    the number of train tasks."""
    from vibestudio.common.settings import get_settings

    name = str(cfg.tasks)
    ts = session.scalar(select(TaskSet).where(TaskSet.name == name))
    if ts is None:
        raise JobError(f"tasks: no task set {name!r} (see `vibestudio tasks list`)")
    if cfg.tasks_hash and cfg.tasks_hash != ts.hash:
        raise JobError(
            f"tasks: task set {name!r} is not the one this job was launched on (hash {ts.hash[:12]}, the job "
            f"recorded {cfg.tasks_hash[:12]})"
        )
    rows = list(
        session.scalars(select(Task).where(Task.set_id == ts.id, Task.split == "train").order_by(Task.idx))
    )
    if len(rows) < cfg.min_pairs:
        raise JobError(
            f"tasks: task set {name!r} has {len(rows)} train task(s); at least {cfg.min_pairs} are needed "
            "(generate or import more, or lower min_pairs)"
        )
    held = heldout_leaks(session, rows)
    if held:
        t = next(r for r in rows if r.content_hash in held)
        raise JobError(
            f"tasks: {len(held)} train task(s) of {name!r} are held out in task set {held[t.content_hash]!r} "
            f"(e.g. {_where(t)}: {t.prompt[:60]!r}); a job never trains on a held-out task"
        )
    try:
        override = task_reward_override(cfg)
    except VerifierError as exc:
        raise JobError(f"rewards: task verifier: {exc}") from exc
    default = dict(ts.verifier or {})
    code_on = get_settings().code_checks
    for t in rows:
        spec = override or dict(t.verifier or default or {"type": "exact"})
        if spec.get("type") == "code" and not code_on:
            raise JobError(
                f"tasks: task set {name!r} {_where(t)} field 'verifier': a code task, and code checks are off "
                "(the operator turns them on with VIBESTUDIO_CODE_CHECKS=true; see docs/security.md)"
            )
        if override is not None:
            problem = check_reference(override, t.answer, list(t.choices) if t.choices else None)
            if problem:
                raise JobError(
                    f"rewards: the task verifier {override['type']} cannot read task set {name!r} {_where(t)} "
                    f"field 'answer': {problem}"
                )
    return len(rows)
