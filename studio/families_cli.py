"""``vibestudio families`` and ``vibestudio models hide|restore``: families of checkpoints rated honestly.

A thin layer over ``arena.families`` (ratings from the leaderboard service, sandwich intervals).
"""

from __future__ import annotations

import json

import typer


def families_cmd(
    min_votes: int = typer.Option(30, help="Votes after publish before a checkpoint's rating is final."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Checkpoints grouped by common ancestor, the best-of-N selection effect, provisional flags, removal log."""
    from arena.families import families
    from standings.leaderboard import BoardOptions
    from studio.context import build_context

    ctx = build_context()
    board = ctx.leaderboard.board(BoardOptions(ci_method="sandwich", min_battles=1))
    with ctx.db.session() as s:
        fams = families(s, board.get("models", []), min_votes=min_votes)
    if as_json:
        typer.echo(json.dumps([f.as_dict() for f in fams], default=str, indent=2))
        return
    for f in fams:
        typer.echo(f"{f.root} ({len(f.members)} member(s))")
        for m in f.members:
            rating = "unrated" if m.rating is None else f"{m.rating:.0f} [{m.ci_low:.0f}, {m.ci_high:.0f}]"
            flags = [x for x, on in (("hidden", m.hidden), ("provisional", m.provisional)) if on]
            typer.echo(
                f"  {'  ' * m.depth}{m.name}: {rating}, {m.votes_after_publish} votes since publish {flags or ''}"
            )
        if f.selection:
            sel = f.selection
            typer.echo(
                f"  selection effect: best of {sel.n_variants} = {sel.best}, lead {sel.lead:.0f}; chance lead "
                f"{sel.chance_mean:.0f} (95th pct {sel.chance_95:.0f}): {sel.verdict}"
            )
        elif len(f.members) > 1:
            typer.echo(f"  selection effect unmeasurable: {f.reason}")
        for e in f.log:
            typer.echo(f"  log {e['at']}: {e['by']} {e['action']} {e['contestant']}: {e['reason']}")


def hide_cmd(
    name: str = typer.Argument(..., help="Contestant to hide (taken out of pair sampling; history stays)."),
    by: str = typer.Option(..., help="Who hides it (recorded in the removal log)."),
    reason: str = typer.Option(..., help="Why (recorded in the removal log)."),
) -> None:
    """Hide a contestant: out of pair sampling, kept on record with its votes, logged with who and why."""
    _hide(name, by, reason, restore=False)


def restore_cmd(
    name: str = typer.Argument(..., help="Contestant to bring back into pair sampling."),
    by: str = typer.Option(..., help="Who restores it."),
    reason: str = typer.Option("", help="Why."),
) -> None:
    """Bring a hidden contestant back (logged)."""
    _hide(name, by, reason, restore=True)


def _hide(name: str, by: str, reason: str, restore: bool) -> None:
    from arena.families import hide
    from arena.registry import RegistryError
    from studio.context import build_context

    ctx = build_context()
    try:
        with ctx.db.session() as s:
            event = hide(s, name, by, reason, restore=restore)
    except RegistryError as exc:
        typer.secho(f"Error: {exc}", fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"{event['contestant']}: {event['action']} by {event['by']} (logged)")


def register(app: typer.Typer, models_app: typer.Typer) -> None:
    app.command("families")(families_cmd)
    models_app.command("hide")(hide_cmd)
    models_app.command("restore")(restore_cmd)
