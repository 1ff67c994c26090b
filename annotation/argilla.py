"""Argilla connector (optional extra ``argilla``): a queue as an Argilla dataset, submitted responses back as labels.

The conversion both ways is plain data and needs no server: ``dataset_settings`` / ``queue_records`` build the
dataset settings and records as dicts in Argilla 2.x terms (text fields for the prompt and the two answers, a
label question for the preference, one rating question per rubric criterion and answer, a free-text reason,
hidden metadata with the item id and layout, task distribution = the queue's overlap); ``labels_from_records``
reads records in the layout of Argilla's ``Record.to_dict()`` (``responses``: question name -> list of
``{"value", "user_id"[, "status"]}``) and stores labels of kind ``argilla``. Answers are placed left/right at
random per record (seeded, kept in metadata hidden from annotators); no model names leave the studio.

``push_queue`` / ``pull_responses`` talk to a live server through the ``argilla`` SDK (``pip install
vibe-studio[argilla]``); they are the only functions that need it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from annotation.labelling import to_outcome
from annotation.queues import QueueError, n_answers, queue_row
from annotation.rubrics import Criterion, Rubric, rubric_from_dict
from db.models import Label, QueueItem, RubricScore

PREFERENCE = "preference"
REASON = "reason"
PREFERENCE_LABELS = {
    "left": "Left answer is better",
    "right": "Right answer is better",
    "tie": "Tie",
    "both_good": "Both good",
    "both_bad": "Both bad",
}
SIDES = ("left", "right")


@dataclass
class ArgillaPull:
    n_labels: int = 0
    n_scores: int = 0
    already: int = 0
    skipped: list[str] = field(default_factory=list)


def _question_for(crit: Criterion, side: str) -> dict[str, Any]:
    title = f"{crit.name} ({side} answer)"
    anchors = "; ".join(f"{k}: {v}" for k, v in crit.anchors.items())
    desc = crit.description + (f" — {anchors}" if anchors else "")
    name = f"{crit.name}_{side}"
    levels = [int(v) for v in crit.levels]
    if crit.scale != "categorical" and levels[0] >= 0 and levels[-1] <= 10:
        return {
            "name": name,
            "type": "rating",
            "title": title,
            "description": desc,
            "values": levels,
            "required": False,
        }
    return {
        "name": name,
        "type": "label_selection",
        "title": title,
        "description": desc,
        "labels": {n: n for n in crit.level_names},
        "required": False,
    }


def dataset_settings(rubric: Rubric | None, overlap: int = 1) -> dict[str, Any]:
    """Argilla 2.x dataset settings as a dict (fields, questions, metadata, distribution, guidelines)."""
    guidelines = "Compare the two answers to the prompt and choose the better one. The answers are anonymous."
    if rubric is not None:
        guidelines += "\n\n" + "\n".join(f"- **{c.name}**: {c.description}" for c in rubric.criteria)
    questions: list[dict[str, Any]] = [
        {
            "name": PREFERENCE,
            "type": "label_selection",
            "title": "Which answer is better?",
            "labels": dict(PREFERENCE_LABELS),
            "required": True,
        }
    ]
    for crit in rubric.criteria if rubric else ():
        questions += [_question_for(crit, side) for side in SIDES]
    questions.append({"name": REASON, "type": "text", "title": "Why? (optional)", "required": False})
    return {
        "guidelines": guidelines,
        "fields": [
            {"name": "prompt", "type": "text", "title": "Prompt", "use_markdown": True, "required": True},
            {
                "name": "answer_left",
                "type": "text",
                "title": "Left answer",
                "use_markdown": True,
                "required": True,
            },
            {
                "name": "answer_right",
                "type": "text",
                "title": "Right answer",
                "use_markdown": True,
                "required": True,
            },
        ],
        "questions": questions,
        "metadata": [
            {"name": "item_id", "type": "integer", "visible_for_annotators": False},
            {
                "name": "left_is_first",
                "type": "terms",
                "options": ["true", "false"],
                "visible_for_annotators": False,
            },
        ],
        "distribution": {"strategy": "overlap", "min_submitted": overlap},
    }


def _prompt_text(msgs: list[dict[str, str]]) -> str:
    if len(msgs) == 1:
        return msgs[0]["content"]
    return "\n\n".join(f"**{m['role']}**: {m['content']}" for m in msgs)


def queue_records(session: Session, queue: str, seed: int = 0) -> list[dict[str, Any]]:
    """The queue's two-answer items as Argilla records (dicts), answers placed left/right at random."""
    queue_row(session, queue)
    rng = random.Random(f"{queue}:{seed}")
    out = []
    for it in session.scalars(select(QueueItem).where(QueueItem.queue_id == queue).order_by(QueueItem.id)):
        if n_answers(it) != 2:
            continue
        left_is_first = rng.random() < 0.5
        left, right = (it.answer_1, it.answer_2) if left_is_first else (it.answer_2, it.answer_1)
        out.append(
            {
                "id": f"{queue}-{it.id}",
                "fields": {
                    "prompt": _prompt_text(list(it.prompt_messages or [])),
                    "answer_left": left,
                    "answer_right": right,
                },
                "metadata": {"item_id": it.id, "left_is_first": "true" if left_is_first else "false"},
            }
        )
    return out


def queue_to_argilla(session: Session, queue: str, seed: int = 0) -> dict[str, Any]:
    q = queue_row(session, queue)
    rubric = rubric_from_dict(q.rubric, q.name) if q.rubric else None
    return {"settings": dataset_settings(rubric, q.overlap), "records": queue_records(session, queue, seed)}


def _responses(rec: dict[str, Any], question: str) -> list[dict[str, Any]]:
    rs = (rec.get("responses") or {}).get(question) or []
    return [r for r in rs if isinstance(r, dict) and r.get("status", "submitted") == "submitted"]


def labels_from_records(
    session: Session, queue: str, records: list[dict[str, Any]], users: dict[str, str] | None = None
) -> ArgillaPull:
    """Store submitted Argilla responses as labels (kind ``argilla``); pulling twice adds nothing new."""
    q = queue_row(session, queue)
    rubric = rubric_from_dict(q.rubric, q.name) if q.rubric else None
    users = users or {}
    have = {
        (lab.item_id, lab.annotator)
        for lab in session.scalars(select(Label).where(Label.queue == queue, Label.kind == "argilla"))
    }
    res = ArgillaPull()
    for rec in records:
        meta = rec.get("metadata") or {}
        try:
            item_id = int(meta["item_id"])
            left_is_first = str(meta["left_is_first"]).lower() == "true"
        except (KeyError, TypeError, ValueError):
            res.skipped.append(f"record {rec.get('id')!r}: metadata item_id / left_is_first missing")
            continue
        item = session.get(QueueItem, item_id)
        if item is None or item.queue_id != queue:
            res.skipped.append(f"record {rec.get('id')!r}: item {item_id} is not in queue {queue!r}")
            continue
        reasons = {r.get("user_id"): r.get("value") for r in _responses(rec, REASON)}
        for resp in _responses(rec, PREFERENCE):
            uid = str(resp.get("user_id"))
            who = users.get(uid, uid)[:128]
            choice = resp.get("value")
            if choice not in PREFERENCE_LABELS:
                res.skipped.append(f"record {rec.get('id')!r}: unknown preference {choice!r}")
                continue
            if (item_id, who) in have:
                res.already += 1
                continue
            label = Label(
                item_id=item_id,
                queue=queue,
                annotator=who,
                kind="argilla",
                outcome=to_outcome(choice, left_is_first),
                left_is_first=left_is_first,
                reason=reasons.get(resp.get("user_id")) or None,
                meta={"argilla_record": rec.get("id"), "argilla_user_id": uid},
            )
            session.add(label)
            session.flush()
            have.add((item_id, who))
            res.n_labels += 1
            for crit in rubric.criteria if rubric else ():
                for side in SIDES:
                    for r in _responses(rec, f"{crit.name}_{side}"):
                        if str(r.get("user_id")) != uid:
                            continue
                        try:
                            value = crit.coerce(r.get("value"))
                        except ValueError as exc:
                            res.skipped.append(f"record {rec.get('id')!r}: {exc}")
                            continue
                        item_side = "1" if (side == "left") == left_is_first else "2"
                        session.add(
                            RubricScore(
                                item_id=item_id,
                                label_id=label.id,
                                criterion=crit.name,
                                side=item_side,
                                value=value,
                            )
                        )
                        res.n_scores += 1
    return res


def _sdk() -> Any:
    try:
        import argilla as rg
    except ImportError as exc:  # the optional extra is not installed
        raise QueueError(
            "the Argilla connector needs the optional extra: pip install 'vibe-studio[argilla]'"
        ) from exc
    return rg


def _settings_object(rg: Any, s: dict[str, Any]) -> Any:
    fields = [
        rg.TextField(name=f["name"], title=f["title"], use_markdown=f["use_markdown"]) for f in s["fields"]
    ]
    questions = []
    for qd in s["questions"]:
        common = {"name": qd["name"], "title": qd["title"], "required": qd["required"]}
        if qd["type"] == "rating":
            questions.append(
                rg.RatingQuestion(values=qd["values"], description=qd.get("description"), **common)
            )
        elif qd["type"] == "label_selection":
            questions.append(
                rg.LabelQuestion(labels=qd["labels"], description=qd.get("description"), **common)
            )
        else:
            questions.append(rg.TextQuestion(**common))
    metadata = [
        rg.IntegerMetadataProperty(name="item_id", visible_for_annotators=False),
        rg.TermsMetadataProperty(
            name="left_is_first", options=["true", "false"], visible_for_annotators=False
        ),
    ]
    return rg.Settings(
        guidelines=s["guidelines"],
        fields=fields,
        questions=questions,
        metadata=metadata,
        distribution=rg.TaskDistribution(min_submitted=s["distribution"]["min_submitted"]),
    )


def push_queue(
    session: Session,
    queue: str,
    api_url: str,
    api_key: str,
    dataset: str | None = None,
    workspace: str | None = None,
) -> int:
    """Create an Argilla dataset for the queue and log its records; returns the number of records."""
    rg = _sdk()
    data = queue_to_argilla(session, queue)
    client = rg.Argilla(api_url=api_url, api_key=api_key)
    ds = rg.Dataset(
        name=dataset or queue,
        workspace=workspace,
        settings=_settings_object(rg, data["settings"]),
        client=client,
    )
    ds.create()
    ds.records.log(
        [rg.Record(id=r["id"], fields=r["fields"], metadata=r["metadata"]) for r in data["records"]]
    )
    return len(data["records"])


def pull_responses(
    session: Session,
    queue: str,
    api_url: str,
    api_key: str,
    dataset: str | None = None,
    workspace: str | None = None,
) -> ArgillaPull:
    """Read submitted responses from the queue's Argilla dataset and store them as labels."""
    rg = _sdk()
    client = rg.Argilla(api_url=api_url, api_key=api_key)
    ds = client.datasets(name=dataset or queue, workspace=workspace)
    if ds is None:
        raise QueueError(f"no Argilla dataset named {dataset or queue!r}")
    users = {str(u.id): u.username for u in client.users}
    records = [r.to_dict() for r in ds.records(with_responses=True)]
    return labels_from_records(session, queue, records, users)
