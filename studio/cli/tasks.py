"""``vibestudio tasks import|generate|list|show|report``: task sets with checkable answers for RLVR.

A thin layer over ``training.tasks``. An import checks every row (file, line, field). When one is bad it
writes nothing, unless ``--skip-bad``. It prints the rows kept and the train / held-out split. Each task's
content hash fixes the split before any job sees the set. ``report`` reads a trained child's checkpoint
report. It prints its RLVR measures: held-out accuracy against the parent, reward-hacking signs.
"""

from pathlib import Path
from typing import Any

import typer

from vibestudio.studio.cli._common import echo_json, fail, group, open_db, yaml_value

tasks_app = group(
    help="Task sets with checkable answers (RLVR): import, generate, list, show.", no_args_is_help=True
)
_JSON = typer.Option(False, "--json", help="Print JSON.")
_HELDOUT = typer.Option(0.2, "--heldout", help="Share of tasks held out (by content hash), between 0 and 1.")


def _verifier(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    spec = yaml_value("--verifier", text)
    return {"type": spec} if isinstance(spec, str) else spec


def _print_result(result: Any, as_json: bool) -> None:
    if as_json:
        echo_json({"set": result.set.to_dict(), "kept": result.kept, "skipped": result.skipped})
        return
    typer.echo(result.summary())
    for line in result.skipped[:20]:
        typer.echo(f"  skipped {line}")
    if len(result.skipped) > 20:
        typer.echo(f"  ... and {len(result.skipped) - 20} more skipped")


@tasks_app.command("import")
def import_cmd(
    file: Path = typer.Argument(
        ...,
        help="JSONL, JSON (optionally .gz), Parquet or Arrow file, a folder of them, or a datasets save_to_disk folder.",
    ),
    name: str = typer.Option(..., "--name", help="Name of the new task set."),
    verifier: str = typer.Option(
        None,
        help="Default verifier for rows without one: a type (numeric, exact, choice, regex, json_schema, "
        "code) or a YAML mapping, e.g. '{type: numeric, tolerance: 0.01}'. Default: numeric for numbers, else exact.",
    ),
    heldout: float = _HELDOUT,
    skip_bad: bool = typer.Option(False, "--skip-bad", help="Import the good rows and list the bad ones."),
    licence: str = typer.Option("", help="Licence of the data (kept in the set's provenance)."),
    as_json: bool = _JSON,
) -> None:
    """Import tasks (prompt + reference answer + verifier); every row is checked before anything is written."""
    from vibestudio.training.tasks import TaskError, TaskImportError, VerifierError, import_task_file

    db = open_db()
    try:
        result = import_task_file(
            db,
            file,
            name,
            verifier=_verifier(verifier),
            heldout_fraction=heldout,
            skip_bad=skip_bad,
            licence=licence,
        )
    except TaskImportError as exc:
        if as_json:
            echo_json({"ok": False, "errors": [{"file": f, **e.as_dict()} for f, e in exc.errors]})
            raise typer.Exit(1) from exc
        fail(f"{exc}\nFix the rows, or pass --skip-bad to import the others.")
    except (TaskError, VerifierError) as exc:
        fail(str(exc))
    _print_result(result, as_json)


@tasks_app.command("generate")
def generate_cmd(
    family: str = typer.Option(..., "--family", help="arithmetic, units or strings."),
    n: int = typer.Option(500, "--n", help="How many tasks."),
    difficulty: int = typer.Option(1, "--difficulty", help="1 (easiest) to 6."),
    seed: int = typer.Option(0, "--seed", help="Random seed (same arguments, same tasks)."),
    name: str = typer.Option(..., "--name", help="Name of the new task set."),
    heldout: float = _HELDOUT,
    as_json: bool = _JSON,
) -> None:
    """Generate a task family written for the studio (fresh tasks for a CPU run)."""
    from vibestudio.training.tasks import TaskError, generate_task_set

    db = open_db()
    try:
        result = generate_task_set(
            db, family, n, name, difficulty=difficulty, seed=seed, heldout_fraction=heldout
        )
    except TaskError as exc:
        fail(str(exc))
    _print_result(result, as_json)


@tasks_app.command("list")
def list_cmd(as_json: bool = _JSON) -> None:
    """Task sets with their train / held-out counts."""
    from vibestudio.training.tasks import list_task_sets

    sets = list_task_sets(open_db())
    if as_json:
        echo_json([s.to_dict() for s in sets])
        return
    if not sets:
        typer.echo(
            "No task sets yet: `vibestudio tasks generate --family arithmetic --name arith` or `tasks import`."
        )
    for s in sets:
        typer.echo(
            f"{s.name:24} {s.n_tasks:6} tasks  {s.n_train:6} train  {s.n_heldout:5} held-out  {s.source:9} "
            f"{s.hash[:12]}  {s.created_at}"
        )


@tasks_app.command("show")
def show_cmd(
    name: str = typer.Argument(..., help="Task set name."),
    limit: int = typer.Option(5, help="Tasks of each split to show."),
    as_json: bool = _JSON,
) -> None:
    """A task set: provenance, verifier, split and a few tasks of each split."""
    from vibestudio.training.tasks import TaskError, get_task_set, load_tasks

    db = open_db()
    try:
        info = get_task_set(db, name)
        train, held = load_tasks(db, name, "train")[:limit], load_tasks(db, name, "heldout")[:limit]
    except TaskError as exc:
        fail(str(exc))
    if as_json:
        echo_json(
            {
                "set": info.to_dict(),
                "train": [t.__dict__ for t in train],
                "heldout": [t.__dict__ for t in held],
            }
        )
        return
    typer.echo(
        f"{info.name}: {info.n_tasks} tasks, {info.n_train} train / {info.n_heldout} held-out "
        f"(fraction {info.heldout_fraction:g}, by content hash); {info.n_skipped} skipped at import"
    )
    typer.echo(f"hash {info.hash}  source {info.source}  default verifier {info.verifier or 'per task'}")
    typer.echo("provenance: " + ", ".join(f"{k}={v}" for k, v in info.provenance.items()))
    for label, items in (("train", train), ("held-out", held)):
        typer.echo(f"-- {label} --")
        for t in items:
            where = f"line {t.line}" if t.line is not None else f"#{t.idx}"
            typer.echo(f"  [{where}] {t.prompt[:90]!r} -> {t.answer[:40]!r} ({t.verifier.get('type')})")


@tasks_app.command("report")
def report_cmd(
    contestant: str = typer.Argument(..., help="A checkpoint trained on a task set (name or id)."),
    as_json: bool = _JSON,
) -> None:
    """The RLVR part of a checkpoint's report: held-out accuracy vs the parent and the reward-hacking signs."""
    from vibestudio.training.report.steps import load_report

    report = load_report(open_db(), int(contestant) if contestant.isdigit() else contestant)
    if report is None:
        fail(f"no checkpoint report for {contestant!r} (it is made when its job publishes it)")
    measures = {k: v for k, v in report.measures.items() if k.startswith(("rlvr/", "reasoning/"))}
    if as_json:
        echo_json({"verdict": report.verdict, "rlvr": measures, "unmeasured": report.unmeasured})
        return
    if not any(k.startswith("rlvr/") for k in measures):
        typer.echo(
            "No RLVR measures: " + report.unmeasured.get("rlvr", "the child was not trained on a task set")
        )
    acc = measures.get("rlvr/accuracy")
    if acc:
        pa, ca = measures["rlvr/parent_accuracy"], measures["rlvr/child_accuracy"]
        typer.echo(
            f"held-out accuracy: parent {pa['accuracy']:.1%} [{pa['low']:.1%}, {pa['high']:.1%}] -> child "
            f"{ca['accuracy']:.1%} [{ca['low']:.1%}, {ca['high']:.1%}], change {acc['delta']:+.1%} "
            f"[{acc['low']:+.1%}, {acc['high']:+.1%}], exact McNemar p={acc['p']:.3g}, n={acc['n']}"
        )
        for name in ("gamed", "several_numbers", "format_only"):
            m = measures[f"rlvr/{name}"]
            typer.echo(
                f"{name}: parent {m['parent']:.1%} -> child {m['child']:.1%} (p={m['p']:.3g}, n={m['n']})"
            )
        rise = measures.get("rlvr/train_reward_rise", {})
        if "p" in rise:
            typer.echo(
                f"train reward {rise['reward_first']:.2f} -> {rise['reward_last']:.2f} (p={rise['p']:.3g}) while "
                f"held-out changed {rise['heldout_delta']:+.1%} (p={rise['heldout_p']:.3g}): "
                + ("FLAGGED reward without accuracy" if rise["flag"] else "not flagged")
            )
    for name, what in (
        ("rlvr/thinking_aloud", "thinks aloud on the tasks"),
        ("reasoning/thinking_aloud", "thinks aloud on everyday prompts"),
        ("rlvr/words_before_answer", "words before the right answer"),
    ):
        m = measures.get(name)
        if m:
            share = name != "rlvr/words_before_answer"
            shown = (lambda x: f"{x:.1%}") if share else (lambda x: f"{x:.1f}")
            typer.echo(
                f"{what}: parent {shown(m['parent'])} -> child {shown(m['child'])}, change "
                f"{m['delta']:+.3g} [{m['low']:+.3g}, {m['high']:+.3g}] (p={m['p']:.3g}, n={m['n']})"
            )
    typer.echo(f"verdict: {report.verdict_name}; " + "; ".join(report.verdict.get("reasons", [])))
