"""Judge and annotator verdicts on queue items as battle records, pooled with the arena's human votes.

The AI judges' verdicts live on annotation queue items. Each judged item has one label of kind ``judge``,
named after the judge. (`annotation.judges` stores both position runs as ``judgements`` and their
combination as that label.) People's labels on the same items are of kind ``human`` (or ``argilla``). An
item's answers name the contestant that wrote them in their stamps (``meta["answers"][i]["model"]``). So a
label on a two-answer item whose answers both name a model is a vote between those models. It takes
FastChat's layout: answer 1 is model_a.

`pooled_records` puts two sources side by side:
- the arena's rated human votes (`standings.records.annotated_records`), ``source`` "arena";
- the queue labels, ``source`` "queue".
Each has ``judge`` = who voted: the judge's name for judge labels, else the annotator or user name.
``voter_kind`` is "judge" or "human". `judge_names` lists the judges. Some labels are left out and counted
in ``skipped``:
- labels a judge could not give (``inconsistent``, ``unparsed``);
- single-answer items;
- items whose answers name no model, or the same model twice.

This module reads `db.models` only, since annotation sits above standings. It writes nothing. Plain dicts
out.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from vibestudio.common.outcomes import ITEM_OUTCOMES, fastchat_from_item
from vibestudio.db.models import Label, Prompt, QueueItem

#: Label kinds read as people's votes; ``judge`` labels are the AI judges'.
HUMAN_LABEL_KINDS = ("human", "argilla")


def _answer_models(meta: dict[str, Any] | None) -> tuple[str | None, str | None]:
    stamps = list((meta or {}).get("answers") or [])
    names = [s.get("model") if isinstance(s, dict) else None for s in stamps[:2]]
    names += [None] * (2 - len(names))
    return (
        names[0] if isinstance(names[0], str) and names[0] else None,
        names[1] if isinstance(names[1], str) and names[1] else None,
    )


def _text(messages: Any, answer: str) -> list[dict[str, str]]:
    convo = [m for m in (messages or []) if isinstance(m, dict) and "role" in m]
    return [*convo, {"role": "assistant", "content": answer or ""}]


def label_records(session: Session, with_text: bool = False) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Queue labels (judge and human) on two-answer items whose answers both name a model, as battle records;
    and counts of what was skipped and why."""
    q = (
        select(Label, QueueItem, Prompt.category)
        .join(QueueItem, Label.item_id == QueueItem.id)
        .outerjoin(Prompt, QueueItem.prompt_id == Prompt.id)
        .where(Label.kind.in_(("judge", *HUMAN_LABEL_KINDS)))
        .order_by(Label.created_at, Label.id)
    )
    out: list[dict[str, Any]] = []
    skipped = {"no verdict": 0, "answers name no model": 0, "same model twice": 0}
    for label, item, category in session.execute(q):
        if label.outcome not in ITEM_OUTCOMES:
            skipped["no verdict"] += 1
            continue
        a, b = _answer_models(item.meta)
        if a is None or b is None or not item.answer_2:
            skipped["answers name no model"] += 1
            continue
        if a == b:
            skipped["same model twice"] += 1
            continue
        rec: dict[str, Any] = {
            "model_a": a,
            "model_b": b,
            "winner": fastchat_from_item(label.outcome),
            "tstamp": label.created_at.timestamp() if label.created_at else None,
            "category": category,
            "judge": label.annotator,
            "voter_kind": "judge" if label.kind == "judge" else "human",
            "source": "queue",
            "item_id": item.id,
            "label_id": label.id,
        }
        if with_text:
            rec["conversation_a"] = _text(item.prompt_messages, item.answer_1)
            rec["conversation_b"] = _text(item.prompt_messages, item.answer_2)
        out.append(rec)
    return out, skipped


def judge_names(session: Session) -> list[str]:
    """The names of the judges with at least one label, sorted."""
    q = select(Label.annotator).where(Label.kind == "judge").distinct()
    return sorted({str(n) for n in session.scalars(q) if n})


def pooled_records(session: Session, with_text: bool = False) -> dict[str, Any]:
    """The arena's rated human votes and the queue labels together: {"records", "judges", "skipped", "counts"}
    (counts: arena votes, queue human labels, queue judge labels)."""
    from vibestudio.standings.records import annotated_records

    arena = annotated_records(session, with_text=with_text)
    for r in arena:
        r["voter_kind"], r["source"] = "human", "arena"
    queue, skipped = label_records(session, with_text=with_text)
    judges = judge_names(session)
    clash = sorted({r["judge"] for r in arena if r["judge"] in judges})
    if clash:  # a person whose user name is a judge's name: their arena votes must not count as the judge's
        for r in arena:
            if r["judge"] in clash:
                r["judge"] = f"{r['judge']} (person)"
    counts = {
        "arena": len(arena),
        "queue_human": sum(1 for r in queue if r["voter_kind"] == "human"),
        "queue_judge": sum(1 for r in queue if r["voter_kind"] == "judge"),
    }
    return {"records": arena + queue, "judges": judges, "skipped": skipped, "counts": counts}
