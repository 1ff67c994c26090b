"""``vibestudio families``: checkpoints grouped by common ancestor and rated honestly.

A thin layer over ``standings.families``, with ratings from the leaderboard service's standard board. This
command shows the removal log, and whether each family's reports predicted the arena
(``training.report.track_record``). Hiding and restoring a contestant are ``vibestudio models hide|restore``.
"""

import json

import typer

from vibestudio.studio.cli._common import open_db


def families_cmd(
    min_votes: int = typer.Option(30, help="Votes after publish before a checkpoint's rating is final."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Checkpoints grouped by common ancestor, the best-of-N selection effect, provisional flags, removal log."""
    from vibestudio.standings.families import families
    from vibestudio.standings.leaderboard import LeaderboardService, standard_options
    from vibestudio.standings.words import counted
    from vibestudio.training.report.track_record import families_md, track_record

    db = open_db()
    board = LeaderboardService(db).board(standard_options())  # the board every view shows
    with db.session() as s:
        fams = families(s, board.get("models", []), min_votes=min_votes)
    if as_json:
        typer.echo(json.dumps([f.as_dict() for f in fams], default=str, indent=2))
        return
    for f in fams:
        typer.echo(f"{f.root} ({len(f.members)} member(s))")
        for m in f.members:
            rating = (
                "unrated"
                if m.rating is None
                else f"{m.rating:.0f} (interval can't be told)"
                if m.ci_low is None or m.ci_high is None
                else f"{m.rating:.0f} [{m.ci_low:.0f}, {m.ci_high:.0f}]"
            )
            flags = [x for x, on in (("hidden", m.hidden), ("provisional", m.provisional)) if on]
            typer.echo(
                f"  {'  ' * m.depth}{m.name}: {rating}, {counted(m.votes_after_publish, 'vote')} since publish {flags or ''}"
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
    typer.echo(families_md(track_record(db)))
