"""Checks before launch and the choice of base model: everything that can fail cheaply fails here, not in a worker.

``preflight`` runs inside the submitting transaction: it finds the parent contestant, decides which checkpoint
the job trains on (``choose_base``), and opens the snapshot (hash verified, answers non-empty, enough pairs).
It never loads a model, so it takes milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from annotation.snapshots import SnapshotError, get_snapshot, load_snapshot
from arena.registry import BUILTIN_GGUF, BUILTIN_HF, ContestantInfo, RegistryError, get_contestant
from db.models import Contestant
from training.config import GRPOJobConfig, JobConfig
from training.errors import JobError
from training.estimate import GIB, Estimate, estimate, history_for


@dataclass
class BaseChoice:
    """What a job trains: ``model_ref`` (a builtin: ref or a checkpoint path, as the contestant will record it),
    optionally on top of the parent's LoRA adapter."""

    model_ref: str
    adapter_ref: str | None = None


@dataclass
class Checked:
    parent: ContestantInfo | None
    base: BaseChoice
    snapshot_id: int | None  # None for a job on a task set
    snapshot_hash: str
    snapshot_path: str
    n_pairs: int  # preference pairs, or train tasks for a job on a task set
    estimate: Estimate | None = None
    task_set: str | None = None  # the task set's name (RLVR); its checks are in training.tasks.checks

    @property
    def parent_id(self) -> int | None:
        return self.parent.id if self.parent else None


def find_parent(session: Session, ident: str | int) -> ContestantInfo:
    """A contestant by public name, or by id when ``ident`` is a number that is not a name."""
    try:
        return get_contestant(session, str(ident))
    except RegistryError:
        if str(ident).isdigit():
            try:
                return get_contestant(session, int(ident))
            except RegistryError:
                pass
    raise JobError(f"parent contestant {ident!r} not found (give a public name or an id)")


def choose_base(parent: ContestantInfo | None, base_model: str = "") -> BaseChoice:
    """The checkpoint to train: ``base_model`` when given, else derived from the parent's engine and model."""
    if base_model:
        # Local or hub id is decided by the text alone, never by probing the disk (no existence oracle), and
        # a missing path and one that is not a checkpoint get the same answer.
        looks_local = base_model.startswith(("/", ".", "~")) or base_model.count("/") > 1
        if looks_local and not (Path(base_model).expanduser() / "config.json").is_file():
            raise JobError(f"base_model {base_model!r} is not a checkpoint directory (no config.json)")
        return BaseChoice(base_model)
    if parent is None:
        raise JobError("no parent contestant and no base_model: nothing to train")
    if parent.engine == "llama_cpp":
        if parent.model_ref == BUILTIN_GGUF:
            return BaseChoice(BUILTIN_HF)
        raise JobError(
            f"contestant {parent.public_name!r} runs a GGUF file ({parent.model_ref}); training needs an HF "
            "checkpoint: set base_model to its HF directory"
        )
    if parent.engine == "transformers":
        return BaseChoice(parent.model_ref, parent.adapter_ref)
    if parent.engine == "vllm":
        served = str((parent.engine_config.get("serve") or {}).get("model") or parent.model_ref)
        if (Path(served).expanduser() / "config.json").exists() or served.startswith("builtin:"):
            return BaseChoice(served, parent.adapter_ref)
        raise JobError(
            f"contestant {parent.public_name!r} is served by vLLM as {served!r}, which is not a local checkpoint: "
            "set base_model to the HF directory the server loads"
        )
    raise JobError(
        f"contestant {parent.public_name!r} uses engine {parent.engine!r}, which cannot be trained here"
    )


def preflight(session: Session, cfg: JobConfig) -> Checked:
    """Validate a job against the database; raises JobError with a message a user can act on."""
    parent = find_parent(session, cfg.parent_contestant) if str(cfg.parent_contestant).strip() else None
    base = choose_base(parent, cfg.base_model)
    if isinstance(cfg, GRPOJobConfig) and cfg.tasks:
        from training.tasks.checks import check_task_job

        n_train = check_task_job(session, cfg)
        check_reward_sources(session, cfg)
        _check_output_name(session, cfg)
        est = check_resources(session, cfg, base)
        return Checked(parent, base, None, "", "", n_train, est, task_set=str(cfg.tasks))
    if not cfg.snapshot_hash:
        raise JobError("no dataset snapshot given (snapshot_hash is empty); make one from votes first")
    try:
        snap = get_snapshot(session, cfg.snapshot_hash)
        rows = load_snapshot(snap.path, snap.hash)
    except SnapshotError as exc:
        raise JobError(f"snapshot {cfg.snapshot_hash[:12]}: {exc}") from exc
    if len(rows) < cfg.min_pairs:
        raise JobError(
            f"snapshot {snap.hash[:12]} has {len(rows)} preference pair(s); at least {cfg.min_pairs} are needed "
            "(collect more votes, or lower min_pairs)"
        )
    check_reward_sources(session, cfg)
    _check_output_name(session, cfg)
    return Checked(
        parent, base, snap.id, snap.hash, snap.path, len(rows), check_resources(session, cfg, base)
    )


def _check_output_name(session: Session, cfg: JobConfig) -> None:
    if cfg.output_name and session.scalar(
        select(Contestant.id).where(Contestant.public_name == cfg.output_name)
    ):
        raise JobError(f"a contestant named {cfg.output_name!r} already exists; choose another output_name")


def check_reward_sources(session: Session, cfg: JobConfig) -> None:
    """GRPO rewards that point at other things (a judge contestant, a reward job) must exist."""
    from db.models import Job

    for i, spec in enumerate(getattr(cfg, "rewards", None) or []):
        if spec.get("type") == "judge" and spec.get("judge") is not None:
            try:
                judge = find_parent(session, spec["judge"])
            except JobError:
                raise JobError(f"reward {i} (judge): no contestant {spec['judge']!r}") from None
            problem = judge_unreachable(judge)
            if problem:
                raise JobError(f"reward {i} (judge): contestant {judge.public_name!r} is down: {problem}")
        if spec.get("type") == "reward_model" and spec.get("job") is not None:
            job = session.get(Job, int(spec["job"]))
            if job is None or job.kind != "reward":
                raise JobError(f"reward {i} (reward_model): job {spec['job']} is not a reward-model job")
            if job.status in ("failed", "cancelled"):
                raise JobError(f"reward {i} (reward_model): job {spec['job']} {job.status}; it has no model")


def judge_unreachable(judge: ContestantInfo, timeout: float = 3.0) -> str | None:
    """Why a judge contestant cannot answer right now (None when it looks usable), without loading a model:
    a server engine must answer ``GET /v1/models``; a local engine's model files must exist."""
    if judge.engine in ("openai", "vllm"):
        import httpx

        from arena.engines.egress import UrlRefused, check_url, client

        url = str(judge.engine_config.get("base_url") or "").rstrip("/")
        if not url:
            return None if judge.engine_config.get("serve") else "no base_url in its engine config"
        try:  # the engine URL policy first: a check must not reach what an answer may not
            check_url(url)
        except UrlRefused as exc:
            return str(exc)
        try:
            with client(timeout) as http:
                http.get(f"{url}/models")
        except httpx.HTTPError as exc:
            return f"{url} does not answer ({type(exc).__name__})"
        return None
    if judge.model_ref.startswith("builtin:"):
        return None  # shipped with the package (or converted from what is)
    if not Path(judge.model_ref).expanduser().exists():
        return f"its model {judge.model_ref!r} is not on this machine"
    if judge.adapter_ref and not Path(judge.adapter_ref).exists():
        return f"its adapter {judge.adapter_ref!r} is not on this machine"
    return None


def check_resources(session: Session, cfg: JobConfig, base: BaseChoice) -> Estimate | None:
    """The memory/time estimate; JobError when the job cannot fit (and ``cfg.check_memory``)."""
    try:
        seconds, tokens = history_for(session, cfg, base.model_ref)
        est = estimate(cfg, base.model_ref, seconds, tokens)
    except (ValueError, OSError):
        return None  # unknown shape (e.g. a hub id): no estimate, no refusal
    if cfg.check_memory and not est.fits:
        assert est.available_bytes is not None
        raise JobError(
            f"this job needs about {est.peak_bytes / GIB:.1f} GiB but {est.available_bytes / GIB:.1f} GiB is "
            f"available on {est.device}: lower per_device_train_batch_size (now {cfg.per_device_train_batch_size}) "
            f"or max_length (now {cfg.max_length})"
            + ("" if cfg.lora else ", or use LoRA")
            + " (check_memory: false skips this check)"
        )
    return est
