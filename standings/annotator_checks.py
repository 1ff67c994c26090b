"""Annotator checks over the battle store: who might be rigging the board, as plain data for the Admin tab
and CLI.

It reads every rated vote with its voter and voting speed (`standings.records.annotated_records`). It runs
`standings.ratings.annotator_diagnostics`: agreement with the leave-one-out consensus, identity-following,
same-answer disagreement, speed. It fits the robust board, with outlying annotators down-weighted. Only
admins may run it; the local operator passes. Nothing is changed in the database: flags are advice, votes
stay.
"""

from __future__ import annotations

from typing import Any

from vibestudio.accounts import require_role
from vibestudio.db.session import Database
from vibestudio.standings.records import annotated_records


def annotator_checks(db: Database, *, by: int | None = None, include_named: bool = False) -> dict[str, Any]:
    """{"annotators": [...], "flagged": [...], "notes": [...], "thresholds": {...}, "n_votes": int,
    "robust_board": Leaderboard.to_dict() or None, "plain_board": ... or None} (boards with sandwich intervals)."""
    from vibestudio.standings.ratings import annotator_diagnostics, leaderboard, robust_leaderboard

    require_role(db, by, "admin")
    with db.session() as s:
        records = annotated_records(s, include_named=include_named, with_text=True)
    out: dict[str, Any] = {"n_votes": len(records), "robust_board": None, "plain_board": None}
    if not records:
        out.update(annotators=[], flagged=[], notes=["no rated votes yet"], thresholds={})
        return out
    report = annotator_diagnostics(records)
    out.update(report.to_dict())
    options: dict[str, Any] = {"ci_method": "sandwich", "elo_k": None}
    robust, _ = robust_leaderboard(records, report=report, **options)
    out["robust_board"] = robust.to_dict()
    out["plain_board"] = leaderboard(records, **options).to_dict()
    return out
