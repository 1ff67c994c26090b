"""Annotation queues and their items: create, look up, list.

A queue is a named set of items. An item is a conversation (``prompt_messages``) and one or two answers
(``answer_1``, ``answer_2``). Each answer has a stamp in ``meta["answers"]``: model, policy version,
sampling parameters, tokens.
- Items are written by on-policy generation (``annotation.onpolicy``) and by imports
  (``annotation.formats``).
- Labels on them come from annotators, judges and imports.
``content_key`` identifies the same prompt and answers regardless of answer order. So a pair is stored
once, however many people labelled it.

Outcomes are in item terms (``common.outcomes``):
- ``1`` / ``2`` (that answer is better), ``tie``, ``both_good``, ``both_bad``;
- ``good`` / ``bad`` on a single-answer item;
- from judges also ``inconsistent`` (the verdict flipped when the answers swapped places) or ``unparsed``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from vibestudio.annotation.rubrics import Rubric, rubric_from_dict
from vibestudio.common.paths import UnsafeName, check_safe_name
from vibestudio.db.models import AnnotationQueue, Label, QueueItem

LABEL_KINDS = ("human", "judge", "import", "argilla")


class QueueError(ValueError):
    """A queue request cannot be served (unknown queue, duplicate name, bad item...). Nothing was written."""


@dataclass
class QueueInfo:
    id: int
    name: str
    kind: str
    status: str
    overlap: int
    rubric: dict[str, Any]
    config: dict[str, Any]
    source: str | None
    n_items: int
    n_labels: int
    created_at: datetime | None = None
    policy_contestant_id: int | None = None
    prompt_set_id: int | None = None

    @property
    def rubric_obj(self) -> Rubric | None:
        return rubric_from_dict(self.rubric, self.name) if self.rubric else None


@dataclass
class NewItem:
    """An item to add: the conversation so far, one or two answers, one stamp per answer."""

    prompt_messages: list[dict[str, str]]
    answers: list[str]
    stamps: list[dict[str, Any]] = field(default_factory=list)
    prompt_id: int | None = None
    policy_contestant_id: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def content_key(prompt_messages: list[dict[str, Any]], answers: list[str]) -> str:
    """SHA-256 of the conversation and the answers in sorted order (so a swapped pair hashes the same)."""
    body = json.dumps([prompt_messages, sorted(answers)], ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def check_name(name: str) -> str:
    """The queue name, checked where a queue is created: a safe name (``common.paths``), since exports and file
    names are made from it (no ``/``, ``\\``, ``:``, control characters or leading dot)."""
    if not (name or "").strip():
        raise QueueError("a queue needs a name")
    try:
        return check_safe_name(name, "queue name")
    except UnsafeName as exc:
        raise QueueError(str(exc)) from None


def create_queue(
    session: Session,
    name: str,
    kind: str = "on_policy",
    rubric: Rubric | None = None,
    overlap: int = 1,
    prompt_set_id: int | None = None,
    policy_contestant_id: int | None = None,
    config: dict[str, Any] | None = None,
    source: str | None = None,
    status: str = "ready",
) -> AnnotationQueue:
    name = check_name(name)
    if overlap < 1:
        raise QueueError(f"overlap must be at least 1 annotator per item, got {overlap}")
    if session.scalar(select(AnnotationQueue.id).where(AnnotationQueue.name == name)) is not None:
        raise QueueError(f"a queue named {name!r} already exists")
    q = AnnotationQueue(
        name=name,
        kind=kind,
        status=status,
        rubric=rubric.as_dict() if rubric else {},
        overlap=overlap,
        prompt_set_id=prompt_set_id,
        policy_contestant_id=policy_contestant_id,
        config=dict(config or {}),
        source=source,
    )
    session.add(q)
    session.flush()
    return q


def queue_row(session: Session, name: str) -> AnnotationQueue:
    q = session.scalar(select(AnnotationQueue).where(AnnotationQueue.name == name))
    if q is None:
        known = ", ".join(session.scalars(select(AnnotationQueue.name).order_by(AnnotationQueue.name)))
        raise QueueError(f"no queue named {name!r}" + (f" (known: {known})" if known else ""))
    return q


def _info(session: Session, q: AnnotationQueue) -> QueueInfo:
    n_items = session.scalar(select(func.count(QueueItem.id)).where(QueueItem.queue_id == q.name)) or 0
    n_labels = session.scalar(select(func.count(Label.id)).where(Label.queue == q.name)) or 0
    return QueueInfo(
        q.id,
        q.name,
        q.kind,
        q.status,
        q.overlap,
        dict(q.rubric or {}),
        dict(q.config or {}),
        q.source,
        n_items,
        n_labels,
        q.created_at,
        q.policy_contestant_id,
        q.prompt_set_id,
    )


def get_queue(session: Session, name: str) -> QueueInfo:
    return _info(session, queue_row(session, name))


def list_queues(session: Session) -> list[QueueInfo]:
    return [_info(session, q) for q in session.scalars(select(AnnotationQueue).order_by(AnnotationQueue.id))]


def add_item(session: Session, queue: str, item: NewItem) -> QueueItem:
    row = make_item(queue, item)
    session.add(row)
    session.flush()
    return row


def make_item(queue: str, item: NewItem) -> QueueItem:
    """A queue item row, not yet added to a session (for bulk writes)."""
    if not 1 <= len(item.answers) <= 2:
        raise QueueError(f"an item holds one or two answers, got {len(item.answers)}")
    stamps = list(item.stamps) + [{}] * (len(item.answers) - len(item.stamps))
    return QueueItem(
        queue_id=queue,
        prompt_id=item.prompt_id,
        policy_contestant_id=item.policy_contestant_id,
        answer_1=item.answers[0],
        answer_2=item.answers[1] if len(item.answers) > 1 else "",
        prompt_messages=item.prompt_messages,
        content_key=content_key(item.prompt_messages, item.answers),
        meta={**item.meta, "answers": stamps, "n_answers": len(item.answers)},
    )


def n_answers(item: QueueItem) -> int:
    return int((item.meta or {}).get("n_answers") or (2 if item.answer_2 else 1))


def stamps(item: QueueItem) -> list[dict[str, Any]]:
    s = list((item.meta or {}).get("answers") or [])
    return s + [{}] * (n_answers(item) - len(s))


def edit_checklist(session: Session, item_id: int, lines: list[str], user_id: int | None = None) -> list[str]:
    """A person's edit of a per-prompt checklist (the Label tab's editor). The checklist guides every annotator of
    the queue, so it needs researcher (``PermissionDenied``, checked first); the author recorded is the acting
    user's name from their session (the local operator: ``operator``), never a name typed in a form."""
    from vibestudio.accounts import require_role

    me = require_role(session, user_id, "researcher")
    return set_checklist(session, item_id, lines, author=me.name if me is not None else "operator")


def set_checklist(session: Session, item_id: int, lines: list[str], author: str = "human") -> list[str]:
    """Store (or replace) the per-prompt checklist on an item and on the other items of the same prompt. No role
    check: callers check (``edit_checklist`` for people, ``annotation.judges.generate_checklists`` for judges)."""
    clean = [ln.strip() for ln in lines if ln and ln.strip()]
    if len(clean) > 12 or any(len(ln) > 300 for ln in clean):
        raise QueueError("a checklist holds at most 12 lines of at most 300 characters")
    item = session.get(QueueItem, item_id)
    if item is None:
        raise QueueError(f"no queue item {item_id}")
    same = session.scalars(select(QueueItem).where(QueueItem.queue_id == item.queue_id)).all()
    for other in same:
        if other.id == item.id or other.prompt_messages == item.prompt_messages:
            other.checklist = clean
            other.meta = {**(other.meta or {}), "checklist_by": author}
    return clean
