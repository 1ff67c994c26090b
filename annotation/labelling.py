"""The labelling service: hand an annotator their next item, take their verdict or skip, report progress.

Order and layout are per annotator, random, and stored.
- Each item's place in an annotator's order comes from a hash of (queue, annotator, item). The assignment
  keeps it as ``order_key``.
- Which answer appears on the left is drawn per assignment and kept as ``left_is_first``.
Items still short of the queue's overlap (N annotators per item) are offered. Those closest to complete
come first, then the annotator's own order. An annotator sees an item at most once. A pending assignment
older than ``lease_minutes`` no longer holds a slot for others.

Annotators work in "left"/"right" terms. Labels are stored in item terms (answer 1 / answer 2), with the
layout that was shown. Tasks carry no model names, policy versions or sampling settings.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from vibestudio.annotation.queues import n_answers, queue_row, stamps
from vibestudio.annotation.rubrics import Rubric, rubric_from_dict
from vibestudio.common.outcomes import CHOICES, SIDES, SINGLE_FROM_SIDE, SINGLE_OUTCOMES, item_from_choice
from vibestudio.db.models import Assignment, Label, QueueItem, RubricScore, User, utcnow

MAX_REASON = 4000


class LabelError(ValueError):
    """A labelling request was refused (unknown assignment, not yours, bad score...). Nothing was written."""


@dataclass
class LabelTask:
    """What an annotator sees: the conversation, the answers in their layout, the rubric. No model identity."""

    assignment_id: int
    item_id: int
    queue: str
    position: int
    prompt: list[dict[str, str]]
    left: str
    right: str
    single: bool
    rubric: dict[str, Any]
    checklist: list[str]
    done: int
    remaining: int
    left_cut: bool = (
        False  # the answer stopped at its length limit (the page says so; the side is not a hint)
    )
    right_cut: bool = False


def answer_cut(stamp: dict[str, Any]) -> bool:
    """Whether an answer's stamp says it stopped at its token cap (recorded, or read from its tokens and cap)."""
    if "truncated" in stamp:
        return bool(stamp["truncated"])
    cap = (stamp.get("sampling") or {}).get("max_tokens")
    tokens = stamp.get("tokens")
    return isinstance(cap, int) and isinstance(tokens, int) and cap > 0 and tokens >= cap


@dataclass
class AnnotatorProgress:
    annotator: str
    done: int
    skipped: int
    pending: int
    available: int


@dataclass
class QueueProgress:
    queue: str
    n_items: int
    overlap: int
    labels: int
    target: int
    items_complete: int
    items_started: int
    annotators: list[AnnotatorProgress] = field(default_factory=list)

    @property
    def fraction(self) -> float:
        return min(1.0, self.labels / self.target) if self.target else 0.0


def check_annotator(name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise LabelError("enter your annotator name first")
    if len(name) > 128:
        raise LabelError("annotator name is longer than 128 characters")
    return name


def _user_id(session: Session, name: str) -> int | None:
    """The account of that name, if there is one. Labelling never creates an account: a name typed in the open
    mode is only the label's annotator name (with login on, the page passes the signed-in user's own name)."""
    return session.scalar(select(User.id).where(User.name == name))


def order_key(queue: str, annotator: str, item_id: int) -> str:
    return hashlib.sha256(f"{queue}\x00{annotator}\x00{item_id}".encode()).hexdigest()[:16]


def _task(session: Session, a: Assignment, item: QueueItem, rubric: dict[str, Any]) -> LabelTask:
    done = (
        session.scalar(
            select(func.count(Assignment.id)).where(
                Assignment.queue == a.queue, Assignment.annotator == a.annotator, Assignment.status == "done"
            )
        )
        or 0
    )
    single = n_answers(item) == 1
    left, right = (item.answer_1, item.answer_2) if a.left_is_first else (item.answer_2, item.answer_1)
    cut = [answer_cut(st if isinstance(st, dict) else {}) for st in stamps(item)] + [False, False]
    left_cut, right_cut = (cut[0], cut[1]) if a.left_is_first else (cut[1], cut[0])
    if single:
        left, right = item.answer_1, ""
        left_cut, right_cut = cut[0], False
    return LabelTask(
        assignment_id=a.id,
        item_id=item.id,
        queue=a.queue,
        position=a.position,
        prompt=list(item.prompt_messages or []),
        left=left,
        right=right,
        single=single,
        rubric=rubric,
        checklist=list(item.checklist or []),
        done=done,
        remaining=len(_open_items(session, a.queue, a.annotator)),
        left_cut=left_cut,
        right_cut=right_cut,
    )


def _slots_taken(session: Session, queue: str, lease_minutes: float) -> dict[int, int]:
    """Per item: finished human labels plus live pending assignments."""
    cutoff = utcnow() - timedelta(minutes=lease_minutes)
    rows = session.execute(
        select(Assignment.item_id, func.count(Assignment.id))
        .where(Assignment.queue == queue)
        .where(
            (Assignment.status == "done")
            | ((Assignment.status == "pending") & (Assignment.created_at > cutoff))
        )
        .group_by(Assignment.item_id)
    ).all()
    return {item_id: n for item_id, n in rows}


def _open_items(
    session: Session, queue: str, annotator: str, lease_minutes: float = 30
) -> list[tuple[int, int]]:
    """(item id, slots taken) of items this annotator may still get, best first."""
    q = queue_row(session, queue)
    seen = set(
        session.scalars(
            select(Assignment.item_id).where(Assignment.queue == queue, Assignment.annotator == annotator)
        )
    )
    taken = _slots_taken(session, queue, lease_minutes)
    ids = session.scalars(select(QueueItem.id).where(QueueItem.queue_id == queue)).all()
    open_ = [(i, taken.get(i, 0)) for i in ids if i not in seen and taken.get(i, 0) < q.overlap]
    open_.sort(key=lambda t: (-t[1], order_key(queue, annotator, t[0])))
    return open_


def next_task(
    session: Session, queue: str, annotator: str, rng: random.Random | None = None, lease_minutes: float = 30
) -> LabelTask | None:
    """The annotator's pending item, else a new one drawn in their order; None when nothing is left for them."""
    annotator = check_annotator(annotator)
    q = queue_row(session, queue)
    rubric = dict(q.rubric or {})
    pending = session.scalar(
        select(Assignment)
        .where(Assignment.queue == queue, Assignment.annotator == annotator, Assignment.status == "pending")
        .order_by(Assignment.position)
        .limit(1)
    )
    if pending is not None:
        item = session.get(QueueItem, pending.item_id)
        if item is not None:
            pending.created_at = utcnow()  # renew the lease
            return _task(session, pending, item, rubric)
    candidates = _open_items(session, queue, annotator, lease_minutes)
    if not candidates:
        return None
    item_id = candidates[0][0]
    position = (
        session.scalar(
            select(func.max(Assignment.position)).where(
                Assignment.queue == queue, Assignment.annotator == annotator
            )
        )
        or 0
    ) + 1
    rng = rng or random.Random()
    a = Assignment(
        item_id=item_id,
        queue=queue,
        annotator=annotator,
        user_id=_user_id(session, annotator),
        position=position,
        order_key=order_key(queue, annotator, item_id),
        left_is_first=rng.random() < 0.5,
    )
    session.add(a)
    session.flush()
    item = session.get(QueueItem, item_id)
    assert item is not None
    return _task(session, a, item, rubric)


def _own_assignment(session: Session, assignment_id: int, annotator: str) -> Assignment:
    a = session.get(Assignment, assignment_id)
    if a is None:
        raise LabelError(f"no assignment {assignment_id}")
    if a.annotator != annotator:
        raise LabelError("this item was assigned to another annotator")
    if a.status == "done":
        raise LabelError("this item is already labelled (by you): your first verdict is the one kept")
    if a.status != "pending":
        raise LabelError(f"this item is already {a.status}")
    return a


def _scores(
    rubric: Rubric | None, scores: dict[str, dict[str, Any]] | None, left_is_first: bool, single: bool
) -> list[tuple[str, str, float]]:
    """Validated (criterion, item side, value) triples from {criterion: {"left": v, "right": v}}."""
    out: list[tuple[str, str, float]] = []
    for crit_name, by_side in (scores or {}).items():
        if rubric is None:
            raise LabelError("this queue has no rubric, so it takes no rubric scores")
        try:
            crit = rubric.criterion(crit_name)
        except KeyError as exc:
            raise LabelError(str(exc.args[0])) from exc
        for side, value in (by_side or {}).items():
            if value is None or value == "":
                continue
            if side not in SIDES or (single and side == "right"):
                raise LabelError(f"{crit_name}: unknown answer side {side!r}")
            try:
                v = crit.coerce(value)
            except ValueError as exc:
                raise LabelError(str(exc)) from exc
            item_side = "1" if single else item_from_choice(side, left_is_first)
            out.append((crit_name, item_side, v))
    return out


def submit_label(
    session: Session,
    assignment_id: int,
    annotator: str,
    choice: str,
    scores: dict[str, dict[str, Any]] | None = None,
    reason: str | None = None,
) -> int:
    """Store a verdict (left/right/tie/both_good/both_bad; on a single answer good/bad, or left/right read as
    good/bad); returns the label id."""
    annotator = check_annotator(annotator)
    a = _own_assignment(session, assignment_id, annotator)
    item = session.get(QueueItem, a.item_id)
    if item is None:
        raise LabelError("the item was deleted")
    single = n_answers(item) == 1
    if single and choice in SIDES:  # one answer shown: the first two keys mean good / bad
        choice = SINGLE_FROM_SIDE[choice]
    allowed = SINGLE_OUTCOMES if single else CHOICES
    if choice not in allowed:
        raise LabelError(f"choice {choice!r} is not one of {', '.join(allowed)}")
    if reason and len(reason) > MAX_REASON:
        raise LabelError(f"the reason is {len(reason)} characters; at most {MAX_REASON}")
    q = queue_row(session, a.queue)
    rubric = rubric_from_dict(q.rubric, q.name) if q.rubric else None
    triples = _scores(rubric, scores, a.left_is_first, single)
    # Exactly once: the assignment moves from pending to done in one conditional UPDATE; of two submits racing,
    # the second finds it done and is refused. The unique assignment_id on labels is the wall behind it.
    moved = session.execute(
        update(Assignment)
        .where(Assignment.id == a.id, Assignment.status == "pending")
        .values(status="done", done_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if getattr(moved, "rowcount", 1) != 1:
        raise LabelError("this item is already labelled (by you): your first verdict is the one kept")
    label = Label(
        item_id=item.id,
        queue=a.queue,
        annotator=annotator,
        kind="human",
        user_id=a.user_id,
        assignment_id=a.id,
        outcome=choice if single else item_from_choice(choice, a.left_is_first),
        left_is_first=a.left_is_first,
        reason=(reason or "").strip() or None,
        meta={"position": a.position},
    )
    session.add(label)
    try:
        session.flush()
    except IntegrityError as exc:
        raise LabelError(
            "this item is already labelled (by you): your first verdict is the one kept"
        ) from exc
    session.add_all(
        RubricScore(item_id=item.id, label_id=label.id, criterion=c, side=s, value=v) for c, s, v in triples
    )
    session.expire(a)  # its status changed in the database above
    return label.id


def skip_task(session: Session, assignment_id: int, annotator: str) -> None:
    """Skip an item: it is not shown to this annotator again and frees its slot for someone else."""
    a = _own_assignment(session, assignment_id, check_annotator(annotator))
    a.status, a.done_at = "skipped", utcnow()


def queue_progress(session: Session, queue: str) -> QueueProgress:
    q = queue_row(session, queue)
    n_items = session.scalar(select(func.count(QueueItem.id)).where(QueueItem.queue_id == queue)) or 0
    per_item = dict(
        session.execute(
            select(Assignment.item_id, func.count(Assignment.id))
            .where(Assignment.queue == queue, Assignment.status == "done")
            .group_by(Assignment.item_id)
        ).all()
    )
    rows = session.execute(
        select(Assignment.annotator, Assignment.status, func.count(Assignment.id))
        .where(Assignment.queue == queue)
        .group_by(Assignment.annotator, Assignment.status)
    ).all()
    by: dict[str, dict[str, int]] = {}
    for who, status, n in rows:
        by.setdefault(who, {})[status] = n
    annotators = [
        AnnotatorProgress(
            who,
            c.get("done", 0),
            c.get("skipped", 0),
            c.get("pending", 0),
            len(_open_items(session, queue, who)),
        )
        for who, c in sorted(by.items())
    ]
    return QueueProgress(
        queue=queue,
        n_items=n_items,
        overlap=q.overlap,
        labels=sum(per_item.values()),
        target=n_items * q.overlap,
        items_complete=sum(1 for n in per_item.values() if n >= q.overlap),
        items_started=len(per_item),
        annotators=annotators,
    )
