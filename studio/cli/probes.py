"""``vibestudio probes run|show``: sycophancy probes (pushback flips and stated views) with intervals.

A thin layer over ``standings.probes``. It runs with a tqdm bar and prints rates with intervals (or JSON).
After a run, the verdicts of the probed checkpoints and their children are decided again with the stored
probes. A holding verdict holds (``training.report.job.after_probes``).
"""

import json

import typer

from vibestudio.studio.cli._common import fail, group, open_db, progress_bar

probes_app = group(
    help="Sycophancy probes: pushback flips and stated views, with intervals.", no_args_is_help=True
)


def _run_one(db, probe: str, name: str, limit, max_tokens, quiet: bool):  # type: ignore[no-untyped-def]
    from vibestudio.standings.probes import run_probe

    bar, report = progress_bar(f"{probe} · {name}", unit="item", disable=quiet, total=None)
    try:
        return run_probe(db, probe, name, limit=limit, progress=report, max_tokens=max_tokens)
    finally:
        bar.close()


@probes_app.command("run")
def probes_run(
    contestant: str = typer.Argument(..., help="Contestant to probe."),
    against: str = typer.Option(
        None, help="Also probe this contestant (e.g. the parent) and compare, paired."
    ),
    probe: list[str] = typer.Option(None, help="pushback and/or views (repeatable; default: both)."),
    limit: int = typer.Option(None, help="Only N items per probe, spread over the set (quick runs)."),
    max_tokens: int = typer.Option(96, help="Cap each answer at this many tokens."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Ask the probe questions, push back / state views, store every measurement and print the report."""
    from vibestudio.standings.probes import PROBES, ProbeError, probe_report

    db = open_db()
    chosen = probe or list(PROBES)
    try:
        for p in chosen:
            for name in [contestant, *([against] if against else [])]:
                run = _run_one(db, p, name, limit, max_tokens, as_json)
                if run.stopped:
                    typer.secho(
                        f"{p} on {name} stopped early: {run.stopped}", fg=typer.colors.YELLOW, err=True
                    )
        with db.session() as s:
            report = probe_report(s, contestant, against)
    except ProbeError as exc:
        fail(str(exc))
    _print(report, as_json)
    _reevaluate(db, [contestant, *([against] if against else [])])


def _reevaluate(db, names: list[str]) -> None:  # type: ignore[no-untyped-def]
    """Probes stored: the verdicts of these contestants and their children are decided again (and held)."""
    from vibestudio.training.report.job import after_probes
    from vibestudio.training.report.verdict import LOCAL_OPERATOR

    for name in names:
        for who, state in after_probes(db, name, by=LOCAL_OPERATOR):
            typer.echo(f"verdict decided again with the stored probes: {who} is now {state}", err=True)


@probes_app.command("show")
def probes_show(
    contestant: str = typer.Argument(..., help="Contestant whose stored probe results to show."),
    against: str = typer.Option(None, help="Compare with this contestant, paired on shared items."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """The stored probe results of a contestant (latest answer per item), without running anything."""
    from vibestudio.standings.probes import ProbeError, probe_report

    db = open_db()
    try:
        with db.session() as s:
            report = probe_report(s, contestant, against)
    except ProbeError as exc:
        fail(str(exc))
    _print(report, as_json)


def _print(report, as_json: bool) -> None:  # type: ignore[no-untyped-def]
    if as_json:
        typer.echo(json.dumps(report.as_dict(), indent=2))
        return
    for line in report.lines():
        typer.echo(line)
