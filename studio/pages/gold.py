"""The over-optimisation view a job page shows: gold against sqrt(KL) with the Gao et al. fit, and alert
lines.

Plain helpers over ``training.objectives.overopt`` and ``training.publishing.lineage``. The Train tab's
job view uses them.
"""

from __future__ import annotations

import plotly.graph_objects as go

from vibestudio.training.objectives.overopt import gold_curve
from vibestudio.training.publishing.lineage import overoptimisation_alerts

Metrics = dict[str, list[tuple[int, float]]]


def gold_markdown(metrics: Metrics) -> str:
    """Alert lines (⚠️) and the gold verdict, for under the job's status line."""
    lines = [f"⚠️ {a}" for a in overoptimisation_alerts(metrics)]
    if metrics.get("gold"):
        curve = gold_curve(metrics)
        lines.append(f"Gold vs √KL: **{curve.state}**: {curve.reason}")
    return "\n\n".join(lines)


def gold_figure(metrics: Metrics) -> go.Figure | None:
    """Gold points against sqrt(KL) and, once fitted, the Gao et al. curve; None when the job records no gold."""
    if not metrics.get("gold"):
        return None
    curve = gold_curve(metrics)
    fig = go.Figure()
    if curve.points:
        fig.add_scatter(
            x=[p[1] for p in curve.points],
            y=[p[2] for p in curve.points],
            text=[f"step {p[0]}" for p in curve.points],
            mode="lines+markers",
            name="gold",
        )
    if curve.fit is not None:
        top = max(p[1] for p in curve.points)
        xs = [top * i / 50 for i in range(51)]
        fig.add_scatter(
            x=xs, y=[curve.fit.predict(x) for x in xs], mode="lines", name=f"fit ({curve.fit.form})"
        )
    title = f"Gold vs √KL: {curve.state}"
    fig.update_layout(height=300, margin={"l": 10, "r": 10, "t": 30, "b": 10}, xaxis_title="√KL", title=title)
    return fig
