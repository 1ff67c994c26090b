"""Annotation commands: ``vibestudio queue``, ``judge``, ``rubric``, ``argilla`` and ``agreement``.

A thin layer over ``annotation``: parse options, call the service, print a summary (or JSON). Importing
and exporting preference data is in ``studio.cli.data``.
"""

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer

from vibestudio.studio.cli._common import fail, group, open_db, progress_bar

T = TypeVar("T")

queue_app = group(help="Annotation queues: on-policy generation, progress, checklists.", no_args_is_help=True)
judge_app = group(
    help="AI judges: pairwise (positions swapped) and rubric grading; bias report.", no_args_is_help=True
)
rubric_app = group(help="Rubrics (YAML model specs).", no_args_is_help=True)
argilla_app = group(help="Argilla connector (optional extra 'argilla').", no_args_is_help=True)


def _num(x: float | None) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


@queue_app.command("create")
def queue_create(
    name: str = typer.Argument(..., help="Queue name."),
    prompt_set: str = typer.Option("mt-bench", help="Prompt set (first turn of each prompt is used)."),
    policy: str = typer.Option(..., help="Policy contestant (name)."),
    k: int = typer.Option(2, help="Answers per prompt (all pairs among them are queued)."),
    opponent: str = typer.Option(None, help="Pair the policy against this contestant instead of itself."),
    temperature: list[float] = typer.Option(None, help="Temperature per variant (repeat; cycles)."),
    seed: int = typer.Option(0, help="Seed of the first variant (variant i uses seed+i)."),
    max_prompts: int = typer.Option(None, help="Use only the first N prompts."),
    max_tokens: int = typer.Option(None, help="Cap answer length."),
    overlap: int = typer.Option(1, help="Annotators per item."),
    rubric: str = typer.Option("default", help="Rubric name or YAML path."),
    workers: int = typer.Option(None, help="Concurrent requests (default: the engine's concurrency)."),
) -> None:
    """Generate an on-policy queue (resumes when NAME exists with the same settings)."""
    from vibestudio.annotation.onpolicy import OnPolicySpec, generate_queue
    from vibestudio.annotation.queues import QueueError
    from vibestudio.annotation.rubrics import RubricError
    from vibestudio.arena.registry import RegistryError

    spec = OnPolicySpec(
        queue=name,
        prompt_set=prompt_set,
        policy=policy,
        k=k,
        opponent=opponent,
        temperatures=list(temperature or []),
        seed=seed,
        max_prompts=max_prompts,
        max_tokens=max_tokens,
        overlap=overlap,
        rubric=rubric,
        workers=workers,
    )
    bar, progress = progress_bar(f"queue {name}")
    try:
        res = generate_queue(open_db(), spec, progress, rubric_paths=True)
    except (QueueError, RubricError, RegistryError) as exc:
        bar.close()
        fail(str(exc))
    bar.close()
    typer.echo(
        f"Queue {res.queue!r}: {res.n_items} pair(s) from {res.n_prompts} prompt(s), {res.n_answers} answers "
        f"({res.tokens} tokens, {res.tokens_per_s:.1f} tok/s, {res.seconds:.1f} s); "
        f"{res.resumed} prompt(s) already done, {res.identical} identical pair(s) dropped"
    )
    for err in res.errors:
        typer.secho(f"  {err}", fg=typer.colors.YELLOW)


@queue_app.command("list")
def queue_list(as_json: bool = typer.Option(False, "--json")) -> None:
    """List queues with their size and labels."""
    from vibestudio.annotation.queues import list_queues

    with open_db().session() as s:
        qs = list_queues(s)
    if as_json:
        typer.echo(
            json.dumps(
                [{k: v for k, v in vars(q).items() if k != "rubric"} for q in qs], default=str, indent=2
            )
        )
        return
    for q in qs:
        typer.echo(
            f"{q.name:<32} {q.kind:<10} {q.status:<10} items={q.n_items:<6} labels={q.n_labels:<6} overlap={q.overlap}"
        )


@queue_app.command("progress")
def queue_progress_cmd(name: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """Per-queue and per-annotator labelling progress."""
    from vibestudio.annotation.labelling import queue_progress
    from vibestudio.annotation.queues import QueueError

    try:
        with open_db().session() as s:
            p = queue_progress(s, name)
    except QueueError as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps({**vars(p), "annotators": [vars(a) for a in p.annotators]}, indent=2))
        return
    typer.echo(
        f"{p.queue}: {p.labels}/{p.target} labels ({100 * p.fraction:.0f}%), {p.items_complete}/{p.n_items} items "
        f"complete at overlap {p.overlap}"
    )
    for a in p.annotators:
        typer.echo(
            f"  {a.annotator:<24} done={a.done} skipped={a.skipped} pending={a.pending} available={a.available}"
        )


@queue_app.command("checklists")
def queue_checklists(
    name: str,
    judge: str = typer.Option(..., help="Contestant that writes the checklists."),
    n: int = typer.Option(3, help="Lines per prompt."),
    max_tokens: int = typer.Option(80, help="Token budget per checklist."),
) -> None:
    """Write per-prompt checklists (what a good answer must get right) with a judge model."""
    from vibestudio.annotation.judges import generate_checklists
    from vibestudio.annotation.queues import QueueError
    from vibestudio.arena.registry import RegistryError

    bar, progress = progress_bar("checklists")
    try:
        out = generate_checklists(open_db(), name, judge, n=n, max_tokens=max_tokens, progress=progress)
    except (QueueError, RegistryError) as exc:
        bar.close()
        fail(str(exc))
    bar.close()
    typer.echo(f"{len(out)} prompt(s) got a checklist.")


@judge_app.command("run")
def judge_run(
    queue: str,
    judge: str = typer.Option(..., help="Judge contestant (any engine)."),
    absolute: bool = typer.Option(False, help="Also grade every answer on the queue's rubric."),
    pairwise: bool = typer.Option(True, help="Pairwise verdicts with positions swapped."),
    criteria: list[str] = typer.Option(None, help="Only these rubric criteria (repeat)."),
    max_items: int = typer.Option(None, help="Judge at most N items."),
    max_tokens: int = typer.Option(4, help="Tokens per verdict."),
    rerun: bool = typer.Option(False, help="Judge items this judge already labelled again."),
) -> None:
    """Run an AI judge over a queue; verdicts become labels of kind 'judge'."""
    from vibestudio.annotation.judges import JudgeError, JudgeSpec, run_judge
    from vibestudio.annotation.queues import QueueError
    from vibestudio.arena.registry import RegistryError

    spec = JudgeSpec(
        judge, queue, pairwise, absolute, list(criteria or []) or None, max_items, max_tokens, rerun
    )
    bar, progress = progress_bar(f"judge {judge}")
    try:
        res = run_judge(open_db(), spec, progress)
    except (JudgeError, QueueError, RegistryError) as exc:
        bar.close()
        fail(str(exc))
    bar.close()
    typer.echo(json.dumps({k: v for k, v in vars(res).items()}, default=str))


@judge_app.command("bias")
def judge_bias(
    queue: str,
    judge: str = typer.Option(..., help="Judge contestant name."),
    family: str = typer.Option(None, help="The judge's model family (default: from its name)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Position, length and own-family preference of a judge; agreement with human labels."""
    from vibestudio.annotation.judges import JudgeError, bias_report
    from vibestudio.annotation.queues import QueueError

    try:
        rep = bias_report(open_db(), queue, judge, family)
    except (JudgeError, QueueError) as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(rep.as_dict(), indent=2))
        return
    typer.echo(f"{rep.judge} on {rep.queue}: {rep.n_items} items, outcomes {rep.outcomes}")
    typer.echo(f"  consistent under position swap: {rep.consistency}")
    typer.echo(f"  picks the first-shown answer:   {rep.first_position}   (0.50 = no position bias)")
    typer.echo(f"  picks the longer answer:        {rep.longer}   (humans: {rep.human_longer})")
    typer.echo(
        f"  picks its own family ({rep.judge_family}): {rep.own_family}   (humans: {rep.human_own_family})"
    )
    typer.echo(f"  agrees with human majority:     {rep.human_agreement}   kappa {_num(rep.human_kappa)}")


def agreement(
    queue: str = typer.Argument(..., help="Queue name."),
    kinds: str = typer.Option("human,import", help="Label kinds that count (human, import, argilla, judge)."),
    interval: bool = typer.Option(False, help="Treat numeric rubric scales as interval (default ordinal)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Inter-annotator agreement: Krippendorff's alpha, Cohen's kappa per pair, Fleiss' kappa, majority."""
    from vibestudio.annotation.agreement_report import agreement_report
    from vibestudio.annotation.queues import QueueError

    try:
        with open_db().session() as s:
            rep = agreement_report(s, queue, tuple(k.strip() for k in kinds.split(",")), interval)
    except QueueError as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(rep.as_dict(), indent=2))
        return
    typer.echo(
        f"{rep.queue}: {rep.n_labels} labels on {rep.n_items} items by {len(rep.annotators)} annotators"
    )
    typer.echo(
        f"  outcome alpha (nominal): {_num(rep.outcome_alpha)}; ties merged: {_num(rep.outcome_alpha_merged)}"
    )
    typer.echo(f"  Fleiss' kappa: {_num(rep.fleiss)} over {rep.fleiss_items} items")
    for c in rep.criteria:
        typer.echo(f"  {c.criterion:<20} alpha ({c.level}) {_num(c.alpha)} over {c.n_units} units")
    for p in rep.pairs:
        typer.echo(f"  {p.a} ~ {p.b}: kappa {_num(p.kappa)}, agree {_num(p.percent)} on {p.n}")
    for m in rep.majority:
        typer.echo(f"  {m.annotator:<24} agrees with the others' majority {m.agree}/{m.n}")


@rubric_app.command("list")
def rubric_list() -> None:
    """Rubrics available (user folder first, then shipped)."""
    from vibestudio.annotation.rubrics import list_rubrics

    for r in list_rubrics():
        typer.echo(f"{r.name:<20} v{r.version}  {len(r.criteria)} criteria  ({r.source})")


@rubric_app.command("show")
def rubric_show(name: str = typer.Argument("default")) -> None:
    """Print a rubric as YAML."""
    from vibestudio.annotation.rubrics import RubricError, get_rubric

    try:
        typer.echo(get_rubric(name).to_yaml())
    except RubricError as exc:
        fail(str(exc))


@rubric_app.command("validate")
def rubric_validate(path: Path) -> None:
    """Check a rubric file; every problem is listed with its field."""
    from vibestudio.annotation.rubrics import RubricError, load_rubric

    try:
        r = load_rubric(path)
    except RubricError as exc:
        for e in exc.errors:
            typer.secho(e, fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"{path.name}: rubric {r.name!r} v{r.version}, {len(r.criteria)} criteria, valid")


@argilla_app.command("export")
def argilla_export(
    queue: str, out: Path = typer.Option(..., help="JSON file for {settings, records}.")
) -> None:
    """Write the queue as Argilla dataset settings + records (offline)."""
    from vibestudio.annotation.argilla import queue_to_argilla
    from vibestudio.annotation.queues import QueueError

    try:
        with open_db().session() as s:
            data = queue_to_argilla(s, queue)
    except QueueError as exc:
        fail(str(exc))
    out.write_text(json.dumps(data, ensure_ascii=False, indent=1))
    typer.echo(f"{len(data['records'])} record(s) written to {out}")


@argilla_app.command("import")
def argilla_import(
    queue: str,
    records: Path = typer.Option(
        ..., help="JSON list (or JSONL) of records whose responses carry a status (see docs/annotation.md)."
    ),
) -> None:
    """Store submitted responses from exported Argilla records as labels (offline)."""
    from vibestudio.annotation.argilla import labels_from_records
    from vibestudio.annotation.queues import QueueError
    from vibestudio.common.files import read_records

    rows, errors = read_records(records)
    if errors:
        fail(errors[0].format(str(records)))
    data = [r.value for r in rows]
    if len(data) == 1 and isinstance(data[0], dict) and isinstance(data[0].get("records"), list):
        data = data[0]["records"]
    try:
        with open_db().session() as s:
            res = labels_from_records(s, queue, data)
    except QueueError as exc:
        fail(str(exc))
    typer.echo(json.dumps(vars(res)))


def _argilla_env(api_url: str | None, api_key: str | None) -> tuple[str, str]:
    from vibestudio.common.settings import get_settings

    settings = get_settings()
    url = api_url or settings.argilla_api_url
    key = api_key or (settings.argilla_api_key.get_secret_value() if settings.argilla_api_key else None)
    if not url or not key:
        fail("set ARGILLA_API_URL and ARGILLA_API_KEY (or pass --api-url / --api-key)")
    return url, key  # type: ignore[return-value]


def _argilla_call(
    fn: Callable[..., T],
    queue: str,
    dataset: str | None,
    workspace: str | None,
    api_url: str | None,
    api_key: str | None,
) -> T:
    """``fn(session, queue, url, key, dataset, workspace)`` against the live Argilla server the options or the
    settings name; a queue error exits with its message."""
    from vibestudio.annotation.queues import QueueError

    url, key = _argilla_env(api_url, api_key)
    try:
        with open_db().session() as s:
            return fn(s, queue, url, key, dataset, workspace)
    except QueueError as exc:
        fail(str(exc))


def _argilla_command(name: str, doc: str, call: str, show: Callable[[Any], str]) -> None:
    """Register ``argilla NAME QUEUE``: ``annotation.argilla.CALL`` on the queue against a live server (options
    ``--dataset``, ``--workspace``, ``--api-url``, ``--api-key``), its result printed with ``show``."""

    def command(
        queue: str,
        dataset: str = typer.Option(None),
        workspace: str = typer.Option(None),
        api_url: str = typer.Option(None),
        api_key: str = typer.Option(None),
    ) -> None:
        from vibestudio.annotation import argilla

        typer.echo(show(_argilla_call(getattr(argilla, call), queue, dataset, workspace, api_url, api_key)))

    command.__doc__ = doc
    argilla_app.command(name)(command)


_argilla_command(
    "push",
    "Create an Argilla dataset from the queue on a live server.",
    "push_queue",
    lambda n: f"{n} record(s) pushed",
)
_argilla_command(
    "pull",
    "Pull submitted responses from a live Argilla server as labels.",
    "pull_responses",
    lambda res: json.dumps(vars(res)),
)
