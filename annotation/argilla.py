"""Argilla connector (optional extra ``argilla``): a queue as an Argilla dataset, submitted responses back as
labels.

The conversion both ways is plain data and needs no server. ``dataset_settings`` / ``queue_records`` build
the dataset settings and records as dicts in Argilla 2.x terms:
- text fields for the prompt and the two answers;
- a label question for the preference, and one rating question per rubric criterion and answer;
- a free-text reason;
- hidden metadata with the item id and layout;
- task distribution = the queue's overlap.
``labels_from_records`` stores the **submitted** responses of records as labels of kind ``argilla``.
Answers are placed left/right at random per record. The draw is seeded and kept in metadata hidden from
annotators. No model names leave the studio.

A response's status (submitted / draft / discarded) decides whether it is a label. The SDK keeps it on
each ``Response`` object of ``record.responses``, and on the user responses the server sent. But
``Record.to_dict()`` drops it. So records are read from the SDK's objects (``record_from_sdk``), never
through ``to_dict()``.
- Drafts are counted and left for a later pull.
- Discarded answers are listed as skips.
- A response whose status is unknown is not taken for a label.
Records given as dicts (``vibestudio argilla import``) carry ``status`` per response, in either layout:
- ``responses``: question -> list of ``{"value", "user_id", "status"}``;
- the server's: ``responses`` as a list of ``{"user_id", "status", "values": {question: {"value"}}}``.

``push_queue`` / ``pull_responses`` talk to a live server through the ``argilla`` SDK
(``pip install vibe-studio[argilla]``). They are the only functions that need it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from vibestudio.annotation.queues import QueueError, n_answers, queue_row
from vibestudio.annotation.rubrics import Criterion, Rubric, rubric_from_dict
from vibestudio.common.outcomes import CHOICES, SIDES, item_from_choice
from vibestudio.db.models import Label, QueueItem, RubricScore

PREFERENCE = "preference"
REASON = "reason"
PREFERENCE_LABELS = dict(
    zip(
        CHOICES,
        ("Left answer is better", "Right answer is better", "Tie", "Both good", "Both bad"),
        strict=True,
    )
)


SUBMITTED, DRAFT, DISCARDED = "submitted", "draft", "discarded"


@dataclass
class ArgillaPull:
    """What a pull stored (labels, rubric scores), found already stored, and left out (drafts, skips)."""

    n_labels: int = 0
    n_scores: int = 0
    already: int = 0
    drafts: int = 0
    unanswered: int = 0
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


def _status(value: Any) -> str | None:
    """A response status as a plain string (the SDK uses a ``str`` enum; None when it is not known)."""
    value = getattr(value, "value", value)
    return str(value) if value is not None else None


def record_from_sdk(record: Any) -> dict[str, Any]:
    """A record as the ``argilla`` SDK returns it, as a plain dict that keeps each response's status.

    Reads the ``Response`` objects of ``record.responses`` (question, value, user, status). A user response the
    server holds as discarded with no values gives no ``Response`` object; it is read from the user responses the
    server sent with the record, so the discard is still reported.
    """
    responses: dict[str, list[dict[str, Any]]] = {}
    for r in record.responses:
        responses.setdefault(r.question_name, []).append(
            {"value": r.value, "user_id": str(r.user_id), "status": _status(r.status)}
        )
    answered = {x["user_id"] for rs in responses.values() for x in rs}
    model = getattr(
        record, "_model", None
    )  # the server's record model, present on records read from a server
    for user_response in getattr(model, "responses", None) or []:
        uid = str(user_response.user_id)
        if _status(user_response.status) == DISCARDED and uid not in answered:
            responses.setdefault(PREFERENCE, []).append({"value": None, "user_id": uid, "status": DISCARDED})
    metadata = record.metadata
    return {
        "id": None if record.id is None else str(record.id),
        "metadata": dict(metadata.to_dict() if hasattr(metadata, "to_dict") else metadata or {}),
        "responses": responses,
    }


def _plain_record(rec: Any) -> dict[str, Any]:
    """Records from the SDK, in the to_dict layout with statuses, or in the server's layout, as one dict layout."""
    if not isinstance(rec, dict):
        if hasattr(rec, "responses") and hasattr(rec, "metadata"):
            return record_from_sdk(rec)
        return {"id": None, "metadata": {}, "responses": {}}
    raw = rec.get("responses")
    if not isinstance(raw, list):
        return rec
    responses: dict[str, list[dict[str, Any]]] = {}
    for user_response in raw:
        if not isinstance(user_response, dict):
            continue
        uid, status = str(user_response.get("user_id")), user_response.get("status")
        values = user_response.get("values") or {}
        if not values and status == DISCARDED:
            values = {PREFERENCE: {"value": None}}
        for question, v in values.items():
            value = v.get("value") if isinstance(v, dict) else v
            responses.setdefault(question, []).append({"value": value, "user_id": uid, "status": status})
    return {**rec, "responses": responses}


def _responses(rec: dict[str, Any], question: str) -> list[dict[str, Any]]:
    rs = (rec.get("responses") or {}).get(question) or []
    return [r for r in rs if isinstance(r, dict) and r.get("status") == SUBMITTED]


def _questions(rubric: Rubric | None) -> set[str]:
    names = {PREFERENCE, REASON}
    for crit in rubric.criteria if rubric else ():
        names |= {f"{crit.name}_{side}" for side in SIDES}
    return names


def _note_unsubmitted(rec: dict[str, Any], known: set[str], res: ArgillaPull) -> None:
    """Count drafts, list discarded answers, unknown statuses and answers to questions the queue does not ask."""
    where = f"record {rec.get('id')!r}"
    responses = rec.get("responses") or {}
    if not any(responses.values()):
        res.unanswered += 1
    for question, rs in responses.items():
        if question not in known:
            users = sorted({str(r.get("user_id")) for r in rs if isinstance(r, dict)})
            res.skipped.append(f"{where}: unknown question {question!r} (answered by {', '.join(users)})")
    for r in responses.get(PREFERENCE) or []:
        status = r.get("status") if isinstance(r, dict) else None
        if status == DRAFT:
            res.drafts += 1
        elif status == DISCARDED:
            res.skipped.append(f"{where}: user {r.get('user_id')} discarded it")
        elif status != SUBMITTED:
            res.skipped.append(
                f"{where}: response of user {r.get('user_id') if isinstance(r, dict) else '?'} has no known "
                f"status ({status!r}); only submitted answers become labels"
            )


def labels_from_records(
    session: Session, queue: str, records: list[Any], users: dict[str, str] | None = None
) -> ArgillaPull:
    """Store submitted Argilla responses as labels (kind ``argilla``); pulling twice adds nothing new.

    ``records`` are the SDK's ``Record`` objects or dicts with a ``status`` on every response (see the module
    docstring). Drafts are counted, discarded answers and answers to unknown questions are listed in ``skipped``.
    """
    q = queue_row(session, queue)
    rubric = rubric_from_dict(q.rubric, q.name) if q.rubric else None
    users = users or {}
    have = {
        (lab.item_id, lab.annotator)
        for lab in session.scalars(select(Label).where(Label.queue == queue, Label.kind == "argilla"))
    }
    res = ArgillaPull()
    known = _questions(rubric)
    for raw in records:
        rec = _plain_record(raw)
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
        _note_unsubmitted(rec, known, res)
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
                outcome=item_from_choice(choice, left_is_first),
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
                        item_side = item_from_choice(side, left_is_first)
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
    # the SDK's Record objects, not Record.to_dict(): to_dict() drops each response's status
    records = [record_from_sdk(r) for r in ds.records(with_responses=True)]
    return labels_from_records(session, queue, records, users)
