"""Leaderboard tab: the board with intervals, and the views around it.

It holds:
- style/vibe control, category boards, matrices, rating over time, vibe profiles;
- the Goldilocks board: rating vs evals vs speed and price;
- what a judge vote is worth: the board on people's votes, judges' or both pooled
  (`standings.judge_worth`);
- the rating method: Bradley-Terry or a tie model, by default the one that predicts held-out votes best;
- the *Predictive check* sub-tab: which method predicts best.
The board refreshes when the tab is opened, and on a short timer while it is open. Only new votes are
read, and nothing is redrawn when nothing changed.

Every view here only reads. Nothing on this tab starts work, such as a model's answers or an eval run.
Goldilocks reads the stored eval runs. The Probes tab starts them (`studio.pages.evals`), as do
``vibestudio evals run`` and the ``/evals_run`` endpoint.

Data comes from `standings.leaderboard.LeaderboardService` (`ctx.leaderboard`), `standings.goldilocks` and
`standings.evals`. The service is one per app, shared with the arena's pair sampler. It keeps an
incremental copy of the votes, so a refresh reads only new votes. This module turns options into calls,
and plain data into tables and plotly figures.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import gradio as gr
import pandas as pd
import plotly.colors as plotly_colors
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from vibestudio.accounts import PermissionDenied
from vibestudio.arena.registry import list_contestants
from vibestudio.standings.goldilocks import goldilocks
from vibestudio.standings.leaderboard import BoardOptions, compare_contestants, standard_options, vibe_profile
from vibestudio.standings.ratings import flip_headline
from vibestudio.studio.context import StudioContext
from vibestudio.studio.errors import refuse, user_error, wire
from vibestudio.studio.pages import families, identifiability
from vibestudio.studio.render import count, counted, literal, plot_label, to_html
from vibestudio.training.report.verdict import badges_by_name

COLUMNS = [
    "rank",
    "name",
    "verdict",
    "rating",
    "ci_low",
    "ci_high",
    "rank_high",
    "elo",
    "n_votes",
    "n_battles",
    "wins",
    "losses",
    "ties",
    "note",
]
GOLDILOCKS_COLUMNS = [
    "name",
    "rating",
    "eval_score",
    "eval_answered",
    "tokens_per_s",
    "latency_s",
    "tokens_per_answer",
    "cost_per_1k",
    "cost_per_answer",
    "engine",
]
STYLE_COLUMNS = ["feature", "rating points per SD", "low", "high", "note"]
PROFILE_COLUMNS = ["feature", "mean", "share of answers", "median"]
CONTROLS = [("Length & markdown (style)", "style"), ("Vibes: emoji, flattery, hedging... ", "vibe")]
FREQS = [("Day", "D"), ("Week", "W"), ("Month", "M")]
METHOD_CHOICES = [
    ("Best predictor (auto)", "auto"),
    ("Bradley-Terry (ties half a win)", "bt"),
    ("Rao-Kupper (ties modelled)", "rao-kupper"),
    ("Davidson (ties modelled)", "davidson"),
]
PREDICT_COLUMNS = [
    "split",
    "method",
    "log-loss",
    "low",
    "high",
    "Brier",
    "Brier low",
    "Brier high",
    "vs best",
    "note",
]
#: Seconds between refreshes while the Leaderboard tab is open.
REFRESH_SECONDS = 10.0


def _r(x: Any, digits: int = 1) -> Any:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), digits)


# -- figures and tables ----------------------------------------------------------------------------------------------
def board_table(board: dict[str, Any]) -> pd.DataFrame:
    """The board's rows; an interval the board could not bound reads "can't tell" with the reason in `note`."""
    rows = [{k: m.get(k) for k in COLUMNS} | {"note": _cant_tell(m)} for m in board["models"]]
    df = pd.DataFrame(rows, columns=COLUMNS).rename(columns={"rank_high": "worst rank"})
    for col in ("rating", "ci_low", "ci_high", "elo"):
        df[col] = pd.to_numeric(df[col], errors="coerce").round(1)
    unknown = [bool(m.get("cant_tell")) for m in board["models"]]
    if any(unknown):
        for col in ("ci_low", "ci_high"):
            df[col] = df[col].astype(object).where(~pd.Series(unknown, index=df.index), "can't tell")
    return df


def _cant_tell(m: dict[str, Any]) -> str:
    return f"interval can't be told: {m['cant_tell']}" if m.get("cant_tell") else ""


def board_chart(board: dict[str, Any]) -> go.Figure | None:
    """Ratings with their intervals; models whose interval can't be told are left out, and the title says so."""
    models = sorted((m for m in board["models"] if not m.get("cant_tell")), key=lambda m: m["rating"])
    if not models:
        return None if not board["models"] else _cant_tell_chart(board)
    fig = go.Figure(
        go.Scatter(
            x=[m["rating"] for m in models],
            y=[plot_label(m["name"]) for m in models],
            mode="markers",
            error_x={
                "type": "data",
                "symmetric": False,
                "array": [m["ci_high"] - m["rating"] for m in models],
                "arrayminus": [m["rating"] - m["ci_low"] for m in models],
            },
        )
    )
    level = board.get("options", {}).get("ci_method", "bootstrap")
    left_out = len(board["models"]) - len(models)
    fig.update_layout(
        title=f"Bradley-Terry rating with 95% interval ({level})"
        + (
            f"; {counted(left_out, 'model')} left out (interval can't be told, see the table)"
            if left_out
            else ""
        ),
        height=120 + 40 * len(models),
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        xaxis_title="rating",
    )
    return fig


def _cant_tell_chart(board: dict[str, Any]) -> go.Figure:
    """The main chart when no model's interval can be told: a message with the reasons, never a blank panel."""
    reasons = sorted({m["cant_tell"] for m in board["models"]})
    fig = go.Figure()
    fig.add_annotation(
        text="Can't tell any rating's interval yet:<br>" + "<br>".join(r[:110] for r in reasons[:3]),
        showarrow=False,
        x=0.5,
        y=0.5,
        xref="paper",
        yref="paper",
    )
    fig.update_layout(
        title=f"Bradley-Terry rating with 95% interval: can't tell for all {counted(len(board['models']), 'model')}",
        height=220,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        xaxis={"visible": False},
        yaxis={"visible": False},
    )
    return fig


def style_table(board: dict[str, Any]) -> pd.DataFrame:
    """Coefficients with their intervals, then the features whose coefficient can't be told, with the reason."""
    coefs, intervals = board.get("style_coefficients") or {}, board.get("style_intervals") or {}
    rows = [
        {
            "feature": name,
            "rating points per SD": _r(value),
            "low": _r((intervals.get(name) or [None])[0]),
            "high": _r((intervals.get(name) or [None, None])[1]),
            "note": "",
        }
        for name, value in sorted(coefs.items(), key=lambda kv: -abs(kv[1]))
    ]
    rows += [
        {"feature": name, "rating points per SD": "can't tell", "low": None, "high": None, "note": why}
        for name, why in (board.get("style_cant_tell") or {}).items()
    ]
    return pd.DataFrame(rows, columns=STYLE_COLUMNS)


def style_chart(board: dict[str, Any]) -> go.Figure | None:
    table = style_table(board)
    table = table[table["note"] == ""].astype({"rating points per SD": float})
    if table.empty:
        return None
    table = table.iloc[::-1]
    value = table["rating points per SD"]
    fig = go.Figure(
        go.Bar(
            x=value,
            y=table["feature"],
            orientation="h",
            error_x={
                "type": "data",
                "symmetric": False,
                "array": (table["high"] - value).fillna(0),
                "arrayminus": (value - table["low"]).fillna(0),
            },
        )
    )
    fig.update_layout(
        title="What style buys: rating points per standard deviation of the (a - b) / (a + b + 1) difference",
        height=120 + 36 * len(table),
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        xaxis_title="rating points",
    )
    return fig


def heatmap(frame: pd.DataFrame, title: str, counts: bool = False) -> go.Figure | None:
    if frame.empty:
        return None
    fig = go.Figure(
        go.Heatmap(
            z=frame.to_numpy(),
            x=[plot_label(c) for c in frame.columns],
            y=[plot_label(i) for i in frame.index],
            colorscale="Blues" if counts else "RdBu",
            zmid=None if counts else 0.5,
            texttemplate="%{z:.0f}" if counts else "%{z:.2f}",
            hovertemplate="%{y} vs %{x}: %{z}<extra></extra>",
        )
    )
    fig.update_layout(
        title=title,
        height=200 + 32 * len(frame),
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        xaxis_title="opponent",
        yaxis={"autorange": "reversed"},
    )
    return fig


def over_time_chart(frame: pd.DataFrame, controlled: bool = False) -> go.Figure | None:
    """One line per contestant: the board's rating on the votes up to each date (the day of each period's last
    vote), on a date axis."""
    if frame.empty:
        return None
    days = [ts.strftime("%Y-%m-%d") for ts in frame.index]
    fig = go.Figure(
        [
            go.Scatter(
                x=days,
                y=frame[c],
                mode="lines+markers",
                name=plot_label(c),
                hovertemplate="%{x}: %{y:.0f}<extra>" + plot_label(c) + "</extra>",
            )
            for c in frame.columns
        ]
    )
    title = "Rating on all votes up to each date (the board's method and scale: mean 1000)"
    if controlled:
        title += "; without style or vibe control"
    fig.update_layout(
        title=title,
        height=420,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        yaxis_title="rating",
        xaxis={"type": "date", "tickformat": "%Y-%m-%d", "title": "date of the last vote counted"},
    )
    # at least a day either side: a date axis over one point would otherwise zoom into milliseconds
    pad = pd.Timedelta(days=1)
    fig.update_xaxes(
        range=[(frame.index[0] - pad).strftime("%Y-%m-%d"), (frame.index[-1] + pad).strftime("%Y-%m-%d")],
        dtick=86_400_000.0 if len(days) < 15 else None,
    )
    return fig


def profile_table(profile: dict[str, Any]) -> pd.DataFrame:
    rows = [
        {
            "feature": f,
            "mean": _r(v["mean"], 2),
            "share of answers": _r(v["rate"], 2),
            "median": _r(v["median"], 1),
        }
        for f, v in profile["features"].items()
    ]
    return pd.DataFrame(rows, columns=PROFILE_COLUMNS)


def profile_chart(profile: dict[str, Any]) -> go.Figure:
    feats = [f for f in profile["features"] if f != "tokens"]
    fig = go.Figure(
        go.Bar(x=feats, y=[profile["features"][f]["rate"] for f in feats], name=plot_label(profile["name"]))
    )
    fig.update_layout(
        title=f"Share of {plot_label(profile['name'])}'s answers showing each vibe",
        height=360,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        yaxis={"range": [0, 1], "title": "share of answers"},
    )
    return fig


def compare_table(cmp: dict[str, Any]) -> pd.DataFrame:
    a, b = cmp["a"], cmp["b"]
    rows = [
        {
            "feature": f,
            f"mean {a}": _r(v["mean_a"], 2),
            f"mean {b}": _r(v["mean_b"], 2),
            f"share {a}": _r(v["rate_a"], 2),
            f"share {b}": _r(v["rate_b"], 2),
            "difference": _r(v["mean_diff"], 2),
        }
        for f, v in cmp["features"].items()
    ]
    return pd.DataFrame(rows)


def compare_chart(cmp: dict[str, Any]) -> go.Figure:
    feats = [f for f in cmp["features"] if f != "tokens"]  # tokens dwarf the counts; they are in the table
    fig = go.Figure(
        [
            go.Bar(name=plot_label(cmp[side]), x=feats, y=[cmp["features"][f][f"rate_{side}"] for f in feats])
            for side in ("a", "b")
        ]
    )
    fig.update_layout(
        barmode="group",
        title="Share of answers showing each vibe",
        height=380,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        yaxis={"range": [0, 1], "title": "share of answers"},
    )
    return fig


def goldilocks_chart(rows: list[dict[str, Any]]) -> go.Figure | None:
    """Rating against eval score, tokens/s, latency and cost per answer: one point per contestant in each panel;
    a contestant whose rating interval can't be told is left out (`goldilocks_note` says so).

    Names are in the legend, one colour per contestant across the panels: names written beside the points
    overlapped where points were close and were cut at the panel's edge. A panel with nothing measured shows
    no axis, only a line saying so (its empty axis ran from -1 to 6)."""
    rated = [r for r in rows if r["rating"] is not None and not r.get("cant_tell")]
    if not rated:
        return None
    panels = [
        ("eval_score", "eval score (share passed)"),
        ("tokens_per_s", "tokens / s"),
        ("latency_s", "time to first token (s)"),
        ("cost_per_answer", f"cost per answer {rows[0]['currency']}".strip()),
    ]
    fig = make_subplots(rows=2, cols=2, shared_yaxes=True, subplot_titles=[p[1] for p in panels])
    palette = plotly_colors.qualitative.Plotly
    in_legend: set[str] = set()
    for k, (key, label) in enumerate(panels):
        at = {"row": k // 2 + 1, "col": k % 2 + 1}
        pts = [r for r in rated if r[key] is not None]
        if not pts:
            axis = "" if k == 0 else str(k + 1)
            fig.update_xaxes(visible=False, **at)
            fig.add_annotation(
                text=f"no {label} measured yet (see the note above)",
                xref=f"x{axis} domain",
                yref=f"y{axis} domain",
                x=0.5,
                y=0.5,
                showarrow=False,
            )
            continue
        for r in pts:
            name = plot_label(r["name"])
            fig.add_trace(
                go.Scatter(
                    x=[r[key]],
                    y=[r["rating"]],
                    name=name,
                    legendgroup=name,
                    showlegend=name not in in_legend,
                    mode="markers",
                    marker={"size": 10, "color": palette[rated.index(r) % len(palette)]},
                    error_y={
                        "type": "data",
                        "symmetric": False,
                        "array": [(r["ci_high"] or r["rating"]) - r["rating"]],
                        "arrayminus": [r["rating"] - (r["ci_low"] or r["rating"])],
                    },
                    hovertemplate=name + ": rating %{y:.0f}, " + label + " %{x}<extra></extra>",
                ),
                **at,
            )
            in_legend.add(name)
    fig.update_yaxes(title_text="rating", col=1)
    fig.update_layout(
        title="Goldilocks: liked (rating) vs right (evals) vs fast and cheap",
        height=720,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        legend={"title": {"text": "contestant"}},
    )
    return fig


def goldilocks_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame([{k: r.get(k) for k in GOLDILOCKS_COLUMNS} for r in rows], columns=GOLDILOCKS_COLUMNS)
    for col, digits in (
        ("rating", 1),
        ("eval_score", 3),
        ("tokens_per_s", 1),
        ("latency_s", 3),
        ("cost_per_answer", 5),
    ):
        df[col] = pd.to_numeric(df[col], errors="coerce").round(digits)
    return df


def goldilocks_note(rows: list[dict[str, Any]]) -> str:
    """What the Goldilocks panels are missing and how to fill them (display-path HTML); empty when nothing is."""
    notes = []
    if not any(r["rating"] is not None for r in rows):
        notes.append("No rated contestant yet: vote in the Arena tab, then press the button again.")
    unknown = [r["name"] for r in rows if r.get("cant_tell")]
    if unknown:
        notes.append(
            "Left out of the panels (their rating interval can't be told, see the board's note): "
            + ", ".join(literal(n) for n in unknown)
            + "."
        )
    if not any(r["eval_score"] is not None for r in rows):
        notes.append(
            "The eval panel is empty: no verifiable evals have run yet. On the Probes tab, pick a contestant "
            "under *Run the verifiable evals for* and press **Run evals** (a few items first: *Only the first N "
            "items*), then show this board again."
        )
    if rows and all(not r["cost_per_answer"] for r in rows):
        notes.append(
            "Every cost is 0 or unknown: local engines are priced at 0 per 1k tokens. To compare prices, copy "
            "the prices file to `prices.yaml` in the studio's data folder (or set `VIBESTUDIO_PRICES`) and give "
            "each engine or contestant its price per 1k tokens."
        )
    if any(r["tokens_per_s"] is None for r in rows):
        notes.append("Speed is unknown for a contestant until it has answered in a battle or an eval.")
    return to_html("\n".join(f"- {n}" for n in notes)) if notes else ""


def summary_text(board: dict[str, Any], extra: str = "") -> str:
    """The board's summary line as display-path HTML; ``extra`` is Markdown whose names are already literals."""
    text = f"{count(board['n_votes'], 'rated vote', bold=True)}."
    refresh = board.get("refresh")
    if refresh:
        text += f" Refreshed in {refresh['seconds'] * 1000:.0f} ms ({refresh['new_votes']} new)."
    if board["unrated"]:
        text += " Not rated yet: " + ", ".join(literal(n) for n in board["unrated"]) + "."
    for warning in board["warnings"]:
        text += f"\n\n⚠️ {literal(warning)}"
    return to_html(text + extra)  # contestant names are untrusted: the display path, never Gradio's Markdown


def method_text(board: dict[str, Any]) -> str:
    """Which method drew the board and why; the fitted tie probabilities of a tie model."""
    method = board.get("method")
    if not method:
        return ""
    names = dict((v, k) for k, v in METHOD_CHOICES)
    text = f"\n\nMethod: **{names.get(method, method)}** ({board.get('method_reason', 'chosen')})."
    ties = board.get("tie_parameters") or {}
    if ties:
        text += " Tie probability between two equal models: " + ", ".join(
            f"{kind} {v['p_equal']:.3f} [{v['ci_low']:.3f}, {v['ci_high']:.3f}]" for kind, v in ties.items()
        )
    return text


def change_text(board: dict[str, Any], bt: dict[str, Any]) -> str:
    """How much the tie model moved the board against Bradley-Terry (ties as half a win)."""
    before = {m["name"]: (m["rating"], k) for k, m in enumerate(bt["models"])}
    moves = [
        (abs(m["rating"] - before[m["name"]][0]), m["name"], k - before[m["name"]][1])
        for k, m in enumerate(board["models"])
        if m["name"] in before
    ]
    if not moves:
        return ""
    size, name, _ = max(moves)
    moved = [f"{literal(n)} {'up' if d < 0 else 'down'} {abs(d)}" for _, n, d in moves if d]
    return (
        f" Against Bradley-Terry: largest rating change {size:.1f} points ({literal(name)}); "
        + ("order changed: " + ", ".join(moved) if moved else "same order")
        + "."
    )


def predict_table(out: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for check in out["checks"]:
        for sc in sorted(check["scores"], key=lambda x: (x["log_loss"] is None, x["log_loss"] or 0.0)):
            ll, br = sc["log_loss_ci"] or (None, None), sc["brier_ci"] or (None, None)
            rows.append(
                {
                    "split": check["split"],
                    "method": sc["method"],
                    "log-loss": _r(sc["log_loss"], 4),
                    "low": _r(ll[0], 4),
                    "high": _r(ll[1], 4),
                    "Brier": _r(sc["brier"], 4),
                    "Brier low": _r(br[0], 4),
                    "Brier high": _r(br[1], 4),
                    "vs best": _r(sc["vs_best"], 4),
                    "note": "" if sc["log_loss"] is not None else f"cannot estimate: {sc['note']}",
                }
            )
    return pd.DataFrame(rows, columns=PREDICT_COLUMNS)


def predict_text(out: dict[str, Any]) -> str:
    if not out["checks"]:
        return "No rated votes yet: nothing to compare."
    parts = []
    for check in out["checks"]:
        line = f"**{check['split']} split**: fitted on {count(check['n_train'], 'vote')}, scored on {count(check['n_test'], 'held-out vote')}."
        if check["best"]:
            line += f" Best: **{check['best']}**" + (
                " (clearly)."
                if check["best_clear"]
                else " (not clearly: the runner-up is within the interval)."
            )
        parts.append(line + "".join(f"\n- {n}" for n in check["notes"]))
    best = out["best"]
    parts.append(
        f"The board's automatic method is **{best}**."
        if best
        else "Too little data: the board uses Bradley-Terry."
    )
    return "\n\n".join(parts)


# -- the tab's sections: each builds its components and returns them by name --------------------------------------
class _Filters(NamedTuple):
    """The options every view of the board reads, in ``board_options``'s order."""

    ci: Any
    controls: Any
    board: Any
    named: Any
    method: Any


def _filters() -> _Filters:
    """Intervals, controls, the board (all votes or a category) and named-mode votes; the rating method."""
    with gr.Row():
        ci = gr.Radio(["bootstrap", "sandwich"], value="bootstrap", label="Intervals", scale=1)
        controls = gr.CheckboxGroup(CONTROLS, value=[], label="Control for", scale=2)
        board = gr.Dropdown(
            [("All votes", "all")], value="all", label="Board", elem_id="leaderboard-board", scale=2
        )
        named = gr.Checkbox(False, label="Include named-mode votes", scale=1)
    method = gr.Radio(METHOD_CHOICES, value="auto", label="Method", elem_id="leaderboard-method")
    return _Filters(ci, controls, board, named, method)


class _BoardView(NamedTuple):
    refresh: Any
    summary: Any
    table: Any
    chart: Any


def _board_view() -> _BoardView:
    """Refresh, the summary line, the table and the chart of ratings with their intervals."""
    refresh = gr.Button("Refresh", elem_id="leaderboard-refresh")
    summary = gr.HTML(elem_id="leaderboard-summary")
    table = gr.Dataframe(headers=COLUMNS, interactive=False, elem_id="leaderboard-table")
    chart = gr.Plot(elem_id="leaderboard-chart")
    return _BoardView(refresh, summary, table, chart)


class _StyleTab(NamedTuple):
    table: Any
    chart: Any


def _style_tab() -> _StyleTab:
    with gr.Tab("Style control"):
        gr.Markdown(
            "Tick a control above and refresh: each feature's coefficient says how many rating points one "
            "standard deviation of it buys, with the ratings adjusted for it."
        )
        table = gr.Dataframe(headers=STYLE_COLUMNS, interactive=False, elem_id="leaderboard-style")
        chart = gr.Plot()
    return _StyleTab(table, chart)


class _MatricesTab(NamedTuple):
    button: Any
    win: Any
    counts: Any
    tab: Any


def _matrices_tab() -> _MatricesTab:
    with gr.Tab("Matrices") as tab:
        button = gr.Button("Show win-rate and battle-count matrices", elem_id="leaderboard-matrices")
        win, counts = gr.Plot(), gr.Plot()
    return _MatricesTab(button, win, counts, tab)


class _OverTimeTab(NamedTuple):
    period: Any
    button: Any
    plot: Any
    tab: Any


def _over_time_tab() -> _OverTimeTab:
    with gr.Tab("Over time") as tab:
        with gr.Row():
            period = gr.Radio(FREQS, value="W", label="Period")
            button = gr.Button("Show rating over time", elem_id="leaderboard-over-time")
        plot = gr.Plot(elem_id="leaderboard-over-time-plot")
    return _OverTimeTab(period, button, plot, tab)


class _VibesTab(NamedTuple):
    a: Any
    b: Any
    button: Any
    text: Any
    table: Any
    plot: Any
    tab: Any


def _vibes_tab() -> _VibesTab:
    """One contestant's vibe profile, or two compared."""
    with gr.Tab("Vibe profiles") as tab:
        with gr.Row():
            a = gr.Dropdown([], label="Contestant", allow_custom_value=True, elem_id="leaderboard-vibe-a")
            b = gr.Dropdown([], label="Compare with (optional)", allow_custom_value=True)
            button = gr.Button("Show vibes", elem_id="leaderboard-vibes")
        text = gr.HTML(elem_id="leaderboard-vibe-text")
        table = gr.Dataframe(headers=PROFILE_COLUMNS, interactive=False, elem_id="leaderboard-vibe-table")
        plot = gr.Plot()
    return _VibesTab(a, b, button, text, table, plot, tab)


class _PredictTab(NamedTuple):
    button: Any
    summary: Any
    table: Any


def _predict_tab() -> _PredictTab:
    with gr.Tab("Predictive check"):
        gr.Markdown(
            "Each method is fitted on earlier votes and scored on the later ones (time split), and on a random "
            "share (random split): log-loss and Brier score of a/b/tie, lower is better, 95% intervals by a "
            "bootstrap over the held-out votes."
        )
        button = gr.Button("Compare the methods on held-out votes", elem_id="leaderboard-predict")
        summary = gr.Markdown(elem_id="leaderboard-predict-summary")
        table = gr.Dataframe(headers=PREDICT_COLUMNS, interactive=False, elem_id="leaderboard-predict-table")
    return _PredictTab(button, summary, table)


class _GoldilocksTab(NamedTuple):
    button: Any
    note: Any
    plot: Any
    table: Any
    tab: Any

    @property
    def outputs(self) -> list[Any]:
        """What ``on_goldilocks`` writes, in its order."""
        return [self.plot, self.table, self.note]


def _goldilocks_tab() -> _GoldilocksTab:
    """Rating against evals, speed and price. It reads stored eval runs; they are started on the Probes tab."""
    with gr.Tab("Goldilocks") as tab:
        button = gr.Button("Show the Goldilocks board", elem_id="leaderboard-goldilocks")
        note = gr.HTML(elem_id="goldilocks-note")
        plot = gr.Plot()
        table = gr.Dataframe(headers=GOLDILOCKS_COLUMNS, interactive=False, elem_id="goldilocks-table")
    return _GoldilocksTab(button, note, plot, table, tab)


@dataclass
class _LeaderboardPage:
    """Every component the tab's events read or write, by section."""

    filters: _Filters
    board: _BoardView
    style: _StyleTab
    matrices: _MatricesTab
    over_time: _OverTimeTab
    vibes: _VibesTab
    predict: _PredictTab
    goldilocks: _GoldilocksTab
    fragility: FragilityTab
    lc: LcTab
    judges: JudgeTab

    @property
    def board_outputs(self) -> list[Any]:
        """What a refresh writes (``on_refresh``'s order): the board, the board picker's choices, style control."""
        b = self.board
        return [b.summary, b.table, b.chart, self.filters.board, self.style.table, self.style.chart]


def build(ctx: StudioContext, demo: gr.Blocks, timer: gr.Timer, tab: gr.Tab | None = None) -> None:
    """Lay out the tab section by section and wire its events (``_wire``), among them the refresh ``timer`` (made
    by the app outside the tabs, which runs it only while ``tab`` is open); opening ``tab`` refreshes the board at
    once. The decision card and the families board below the sub-tabs build and wire themselves."""
    filters, board = _filters(), _board_view()
    with gr.Tabs():
        style, matrices, over_time = _style_tab(), _matrices_tab(), _over_time_tab()
        vibes, predict = _vibes_tab(), _predict_tab()
        identifiability.build_section(ctx)
        goldilocks_tab = _goldilocks_tab()
        with gr.Tab("Votes to flip"):
            fragile = fragility_components()
        with gr.Tab("LC win rate"):
            lc = lc_components()
        with gr.Tab("Judge votes"):
            judges = JudgeTab()
    page = _LeaderboardPage(
        filters, board, style, matrices, over_time, vibes, predict, goldilocks_tab, fragile, lc, judges
    )
    options = board_options(ctx)
    _wire(ctx, demo, timer, tab, page, options)
    wire_decision(ctx, demo)
    # the families board reads the same board as the tab, so it shows the same intervals
    families.build_section(ctx, ctx.leaderboard, list(filters), options)


def _wire(
    ctx: StudioContext,
    demo: gr.Blocks,
    timer: gr.Timer,
    tab: gr.Tab | None,
    p: _LeaderboardPage,
    options: Any,
) -> None:
    """The tab's events, in the order the app has always registered them (the tests address the private ones by
    index): the board's refresh (button, load, method, filters), the predictive check, the timer and the tab's
    opening, the contestant pickers, matrices, over time, vibes, Goldilocks, then each sub-tab's own."""
    filters, board_outputs = list(p.filters), p.board_outputs
    boards = _board_handlers(ctx, options)
    views = _view_handlers(ctx, options)
    seen_version = gr.State(None)  # the vote cache's version this page last drew (the timer's redraw test)
    p.board.refresh.click(boards.on_refresh, filters, board_outputs, api_name="leaderboard")
    demo.load(boards.on_refresh, filters, board_outputs, api_visibility="private")
    p.filters.method.change(boards.on_refresh, filters, board_outputs, api_visibility="private")
    # picking a board, the intervals, a control or named votes redraws at once (the timer redraws only on new votes)
    f = p.filters
    picks = [f.ci.input, f.controls.input, f.board.input, f.named.input]
    gr.on(picks, boards.on_refresh, filters, board_outputs, api_visibility="private")
    predict = p.predict
    predict.button.click(
        views.on_predict, filters, [predict.summary, predict.table], api_name="leaderboard_predict"
    )
    follow = [*board_outputs, seen_version]
    timer.tick(boards.on_tick, [*filters, seen_version], follow, api_visibility="private")
    if tab is not None:
        tab.select(boards.on_open, filters, follow, api_visibility="private")
    demo.load(views.contestant_choices, None, [p.vibes.a, p.vibes.b], api_visibility="private")
    m, o = p.matrices, p.over_time
    m.button.click(views.on_matrices, filters, [m.win, m.counts], api_visibility="private")
    o.button.click(views.on_over_time, [o.period, *filters], [o.plot], api_visibility="private")
    # refusals (nothing picked, a name with no answers) answer in the text next to the button
    v = p.vibes
    vibe_outs = [v.text, v.table, v.plot]
    wire(v.button.click, views.on_vibes, [v.a, v.b], vibe_outs, v.text, api_visibility="private")
    g = p.goldilocks
    g.button.click(views.on_goldilocks, filters, g.outputs, api_visibility="private")
    # Fresh on sight: the drawn views redraw as their sub-tab opens (a vibe profile only once a contestant is
    # picked; over time also when its period changes); the measurements that take a while (identifiability, the
    # predictive check, votes to flip, LC win rate, judge votes, families) wait for their button.
    m.tab.select(views.on_matrices, filters, [m.win, m.counts], api_visibility="private")
    o.tab.select(views.on_over_time, [o.period, *filters], [o.plot], api_visibility="private")
    o.period.change(views.on_over_time, [o.period, *filters], [o.plot], api_visibility="private")
    wire(v.tab.select, views.on_vibes_open, [v.a, v.b], vibe_outs, v.text, api_visibility="private")
    g.tab.select(views.on_goldilocks, filters, g.outputs, api_visibility="private")
    wire_fragility(ctx, p.fragility, filters, options)
    wire_lc(ctx, demo, p.lc, filters, options)
    wire_judges(ctx, p.judges)


# -- the handlers ----------------------------------------------------------------------------------------------------
def board_options(ctx: StudioContext) -> Callable[..., BoardOptions]:
    """The filters' values (``_Filters``' order) as the board's options, with the studio's bootstrap rounds."""

    def options(
        ci_method: str,
        chosen: list[str] | None,
        board_name: str | None,
        with_named: bool,
        method_name: str | None = "auto",
    ) -> BoardOptions:
        chosen, rounds = chosen or [], ctx.settings.leaderboard_bootstrap
        # the filters on the board every view shows (standard_options): its defaults are the same fit
        return standard_options(
            method=method_name or "auto",
            ci_method="sandwich" if rounds < 2 else (ci_method or "bootstrap"),
            bootstrap=max(rounds, 2),
            style_control="style" in chosen,
            vibe_control="vibe" in chosen,
            board=board_name or "all",
            include_named=bool(with_named),
        )

    return options


#: How many outputs a board refresh writes (``_LeaderboardPage.board_outputs``).
BOARD_OUTPUTS = 6


class _BoardHandlers(NamedTuple):
    on_refresh: Callable[..., Any]
    on_open: Callable[..., Any]
    on_tick: Callable[..., Any]


def _board_handlers(ctx: StudioContext, options: Callable[..., BoardOptions]) -> _BoardHandlers:
    """The board's refresh; the tab's opening and the timer, which redraw only when the votes changed."""
    service = ctx.leaderboard

    def on_refresh(
        ci_method="bootstrap", chosen=None, board_name="all", with_named=False, method_name="auto"
    ):
        o = options(ci_method, chosen, board_name, with_named, method_name)
        out = service.board(o)
        # contestants whose answers give them away: their votes are not blind in practice
        out = {**out, "warnings": [*out["warnings"], *identifiability.warnings(ctx)]}
        badges = badges_by_name(ctx.db)
        out["models"] = [{**m, "verdict": badges.get(m["name"], "")} for m in out["models"]]
        choices = [(f"{b['label']} ({b['n_votes']})", b["board"]) for b in out["boards"]]
        if board_name and board_name not in [c[1] for c in choices]:
            choices.append((board_name, board_name))
        shift = ""
        if out.get("method", "bt") != "bt" and out["models"]:
            shift = change_text(out, service.board(replace(o, method="bt"), refresh=False))
        shift += flip_summary(service, o, out)
        return (
            summary_text(out, method_text(out) + shift),
            board_table(out),
            board_chart(out),
            gr.update(choices=choices),
            style_table(out),
            style_chart(out),
        )

    def on_open(*values):  # type: ignore[no-untyped-def]
        """Tab opened: refresh now (the app starts the timer)."""
        return (*on_refresh(*values), service.cache.version)

    def on_tick(*values):  # type: ignore[no-untyped-def]
        """Timer: read new votes; redraw only when something changed since this page last drew."""
        *filter_values, seen = values
        service.refresh()
        if seen is not None and seen == service.cache.version:
            return (*[gr.skip()] * BOARD_OUTPUTS, seen)
        return (*on_refresh(*filter_values), service.cache.version)

    return _BoardHandlers(on_refresh, on_open, on_tick)


class _ViewHandlers(NamedTuple):
    on_predict: Callable[..., Any]
    contestant_choices: Callable[..., Any]
    on_matrices: Callable[..., Any]
    on_over_time: Callable[..., Any]
    on_vibes: Callable[..., Any]
    on_goldilocks: Callable[..., Any]
    on_vibes_open: Callable[..., Any]


def _view_handlers(ctx: StudioContext, options: Callable[..., BoardOptions]) -> _ViewHandlers:
    """The sub-tabs' reads: the predictive check, matrices, rating over time, vibe profiles, Goldilocks."""
    service = ctx.leaderboard

    def on_predict(ci_method, chosen, board_name, with_named, method_name, progress=gr.Progress()):
        progress(0.1, desc="fitting each method on earlier votes")
        out = service.predict(options(ci_method, chosen, board_name, with_named, method_name))
        return predict_text(out), predict_table(out)

    def contestant_choices():
        with ctx.db.session() as s:
            names = [c.public_name for c in list_contestants(s)]
        return gr.update(choices=names), gr.update(choices=names)

    def on_matrices(ci_method, chosen, board_name, with_named, method_name="auto"):
        m = service.matrices(options(ci_method, chosen, board_name, with_named, method_name))
        return (
            heatmap(m["win_rate"], "Observed win rate of the row model against the column model (ties half)"),
            heatmap(m["counts"], "Votes per pair", counts=True),
        )

    def on_over_time(period, ci_method, chosen, board_name, with_named, method_name="auto"):
        o = options(ci_method, chosen, board_name, with_named, method_name)
        return over_time_chart(service.over_time(o, period), o.style_control or o.vibe_control)

    def on_vibes(a: str | None, b: str | None):
        if not a:
            raise refuse("Pick a contestant first.")
        try:
            with ctx.db.session() as s:
                if b and b != a:
                    cmp = compare_contestants(s, a, b)
                    text = to_html(
                        f"**{literal(cmp['a'])}**: {count(cmp['n_answers_a'], 'answer')} · "
                        f"**{literal(cmp['b'])}**: {count(cmp['n_answers_b'], 'answer')}"
                    )
                    return text, compare_table(cmp), compare_chart(cmp)
                prof = vibe_profile(s, a)
        except ValueError as exc:
            raise user_error(exc) from exc
        return (
            to_html(f"**{literal(prof['name'])}**: {count(prof['n_answers'], 'answer')}"),
            profile_table(prof),
            profile_chart(prof),
        )

    def on_goldilocks(ci_method, chosen, board_name, with_named, method_name="auto"):
        out = service.board(options(ci_method, chosen, board_name, with_named, method_name))
        with ctx.db.session() as s:
            rows = goldilocks(s, out["models"])
        return goldilocks_chart(rows), goldilocks_table(rows), goldilocks_note(rows)

    def on_vibes_open(a: str | None, b: str | None):
        """The sub-tab's opening: the picked profile as it is now; nothing picked (or gone) leaves it as it is."""
        try:
            return on_vibes(a, b) if a else (gr.update(), gr.update(), gr.update())
        except gr.Error:
            return gr.update(), gr.update(), gr.update()

    return _ViewHandlers(
        on_predict, contestant_choices, on_matrices, on_over_time, on_vibes, on_goldilocks, on_vibes_open
    )


# -- how fragile is the order; LC win rate (votes-to-flip, #31) ----------------------------------------------------------
FLIP_COLUMNS = ["#", "higher", "lower", "rating gap", "votes to flip", "share of votes", "note"]
FLIP_VOTE_COLUMNS = ["battle", "vote", "voted at (UTC)", "voter", "model_a", "model_b", "winner"]
LC_COLUMNS = ["name", "votes", "win %", "win low", "win high", "LC win %", "LC low", "LC high", "note"]


def flip_summary(service: Any, o: BoardOptions, board: dict[str, Any]) -> str:
    """The board summary's votes-to-flip line ("#1 holds unless 3 votes go"), as Markdown with literal names."""
    if len(board["models"]) < 2:
        return ""
    # one sentence from the flip report and the board it sits under (standings.ratings.flip_headline)
    return f"\n\n**{literal(flip_headline(service.votes_to_flip(o, refresh=False), board))}.**"


def flip_table(out: dict[str, Any]) -> pd.DataFrame:
    rows = [
        {
            "#": p["position"],
            "higher": p["higher"],
            "lower": p["lower"],
            "rating gap": _r(p["rating_gap"]),
            "votes to flip": p["votes"] if p["votes"] is not None else "can't tell",
            "share of votes": None
            if p["votes"] is None
            else f"{100 * p['votes'] / max(out['n_votes'], 1):.2g}%",
            "note": p["note"],
        }
        for p in out["pairs"]
    ]
    return pd.DataFrame(rows, columns=FLIP_COLUMNS)


def flip_votes_table(out: dict[str, Any], position: int | None, show_voters: bool) -> pd.DataFrame:
    """The votes whose removal flips pair `position`: battle, vote, time, voter (admins only), sides and winner."""
    import datetime as dt

    pair = next((p for p in out["pairs"] if p["position"] == position), None)
    rows = []
    for v in (pair or {}).get("removed", []):
        ts = v.get("tstamp")
        when = dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M") if ts else None
        voter = (v.get("voter") or "anonymous") if show_voters else "(admins only)"
        rows.append(
            {
                "battle": v.get("battle_id"),
                "vote": v.get("vote_id"),
                "voted at (UTC)": when,
                "voter": voter,
                "model_a": v["model_a"],
                "model_b": v["model_b"],
                "winner": v["winner"],
            }
        )
    return pd.DataFrame(rows, columns=FLIP_VOTE_COLUMNS)


def flip_text(out: dict[str, Any]) -> str:
    text = f"{literal(out['headline'])}\n\nFound in {out['seconds']:.2f} s over {count(out['n_votes'], 'vote')}. "
    text += (
        "Each count is found by ranking votes by their influence on the pair's rating gap (one Newton step of the "
        "Bradley-Terry fit) and then **checked by refitting without them**; it is an upper bound on the fewest."
    )
    for w in out["warnings"]:
        text += f"\n\n⚠️ {literal(w)}"
    return to_html(text)


def lc_table(out: dict[str, Any]) -> pd.DataFrame:
    rows = [
        {
            "name": r["name"],
            "votes": r["n_battles"],  # win_rates counts the board's records: rated votes
            "win %": _r(r["win_rate"]),
            "win low": _r(r["win_low"]),
            "win high": _r(r["win_high"]),
            "LC win %": _r(r["lc_win_rate"]),
            "LC low": _r(r["lc_low"]),
            "LC high": _r(r["lc_high"]),
            "note": r["note"],
        }
        for r in out["rows"]
    ]
    return pd.DataFrame(rows, columns=LC_COLUMNS)


class FragilityTab:
    """The components of the *Votes to flip* sub-tab (how fragile the order is)."""

    def __init__(self) -> None:
        gr.Markdown(
            "For the top pair and each adjacent pair of the board: the fewest votes found whose removal flips their "
            "order (after Huang et al., *Dropping just a handful of preferences can change top LLM rankings*). "
            "Pick a pair to see the votes themselves."
        )
        self.button = gr.Button("Find the votes that would flip the order", elem_id="flip-run")
        self.text = gr.HTML(elem_id="flip-summary")
        self.table = gr.Dataframe(headers=FLIP_COLUMNS, interactive=False, elem_id="flip-table")
        self.pair = gr.Dropdown([], label="Show the votes for pair", elem_id="flip-pair")
        self.votes = gr.Dataframe(headers=FLIP_VOTE_COLUMNS, interactive=False, elem_id="flip-votes")


def fragility_components() -> FragilityTab:
    return FragilityTab()


class LcTab:
    """The components of the *LC win rate* sub-tab."""

    def __init__(self) -> None:
        gr.Markdown(
            "Win rate and length-controlled win rate (AlpacaEval 2) against a baseline, with 95% bootstrap "
            "intervals: the LC win rate is what the win rate would be at equal answer length."
        )
        with gr.Row():
            self.baseline = gr.Dropdown([], label="Baseline", allow_custom_value=True, elem_id="lc-baseline")
            self.button = gr.Button("Show LC win rates", elem_id="lc-run")
        self.text = gr.HTML(elem_id="lc-notes")
        self.table = gr.Dataframe(headers=LC_COLUMNS, interactive=False, elem_id="lc-table")


def lc_components() -> LcTab:
    return LcTab()


def _is_admin(ctx: StudioContext, request: gr.Request | None) -> bool:
    from vibestudio.accounts import require_role

    try:
        require_role(ctx.db, ctx.access.user_id(request), "admin")
    except PermissionDenied:
        return False
    return True


def wire_fragility(ctx: StudioContext, tab: FragilityTab, filters: list[Any], options: Any) -> None:
    service = ctx.leaderboard

    def on_flip(ci_method, chosen, board_name, with_named, method_name, request: gr.Request):  # type: ignore[no-untyped-def]
        out = service.votes_to_flip(options(ci_method, chosen, board_name, with_named, method_name))
        choices = [(f"#{p['position']} {p['higher']} > {p['lower']}", p["position"]) for p in out["pairs"]]
        first = choices[0][1] if choices else None
        return (
            flip_text(out),
            flip_table(out),
            gr.update(choices=choices, value=first),
            flip_votes_table(out, first, _is_admin(ctx, request)),
        )

    def on_pair(position, ci_method, chosen, board_name, with_named, method_name, request: gr.Request):  # type: ignore[no-untyped-def]
        o = options(ci_method, chosen, board_name, with_named, method_name)
        out = service.votes_to_flip(o, refresh=False)
        return flip_votes_table(out, int(position) if position is not None else None, _is_admin(ctx, request))

    tab.button.click(on_flip, filters, [tab.text, tab.table, tab.pair, tab.votes], api_name="votes_to_flip")
    tab.pair.input(on_pair, [tab.pair, *filters], [tab.votes], api_visibility="private")


def wire_lc(ctx: StudioContext, demo: gr.Blocks, tab: LcTab, filters: list[Any], options: Any) -> None:
    service = ctx.leaderboard

    def on_lc(baseline, ci_method, chosen, board_name, with_named, method_name):  # type: ignore[no-untyped-def]
        if not baseline:
            raise refuse("Pick a baseline first.")
        try:
            out = service.win_rates(baseline, options(ci_method, chosen, board_name, with_named, method_name))
        except ValueError as exc:
            raise user_error(exc) from exc
        return to_html("\n\n".join(literal(n) for n in out["notes"])), lc_table(out)

    def names():  # type: ignore[no-untyped-def]
        with ctx.db.session() as s:
            return gr.update(choices=[c.public_name for c in list_contestants(s)])

    wire(
        tab.button.click,
        on_lc,
        [tab.baseline, *filters],
        [tab.text, tab.table],
        tab.text,
        api_name="lc_win_rates",
    )
    demo.load(names, None, [tab.baseline], api_visibility="private")


class DecisionTab:
    """The components of the *Decision card* section: two contestants, an optional price per hour, the card."""

    def __init__(self) -> None:
        gr.Markdown(
            "Two contestants side by side: arena rating with its interval and the votes that would flip them, "
            "verifiable evals, vibes that differ, sycophancy probes, measured speed and cost, and one sentence "
            "that says no more than the intervals allow."
        )
        with gr.Row():
            self.a = gr.Dropdown([], label="Contestant A", allow_custom_value=True, elem_id="card-a")
            self.b = gr.Dropdown([], label="Contestant B", allow_custom_value=True, elem_id="card-b")
            self.price = gr.Number(
                None, label="Price per hour (empty or 0: the studio's setting)", elem_id="card-price"
            )
            self.button = gr.Button("Draw the decision card", variant="primary", elem_id="card-run")
        self.card = gr.HTML(elem_id="card-body")


def card_html(card: Any) -> str:
    """The card through the display path (contestant names are untrusted)."""
    return to_html(card.to_markdown(literal))


def wire_decision(ctx: StudioContext, demo: gr.Blocks) -> None:
    """The *Decision card* section (an accordion under the board's sub-tabs) and its wiring."""
    from vibestudio.standings.decision import DecisionError, decision_card

    with gr.Accordion("Decision card: which of two to ship", open=True, elem_id="card-section"):
        tab = DecisionTab()

    def on_card(a: str | None, b: str | None, price: float | None) -> str:
        if not a or not b:
            raise refuse("Pick two contestants first.")
        try:
            # an empty number box arrives as 0 or None: both mean "the studio's setting"
            card = decision_card(ctx.db, a, b, service=ctx.leaderboard, price_per_hour=price or None)
        except DecisionError as exc:
            raise user_error(exc) from exc
        return card_html(card)

    def names():  # type: ignore[no-untyped-def]
        with ctx.db.session() as s:
            choices = [c.public_name for c in list_contestants(s)]
        return gr.update(choices=choices), gr.update(choices=choices)

    wire(tab.button.click, on_card, [tab.a, tab.b, tab.price], [tab.card], tab.card, api_name="decision_card")
    demo.load(names, None, [tab.a, tab.b], api_visibility="private")


# -- what a judge vote is worth: the composite board from the studio database (#31) ------------------------------------
JUDGE_SOURCES = [("Pooled (people + judges, judge weight chosen)", "pooled"), ("People only", "human"),
                 ("Judges only", "judge")]  # fmt: skip
JUDGE_COLUMNS = [
    "judge",
    "judge votes",
    "human votes",
    "k (human = k judge votes)",
    "k low",
    "k high",
    "note",
]
VIBE_WORTH_COLUMNS = ["judge", "vibe", "human votes", "judge votes", "k", "k low", "k high",
                      "people pick more", "judge picks more", "gap", "note"]  # fmt: skip


def _k(x: Any) -> Any:
    return "inf" if x == "inf" else (None if x is None else round(float(x), 2))


def _share(x: list[Any]) -> str | None:
    """A share with its interval, in percent: "62% [55, 68]"."""
    return None if x[0] is None else f"{100 * x[0]:.0f}% [{100 * x[1]:.0f}, {100 * x[2]:.0f}]"


def judge_tables(out: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The exchange-rate table (one row per judge, and all judges) and the per-vibe table."""
    rows = [
        {
            "judge": w["judge"],
            "judge votes": w["n_judge_votes"],
            "human votes": w["n_human_votes"],
            "k (human = k judge votes)": _k(w["worth"]) if w["worth"] is not None else "can't tell",
            "k low": _k(w["worth_low"]),
            "k high": _k(w["worth_high"]),
            "note": w["note"],
        }
        for w in out["judges"]
    ]
    vibe_rows = []
    for r in (out.get("by_vibe") or {}).get("rows", []):
        if not r["n_judge"]:
            continue
        w = r["worth"] or {}
        pm, jm = r["people_prefer_more"], r["judge_prefers_more"]
        vibe_rows.append(
            {
                "judge": r["judge"],
                "vibe": r["vibe"],
                "human votes": r["n_human"],
                "judge votes": r["n_judge"],
                "k": _k(w.get("worth")) if w.get("worth") is not None else "can't tell",
                "k low": _k(w.get("worth_low")),
                "k high": _k(w.get("worth_high")),
                "people pick more": _share(pm),
                "judge picks more": _share(jm),
                "gap": None if r["gap"] is None else round(100 * r["gap"]),
                "note": (
                    "clearest disagreement"
                    if out["by_vibe"]["disagree_most"].get(r["judge"]) == r["vibe"]
                    else ""
                )
                or r["note"],
            }
        )
    return pd.DataFrame(rows, columns=JUDGE_COLUMNS), pd.DataFrame(vibe_rows, columns=VIBE_WORTH_COLUMNS)


def judge_text(out: dict[str, Any]) -> str:
    c = out.get("counts") or {}
    text = (
        f"{count(c.get('arena', 0), 'arena vote')} and {count(c.get('queue_human', 0), 'label')} by people on queue "
        f"items, pooled with {count(c.get('queue_judge', 0), 'judge label')}. The judge weight is chosen by how well the pooled board "
        "predicts held-out *human* votes (5-fold), its interval by a bootstrap."
    )
    text += "".join(f"\n\n- {literal(line)}" for line in out["sentences"] + out.get("vibe_sentences", []))
    text += "".join(f"\n\n⚠️ {literal(n)}" for n in out["notes"])
    skipped = {k: v for k, v in (out.get("skipped") or {}).items() if v}
    if skipped:
        text += "\n\nLeft out: " + ", ".join(f"{count(v, 'label')} ({k})" for k, v in skipped.items()) + "."
    return to_html(text)


class JudgeTab:
    """The components of the *Judge votes* sub-tab."""

    def __init__(self) -> None:
        gr.Markdown(
            "What an AI judge's vote is worth next to a person's: one composite Bradley-Terry board on the arena's "
            "votes and the judge labels on annotation queues, the judge's weight learned from held-out human votes."
        )
        with gr.Row():
            self.source = gr.Radio(
                JUDGE_SOURCES, value="pooled", label="Board on", elem_id="judge-source", scale=3
            )
            self.by_vibe = gr.Checkbox(
                False, label="Also per vibe (slower)", elem_id="judge-by-vibe", scale=1
            )
            self.button = gr.Button("Show the judge board", elem_id="judge-run", scale=1)
        self.text = gr.HTML(elem_id="judge-summary")
        self.worth = gr.Dataframe(headers=JUDGE_COLUMNS, interactive=False, elem_id="judge-worth")
        self.vibes = gr.Dataframe(headers=VIBE_WORTH_COLUMNS, interactive=False, elem_id="judge-vibes")
        self.board = gr.Dataframe(headers=COLUMNS, interactive=False, elem_id="judge-board")


def wire_judges(ctx: StudioContext, tab: JudgeTab) -> None:
    from vibestudio.standings.judge_worth import JudgeError, judge_report

    def on_judges(source: str, by_vibe: bool):  # type: ignore[no-untyped-def]
        try:
            out = judge_report(ctx.db, source=source or "pooled", rounds=20, by_vibe=bool(by_vibe))
        except JudgeError as exc:
            raise user_error(exc) from exc
        worth, vibes_df = judge_tables(out)
        return judge_text(out), worth, vibes_df, board_table(out["board"])

    outs = [tab.text, tab.worth, tab.vibes, tab.board]
    # no votes or labels yet: the reason shows in the summary, the tables stay as they were
    wire(tab.button.click, on_judges, [tab.source, tab.by_vibe], outs, tab.text, api_name="judge_board")
