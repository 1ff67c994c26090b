"""The composite human + judge board from the studio database, the judge's exchange rate and its vibes.

`judge_report` pools the arena's rated human votes with the labels on the annotation queues
(`standings.judge_records`). It fits the composite Bradley-Terry (`standings.ratings._composite`). That is
one rating vector, with the judge's votes weighted by w. The weight w is chosen by how well the pooled
board predicts held-out *human* votes. It returns:
- "one human vote is worth about k judge votes", per judge and for all judges together;
- the board on human votes only, judge votes only, or pooled;
- when asked, the exchange rate per vibe (`standings.ratings._worth_by_vibe`).

"Can't tell" is said with what is missing:
- no judge labels at all (`JudgeError`);
- a judge with no human overlap or too few human votes. Its row's note says so, and the pooled board gives
  it weight 0, i.e. the human board.
- a board with no votes of the chosen source (`JudgeError`).
Plain dicts out, the same for the CLI, the Leaderboard tab and the Python API.
"""

from __future__ import annotations

from typing import Any

from vibestudio.db.session import Database

SOURCES = ("human", "judge", "pooled")


class JudgeError(ValueError):
    """The judge report cannot be drawn (no judges, unknown judge, no votes of the chosen source)."""


def judge_report(
    db: Database | None,
    *,
    records: Any = None,
    judges: list[str] | None = None,
    source: str = "pooled",
    rounds: int = 30,
    by_vibe: bool = False,
    vibe_rounds: int = 10,
    ci_method: str = "sandwich",
) -> dict[str, Any]:
    """The exchange rate, the composite board and (with `by_vibe`) the per-vibe rates; from the studio database
    `db`, or from battle `records` (FastChat layout with a `judge` column) when given."""
    from vibestudio.standings.ratings import composite_board, judge_worth, judge_worth_by_vibe

    if source not in SOURCES:
        raise JudgeError(f"source must be one of {', '.join(SOURCES)}, got {source!r}")
    counts: dict[str, int] = {}
    skipped: dict[str, int] = {}
    known: list[str] = list(judges or [])
    if records is None:
        if db is None:
            raise JudgeError("give a database or battle records")
        from vibestudio.standings.judge_records import pooled_records

        with db.session() as s:
            pooled = pooled_records(s, with_text=by_vibe)
        records, counts, skipped = pooled["records"], pooled["counts"], pooled["skipped"]
        if not pooled["judges"]:
            raise JudgeError(
                "can't tell: no judge labels in the studio (run an AI judge on an annotation queue whose answers "
                "name the contestants that wrote them)"
            )
        unknown = sorted(set(known) - set(pooled["judges"]))
        if unknown:
            raise JudgeError(
                f"no labels from judge {', '.join(unknown)} (judges with labels: {', '.join(pooled['judges'])})"
            )
        known = known or pooled["judges"]
    if not known:
        raise JudgeError("name at least one judge")
    if not len(records):
        raise JudgeError("no votes to rate")
    notes: list[str] = []
    worth = judge_worth(records, known, rounds=rounds)
    chosen = worth[-1]
    weight = chosen.weight
    if weight is None:
        notes.append(
            f"the judge weight can't be chosen ({chosen.note}): the pooled board counts the judges' votes at "
            "weight 0, which is the human board"
        )
        weight = 0.0
    try:
        board = composite_board(records, known, source=source, weight=weight, ci_method=ci_method)
    except ValueError as exc:
        raise JudgeError(f"can't draw the {source} board: {exc}") from exc
    out: dict[str, Any] = {
        "judges": [w.to_dict() for w in worth],
        "sentences": [
            w.sentence() + f" ({w.n_judge_votes} judge votes, {w.n_human_votes} human votes)" for w in worth
        ],
        "source": source,
        "judge_weight": weight,
        "board": board.to_dict(),
        "counts": counts,
        "skipped": skipped,
        "notes": notes,
    }
    if not board.models:
        notes.append(f"no {source} votes to rate")
    if by_vibe:
        try:
            report = judge_worth_by_vibe(records, known, rounds=vibe_rounds)
        except ValueError as exc:
            notes.append(f"per vibe: can't tell ({exc})")
        else:
            out["by_vibe"] = report.to_dict()
            out["vibe_sentences"] = report.sentences()
    return out
