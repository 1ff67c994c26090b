"""Views on top of the leaderboard as plain data. They are category boards, pairwise matrices, rating over
time, vibe profiles, and how much the tie models change the board (`method_changes`).

Each function takes the same battle records as `leaderboard`. It returns dicts or pandas DataFrames ready
for a table or a plotly heatmap / line chart. Nothing here draws.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit

from vibestudio.textfeatures import vibes

from . import _fit
from ._blas import single_threaded
from ._board import Leaderboard, _aggregate, leaderboard, prepare
from ._features import assistant_text, user_turns
from ._input import BattleRecords, _is_missing_cell, as_records
from ._ties import METHODS


@dataclass
class PairwiseMatrices:
    """Row model vs column model, models ordered by rating: observed win rate (ties half; NaN where they never
    met), number of battles, and the Bradley-Terry predicted win probability."""

    win_rate: pd.DataFrame
    counts: pd.DataFrame
    predicted: pd.DataFrame


@single_threaded
def pairwise_matrices(records: Any, *, both_good: str = "tie", both_bad: str = "tie") -> PairwiseMatrices:
    """Win-rate, battle-count and predicted-win-probability matrices (for heatmaps)."""
    recs = as_records(records)
    prep = prepare(recs, both_good=both_good, both_bad=both_bad, ipw=False)
    m = len(prep.names)
    count = np.zeros((m, m))
    score = np.zeros((m, m))
    np.add.at(count, (prep.a, prep.b), 1.0)
    np.add.at(score, (prep.a, prep.b), prep.y)
    count_sym = count + count.T
    score_sym = score + (count.T - score.T)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(count_sym > 0, score_sym / count_sym, np.nan)
    if m:
        pairs = _aggregate(prep)
        theta = _fit.newton(pairs.design, pairs.s / pairs.n, pairs.n).theta
    else:
        theta = np.zeros(0)
    predicted = expit(theta[:, None] - theta[None, :])
    order = sorted(range(m), key=lambda k: (-theta[k], prep.names[k]))
    names = [prep.names[k] for k in order]

    def frame(values: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame(values[np.ix_(order, order)], index=names, columns=names)

    return PairwiseMatrices(win_rate=frame(rate), counts=frame(count_sym), predicted=frame(predicted))


def _labels(recs: BattleRecords, key: str | Callable[[Mapping[str, Any]], Any]) -> list[list[str]]:
    frame = recs.frame
    if callable(key):
        values: list[Any] = [key(recs[i]) for i in range(len(recs))]
    elif key == "multi_turn":
        if "turn" in frame.columns:
            turns = pd.to_numeric(frame["turn"], errors="coerce").to_numpy(dtype=np.float64)
        else:
            turns = np.full(len(frame), np.nan)
        if "conversation_a" in frame.columns:
            convs = frame["conversation_a"].to_numpy(dtype=object)
            turns = np.where(np.isnan(turns), [user_turns(c) for c in convs], turns)
        values = [
            None if np.isnan(t) or t == 0 else ("multi-turn" if t > 1 else "single-turn") for t in turns
        ]
    elif key in frame.columns:
        values = frame[key].to_numpy(dtype=object).tolist()
    else:
        raise KeyError(f"no field {key!r} in the battles")
    out: list[list[str]] = []
    for value in values:
        if isinstance(value, (list, tuple, np.ndarray)):
            out.append([str(v) for v in value if not _is_missing_cell(v)])
        elif _is_missing_cell(value):
            out.append([])
        else:
            out.append([str(value)])
    return out


@dataclass(frozen=True)
class BoardGroup:
    """One category board's share of the items: its label, the positions of its items, their total weight (votes)
    and that total split by each item's source (empty when no sources were given)."""

    label: str
    positions: np.ndarray
    n_votes: int
    sources: dict[str, int] = field(default_factory=dict)


def group_boards(
    labels: Sequence[Sequence[str]],
    weights: Sequence[int] | None = None,
    sources: Sequence[str] | None = None,
) -> list[BoardGroup]:
    """The one grouping and order of category boards: item `k` (a battle, or a cell of `weights[k]` votes) joins
    the board of every label in `labels[k]` (none: no board); boards come largest first (total weight), then by
    label. `sources[k]`, when given, says where item `k`'s label came from, summed per board in `sources`.

    `leaderboard_by` groups battle records with it and `standings.leaderboard` the vote cache's cells, so the
    boards a user can pick and the boards the plain path fits are the same boards in the same order.
    """
    if weights is not None and len(weights) != len(labels):
        raise ValueError(f"group_boards: {len(weights)} weights for {len(labels)} items")
    if sources is not None and len(sources) != len(labels):
        raise ValueError(f"group_boards: {len(sources)} sources for {len(labels)} items")
    positions: dict[str, list[int]] = {}
    totals: dict[str, int] = {}
    by_source: dict[str, dict[str, int]] = {}
    for k, item_labels in enumerate(labels):
        weight = 1 if weights is None else int(weights[k])
        for label in dict.fromkeys(item_labels):  # an item listed twice under one label counts once
            positions.setdefault(label, []).append(k)
            totals[label] = totals.get(label, 0) + weight
            if sources is not None:
                split = by_source.setdefault(label, {})
                split[sources[k]] = split.get(sources[k], 0) + weight
    order = sorted(positions, key=lambda label: (-totals[label], label))
    return [
        BoardGroup(
            label, np.asarray(positions[label], dtype=np.int64), totals[label], by_source.get(label, {})
        )
        for label in order
    ]


def leaderboard_by(
    records: Any, key: str | Callable[[Mapping[str, Any]], Any], **options: Any
) -> dict[str, Leaderboard]:
    """One leaderboard per value of `key`, largest group first (`group_boards`).

    `key` is a field name (e.g. "category", "language"; a list-valued field puts a battle in every listed group),
    "multi_turn" (single-turn vs multi-turn, from `turn` or the conversation), or a function of the record dict.
    `options` go to `leaderboard`.
    """
    recs = as_records(records)
    out: dict[str, Leaderboard] = {}
    for group in group_boards(_labels(recs, key)):
        rows = group.positions
        subset = BattleRecords(
            recs.frame.iloc[rows].reset_index(drop=True),
            None if recs.lines is None else recs.lines[rows],
            recs.source,
            recs.unit,
        )
        out[group.label] = leaderboard(subset, **options)
    return out


@single_threaded
def rating_over_time(
    records: Any,
    freq: str = "W",
    *,
    both_good: str = "tie",
    both_bad: str = "tie",
    ipw: bool = True,
    method: str = "bt",
) -> pd.DataFrame:
    """The board's rating (`leaderboard`: same fit, ridge, tie method and scale, mean 1000 over the models seen so
    far) on all battles up to the end of each period, so the last row is the board itself.

    `freq` is a pandas period alias ("D", "W", "M", ...); battles need `tstamp` (Unix seconds). Rows are indexed
    by the time of the period's last battle (a real vote time, not the period's nominal end); columns: models;
    NaN before a model's first battle.
    """
    recs = as_records(records)
    if "tstamp" not in recs.frame.columns:
        raise ValueError("rating_over_time needs a tstamp on the battles")
    frame = recs.frame
    stamps = frame["tstamp"].to_numpy(dtype=np.float64, na_value=np.nan)
    timed = ~np.isnan(stamps)
    if not timed.any():
        raise ValueError("rating_over_time needs a tstamp on the battles")
    periods = pd.to_datetime(stamps[timed], unit="s").to_period(freq)
    codes, uniques = pd.factorize(periods, sort=True)
    positions = np.flatnonzero(timed)
    rows, index = [], []
    names: list[str] = []
    for period in range(len(uniques)):
        upto = np.sort(positions[codes <= period])
        subset = BattleRecords(
            frame.iloc[upto].reset_index(drop=True),
            None if recs.lines is None else recs.lines[upto],
            recs.source,
            recs.unit,
        )
        board = leaderboard(
            subset,
            method=method,
            ci_method="sandwich",
            elo_k=None,
            min_battles=0,
            both_good=both_good,
            both_bad=both_bad,
            ipw=ipw,
        )
        ratings = {m.name: m.rating for m in board.models}
        names += [n for n in ratings if n not in names]
        rows.append(ratings)
        index.append(pd.Timestamp(float(stamps[positions[codes == period]].max()), unit="s"))
    out = pd.DataFrame(rows, index=pd.DatetimeIndex(index, name="last_vote"), columns=sorted(names))
    return out.astype(np.float64)


def vibe_profiles(records: Any, models: list[str] | None = None) -> dict[str, dict[str, dict[str, float]]]:
    """`textfeatures.vibes.profile` of each model's answers (assistant turns) across its battles."""
    recs = as_records(records)
    frame = recs.frame
    if "conversation_a" not in frame.columns or "conversation_b" not in frame.columns:
        raise ValueError("vibe profiles need conversation_a / conversation_b")
    texts: dict[str, list[str]] = {}
    for side in ("a", "b"):
        names = frame[f"model_{side}"].astype(str).to_numpy()
        convs = frame[f"conversation_{side}"].to_numpy(dtype=object)
        for name, conv in zip(names, convs, strict=True):
            if models is not None and name not in models:
                continue
            text = assistant_text(conv)
            if text is not None:
                texts.setdefault(name, []).append(text)
    return {name: vibes.profile(items) for name, items in sorted(texts.items())}


def method_changes(records: Any, methods: tuple[str, ...] = METHODS, **options: Any) -> dict[str, Any]:
    """How much the tie models change the board: each model's rating and rank under every method (sandwich
    intervals, mean 1000), and per method the largest rating change and rank change against plain Bradley-Terry.

    Returns {"models": [{"name", "<method>": {"rating", "rank"}...}], "summary": {method: {"max_rating_change",
    "max_rank_change", "moved": [names whose rank changed]}}, "warnings": [...]}."""
    boards = {
        meth: leaderboard(records, method=meth, ci_method="sandwich", elo_k=None, **options)
        for meth in methods
    }
    base = boards[methods[0]]
    ranks = {meth: _point_ranks(b.ratings()) for meth, b in boards.items()}
    rows = []
    for model in base.models:
        row: dict[str, Any] = {"name": model.name, "n_battles": model.n_battles}
        for meth, b in boards.items():
            r = b.ratings().get(model.name)
            row[meth] = {"rating": r, "rank": ranks[meth].get(model.name)}
        rows.append(row)
    summary = {}
    for meth in methods[1:]:
        diffs = [
            abs(r[meth]["rating"] - r[methods[0]]["rating"]) for r in rows if r[meth]["rating"] is not None
        ]
        moved = [r["name"] for r in rows if r[meth]["rank"] != r[methods[0]]["rank"]]
        summary[meth] = {
            "max_rating_change": max(diffs, default=0.0),
            "max_rank_change": max(
                (abs(r[meth]["rank"] - r[methods[0]]["rank"]) for r in rows if r[meth]["rank"]), default=0
            ),
            "moved": moved,
            "tie_parameters": boards[meth].tie_parameters,
        }
    warnings = sorted({w for b in boards.values() for w in b.warnings})
    return {"models": rows, "summary": summary, "warnings": warnings}


def _point_ranks(ratings: dict[str, float]) -> dict[str, int]:
    order = sorted(ratings, key=lambda n: (-ratings[n], n))
    return {name: k + 1 for k, name in enumerate(order)}
