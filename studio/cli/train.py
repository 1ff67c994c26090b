"""``vibestudio train dpo|kto|orpo|simpo|reward|grpo|compare|comparison|health``: launch training jobs, and
read a job's health or a comparison.

A launch is one job, or several objectives side by side. Health is a job's over-optimisation alerts. A
thin layer over ``training.jobs.service``. Flags, an optional YAML config and ``--set field=value`` become
one config mapping. Precedence: the config file, then the flags, then ``--set``. The mapping is checked
field by field before anything is written or started. Then the job is queued and followed with a progress
bar (``studio.cli.jobs``). It is reported as text or ``--json``.
"""

from pathlib import Path
from typing import Any

import typer

from vibestudio.studio.cli._common import echo_json, fail, group, open_db
from vibestudio.studio.cli.health import train_health
from vibestudio.studio.cli.jobs import JSON_OPTION, TIMEOUT_OPTION, WAIT_OPTION, follow, job_dict

train_app = group(
    help="Launch training jobs (run out of process; see `vibestudio jobs`).", no_args_is_help=True
)


def parse_set(items: list[str] | None) -> dict[str, Any]:
    """``field=value`` pairs; values are read as YAML (``lora=false``, ``rewards=[{type: length}]``)."""
    import yaml

    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            fail(f"--set {item!r}: expected FIELD=VALUE")
        try:
            out[key.strip()] = yaml.safe_load(value) if value.strip() else ""
        except yaml.YAMLError as exc:
            fail(f"--set {key}: not a valid value ({exc})")
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
                    fail(f"--reward {text!r}: expected key=value, got {part!r}")
                spec[key.strip()] = yaml.safe_load(value)
    except yaml.YAMLError as exc:
        fail(f"--reward {text!r}: {exc}")
    if not isinstance(spec, dict):
        fail(f"--reward {text!r}: expected a mapping like {{type: length, max: 60}}")
    return dict(spec)


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
    from vibestudio.annotation.unpaired import describe_balance
    from vibestudio.common.files import read_yaml
    from vibestudio.training.jobs.errors import JobError
    from vibestudio.training.jobs.service import check_config, launch_config
    from vibestudio.training.objectives.pairmix import describe_mix

    data: dict[str, Any] = {}
    if config is not None:
        loaded, error = read_yaml(config)
        if error is not None:
            fail(error.format(str(config)))
        loaded = loaded or {}
        if not isinstance(loaded, dict):
            fail(f"{config}: expected a mapping of field: value")
        if loaded.get("kind", kind) != kind:
            fail(f"{config}: it is a {loaded['kind']!r} config; use `vibestudio train {loaded['kind']}`")
        data.update(loaded)
    data.update({k: v for k, v in flags.items() if v is not None})
    data.update(parse_set(sets))
    data["kind"] = kind
    db = open_db()
    check = check_config(db, data)
    if dry_run or check.errors:
        out = {
            "ok": check.ok,
            "errors": [{"field": e.field, "message": e.message} for e in check.errors],
            "config": check.config.to_dict() if check.config else None,
            "estimate": check.estimate.summary() if check.estimate else None,
            "fits": check.estimate.fits if check.estimate else None,
            "pair_mix": check.mix,
            "balance": check.balance,
        }
        if as_json:
            echo_json(out)
        else:
            if check.config is not None:
                typer.echo(check.yaml.rstrip())
            if check.estimate:
                typer.echo(f"# estimate: {check.estimate.summary()}")
            if check.mix:
                typer.echo(f"# pairs for the parent: {describe_mix(check.mix)}")
            if check.balance:
                typer.echo(f"# KTO classes: {describe_balance(check.balance)}")
            for e in check.errors:
                typer.secho(f"{e.field or 'config'}: {e.message}", fg=typer.colors.RED, err=True)
        if check.errors:
            raise typer.Exit(1)
        return
    try:
        job_id = launch_config(db, data)
    except JobError as exc:
        fail(str(exc))
    if not wait:
        if as_json:
            from vibestudio.training.jobs.runner import job_view

            echo_json(job_dict(job_view(db, job_id)))
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
    wait: bool = WAIT_OPTION,
    timeout: float = TIMEOUT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """DPO on a preference snapshot; the checkpoint joins the arena as a contestant."""
    flags = _common(parent, snapshot, steps, lr, lora, batch_size, save_steps, pairs, output_name)
    flags.update(beta=beta, loss_type=loss_type, kl_every=kl_every)
    launch_from_cli("dpo", config, flags, set_, dry_run, wait, timeout, as_json)


@train_app.command("kto")
def train_kto(
    parent: str = _PARENT,
    snapshot: str = _SNAPSHOT,
    config: Path = _CONFIG,
    set_: list[str] = _SET,
    steps: int = _STEPS,
    lr: float = _LR,
    lora: bool = _LORA,
    batch_size: int = _BATCH,
    save_steps: int = _SAVE,
    output_name: str = _NAME,
    beta: float = typer.Option(None, help="KTO beta (0.1)."),
    desirable_weight: float = typer.Option(None, help="Weight of the desirable losses (1.0)."),
    undesirable_weight: float = typer.Option(None, help="Weight of the undesirable losses (1.0)."),
    score_criterion: str = typer.Option(
        None, help="A rubric criterion whose scores label answers (empty = the votes alone)."
    ),
    desirable_threshold: float = typer.Option(
        None, help="With --score-criterion: scores at or above this are desirable (default: mid-scale)."
    ),
    dry_run: bool = _DRY,
    wait: bool = WAIT_OPTION,
    timeout: float = TIMEOUT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """KTO on unpaired answers: both-good and both-bad votes train too (no snapshot = the current votes as
    desirable / undesirable rows); --dry-run shows the class balance and the weights."""
    flags = _common(parent, snapshot, steps, lr, lora, batch_size, save_steps, None, output_name)
    flags.update(
        beta=beta,
        desirable_weight=desirable_weight,
        undesirable_weight=undesirable_weight,
        score_criterion=score_criterion,
        desirable_threshold=desirable_threshold,
    )
    launch_from_cli("kto", config, flags, set_, dry_run, wait, timeout, as_json)


@train_app.command("orpo")
def train_orpo(
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
    beta: float = typer.Option(None, help="Weight of the odds-ratio term (0.1)."),
    dry_run: bool = _DRY,
    wait: bool = WAIT_OPTION,
    timeout: float = TIMEOUT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """ORPO (reference-free) on a preference snapshot; the checkpoint joins the arena as a contestant."""
    flags = _common(parent, snapshot, steps, lr, lora, batch_size, save_steps, pairs, output_name)
    flags.update(beta=beta)
    launch_from_cli("orpo", config, flags, set_, dry_run, wait, timeout, as_json)


@train_app.command("simpo")
def train_simpo(
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
    beta: float = typer.Option(None, help="SimPO reward scale beta (2.0)."),
    simpo_gamma: float = typer.Option(None, help="Target reward margin gamma (0.5)."),
    dry_run: bool = _DRY,
    wait: bool = WAIT_OPTION,
    timeout: float = TIMEOUT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """SimPO (reference-free, length-normalised) on a preference snapshot; the checkpoint joins the arena."""
    flags = _common(parent, snapshot, steps, lr, lora, batch_size, save_steps, pairs, output_name)
    flags.update(beta=beta, simpo_gamma=simpo_gamma)
    launch_from_cli("simpo", config, flags, set_, dry_run, wait, timeout, as_json)


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
    wait: bool = WAIT_OPTION,
    timeout: float = TIMEOUT_OPTION,
    as_json: bool = JSON_OPTION,
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
    tasks: str = typer.Option(
        None,
        "--tasks",
        help="RLVR: train on this task set's train split (its held-out split is measured, never trained on); "
        "adds the task reward, mixed with any --reward (e.g. --reward regex:pattern=Answer:,weight=0.2).",
    ),
    verifier: str = typer.Option(
        None,
        help="With --tasks: one verifier for every task's reward instead of each task's own, as a type or a "
        "YAML mapping (e.g. '{type: numeric, tolerance: 0.5}'). Held-out accuracy always uses the task's own.",
    ),
    heldout_every: int = typer.Option(None, help="With --tasks: held-out accuracy every N steps."),
    heldout_tasks: int = typer.Option(None, help="With --tasks: held-out tasks per check (-1 = all)."),
    dry_run: bool = _DRY,
    wait: bool = WAIT_OPTION,
    timeout: float = TIMEOUT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """GRPO with verifiable rewards (on a task set: RLVR), a learned reward model or an AI judge; the checkpoint
    joins the arena."""
    flags = _common(parent, snapshot, steps, lr, lora, batch_size, save_steps, pairs, output_name)
    flags.update(beta=beta, num_generations=num_generations, max_completion_length=max_completion_length)
    if tasks:
        import yaml

        task_reward: dict[str, Any] = {"type": "task"}
        if verifier:
            try:
                spec = yaml.safe_load(verifier)
            except yaml.YAMLError as exc:
                fail(f"--verifier {verifier!r}: {exc}")
            task_reward["verifier"] = {"type": spec} if isinstance(spec, str) else spec
        flags.update(tasks=tasks, heldout_every=heldout_every, heldout_tasks=heldout_tasks)
        flags["rewards"] = [task_reward] + [parse_reward(r) for r in reward or []]
    elif verifier:
        fail("--verifier needs --tasks")
    elif reward:
        flags["rewards"] = [parse_reward(r) for r in reward]
    elif config is None and not any(s.startswith("rewards=") for s in set_ or []):
        fail("a GRPO job needs at least one reward function: --reward length:max=60 (see --help)")
    launch_from_cli("grpo", config, flags, set_, dry_run, wait, timeout, as_json)


@train_app.command("compare")
def train_compare(
    objectives: str = typer.Option(
        "dpo,kto,simpo", help="Objectives to train side by side (comma-separated): dpo, kto, orpo, simpo."
    ),
    parent: str = typer.Option(
        "smollm2-plain", help="Contestant (public name or id) every child starts from."
    ),
    snapshot: str = typer.Option(
        None,
        help="Snapshot hash for every objective; default: freeze the current votes once (pairs + KTO rows).",
    ),
    steps: int = _STEPS,
    batch_size: int = typer.Option(
        None, "--batch-size", help="Pairs per device per step (KTO gets twice as many answers)."
    ),
    lora: bool = _LORA,
    set_: list[str] = _SET,
    wait: bool = WAIT_OPTION,
    timeout: float = TIMEOUT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Train several objectives on one parent and one freeze of the votes with matched budgets; then compare the
    children (``vibestudio train comparison ID``). ``--set FIELD=VALUE`` applies to every objective,
    ``--set kto.beta=0.2`` to one."""
    from vibestudio.training.compare import comparison, launch_comparison
    from vibestudio.training.jobs.errors import JobError

    shared: dict[str, Any] = {
        k: v
        for k, v in {"max_steps": steps, "per_device_train_batch_size": batch_size, "lora": lora}.items()
        if v is not None
    }
    per: dict[str, dict[str, Any]] = {}
    for key, value in parse_set(set_).items():
        kind, dot, name = key.partition(".")
        if dot:
            per.setdefault(kind, {})[name] = value
        else:
            shared[key] = value
    db = open_db()
    try:
        cid = launch_comparison(db, parent, objectives, snapshot, per_objective=per, **shared)
    except JobError as exc:
        fail(str(exc))
    view = comparison(db, cid)
    if not as_json:
        typer.echo(f"Comparison {cid}: jobs {', '.join(str(c.job_id) for c in view.children)} submitted.")
    if wait:
        view = _follow_comparison(db, cid, timeout)
    _show_comparison(view, as_json)
    if wait and any(c.status != "succeeded" for c in view.children):
        raise typer.Exit(1)


def _follow_comparison(db: Any, cid: int, timeout: float) -> Any:
    """A progress bar over the children until each job and its report have ended (or ``timeout``)."""
    import time

    from tqdm import tqdm

    from vibestudio.training.compare import comparison
    from vibestudio.training.jobs.runner import fail_lost

    view = comparison(db, cid)
    bar = tqdm(total=len(view.children), desc=f"comparison {cid}", unit="child")
    deadline = time.monotonic() + timeout
    while not view.done and time.monotonic() < deadline:
        fail_lost(db)
        time.sleep(2.0)
        view = comparison(db, cid)
        bar.n = sum(
            c.status in ("succeeded", "failed", "cancelled") and c.state != "pending" for c in view.children
        )
        bar.set_postfix(running=",".join(c.label for c in view.children if c.status == "running") or "-")
        bar.refresh()
    bar.close()
    return view


@train_app.command("comparison")
def train_comparison(
    comparison_id: int = typer.Argument(None, help="Comparison id; leave out to list them."),
    as_json: bool = JSON_OPTION,
) -> None:
    """A comparison's children side by side (verdicts, evals, drift and KL with intervals), or the list."""
    from vibestudio.training.compare import comparison, list_comparisons
    from vibestudio.training.jobs.errors import JobError

    db = open_db()
    if comparison_id is None:
        rows = list_comparisons(db)
        if as_json:
            echo_json(
                [
                    {"id": r.id, "parent": r.parent, "objectives": r.objectives, "jobs": r.job_ids}
                    for r in rows
                ]
            )
        for r in [] if as_json else rows:
            typer.echo(f"{r.id}\t{r.parent}\t{','.join(r.objectives)}\tjobs {','.join(map(str, r.job_ids))}")
        return
    try:
        view = comparison(db, comparison_id)
    except JobError as exc:
        fail(str(exc))
    _show_comparison(view, as_json)


def _show_comparison(view: Any, as_json: bool) -> None:
    from dataclasses import asdict

    from vibestudio.training.compare import markdown

    if as_json:
        echo_json(asdict(view))
    else:
        typer.echo(markdown(view))


train_app.command("health")(train_health)
