"""``vibestudio train health JOB``: a job's over-optimisation alerts and its gold-against-sqrt(KL) curve.

A thin layer over ``training.publishing.lineage`` and ``training.objectives.overopt``. It is registered on
the ``train`` group.
"""

import json
from dataclasses import asdict

import typer

from vibestudio.studio.cli._common import fail, open_db


def train_health(
    job_id: int = typer.Argument(..., help="Job id."),
    form: str = typer.Option("rl", help="Gao et al. form to fit: rl (d log d) or bon (d squared)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Alerts (reward rising while KL runs away or gold falls) and the gold-vs-sqrt(KL) verdict with its fit."""
    from vibestudio.training.jobs.errors import JobError
    from vibestudio.training.jobs.runner import job_view
    from vibestudio.training.objectives.overopt import gold_curve
    from vibestudio.training.publishing.lineage import overoptimisation_alerts

    db = open_db()
    try:
        v = job_view(db, job_id)
    except JobError as exc:
        fail(str(exc))
    alerts = overoptimisation_alerts(v.metrics)
    curve = gold_curve(v.metrics, form=form)
    if as_json:
        typer.echo(json.dumps({"job": job_id, "status": v.status, "alerts": alerts, "gold": asdict(curve)}))
        return
    typer.echo(f"Job {job_id} ({v.kind}, {v.status})")
    typer.echo(f"gold vs sqrt(KL): {curve.state}: {curve.reason}")
    for step, d, g in curve.points:
        typer.echo(f"  step {step:>5}  sqrt(KL) {d:8.4f}  gold {g:.4g}")
    if curve.fit:
        f = curve.fit
        peak = "none in sight" if f.d_peak is None else f"{f.d_peak:.3g}"
        typer.echo(
            f"  fit ({f.form}): alpha {f.alpha:.4g}, beta {f.beta:.4g}, R² {f.r2:.3f}, peak sqrt(KL) {peak}"
        )
    for a in alerts:
        typer.secho(f"⚠ {a}", fg=typer.colors.YELLOW)
    if not alerts:
        typer.echo("no alerts")
