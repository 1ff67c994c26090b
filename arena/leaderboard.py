"""The studio's leaderboard: votes from the database -> ratings (Elo, Bradley-Terry with CIs) as plain data."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from arena.records import battle_records
from arena.registry import list_contestants


def current_leaderboard(
    session: Session, bootstrap: int = 100, style_control: bool = False, include_named: bool = False
) -> dict[str, Any]:
    """Ratings for every contestant that has votes, plus active contestants without votes listed unrated."""
    from arena.ratings import leaderboard

    records = battle_records(session, include_named=include_named, with_text=style_control)
    out: dict[str, Any] = {"models": [], "style_coefficients": {}, "warnings": [], "n_votes": len(records)}
    if records:
        out.update(leaderboard(records, bootstrap_rounds=bootstrap, style_control=style_control).to_dict())
    rated = {m["name"] for m in out["models"]}
    out["unrated"] = [c.public_name for c in list_contestants(session) if c.public_name not in rated]
    return out
