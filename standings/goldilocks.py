"""The Goldilocks board: the three numbers a choice between models trades off.

Per contestant, they are how much people like it (rating), how right it is (verifiable evals) and what it
costs (speed and price). `goldilocks(session, models)` joins:
- a leaderboard's rows (`standings.leaderboard`);
- `standings.evals.eval_scores`;
- the generation statistics the arena stored on every turn (tokens, time to first token, tokens/s). These
  are medians over the most recent answers of battles that are not self-play. A contestant that has not
  played yet falls back to its eval answers.
- a price per 1k generated tokens from a small YAML file (`load_prices`).
Plain dicts out; the page draws them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import select
from sqlalchemy.orm import Session

from vibestudio.arena.registry import list_contestants
from vibestudio.arena.self_play import SELF_PLAY
from vibestudio.common.files import read_yaml
from vibestudio.common.settings import get_settings
from vibestudio.db.models import Battle, Turn
from vibestudio.db.session import data_home
from vibestudio.standings.evals import eval_scores
from vibestudio.standings.records import UNCOUNTED

DEFAULT_PRICES = Path(__file__).parent / "data" / "prices.yaml"


def prices_path() -> Path:
    """`$VIBESTUDIO_PRICES`, else `$VIBESTUDIO_HOME/prices.yaml` when it exists, else the built-in defaults."""
    env = get_settings().prices
    if env:
        return Path(env).expanduser()
    own = data_home() / "prices.yaml"
    return own if own.exists() else DEFAULT_PRICES


def load_prices(path: Path | None = None) -> dict[str, Any]:
    """The price file as {"currency", "engines": {kind: price or None}, "contestants": {name: price or None}}."""
    path = Path(path or prices_path())
    data, error = read_yaml(path)  # a price file people bring: the one reader of untrusted files
    if error is not None:
        raise ValueError(error.format(str(path)))
    data = data or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping with 'engines' and 'contestants'")
    out: dict[str, Any] = {"currency": str(data.get("currency") or ""), "path": str(path)}
    for section in ("engines", "contestants"):
        table = data.get(section) or {}
        if not isinstance(table, dict):
            raise ValueError(f"{path}: '{section}' must be a mapping of names to prices")
        for name, value in table.items():
            if value is not None and (
                not isinstance(value, int | float) or isinstance(value, bool) or value < 0
            ):
                raise ValueError(f"{path}: {section}.{name}: expected a price >= 0 or nothing, got {value!r}")
        out[section] = {str(k): (None if v is None else float(v)) for k, v in table.items()}
    return out


def cost_per_1k(prices: dict[str, Any], name: str, engine: str) -> float | None:
    """Price per 1k generated tokens: the contestant's own entry, else its engine's, else None (unknown)."""
    if name in prices["contestants"]:
        return prices["contestants"][name]
    return prices["engines"].get(engine)


def speed_stats(session: Session, limit: int = 20_000) -> dict[int, dict[str, float | int | None]]:
    """Per contestant id: median tokens/s, time to first token (s) and tokens per answer over the answers of
    the last `limit` stored turns, and how many answers that was."""
    q = (
        select(
            Battle.a_id,
            Battle.b_id,
            Turn.tokens_a,
            Turn.tokens_b,
            Turn.latency_a,
            Turn.latency_b,
            Turn.tps_a,
            Turn.tps_b,
        )
        .join(Battle, Turn.battle_id == Battle.id)
        .where(Battle.status.not_in(UNCOUNTED))  # an open battle's answers would name its contestants
        .where(Battle.mode != SELF_PLAY)  # temperatures a researcher chose, not the contestant's own
        .order_by(Turn.id.desc())
        .limit(limit)
    )
    rows = pd.DataFrame(
        session.execute(q).all(),
        columns=["a", "b", "tokens_a", "tokens_b", "lat_a", "lat_b", "tps_a", "tps_b"],
    )
    if rows.empty:
        return {}
    sides = pd.concat(
        [
            rows[[f"{k}", f"tokens_{k}", f"lat_{k}", f"tps_{k}"]].set_axis(
                ["id", "tokens", "latency", "tps"], axis=1
            )
            for k in ("a", "b")
        ]
    )
    sides = sides.apply(pd.to_numeric, errors="coerce")
    out: dict[int, dict[str, float | int | None]] = {}
    for cid, group in sides.groupby("id"):
        out[int(cid)] = {
            "tokens_per_s": _median(group["tps"]),
            "latency_s": _median(group["latency"]),
            "tokens": _median(group["tokens"]),
            "n_answers": len(group),
        }
    return out


def _median(values: pd.Series) -> float | None:
    value = values.median(skipna=True)
    return None if pd.isna(value) else float(value)


def goldilocks(
    session: Session, models: list[dict[str, Any]], prices: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """One row per contestant (rated, or active): rating and interval, eval score, speed and price.

    `models` are leaderboard rows ({"name", "rating", "ci_low", "ci_high", "cant_tell", "n_battles", ...}); a row
    whose interval can't be told keeps its reason in `cant_tell` (the chart leaves it out). Speed comes from
    arena turns, else from eval answers (`speed_source` says which). `cost_per_answer` = price per 1k tokens x
    median tokens per answer / 1000.
    """
    prices = prices or load_prices()
    rated = {m["name"]: m for m in models}
    evals = eval_scores(session)
    speed = speed_stats(session)
    rows = []
    for info in list_contestants(session, active_only=False):
        if info.public_name not in rated and not info.active:
            continue
        m = rated.get(info.public_name, {})
        ev = evals.get(info.public_name, {})
        sp: dict[str, Any] = dict(speed.get(info.id) or {})
        source = "arena" if sp else None
        if not sp and ev:
            sp = {k: ev.get(k) for k in ("tokens_per_s", "latency_s", "tokens")}
            source = "evals"
        price = cost_per_1k(prices, info.public_name, info.engine)
        tokens = sp.get("tokens")
        rows.append(
            {
                "name": info.public_name,
                "engine": info.engine,
                "rating": m.get("rating"),
                "ci_low": m.get("ci_low"),
                "ci_high": m.get("ci_high"),
                "cant_tell": m.get("cant_tell"),
                "n_battles": m.get("n_battles", 0),
                "eval_score": ev.get("score"),
                "eval_answered": ev.get("answered", 0),
                "tokens_per_s": sp.get("tokens_per_s"),
                "latency_s": sp.get("latency_s"),
                "tokens_per_answer": tokens,
                "speed_source": source,
                "cost_per_1k": price,
                "cost_per_answer": None if price is None or tokens is None else price * tokens / 1000.0,
                "currency": prices.get("currency", ""),
            }
        )
    rows.sort(key=lambda r: (r["rating"] is None, -(r["rating"] or 0.0), r["name"]))
    return rows
