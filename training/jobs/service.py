"""The training API the UI and CLI call: check a config, launch a job from a parent and a snapshot (or fresh
votes).

Thin on purpose. Configs come from ``training.jobs.config``; checks and launching from
``training.jobs.runner``. Errors the user can fix arrive as JobError, with a message to show as is.
``check_config`` returns them field by field, before anything is written or started. The Train tab's YAML
editor and ``vibestudio train --dry-run`` use it. It also returns the memory/time estimate and the
on-policy mix of the data.

A file a field names is checked before it is read. Rules, rubric and launcher files are checked in
``training.jobs.config``. A signed-in user's ``base_model`` is checked here (``arena.model_files``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from vibestudio.accounts import UserInfo, require_role
from vibestudio.annotation.snapshots import (
    SnapshotError,
    get_snapshot,
    load_snapshot,
    snapshot_from_votes,
    write_snapshot,
)
from vibestudio.arena.model_files import check_model_ref
from vibestudio.common.paths import PathRefused
from vibestudio.db.session import Database
from vibestudio.training.jobs.config import (
    JOB_KINDS,
    ConfigError,
    FieldError,
    GRPOJobConfig,
    JobConfig,
    Sources,
    config_errors,
    config_yaml,
    locate,
    make_config,
    parse_config_text,
)
from vibestudio.training.jobs.errors import JobError
from vibestudio.training.jobs.estimate import Estimate, estimate, history_for
from vibestudio.training.jobs.preflight import (
    Findings,
    check_job,
    choose_base,
    errors_text,
    find_parent,
    past_timings,
    score_rule,
)
from vibestudio.training.jobs.runner import submit
from vibestudio.training.objectives.pairmix import filter_rows, pair_mix


@dataclass
class ConfigCheck:
    """What the Train tab shows before launch: the config as it will run, problems by field, the estimate."""

    config: JobConfig | None
    errors: list[FieldError] = field(default_factory=list)
    estimate: Estimate | None = None
    mix: dict[str, int] | None = (
        None  # on / half / off / unknown pairs for the parent (None: no snapshot yet)
    )
    balance: dict[str, Any] | None = None  # KTO: desirable / undesirable answers and TRL's weights
    found: Findings | None = None  # what the check resolved, passed on by the launch (``launch_checked``)

    @property
    def ok(self) -> bool:
        return self.config is not None and not self.errors

    @property
    def yaml(self) -> str:
        return config_yaml(self.config) if self.config is not None else ""

    def message(self) -> str:
        return errors_text(self.errors)


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
    """The hash of snapshot ``snapshot`` (id, hash or prefix), or of a fresh snapshot of the current votes
    (``unpaired=True, rule=...`` in ``vote_filter``: KTO's unpaired rows)."""
    with db.session() as s:
        try:
            if snapshot is None or snapshot == "":
                return snapshot_from_votes(s, min_pairs=min_pairs, **vote_filter).hash
            return get_snapshot(s, snapshot).hash
        except SnapshotError as exc:
            raise JobError(str(exc)) from exc


def estimate_job(db: Database, kind: str, parent: int | str, **overrides: Any) -> Estimate:
    """Memory and time estimate for a job before launching it (the Train tab and ``--dry-run`` get the same one
    from ``check_config``)."""
    cfg = build_config(kind, parent, None, **overrides)
    with db.session() as s:
        parent_info = find_parent(s, cfg.parent_contestant) if str(cfg.parent_contestant).strip() else None
        base = choose_base(parent_info, cfg.base_model)
        seconds, tokens = history_for(s, cfg, base.model_ref)
        past = past_timings(s)
    try:
        return estimate(
            cfg,
            base.model_ref,
            seconds,
            tokens,
            past,
            parent_info.id if parent_info else None,
            gguf_parent=bool(parent_info and parent_info.engine == "llama_cpp"),
        )
    except ValueError as exc:
        raise JobError(str(exc)) from exc


def snapshot_mix(db: Database, snapshot: int | str, parent: int | str) -> dict[str, int]:
    """How many of the snapshot's pairs are on-policy, half or off-policy for ``parent``."""
    with db.session() as s:
        try:
            snap = get_snapshot(s, snapshot)
            rows = load_snapshot(snap.path, snap.hash, provenance=True)
        except SnapshotError as exc:
            raise JobError(str(exc)) from exc
        name = find_parent(s, parent).public_name
    return pair_mix(rows, name)


def check_config(
    db: Database,
    config: str | dict[str, Any] | JobConfig,
    kind: str | None = None,
    user_id: int | None = None,
    sources: Sources | None = None,
) -> ConfigCheck:
    """Everything that can be checked before launch, without writing or starting anything: field types and
    ranges, the parent, the snapshot (an empty ``snapshot_hash`` means a fresh one from the votes at launch),
    the reward sources (a judge that is down, a failed reward job), a taken output name, the report's verdict
    rules (a measure a required rule needs must not be turned off), and the memory estimate (a refusal when it
    cannot fit). Each problem is tied to the field it is about, and says where that value came from: the line
    of YAML text, or ``sources`` (a file's lines, the CLI's ``--set``; ``training.jobs.config.Sources``).

    Needs researcher (``PermissionDenied``), checked first: a check may ask a judge's server whether it is up
    and tells whether names and paths exist."""
    user = require_role(db, user_id, "researcher")
    if isinstance(config, JobConfig):
        cfg, errors = config_errors(config.to_dict())
    elif isinstance(config, str):
        sources = sources or Sources(text=config)
        cfg, errors = parse_config_text(config, kind)
    else:
        cfg, errors = config_errors(config, kind)
    if cfg is None:
        return ConfigCheck(None, locate(errors, sources))
    refused = _model_path_errors(db, cfg, user)
    if refused:
        return ConfigCheck(None, locate(refused, sources))
    with db.session() as s:
        found = check_job(s, cfg, fresh_from_votes=True)
    if found.errors:
        found.errors = locate(found.errors, sources)
    return ConfigCheck(cfg, found.errors, found.estimate, found.mix, found.balance, found)


def _model_path_errors(db: Database, cfg: JobConfig, user: UserInfo | None) -> list[FieldError]:
    """A signed-in user's ``base_model``: a builtin or a hub id, or a checkpoint folder under the model folders
    and not another researcher's unpublished one (``arena.model_files``), checked before anything reads it."""
    if user is None or not cfg.base_model:
        return []
    with db.session() as s:
        try:
            check_model_ref(s, cfg.base_model, "base_model", user, "transformers", needs="config.json")
        except PathRefused as exc:
            return [FieldError("base_model", str(exc))]
    return []


def launch_config(
    db: Database,
    config: str | dict[str, Any] | JobConfig,
    kind: str | None = None,
    created_by: int | None = None,
) -> int:
    """Launch a job from a whole config (YAML text, a mapping or a JobConfig): checked once, field by field and
    against the database (``check_config``), then launched from that check. Returns the job id."""
    return launch_checked(db, check_config(db, config, kind, user_id=created_by), created_by)


def launch_checked(db: Database, check: ConfigCheck, created_by: int | None = None) -> int:
    """Launch what ``check_config`` passed, reusing what it resolved (parent, base, snapshot and its rows, the
    estimate) down to the queued job: no second check. An empty ``snapshot_hash`` freezes the current votes,
    and a ``pairs`` filter freezes the rows it keeps; JobError names every problem of a failed check."""
    if not check.ok or check.found is None or check.config is None:
        raise JobError(check.message() or "the config was not checked")
    cfg, found = check.config, check.found
    if getattr(cfg, "tasks", ""):
        checked = found.checked()
        return submit(db, cfg.kind, _with_tasks_hash(db, cfg), created_by, validated=True, checked=checked)
    try:
        snap = _frozen(db, cfg, found)
    except SnapshotError as exc:
        raise JobError(str(exc)) from exc
    cfg.snapshot_hash = snap.hash
    return submit(db, cfg.kind, cfg, created_by, validated=True, checked=found.checked(snap))


def _frozen(db: Database, cfg: JobConfig, found: Findings) -> Any:
    """The snapshot the job trains on: the one the check opened, or the current votes frozen now; with a
    ``pairs`` filter, the rows it keeps frozen as their own snapshot (counted by the check's one rule)."""
    with db.session() as s:
        snap = found.snapshot
        rows = found.rows
        if snap is None:
            snap = snapshot_from_votes(s, min_pairs=cfg.min_pairs, **_vote_layout(cfg))
            if cfg.pairs != "all":
                rows = load_snapshot(snap.path, snap.hash, provenance=True)
        if cfg.pairs == "all" or found.parent is None or rows is None:
            return snap
        kept = filter_rows(rows, found.parent.public_name, cfg.pairs)
        if len(kept) != found.n_pairs:
            raise JobError(
                f"pairs: the votes changed since the check ({len(kept)} pairs kept now, {found.n_pairs} then); "
                "check the config again"
            )
        if len(kept) == len(rows):
            return snap
        filt = {
            "source": "pairs_filter",
            "from": snap.hash,
            "policy": found.parent.public_name,
            "pairs": cfg.pairs,
        }
        return write_snapshot(s, kept, filt)


def launch(
    db: Database,
    kind: str,
    parent: int | str,
    snapshot: int | str | None = None,
    created_by: int | None = None,
    **overrides: Any,
) -> int:
    """Check once and queue a job of ``kind``; it starts at once when no other job runs. ``snapshot``: an id, a
    hash or a prefix (default: the current votes, frozen at launch). Returns the job id."""
    data = {"kind": kind, "parent_contestant": str(parent), **overrides}
    if snapshot is not None and snapshot != "":
        data["snapshot_hash"] = resolve_snapshot(db, snapshot)
    return launch_config(db, data, created_by=created_by)


def _vote_layout(cfg: JobConfig) -> dict[str, Any]:
    """How a fresh snapshot of the votes is laid out for ``cfg``'s kind: pairs, or KTO's unpaired rows under
    its score rule."""
    if JOB_KINDS[cfg.kind].rows != "unpaired":
        return {}
    try:
        return {"unpaired": True, "rule": score_rule(cfg)}
    except ConfigError as exc:
        raise JobError(str(exc)) from exc


def _with_tasks_hash(db: Database, cfg: JobConfig) -> JobConfig:
    """A job on a task set records the set's content hash at launch (its lineage; the job process re-checks it)."""
    from vibestudio.db.models import TaskSet

    assert isinstance(cfg, GRPOJobConfig)
    with db.session() as s:
        digest = s.scalar(select(TaskSet.hash).where(TaskSet.name == cfg.tasks))
    if digest is None:
        raise JobError(f"tasks: no task set {cfg.tasks!r} (see `vibestudio tasks list`)")
    if not getattr(cfg, "tasks_hash", ""):
        cfg.tasks_hash = digest
    return cfg


def launch_dpo(
    db: Database,
    parent: int | str,
    snapshot: int | str | None = None,
    created_by: int | None = None,
    **overrides: Any,
) -> int:
    """DPO (LoRA by default) from ``parent`` on ``snapshot`` (default: a fresh snapshot of the arena votes)."""
    return launch(db, "dpo", parent, snapshot, created_by=created_by, **overrides)
