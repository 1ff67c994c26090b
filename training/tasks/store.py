"""Task sets in the database: store (one transaction), split, list, read, and the guard that keeps held-out
tasks out of training.

A task's *content hash* is the SHA-256 of its normalised prompt, with case and spaces folded. So the same
question imported twice, in two sets or two files, has one hash. Its *split* is a function of that hash
alone. It is held out when the hash's first 64 bits, as a fraction of 2**64, fall below the set's
``heldout_fraction`` (default 0.2). Otherwise it is train. So a task is held out in every set that holds
it at the same fraction. The split is fixed before any job sees the set, and re-importing cannot move a
task across. ``train_tasks`` refuses (``TaskError``) when a train task of the set is held out in *any*
stored set. A job never trains on a held-out task.

A set's hash covers its tasks (content hash, answer, verifier, split) in order. A job's lineage records
it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from vibestudio.accounts import require_role
from vibestudio.common.files import RowError
from vibestudio.db.models import Task, TaskSet
from vibestudio.db.session import Database
from vibestudio.training.tasks.importers import TaskRow
from vibestudio.training.tasks.verifiers import VerifierError, check_spec

DEFAULT_HELDOUT = 0.2
MIN_TASKS = 10
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class TaskError(ValueError):
    """A task set cannot be stored or used as asked (the message says what, and where)."""


class TaskImportError(TaskError):
    """Rows of an import are bad; nothing was written. ``errors`` holds (file, RowError) pairs."""

    def __init__(self, message: str, errors: list[tuple[str, RowError]]) -> None:
        super().__init__(message)
        self.errors = errors


@dataclass
class TaskSetInfo:
    id: int
    name: str
    hash: str
    source: str
    n_train: int
    n_heldout: int
    n_skipped: int
    heldout_fraction: float
    verifier: dict[str, Any]
    provenance: dict[str, Any]
    created_at: str

    @property
    def n_tasks(self) -> int:
        return self.n_train + self.n_heldout

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "n_tasks": self.n_tasks}


@dataclass
class TaskItem:
    id: int
    idx: int
    prompt: str
    answer: str
    verifier: dict[str, Any]
    choices: list[str] | None
    content_hash: str
    split: str
    line: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class ImportResult:
    set: TaskSetInfo
    kept: int
    skipped: list[str]  # readable reasons, "file:line: field 'x': ..." (bad rows with skip_bad, duplicates)

    def summary(self) -> str:
        s = self.set
        return (
            f"task set {s.name!r}: kept {self.kept} task(s), skipped {len(self.skipped)}; split "
            f"{s.n_train} train / {s.n_heldout} held-out (held-out fraction {s.heldout_fraction:g}, by content "
            f"hash); hash {s.hash[:12]}"
        )


def content_hash(prompt: str) -> str:
    return hashlib.sha256(" ".join(prompt.casefold().split()).encode("utf-8")).hexdigest()


def split_of(digest: str, heldout_fraction: float) -> str:
    return "heldout" if int(digest[:16], 16) / 2**64 < heldout_fraction else "train"


def _info(row: TaskSet) -> TaskSetInfo:
    return TaskSetInfo(
        row.id,
        row.name,
        row.hash,
        row.source,
        row.n_train,
        row.n_heldout,
        row.n_skipped,
        row.heldout_fraction,
        dict(row.verifier or {}),
        dict(row.provenance or {}),
        str(row.created_at)[:19],
    )


def store_tasks(
    db: Database,
    name: str,
    rows: list[TaskRow],
    *,
    source: str,
    provenance: dict[str, Any],
    errors: list[tuple[str, RowError]] | None = None,
    default_verifier: dict[str, Any] | None = None,
    heldout_fraction: float = DEFAULT_HELDOUT,
    skip_bad: bool = False,
    user_id: int | None = None,
) -> ImportResult:
    """Store ``rows`` as task set ``name`` in one transaction, split by content hash. Bad rows (``errors``) stop
    the import unless ``skip_bad``; duplicate prompts are skipped and listed; a set that does not split into at
    least one train and one held-out task (and ``MIN_TASKS`` in all) is refused."""
    require_role(db, user_id, "researcher")
    errors = list(errors or [])
    if not NAME_RE.match(name or ""):
        raise TaskError(f"task set name {name!r}: use 1-64 letters, digits, '.', '_' or '-'")
    if not 0 < heldout_fraction < 1:
        raise TaskError(f"heldout_fraction must be between 0 and 1 (got {heldout_fraction})")
    verifier = {}
    if default_verifier:
        try:
            verifier = check_spec(default_verifier)
        except VerifierError as exc:
            raise TaskError(f"--verifier: {exc}") from exc
    if errors and not skip_bad:
        shown = "\n".join(f"  {e.format(src)}" for src, e in errors[:20])
        more = f"\n  ... and {len(errors) - 20} more" if len(errors) > 20 else ""
        raise TaskImportError(f"{len(errors)} bad row(s); nothing was written:\n{shown}{more}", errors)
    skipped = [e.format(src) for src, e in errors]
    kept: list[tuple[str, TaskRow]] = []
    seen: dict[str, TaskRow] = {}
    for r in rows:
        digest = content_hash(r.prompt)
        if digest in seen:
            first = seen[digest]
            skipped.append(f"{r.source}:{r.line}: duplicate prompt of {first.source}:{first.line}")
            continue
        seen[digest] = r
        kept.append((digest, r))
    splits = [split_of(d, heldout_fraction) for d, _ in kept]
    n_held = splits.count("heldout")
    n_train = len(kept) - n_held
    if len(kept) < MIN_TASKS or n_held == 0 or n_train == 0:
        raise TaskError(
            f"task set {name!r} is too small to split: {len(kept)} task(s) give {n_train} train / {n_held} held-out "
            f"at held-out fraction {heldout_fraction:g}; at least {MIN_TASKS} tasks and one of each are needed"
        )
    set_hash = hashlib.sha256()
    for (digest, r), split in zip(kept, splits, strict=True):
        item = [digest, r.answer, r.verifier, r.choices, split]
        set_hash.update(json.dumps(item, sort_keys=True).encode("utf-8"))
    layouts: dict[str, int] = {}
    for _, r in kept:
        layouts[r.layout] = layouts.get(r.layout, 0) + 1
    with db.session() as s:
        if s.scalar(select(TaskSet.id).where(TaskSet.name == name)) is not None:
            raise TaskError(f"a task set named {name!r} already exists; choose another name")
        ts = TaskSet(
            name=name,
            hash=set_hash.hexdigest(),
            source=source,
            provenance={**provenance, "layouts": layouts},
            verifier=verifier,
            heldout_fraction=heldout_fraction,
            n_train=n_train,
            n_heldout=n_held,
            n_skipped=len(skipped),
            created_by=user_id,
        )
        s.add(ts)
        s.flush()
        s.add_all(
            Task(
                set_id=ts.id,
                idx=i,
                content_hash=digest,
                split=split,
                prompt=r.prompt,
                answer=r.answer,
                choices=r.choices,
                verifier=r.verifier if r.verifier != verifier else None,
                meta=r.meta,
                line=r.line,
            )
            for i, ((digest, r), split) in enumerate(zip(kept, splits, strict=True))
        )
        s.flush()
        info = _info(ts)
    return ImportResult(info, len(kept), skipped)


# ---- reading -------------------------------------------------------------------------------------------------
def _get(s: Session, ident: int | str) -> TaskSet:
    row = s.scalar(select(TaskSet).where(TaskSet.name == str(ident)))
    if row is None and str(ident).isdigit():
        row = s.get(TaskSet, int(ident))
    if row is None:
        raise TaskError(f"no task set {ident!r} (see `vibestudio tasks list`)")
    return row


def get_task_set(db: Database, ident: int | str) -> TaskSetInfo:
    with db.session() as s:
        return _info(_get(s, ident))


def list_task_sets(db: Database) -> list[TaskSetInfo]:
    with db.session() as s:
        return [_info(r) for r in s.scalars(select(TaskSet).order_by(TaskSet.id))]


def load_tasks(db: Database, ident: int | str, split: str | None = None) -> list[TaskItem]:
    """The set's tasks in import order (``split``: train, heldout or None for both), each with its verifier."""
    if split not in (None, "train", "heldout"):
        raise TaskError(f"split must be train or heldout (got {split!r})")
    with db.session() as s:
        ts = _get(s, ident)
        q = select(Task).where(Task.set_id == ts.id).order_by(Task.idx)
        if split:
            q = q.where(Task.split == split)
        default = dict(ts.verifier or {})
        return [
            TaskItem(
                t.id,
                t.idx,
                t.prompt,
                t.answer,
                dict(t.verifier or default or {"type": "exact"}),
                list(t.choices) if t.choices else None,
                t.content_hash,
                t.split,
                t.line,
                dict(t.meta or {}),
            )
            for t in s.scalars(q)
        ]


def train_tasks(db: Database, ident: int | str) -> list[TaskItem]:
    """The tasks a job may train on; TaskError when any of them is held out in any stored set."""
    from vibestudio.training.tasks.checks import heldout_leaks

    rows = load_tasks(db, ident, "train")
    with db.session() as s:
        ts = _get(s, ident)
        held = heldout_leaks(
            s, list(s.scalars(select(Task).where(Task.set_id == ts.id, Task.split == "train")))
        )
    leaked = [t for t in rows if t.content_hash in held]
    if leaked:
        t = leaked[0]
        where = f"line {t.line}" if t.line is not None else f"task {t.idx}"
        raise TaskError(
            f"task set {ident!r}: {len(leaked)} of its {len(rows)} train task(s) are held out in task set "
            f"{held[t.content_hash]!r} (e.g. {where}: {t.prompt[:60]!r}); a job never trains on a held-out task"
        )
    return rows


def heldout_hashes(db: Database) -> set[str]:
    with db.session() as s:
        return set(s.scalars(select(Task.content_hash).where(Task.split == "heldout")))


def count_tasks(db: Database) -> int:
    with db.session() as s:
        return int(s.scalar(select(func.count(Task.id))) or 0)
