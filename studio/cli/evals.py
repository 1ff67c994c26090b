"""``vibestudio evals run|scores``: the verifiable eval set (format and arithmetic checks)."""

import json

import typer

from vibestudio.studio.cli._common import fail, group, open_db, progress_bar

evals_app = group(help="The verifiable eval set (format and arithmetic checks).", no_args_is_help=True)


@evals_app.command("run")
def evals_run(
    contestant: list[str] = typer.Option(
        None, help="Contestant to evaluate (repeatable; default: every active one)."
    ),
    limit: int = typer.Option(None, help="Only the first N items."),
    max_tokens: int = typer.Option(None, help="Cap each answer at this many tokens (quick runs)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON summary per contestant."),
) -> None:
    """Ask contestants the eval set, check and store the answers (they feed the Goldilocks board)."""
    from vibestudio.arena.registry import list_contestants
    from vibestudio.standings.evals import EvalError, run_evals

    db = open_db()
    if not contestant:
        with db.session() as s:
            contestant = [c.public_name for c in list_contestants(s)]
    for name in contestant:
        bar, report = progress_bar(name, unit="item", disable=as_json, total=None)
        try:
            run = run_evals(db, name, limit=limit, progress=report, max_tokens=max_tokens)
        except EvalError as exc:
            bar.close()
            fail(str(exc))
        bar.close()
        summary = run.summary()
        if as_json:
            typer.echo(json.dumps(summary))
            continue
        score = "n/a" if summary["score"] is None else f"{100 * summary['score']:.0f}%"
        typer.echo(
            f"{name}: {summary['passed']}/{summary['answered']} passed ({score}) in {summary['seconds']:.0f} s"
        )
        if summary["stopped"]:
            typer.secho(f"  stopped early: {summary['stopped']}", fg=typer.colors.YELLOW)


@evals_app.command("scores")
def evals_scores(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Each contestant's latest eval score (share of passed items) on the current eval set."""
    from vibestudio.standings.evals import eval_scores

    with open_db().session() as s:
        scores = eval_scores(s)
    if as_json:
        typer.echo(json.dumps(scores, indent=2))
        return
    if not scores:
        typer.echo("No eval results yet: run `vibestudio evals run`.")
    for name, v in scores.items():
        cats = ", ".join(f"{c} {100 * x:.0f}%" for c, x in v["by_category"].items())
        typer.echo(
            f"{name}: {100 * v['score']:.0f}% of {v['answered']} ({cats}); last run {v['last_run_at']}"
        )
