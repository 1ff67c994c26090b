"""``vibestudio train dpo|kto|orpo|simpo|reward|grpo|compare|comparison|health``: launch training jobs, and
read a job's health or a comparison.

A launch is one job, or several objectives side by side. Health is a job's over-optimisation alerts. A
thin layer over ``training.jobs.service``. Flags, an optional YAML config and ``--set field=value`` become
one config mapping. Precedence: the config file, then the flags, then ``--set``. The mapping is checked
field by field before anything is written or started. Then the job is queued and followed with a progress
bar (``studio.cli.jobs``). It is reported as text or ``--json``.
"""

import functools
import inspect
from pathlib import Path
from typing import Any, NoReturn, Optional

import typer

from vibestudio.studio.cli._common import echo_json, fail, open_db, yaml_value
from vibestudio.studio.cli._lazy import LazyTyper
from vibestudio.studio.cli.health import train_health
from vibestudio.studio.cli.jobs import JSON_OPTION, TIMEOUT_OPTION, WAIT_OPTION, follow, job_dict

train_app = LazyTyper(
    help="Launch training jobs (run out of process; see `vibestudio jobs`).", no_args_is_help=True
)


def parse_set(items: list[str] | None) -> dict[str, Any]:
    """``field=value`` pairs; values are read as YAML (``lora=false``, ``rewards=[{type: length}]``)."""
    out, problems = set_values(items)
    if problems:
        fail(problems[0].message)
    return out


def set_values(items: list[str] | None) -> tuple[dict[str, Any], list[Any]]:
    """``parse_set``'s pairs, and a one-line problem (a ``FieldError``) per ``--set`` that cannot be read."""
    import yaml

    from vibestudio.training.jobs.config import FieldError, yaml_syntax

    out: dict[str, Any] = {}
    problems = []
    for item in items or []:
        key, sep, value = item.partition("=")
        where = f"--set {item.strip()}"
        if not sep or not key.strip():
            problems.append(FieldError(key.strip(), f"--set {item!r}: expected FIELD=VALUE", where))
            continue
        try:
            out[key.strip()] = yaml.safe_load(value) if value.strip() else ""
        except (yaml.YAMLError, RecursionError):
            said = yaml_syntax(value, one_line=True)[1] or "not YAML"
            problems.append(FieldError(key.strip(), f"{where}: not a valid value ({said})", where))
    return out, problems


def kind_problem(said_as: str, named: Any, kind: str) -> str | None:
    """Why a config ``said_as`` (a file, ``--set kind=...``) naming kind ``named`` cannot run as ``vibestudio
    train KIND``; None when it is that kind."""
    from vibestudio.training.jobs.config import CONFIG_KINDS

    if named == kind:
        return None
    if isinstance(named, str) and named in CONFIG_KINDS:
        what = "job" if said_as.startswith("--set") else "config"
        return f"{said_as}: it is a {named!r} {what}; use `vibestudio train {named}`"
    return (
        f"{said_as}: unknown job kind {named!r} (known: {', '.join(sorted(CONFIG_KINDS))}); "
        f"`vibestudio train {kind}` makes {kind} jobs"
    )


def parse_reward(text: str) -> dict[str, Any]:
    """A reward spec: a YAML mapping (``{type: length, max: 60}``) or ``TYPE[:key=value,...]``."""

    text = text.strip()
    if text.startswith("{"):
        spec = yaml_value("--reward", text)
    else:
        kind, _, rest = text.partition(":")
        spec = {"type": kind.strip()}
        for part in filter(None, (p.strip() for p in rest.split(","))):
            key, sep, value = part.partition("=")
            if not sep:
                fail(f"--reward {text!r}: expected key=value, got {part!r}")
            spec[key.strip()] = yaml_value(f"--reward {key.strip()}=", value)
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
    from vibestudio.training.jobs.config import ConfigError, FieldError, Sources, read_config_file
    from vibestudio.training.jobs.errors import JobError
    from vibestudio.training.jobs.service import check_config, launch_checked

    data: dict[str, Any] = {}
    sources = Sources()
    refused: list[FieldError] = []  # what stops the check before it starts, said as its errors are
    if config is not None:
        try:
            loaded, sources = read_config_file(config)  # errors then name the file and the line of the field
        except ConfigError as exc:
            _refuse([FieldError("", str(exc), exc.where or str(config))], as_json)
        wrong = kind_problem(str(config), loaded.get("kind", kind), kind)
        if wrong:
            refused.append(FieldError("kind", wrong, str(config)))
        data.update(loaded)
    given = {k: v for k, v in flags.items() if v is not None}
    data.update(given)
    sources.given.update({k: "--" + k.replace("_", "-") for k in given})
    values, problems = set_values(sets)
    refused += problems
    said = [f"--set {s.strip()}" for s in sets or [] if s.partition("=")[0].strip() == "kind"]
    wrong = kind_problem(said[-1], values["kind"], kind) if "kind" in values else None  # the last one wins
    if wrong:
        refused.append(FieldError("kind", wrong, said[-1]))
    if refused:
        _refuse(refused, as_json)
    data.update(values)
    sources.given.update({item.partition("=")[0].strip(): f"--set {item.strip()}" for item in sets or []})
    data["kind"] = kind
    db = open_db()
    check = check_config(db, data, sources=sources)
    if dry_run or check.errors:
        _show_check(check, check.errors, as_json)
        return
    try:
        job_id = launch_checked(db, check)  # the check above, not a second one
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


def _show_check(check: Any, errors: list[Any], as_json: bool) -> None:
    """What ``--dry-run`` shows (or a refused launch): the config, its estimate, pairs, classes and notes, then
    every problem as ``Error: WHERE: MESSAGE``, as the CLI's other refusals; exit 1 on a problem. ``check``:
    None when the config could not be read."""
    from vibestudio.annotation.unpaired import describe_balance
    from vibestudio.training.objectives.pairmix import describe_mix

    config, est = (check.config, check.estimate) if check is not None else (None, None)
    notes = check.found.notes if check is not None and check.found is not None else []
    if as_json:
        echo_json(
            {
                "ok": check is not None and check.ok,
                "errors": [{"field": e.field, "message": e.message, "where": e.where} for e in errors],
                "config": config.to_dict() if config else None,
                "estimate": est.summary() if est else None,
                "fits": est.fits if est else None,
                "pair_mix": check.mix if check is not None else None,
                "balance": check.balance if check is not None else None,
                "notes": notes,
            }
        )
    else:
        if config is not None:
            typer.echo(check.yaml.rstrip())
        if est:
            typer.echo(f"# estimate: {est.summary()}")
        if check is not None and check.mix:
            typer.echo(f"# pairs for the parent: {describe_mix(check.mix)}")
        if check is not None and check.balance:
            typer.echo(f"# KTO classes: {describe_balance(check.balance)}")
        for note in notes if not est else [n for n in notes if n not in est.summary()]:
            typer.echo(f"# note: {note}")
        for e in errors:
            said = e.message if e.where else f"{e.field or 'config'}: {e.message}"
            typer.secho(f"Error: {said}", fg=typer.colors.RED, err=True)
    if errors:
        raise typer.Exit(1)


def _refuse(errors: list[Any], as_json: bool) -> NoReturn:
    """Problems found before the check could run, shown as its errors are (``_show_check``); exit 1."""
    _show_check(None, errors, as_json)
    raise typer.Exit(1)


# ---- one command per job kind, derived from its config class -----------------------------------------------------
_CONFIG = typer.Option(None, help="YAML config file (fields as in `vibestudio train KIND --dry-run`).")
_SET = typer.Option(
    None,
    "--set",
    metavar="FIELD=VALUE",
    help="A field and its value (YAML), repeatable; wins over flags and --config.",
)
_DRY = typer.Option(
    False, "--dry-run", help="Check the config and show it with the estimate; launch nothing."
)
_STEPS = typer.Option(None, "--steps", "--max-steps", help="Optimizer steps to run (max_steps).")
_LORA = typer.Option(None, "--lora/--full", help="Train a LoRA adapter (default) or the full model.")

#: What each kind's command says it does (its fields and their help come from its config class).
KIND_HELP = {
    "dpo": "DPO on a preference snapshot; the checkpoint joins the arena as a contestant.",
    "kto": "KTO on unpaired answers: both-good and both-bad votes train too (no snapshot = the current votes as "
    "desirable / undesirable rows); --dry-run shows the class balance and the weights.",
    "orpo": "ORPO (reference-free) on a preference snapshot; the checkpoint joins the arena as a contestant.",
    "simpo": "SimPO (reference-free, length-normalised) on a preference snapshot; the checkpoint joins the arena.",
    "reward": "A reward model (Bradley-Terry) on a preference snapshot; use it in GRPO with "
    "--reward reward_model:job=ID.",
    "grpo": "GRPO with verifiable rewards (on a task set with --tasks: RLVR, which adds the task reward), a learned "
    "reward model or an AI judge; the checkpoint joins the arena.",
}


def field_options(kind: str) -> list[tuple[str, Any, Any]]:
    """(field, annotation, typer.Option) for every field of ``kind``'s config that has a flag: ``--field-name``
    and any other names the field declares (``flags``), its help with its default and bounds. Every default
    is None, so a flag left out leaves the config file's value (or the field's default) alone."""
    import dataclasses
    from typing import Optional

    from vibestudio.training.jobs.config import CONFIG_KINDS, bounds_text, default_of

    out = []
    for f in dataclasses.fields(CONFIG_KINDS[kind]):
        meta = f.metadata
        base = f.type if isinstance(f.type, type) else _plain_type(str(f.type))
        if not meta.get("cli", True) or base is None:
            continue
        names = list(meta.get("flags", ()))
        dashed = "--" + f.name.replace("_", "-")
        if base is bool and not names:
            names = [f"{dashed}/--no-{dashed[2:]}"]
        elif base is not bool and dashed not in names:
            names.append(dashed)
        rule = bounds_text(meta)
        shown = default_of(f)
        extra = f"default: {'null' if shown is None else repr(shown)}" + (f"; {rule}" if rule else "")
        option = typer.Option(None, *names, help=f"{meta.get('help', '')} [{extra}]", show_default=False)
        out.append((f.name, Optional[base], option))  # noqa: UP045 (typer reads Optional)
    return out


def _plain_type(annotation: str) -> type | None:
    """The flag type of a field's annotation text (``float | None`` -> float); None for lists and mappings."""
    name = annotation.replace(" | None", "").strip()
    return {"int": int, "float": float, "str": str, "bool": bool}.get(name)


def kind_command(kind: str, extra: list[inspect.Parameter] | None = None, adjust: Any = None) -> Any:
    """The ``vibestudio train KIND`` command: ``--config``, ``--set``, one option per config field
    (``field_options``), then ``extra`` (and ``adjust(flags, values)`` to turn them into fields)."""
    fields = field_options(kind)
    keyword = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter("config", keyword, default=_CONFIG, annotation=Optional[Path]),  # noqa: UP045
        inspect.Parameter("set_", keyword, default=_SET, annotation=Optional[list[str]]),  # noqa: UP045
        *[inspect.Parameter(name, keyword, default=opt, annotation=ann) for name, ann, opt in fields],
        *(extra or []),
        inspect.Parameter("dry_run", keyword, default=_DRY, annotation=bool),
        inspect.Parameter("wait", keyword, default=WAIT_OPTION, annotation=bool),
        inspect.Parameter("timeout", keyword, default=TIMEOUT_OPTION, annotation=float),
        inspect.Parameter("as_json", keyword, default=JSON_OPTION, annotation=bool),
    ]
    names = [name for name, _, _ in fields]

    def command(**values: Any) -> None:
        flags = {name: values[name] for name in names}
        if adjust is not None:
            adjust(flags, values)
        launch_from_cli(
            kind,
            values["config"],
            flags,
            values["set_"],
            values["dry_run"],
            values["wait"],
            values["timeout"],
            values["as_json"],
        )

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__doc__ = KIND_HELP[kind]
    command.__name__ = f"train_{kind}"
    return command


_GRPO_EXTRA = [
    inspect.Parameter(
        "reward",
        inspect.Parameter.KEYWORD_ONLY,
        annotation=Optional[list[str]],  # noqa: UP045
        default=typer.Option(
            None,
            help="A reward function (repeatable): TYPE[:key=value,...] or a YAML mapping, e.g. length:max=60, "
            "format:format=no_emoji,weight=0.5, reward_model:job=7, judge:judge=smollm2-plain. At least one.",
        ),
    ),
    inspect.Parameter(
        "verifier",
        inspect.Parameter.KEYWORD_ONLY,
        annotation=Optional[str],  # noqa: UP045
        default=typer.Option(
            None,
            help="With --tasks: one verifier for every task's reward instead of each task's own, as a type or a "
            "YAML mapping (e.g. '{type: numeric, tolerance: 0.5}'). Held-out accuracy always uses the task's own.",
        ),
    ),
]


def _grpo_rewards(flags: dict[str, Any], values: dict[str, Any]) -> None:
    """``--reward`` specs, and with ``--tasks`` the task reward first (with ``--verifier``'s verifier)."""

    reward, verifier = values["reward"], values["verifier"]
    if flags.get("tasks"):
        task_reward: dict[str, Any] = {"type": "task"}
        if verifier:
            spec = yaml_value("--verifier", verifier)
            task_reward["verifier"] = {"type": spec} if isinstance(spec, str) else spec
        flags["rewards"] = [task_reward] + [parse_reward(r) for r in reward or []]
    elif verifier:
        fail("--verifier needs --tasks")
    elif reward:
        flags["rewards"] = [parse_reward(r) for r in reward]
    elif values["config"] is None and not any(s.startswith("rewards=") for s in values["set_"] or []):
        fail("a GRPO job needs at least one reward function: --reward length:max=60 (see --help)")


def launch_command(kind: str) -> Any:
    """The ``vibestudio train KIND`` command function (GRPO's with ``--reward`` and ``--verifier``)."""
    if kind == "grpo":
        return kind_command(kind, _GRPO_EXTRA, _grpo_rewards)
    return kind_command(kind)


# Lazy: `vibestudio train --help` lists the kinds from KIND_HELP; a kind's options are built when it runs or draws
# its own help, so listing them imports no config class and builds none of their ~57 options.
for _kind in KIND_HELP:
    train_app.lazy_command(_kind, functools.partial(launch_command, _kind), help=KIND_HELP[_kind])


_AXIS = typer.Option(
    None, help="The drift feature the votes planted a taste on (e.g. emoji, flattery, list_items)."
)
_TOWARD = typer.Option("higher", help="Which way the taste moves the axis: higher or lower.")


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
    axis: str = _AXIS,
    toward: str = _TOWARD,
    wait: bool = WAIT_OPTION,
    timeout: float = TIMEOUT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Train several objectives on one parent and one freeze of the votes with matched budgets; then compare the
    children (``vibestudio train comparison ID``). ``--set FIELD=VALUE`` applies to every objective,
    ``--set kto.beta=0.2`` to one. ``--axis emoji`` names the planted taste: the view then names the objective
    that moved it further, or says can't tell and how many prompts would tell."""
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
        cid = launch_comparison(
            db, parent, objectives, snapshot, per_objective=per, axis=axis, toward=toward, **shared
        )
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
    axis: str = typer.Option(
        None, help="Judge the children on this planted axis (default: the one named at launch)."
    ),
    toward: str = typer.Option(None, help="higher or lower (default: as named at launch, else higher)."),
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
        view = comparison(db, comparison_id, axis=axis, toward=toward)
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
