"""Does the report predict the arena? Every child's saved prediction, scored on its head-to-head votes.

It reads each child's saved report (``training.report.steps.load_report``) and the battle records
(``standings.records.battle_records``: ended anonymous battles, the default board's votes). The scoring
itself is ``standings.track_record`` on plain data. Families are the root ancestors, as on the Families
section. ``vibestudio models track-record`` prints it; the Models page and Families show it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from vibestudio.arena.registry import to_info
from vibestudio.db.models import Contestant
from vibestudio.db.session import Database
from vibestudio.standings import track_record as scoring
from vibestudio.standings.records import battle_records
from vibestudio.standings.words import counted
from vibestudio.training.report.prediction import since_stamp
from vibestudio.training.report.steps import load_report


def score_child(
    child: str, parent: str | None, prediction: dict[str, Any] | None, records: list[dict[str, Any]]
) -> scoring.Scored:
    """One child's prediction (None or empty: its report had none) against the records."""
    if parent is None:
        return scoring.unpredicted(child, None, "no parent to play against")
    if not prediction:
        return scoring.unpredicted(child, parent, "its report was made before reports predicted")
    if prediction.get("basis") == "none":
        return scoring.unpredicted(child, parent, str(prediction.get("why", "")))
    try:
        pred = scoring.Predicted(
            child,
            str(prediction.get("against") or parent),
            float(prediction["p"]),
            float(prediction["low"]),
            float(prediction["high"]),
            since_stamp(prediction),
            str(prediction.get("basis", "")),
        )
        return scoring.score(pred, records)
    except (KeyError, TypeError, ValueError) as exc:  # a saved report edited by hand: say so, keep the page
        return scoring.unpredicted(
            child, parent, f"its saved prediction does not read ({type(exc).__name__}: {exc})"
        )


def track_record(db: Database) -> scoring.TrackRecord:
    """Every child with a parent: its prediction scored, the calibration overall and per family root."""
    with db.session() as s:
        rows = {c.id: to_info(c) for c in s.scalars(select(Contestant).order_by(Contestant.id))}
        records = battle_records(s, with_text=False)
    children, roots = [], {}
    for info in rows.values():
        if info.parent_id is None:
            continue
        parent = rows.get(info.parent_id)
        report = load_report(db, info.id)
        if report is None:
            children.append(
                scoring.unpredicted(
                    info.public_name, parent.public_name if parent else None, "no checkpoint report saved"
                )
            )
        else:
            children.append(
                score_child(info.public_name, report.parent, report.to_dict().get("prediction"), records)
            )
        roots[info.public_name] = _root(rows, info.id)
    return scoring.track_record(children, roots)


def _root(rows: dict[int, Any], cid: int) -> str:
    seen, c = {cid}, rows[cid]
    while c.parent_id in rows and c.parent_id not in seen:
        seen.add(c.parent_id)
        c = rows[c.parent_id]
    return str(c.public_name)


def child_record(db: Database, child: str, report: dict[str, Any] | None) -> dict[str, Any] | None:
    """One child's record for its model page (None when it has no parent or no report)."""
    if not report or report.get("parent") is None:
        return None
    with db.session() as s:
        records = battle_records(s, with_text=False)
    return score_child(child, report["parent"], report.get("prediction"), records).as_dict()


def record_md(record: dict[str, Any] | None, esc: Any = lambda s: s) -> str:
    """The child's record under its prediction: scored, or can't tell yet with the votes needed."""
    if not record:
        return ""
    if record["state"] == "no prediction":
        return f"**Scored after play:** nothing to score ({esc(record['why'])})."
    if record["state"] != "scored":
        return (
            f"**Scored after play:** can't tell yet: {counted(record['needed'] - record['n'], 'more vote')} needed "
            f"({counted(record['n'], 'head-to-head vote')} since the prediction, {record['needed']} needed)."
        )
    word = (
        "**hit** (inside the predicted interval)"
        if record["hit"]
        else "**miss** (outside the predicted interval)"
    )
    return (
        f"**Scored after play:** observed {record['observed']:.0%} [{record['observed_low']:.0%}, "
        f"{record['observed_high']:.0%}] over {record['n']} votes ({record['wins']} wins, {record['losses']} "
        f"losses, {record['ties']} ties): {word}; Brier {record['brier']:.3f} (even: {record['brier_even']:.3f}), "
        f"log loss {record['log_loss']:.3f} (even: {record['log_loss_even']:.3f})."
    )


def families_md(record: scoring.TrackRecord, esc: Any = lambda s: s) -> str:
    """Per family and overall: does the report predict the arena?"""
    lines = ["**Does the report predict the arena?**"]
    for root, cal in record.families.items():
        lines.append(f"- {esc(root)}: {esc(cal.words)}")
    lines.append(f"- overall: {esc(record.overall.words)}")
    return "\n".join(lines)
