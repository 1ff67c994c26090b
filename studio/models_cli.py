"""Model-page commands for the ``vibestudio`` CLI: ``models show``, ``models hold`` / ``release`` and ``drift``.

A thin layer over ``training.model_page``, ``training.drift`` and ``training.verdict``; registered on the main
app by ``register(app, models_app)``.
"""

from __future__ import annotations

import json

import typer


def _fail(msg: str) -> None:
    typer.secho(f"Error: {msg}", fg=typer.colors.RED, err=True)
    raise typer.Exit(1)


def _db():  # type: ignore[no-untyped-def]
    from studio.context import build_context

    return build_context().db


def models_show(
    name: str = typer.Argument(..., help="Contestant name or id."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Everything about one model: lineage, ratings, head-to-head vs parent, report, evals, verdict, speed."""
    from arena.registry import RegistryError
    from training.model_page import model_page
    from training.report_text import lineage_md, ratings_md, report_md

    db = _db()
    try:
        page = model_page(db, int(name) if name.isdigit() else name)
    except RegistryError as exc:
        _fail(str(exc))
        return
    if as_json:
        typer.echo(json.dumps(page, indent=2, default=str, ensure_ascii=False))
        return
    v = page["verdict"]
    typer.echo(f"# {page['contestant']['public_name']}  {v['badge'] or '(no verdict)'}")
    typer.echo(lineage_md(page))
    typer.echo(ratings_md(page))
    typer.echo(report_md(page["report"]) if page["report"] else "No checkpoint report (not a trained child).")


def drift_cmd(
    child: str = typer.Argument(..., help="The checkpoint (contestant name or id)."),
    against: str = typer.Option(
        None, "--against", help="Compare with this contestant instead of the parent."
    ),
    prompts: int = typer.Option(40, help="Held-out prompts to answer."),
    max_tokens: int = typer.Option(64, help="Answer length cap."),
    eval_items: int = typer.Option(-1, help="Verifiable eval items (-1 all, 0 none)."),
    judge: str = typer.Option(None, help="A judge contestant for a position-swapped head-to-head."),
    seed: int = typer.Option(0, help="Seed for prompts, sampling and resampling."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Compare a checkpoint with its parent (or --against) under the same conditions, and give a verdict."""
    from arena.registry import RegistryError
    from training.drift import drift_report
    from training.report_text import report_md

    db = _db()

    def ident(x: str) -> int | str:
        return int(x) if x.isdigit() else x

    try:
        report = drift_report(
            db,
            ident(child),
            against=ident(against) if against else None,
            n_prompts=prompts,
            max_tokens=max_tokens,
            eval_items=eval_items,
            judge=judge,
            seed=seed,
            progress=lambda msg: typer.echo(msg, err=True) if not as_json else None,
        )
    except RegistryError as exc:
        _fail(str(exc))
        return
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        return
    typer.echo(report_md(report.to_dict()))


def models_release(
    name: str = typer.Argument(..., help="Contestant name."),
    reason: str = typer.Option(..., "--reason", help="Why it may play (logged)."),
) -> None:
    """Let a held checkpoint into anonymous battles (who and why are logged)."""
    from arena.registry import RegistryError
    from training.verdict import VerdictError, release

    try:
        release(_db(), name, None, reason)
    except (RegistryError, VerdictError) as exc:
        _fail(str(exc))
    typer.echo(f"{name} may play in anonymous battles again.")


def models_hold(
    name: str = typer.Argument(..., help="Contestant name."),
    reason: str = typer.Option(..., "--reason", help="Why it is held (logged)."),
) -> None:
    """Hold a contestant out of anonymous battles (who and why are logged)."""
    from arena.registry import RegistryError
    from training.verdict import VerdictError, hold

    try:
        hold(_db(), name, None, reason)
    except (RegistryError, VerdictError) as exc:
        _fail(str(exc))
    typer.echo(f"{name} is held out of anonymous battles.")


def register(app: typer.Typer, models_app: typer.Typer) -> None:
    models_app.command("show")(models_show)
    models_app.command("release")(models_release)
    models_app.command("hold")(models_hold)
    app.command("drift")(drift_cmd)
