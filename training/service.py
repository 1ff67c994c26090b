"""The training API the UI and CLI call: launch a job from a parent contestant and a snapshot (or fresh votes).

Thin on purpose: configs come from ``training.config``, checks and launching from ``training.runner``. Errors the
user can fix arrive as JobError with a message to show as is.
"""

from __future__ import annotations

from typing import Any

from annotation.snapshots import SnapshotError, get_snapshot, snapshot_from_votes
from arena.accounts import require_role
from db.session import Database
from training.config import ConfigError, JobConfig, make_config
from training.errors import JobError
from training.estimate import Estimate, estimate, history_for
from training.preflight import choose_base, find_parent
from training.runner import submit


def build_config(
    kind: str, parent: int | str, snapshot: int | str | None = None, **overrides: Any
) -> JobConfig:
    """A validated config of ``kind`` (``snapshot`` may be left out and filled in later)."""
    try:
        return make_config(
            kind, parent_contestant=str(parent), snapshot_hash=str(snapshot or ""), **overrides
        )
    except ConfigError as exc:
        raise JobError(str(exc)) from exc


def resolve_snapshot(db: Database, snapshot: int | str | None, min_pairs: int = 1, **vote_filter: Any) -> str:
    """The hash of snapshot ``snapshot`` (id, hash or prefix), or of a fresh snapshot of the current votes."""
    with db.session() as s:
        try:
            if snapshot is None or snapshot == "":
                return snapshot_from_votes(s, min_pairs=min_pairs, **vote_filter).hash
            return get_snapshot(s, snapshot).hash
        except SnapshotError as exc:
            raise JobError(str(exc)) from exc


def estimate_job(db: Database, kind: str, parent: int | str, **overrides: Any) -> Estimate:
    """Memory and time estimate for a job before launching it (the Train tab shows ``.summary()``)."""
    cfg = build_config(kind, parent, None, **overrides)
    with db.session() as s:
        parent_info = find_parent(s, cfg.parent_contestant) if str(cfg.parent_contestant).strip() else None
        base = choose_base(parent_info, cfg.base_model)
        seconds, tokens = history_for(s, cfg, base.model_ref)
    try:
        return estimate(cfg, base.model_ref, seconds, tokens)
    except ValueError as exc:
        raise JobError(str(exc)) from exc


def launch(
    db: Database,
    kind: str,
    parent: int | str,
    snapshot: int | str | None = None,
    created_by: int | None = None,
    **overrides: Any,
) -> int:
    """Validate and queue a job of ``kind``; it starts at once when no other job runs. Returns the job id."""
    require_role(db, created_by, "researcher")
    cfg = build_config(kind, parent, None, **overrides)
    cfg.snapshot_hash = resolve_snapshot(db, snapshot, min_pairs=cfg.min_pairs)
    return submit(db, kind, cfg, created_by=created_by)


def launch_dpo(
    db: Database,
    parent: int | str,
    snapshot: int | str | None = None,
    created_by: int | None = None,
    **overrides: Any,
) -> int:
    """DPO (LoRA by default) from ``parent`` on ``snapshot`` (default: a fresh snapshot of the arena votes)."""
    return launch(db, "dpo", parent, snapshot, created_by=created_by, **overrides)
