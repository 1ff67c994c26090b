"""Leaderboard tab: Bradley-Terry ratings with confidence intervals, Elo, battle counts, and a CI chart."""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd
import plotly.graph_objects as go

from arena.leaderboard import current_leaderboard
from studio.context import StudioContext

COLUMNS = ["rank", "name", "rating", "ci_low", "ci_high", "elo", "n_battles"]


def _table(board: dict[str, Any]) -> pd.DataFrame:
    rows = [{k: m.get(k) for k in COLUMNS} for m in board["models"]]
    df = pd.DataFrame(rows, columns=COLUMNS)
    for col in ("rating", "ci_low", "ci_high", "elo"):
        df[col] = pd.to_numeric(df[col], errors="coerce").round(1)
    return df


def _chart(board: dict[str, Any]) -> go.Figure:
    models = sorted(board["models"], key=lambda m: m["rating"])
    fig = go.Figure(
        go.Scatter(
            x=[m["rating"] for m in models],
            y=[m["name"] for m in models],
            mode="markers",
            error_x={
                "type": "data",
                "symmetric": False,
                "array": [m["ci_high"] - m["rating"] for m in models],
                "arrayminus": [m["rating"] - m["ci_low"] for m in models],
            },
        )
    )
    fig.update_layout(
        title="Bradley-Terry rating with 95% interval",
        height=120 + 40 * len(models),
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        xaxis_title="rating",
    )
    return fig


def build(ctx: StudioContext, demo: gr.Blocks) -> None:
    summary = gr.Markdown(elem_id="leaderboard-summary")
    table = gr.Dataframe(headers=COLUMNS, interactive=False, elem_id="leaderboard-table")
    chart = gr.Plot()
    refresh = gr.Button("🔄 Refresh", elem_id="leaderboard-refresh")

    def on_refresh():
        with ctx.db.session() as s:
            board = current_leaderboard(s, bootstrap=ctx.settings.leaderboard_bootstrap)
        text = f"**{board['n_votes']}** rated votes."
        if board["unrated"]:
            text += " Not rated yet: " + ", ".join(board["unrated"]) + "."
        for w in board["warnings"]:
            text += f"\n\n⚠️ {w}"
        return text, _table(board), _chart(board) if board["models"] else None

    refresh.click(on_refresh, None, [summary, table, chart], api_name="leaderboard")
    demo.load(on_refresh, None, [summary, table, chart], api_visibility="private")
