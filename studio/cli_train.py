"""Training commands for the ``vibestudio`` CLI: ``train dpo|reward|grpo`` and ``jobs list|show|cancel|resume|logs``.

A thin layer over ``training.service`` and ``training.runner``: flags (and an optional YAML config, and
``--set field=value``) become one config mapping, which is checked field by field before anything is written or
started; then the job is queued, followed with a progress bar, and reported as text or ``--json``.
Precedence: the config file, then the flags, then ``--set``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import typer

train_app = typer.Typer(
    help="Launch training jobs (run out of process; see `vibestudio jobs`).", no_args_is_help=True
)
jobs_app = typer.Typer(help="Training jobs: list, inspect, cancel, resume, logs.", no_args_is_help=True)

_JSON = typer.Option(False, "--json", help="Print JSON (progress bars go to stderr).")


def _fail(msg: str) -> None:
    typer.secho(f"Error: {msg}", fg=typer.colors.RED, err=True)
    raise typer.Exit(1)


def _db():  # type: ignore[no-untyped-def]
    from studio.context import build_context

    return build_context().db


def parse_set(items: list[str] | None) -> dict[str, Any]:
    """``field=value`` pairs; values are read as YAML (``lora=false``, ``rewards=[{type: length}]``)."""
    import yaml

    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            _fail(f"--set {item!r}: expected FIELD=VALUE")
        try:
            out[key.strip()] = yaml.safe_load(value) if value.strip() else ""
        except yaml.YAMLError as exc:
            _fail(f"--set {key}: not a valid value ({exc})")
    return out


def parse_reward(text: str) -> dict[str, Any]:
    """A reward spec: a YAML mapping (``{type: length, max: 60}``) or ``TYPE[:key=value,...]``."""
    import yaml

    text = text.strip()
    try:
        if text.startswith("{"):
            spec = yaml.safe_load(text)
        else:
            kind, _, rest = text.partition(":")
            spec = {"type": kind.strip()}
            for part in filter(None, (p.strip() for p in rest.split(","))):
                key, sep, value = part.partition("=")
                if not sep:
                    _fail(f"--reward {text!r}: expected key=value, got {part!r}")
                spec[key.strip()] = yaml.safe_load(value)
    except yaml.YAMLError as exc:
        _fail(f"--reward {text!r}: {exc}")
    if not isinstance(spec, dict):
        _fail(f"--reward {text!r}: expected a mapping like {{type: length, max: 60}}")
    return dict(spec)


def job_dict(v: Any) -> dict[str, Any]:
    """A job view as JSON-ready data (last value of each metric, not the whole series)."""
    return {
        "id": v.id,
        "kind": v.kind,
        "status": v.status,
        "progress": v.progress,
        "error": v.error,
        "parent_contestant_id": v.parent_contestant_id,
        "snapshot_id": v.snapshot_id,
        "contestant_id": v.contestant_id,
        "created_at": v.created_at,
        "started_at": v.started_at,
        "ended_at": v.ended_at,
        **(
            {
                "queue_position": v.queue_position,
                "log_path": v.log_path,
                "output_dir": v.output_dir,
                "metrics": {name: series[-1][1] for name, series in v.metrics.items() if series},
                "config": v.config,
            }
            if hasattr(v, "metrics")
            else {}
        ),
    }


def _echo_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, default=str))


def follow(db, job_id: int, timeout: float, as_json: bool) -> None:  # type: ignore[no-untyped-def]
    """A progress bar until the job ends (or ``timeout``); exit 1 unless it succeeded."""
    from tqdm import tqdm

    from training.runner import job_view, pid_alive, reconcile

    bar = tqdm(total=100, desc=f"job {job_id}", unit="%")
    deadline = time.monotonic() + timeout
    while True:
        v = job_view(db, job_id, tail_lines=1)
        bar.n = int(100 * (v.progress or 0))
        loss = v.last("loss") if v.last("loss") is not None else v.last("reward")
        bar.set_postfix(status=v.status, **({"loss/reward": f"{loss:.3g}"} if loss is not None else {}))
        bar.refresh()
        if v.done or time.monotonic() > deadline:
            break
        if v.status == "running" and v.pid and not pid_alive(v.pid):
            reconcile(db)
        time.sleep(1.0)
    bar.close()
    if as_json:
        _echo_json(job_dict(v))
    if v.status != "succeeded":
        _fail(f"job {job_id} {v.status}" + (f": {v.error}" if v.error else " (still running: --timeout)"))
    if not as_json:
        extra = f"; published as contestant id {v.contestant_id}" if v.contestant_id else ""
        typer.echo(f"Job {job_id} succeeded{extra}.")


def launch_from_cli(
    kind: str,
    config: Path | None,
    flags: dict[str, Any],
    sets: list[str] | None,
    dry_run: bool,
    wait: bool,
    timeout: float,
    as_json: bool,
) -> None:
    """Merge config file < flags < --set, check field by field, then launch (or only show, ``--dry-run``)."""
    import yaml

    from training.errors import JobError
    from training.pairmix import describe_mix
    from training.service import check_config, launch_config

    data: dict[str, Any] = {}
    if config is not None:
        try:
            loaded = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
        except OSError as exc:
            _fail(f"{config}: {exc}")
        except yaml.YAMLError as exc:
            _fail(f"{config}: not valid YAML ({exc})")
        if not isinstance(loaded, dict):
            _fail(f"{config}: expected a mapping of field: value")
        if loaded.get("kind", kind) != kind:
            _fail(f"{config}: it is a {loaded['kind']!r} config; use `vibestudio train {loaded['kind']}`")
        data.update(loaded)
    data.update({k: v for k, v in flags.items() if v is not None})
    data.update(parse_set(sets))
    data["kind"] = kind
    db = _db()
    check = check_config(db, data)
    if dry_run or check.errors:
        out = {
            "ok": check.ok,
            "errors": [{"field": e.field, "message": e.message} for e in check.errors],
            "config": check.config.to_dict() if check.config else None,
            "estimate": check.estimate.summary() if check.estimate else None,
            "fits": check.estimate.fits if check.estimate else None,
            "pair_mix": check.mix,
        }
        if as_json:
            _echo_json(out)
        else:
            if check.config is not None:
                typer.echo(check.yaml.rstrip())
            if check.estimate:
                typer.echo(f"# estimate: {check.estimate.summary()}")
            if check.mix:
                typer.echo(f"# pairs for the parent: {describe_mix(check.mix)}")
            for e in check.errors:
                typer.secho(f"{e.field or 'config'}: {e.message}", fg=typer.colors.RED, err=True)
        if check.errors:
            raise typer.Exit(1)
        return
    try:
        job_id = launch_config(db, data)
    except JobError as exc:
        _fail(str(exc))
        return
    if not wait:
        if as_json:
            from training.runner import job_view

            _echo_json(job_dict(job_view(db, job_id)))
        else:
            typer.echo(f"Job {job_id} submitted; follow it with `vibestudio jobs show {job_id}`.")
        return
    if not as_json:
        typer.echo(f"Job {job_id} submitted.")
    follow(db, job_id, timeout, as_json)


# ---- shared options -------------------------------------------------------------------------------------------
_PARENT = typer.Option(None, help="Contestant (public name or id) to start from [default: smollm2-plain].")
_SNAPSHOT = typer.Option(None, help="Snapshot hash (or prefix); default: freeze the current votes.")
_CONFIG = typer.Option(None, help="YAML config file (fields as in `vibestudio train KIND --dry-run`).")
_SET = typer.Option(None, "--set", help="FIELD=VALUE (YAML value), repeatable; wins over flags and --config.")
_STEPS = typer.Option(None, "--steps", help="Optimizer steps (max_steps).")
_LR = typer.Option(None, "--lr", help="Learning rate (default: the kind's LoRA/full default).")
_LORA = typer.Option(None, "--lora/--full", help="LoRA adapter (default) or full fine-tune.")
_BATCH = typer.Option(None, "--batch-size", help="Rows per device per step.")
_SAVE = typer.Option(None, "--save-steps", help="Keep a resumable checkpoint every N steps (0 = none).")
_PAIRS = typer.Option(
    None, "--pairs", help="all | on_policy | on_and_half | off_policy (seen from the parent)."
)
_NAME = typer.Option(None, "--output-name", help="Public name of the published contestant.")
_DRY = typer.Option(
    False, "--dry-run", help="Check the config and show it with the estimate; launch nothing."
)
_WAIT = typer.Option(True, "--wait/--no-wait", help="Follow the job with a progress bar until it ends.")
_TIMEOUT = typer.Option(3600.0, help="Seconds to wait with --wait.")


def _common(
    parent: str | None,
    snapshot: str | None,
    steps: int | None,
    lr: float | None,
    lora: bool | None,
    batch: int | None,
    save_steps: int | None,
    pairs: str | None,
    output_name: str | None,
) -> dict[str, Any]:
    return {
        "parent_contestant": parent,
        "snapshot_hash": snapshot,
        "max_steps": steps,
        "learning_rate": lr,
        "lora": lora,
        "per_device_train_batch_size": batch,
        "save_steps": save_steps,
        "pairs": pairs,
        "output_name": output_name,
    }


@train_app.command("dpo")
def train_dpo(
    parent: str = _PARENT,
    snapshot: str = _SNAPSHOT,
    config: Path = _CONFIG,
    set_: list[str] = _SET,
    steps: int = _STEPS,
    lr: float = _LR,
    lora: bool = _LORA,
    batch_size: int = _BATCH,
    save_steps: int = _SAVE,
    pairs: str = _PAIRS,
    output_name: str = _NAME,
    beta: float = typer.Option(None, help="DPO beta (0.1)."),
    loss_type: str = typer.Option(None, help="DPO loss: sigmoid, ipo, hinge, robust, ... (see --dry-run)."),
    kl_every: int = typer.Option(None, help="Measure KL to the reference every N steps (0 = at the end)."),
    dry_run: bool = _DRY,
    wait: bool = _WAIT,
    timeout: float = _TIMEOUT,
    as_json: bool = _JSON,
) -> None:
    """DPO on a preference snapshot; the checkpoint joins the arena as a contestant."""
    flags = _common(parent, snapshot, steps, lr, lora, batch_size, save_steps, pairs, output_name)
    flags.update(beta=beta, loss_type=loss_type, kl_every=kl_every)
    launch_from_cli("dpo", config, flags, set_, dry_run, wait, timeout, as_json)


@train_app.command("reward")
def train_reward(
    parent: str = _PARENT,
    snapshot: str = _SNAPSHOT,
    config: Path = _CONFIG,
    set_: list[str] = _SET,
    steps: int = _STEPS,
    lr: float = _LR,
    lora: bool = _LORA,
    batch_size: int = _BATCH,
    save_steps: int = _SAVE,
    pairs: str = _PAIRS,
    dry_run: bool = _DRY,
    wait: bool = _WAIT,
    timeout: float = _TIMEOUT,
    as_json: bool = _JSON,
) -> None:
    """A reward model (Bradley-Terry) on a preference snapshot; use it in GRPO with --reward reward_model:job=ID."""
    flags = _common(parent, snapshot, steps, lr, lora, batch_size, save_steps, pairs, None)
    launch_from_cli("reward", config, flags, set_, dry_run, wait, timeout, as_json)


@train_app.command("grpo")
def train_grpo(
    parent: str = _PARENT,
    snapshot: str = _SNAPSHOT,
    config: Path = _CONFIG,
    set_: list[str] = _SET,
    steps: int = _STEPS,
    lr: float = _LR,
    lora: bool = _LORA,
    batch_size: int = _BATCH,
    save_steps: int = _SAVE,
    pairs: str = _PAIRS,
    output_name: str = _NAME,
    reward: list[str] = typer.Option(
        None,
        help="A reward function (repeatable): TYPE[:key=value,...] or a YAML mapping, e.g. length:max=60, "
        "format:format=no_emoji,weight=0.5, reward_model:job=7, judge:judge=smollm2-plain. At least one.",
    ),
    beta: float = typer.Option(None, help="KL penalty to the reference (0.04)."),
    num_generations: int = typer.Option(None, help="Answers sampled per prompt (the group)."),
    max_completion_length: int = typer.Option(None, help="Maximum tokens per sampled answer."),
    dry_run: bool = _DRY,
    wait: bool = _WAIT,
    timeout: float = _TIMEOUT,
    as_json: bool = _JSON,
) -> None:
    """GRPO with verifiable rewards, a learned reward model or an AI judge; the checkpoint joins the arena."""
    flags = _common(parent, snapshot, steps, lr, lora, batch_size, save_steps, pairs, output_name)
    flags.update(beta=beta, num_generations=num_generations, max_completion_length=max_completion_length)
    if reward:
        flags["rewards"] = [parse_reward(r) for r in reward]
    elif config is None and not any(s.startswith("rewards=") for s in set_ or []):
        _fail("a GRPO job needs at least one reward function: --reward length:max=60 (see --help)")
    launch_from_cli("grpo", config, flags, set_, dry_run, wait, timeout, as_json)


# ---- jobs ------------------------------------------------------------------------------------------------------
def _view(db, job_id: int):  # type: ignore[no-untyped-def]
    from training.errors import JobError
    from training.runner import job_view

    try:
        return job_view(db, job_id)
    except JobError as exc:
        _fail(str(exc))


@jobs_app.command("list")
def jobs_list(
    status: str = typer.Option(None, help="Only jobs with this status (queued, running, succeeded, ...)."),
    limit: int = typer.Option(50, help="Newest N jobs."),
    as_json: bool = _JSON,
) -> None:
    """Jobs, newest first: kind, status, progress, parent, result."""
    from training.runner import list_jobs, reconcile

    db = _db()
    reconcile(db, start=False)
    jobs = [j for j in list_jobs(db, limit=limit) if status is None or j.status == status]
    if as_json:
        _echo_json([job_dict(j) for j in jobs])
        return
    if not jobs:
        typer.echo("No jobs yet: `vibestudio train dpo --help`.")
    for j in jobs:
        progress = f"{100 * j.progress:3.0f}%" if j.progress is not None else "    "
        result = (
            f"contestant {j.contestant_id}"
            if j.contestant_id
            else (j.error or "").splitlines()[0][:60]
            if j.error
            else ""
        )
        typer.echo(
            f"{j.id:>4}  {j.kind:<6} {j.status:<9} {progress}  parent {j.parent_contestant_id}  {result}"
        )


@jobs_app.command("show")
def jobs_show(job_id: int = typer.Argument(..., help="Job id."), as_json: bool = _JSON) -> None:
    """One job: status, config, last metrics, result, log tail."""
    from training.runner import reconcile

    db = _db()
    reconcile(db, start=False)
    v = _view(db, job_id)
    if as_json:
        _echo_json({**job_dict(v), "log_tail": v.log_tail})
        return
    progress = f" {100 * v.progress:.0f}%" if v.progress is not None else ""
    typer.echo(f"Job {v.id} · {v.kind} · {v.status}{progress}")
    if v.queue_position is not None:
        typer.echo(f"position {v.queue_position} in the queue")
    if v.contestant_id:
        typer.echo(f"published as contestant id {v.contestant_id}")
    if v.error:
        typer.echo(f"error: {v.error}")
    for name, value in sorted(job_dict(v)["metrics"].items()):
        typer.echo(f"  {name:<28} {value:.4g}")
    typer.echo(
        f"config: {v.config.get('kind')} from {v.config.get('parent_contestant')}, snapshot "
        f"{str(v.config.get('snapshot_hash'))[:12]}, {v.config.get('max_steps')} steps; log {v.log_path}"
    )


@jobs_app.command("cancel")
def jobs_cancel(job_id: int = typer.Argument(..., help="Job id."), as_json: bool = _JSON) -> None:
    """Cancel a queued or running job (its process group is stopped; the queue moves on)."""
    from training.errors import JobError
    from training.runner import cancel

    db = _db()
    try:
        v = cancel(db, job_id)
    except JobError as exc:
        _fail(str(exc))
        return
    if as_json:
        _echo_json(job_dict(v))
    else:
        typer.echo(f"Job {v.id} {v.status}.")


@jobs_app.command("resume")
def jobs_resume(
    job_id: int = typer.Argument(..., help="Job id (failed or cancelled)."),
    from_scratch: bool = typer.Option(False, help="Start over when its checkpoints are gone."),
    wait: bool = _WAIT,
    timeout: float = _TIMEOUT,
    as_json: bool = _JSON,
) -> None:
    """Continue a failed or cancelled job from its newest saved checkpoint."""
    from training.errors import JobError
    from training.runner import resume

    db = _db()
    try:
        v = resume(db, job_id, from_scratch=from_scratch)
    except JobError as exc:
        _fail(str(exc))
        return
    if not wait:
        if as_json:
            _echo_json(job_dict(v))
        else:
            typer.echo(f"Job {v.id} {v.status}.")
        return
    follow(db, job_id, timeout, as_json)


@jobs_app.command("logs")
def jobs_logs(
    job_id: int = typer.Argument(..., help="Job id."),
    lines: int = typer.Option(40, help="Last N lines."),
    follow_: bool = typer.Option(False, "--follow", "-f", help="Keep printing new lines until the job ends."),
) -> None:
    """The job's train.log (the worker's output)."""
    from training.runner import log_tail

    db = _db()
    v = _view(db, job_id)
    typer.echo(log_tail(v.log_path, lines=lines, max_chars=1_000_000))
    if not follow_ or not v.log_path:
        return
    pos = Path(v.log_path).stat().st_size if Path(v.log_path).exists() else 0
    while True:
        time.sleep(1.0)
        if Path(v.log_path).exists():
            with open(v.log_path, "rb") as fh:
                fh.seek(pos)
                chunk = fh.read()
                pos += len(chunk)
            if chunk:
                typer.echo(chunk.decode("utf-8", errors="replace"), nl=False)
        if _view(db, job_id).done:
            return


def register(app: typer.Typer) -> None:
    app.add_typer(train_app, name="train")
    app.add_typer(jobs_app, name="jobs")
