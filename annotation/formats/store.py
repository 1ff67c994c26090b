"""Import a preference file into a queue: read, validate every row, then write all of it or nothing.

The writes happen in the caller's transaction. Rows that show the same prompt and answers become one item,
whatever the answer order. Each row becomes a label on it. So files where several people judged the same
pair give agreement data.

Duplicates are errors: the same id twice, the same prompt + answers + annotator twice, or a row already
imported into the queue. With ``skip_bad``, bad rows are left out and listed. Without it, any bad row
stops the import. Then every problem is reported (line and field), and nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from vibestudio.accounts import require_role
from vibestudio.annotation.formats.importers import (
    FORMATS,
    PARSERS,
    Check,
    ImportRow,
    detect_format,
    pair_helpsteer,
)
from vibestudio.annotation.queues import NewItem, QueueError, content_key, create_queue, make_item, queue_row
from vibestudio.annotation.rubrics import get_rubric
from vibestudio.common.files import MAX_LINE_BYTES, RawRecord, RowError, read_records
from vibestudio.common.outcomes import flipped
from vibestudio.common.paths import file_stem
from vibestudio.db.models import Label, QueueItem, RubricScore

MAX_FIELD_CHARS = 1_000_000
MAX_LISTED = 50


@dataclass
class ImportReport:
    source: str
    format: str
    queue: str
    n_records: int = 0
    n_labels: int = 0
    n_items_new: int = 0
    n_items_existing: int = 0
    errors: list[RowError] = field(default_factory=list)
    skipped: list[RowError] = field(default_factory=list)
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        return not self.errors

    def lines(self, limit: int = MAX_LISTED) -> list[str]:
        problems = self.errors or self.skipped
        out = [e.format(self.source) for e in problems[:limit]]
        if len(problems) > limit:
            out.append(f"... and {len(problems) - limit} more")
        return out

    @staticmethod
    def _rows(problems: list[RowError]) -> int:
        return len({(e.line, e.record) for e in problems})

    def summary(self) -> str:
        verb = "would import" if self.dry_run else "imported"
        if self.errors:
            return (
                f"{self.source}: {len(self.errors)} problem(s) in {self._rows(self.errors)} row(s); "
                "nothing was imported"
            )
        text = (
            f"{self.source}: {verb} {self.n_labels} label(s) from {self.n_records} record(s) into queue "
            f"{self.queue!r} ({self.n_items_new} new item(s), {self.n_items_existing} existing)"
        )
        if self.skipped:
            text += f"; skipped {self._rows(self.skipped)} bad row(s) ({len(self.skipped)} problem(s))"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "format": self.format,
            "queue": self.queue,
            "records": self.n_records,
            "labels": self.n_labels,
            "items_new": self.n_items_new,
            "items_existing": self.n_items_existing,
            "errors": [e.as_dict() for e in self.errors],
            "skipped": [e.as_dict() for e in self.skipped],
            "dry_run": self.dry_run,
        }


class ImportValidationError(ValueError):
    """The file has bad rows and ``skip_bad`` was not asked for; ``report`` lists every problem."""

    def __init__(self, report: ImportReport) -> None:
        self.report = report
        super().__init__("\n".join([report.summary(), *report.lines(20)]))


def _bad_text(value: Any) -> str | None:
    """Why no database could store this record's text (NUL characters, lone surrogates), or None."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if "\x00" in v:
                return "contains a NUL character (binary data?)"
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return "contains text that is not valid Unicode (a lone surrogate)"
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return None


def _storable(records: list[RawRecord], errors: list[RowError]) -> list[RawRecord]:
    keep = []
    for rec in records:
        problem = _bad_text(rec.value)
        if problem:
            errors.append(RowError(rec.line, None, problem, rec.index))
        else:
            keep.append(rec)
    return keep


def parse_file(
    path: str | Path,
    fmt: str = "auto",
    encoding: str | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_field_chars: int = MAX_FIELD_CHARS,
) -> tuple[str, int, list[ImportRow], list[RowError]]:
    """(format, number of records, valid rows, errors): reading and per-row validation, no database."""
    records, errors = read_records(path, encoding, max_line_bytes)
    records = _storable(records, errors)
    if fmt == "auto":
        detected = detect_format(records[0].value) if records else None
        if detected is None:
            errors.append(
                RowError(None, None, f"cannot tell the layout; pass --format ({', '.join(FORMATS)})")
            )
            return "auto", len(records), [], errors
        fmt = detected
    if fmt not in PARSERS:
        raise QueueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    rows: list[ImportRow] = []
    for rec in records:
        rows += PARSERS[fmt](Check(rec, errors, max_field_chars))
    rows = _dedup(rows, errors)
    if fmt == "helpsteer2":
        rows = pair_helpsteer(rows)
    return fmt, len(records), rows, errors


def _dedup(rows: list[ImportRow], errors: list[RowError]) -> list[ImportRow]:
    first_id: dict[str, int | None] = {}
    first_key: dict[str, int | None] = {}
    out = []
    for r in rows:
        if r.external_id is not None:
            if r.external_id in first_id:
                errors.append(
                    RowError(
                        r.line,
                        r.id_field,
                        f"id {r.external_id!r} is duplicated (first on line {first_id[r.external_id]})",
                        r.record,
                    )
                )
                continue
            first_id[r.external_id] = r.line
        key = r.dedup_key()
        if key in first_key:
            errors.append(
                RowError(
                    r.line,
                    None,
                    f"duplicate of line {first_key[key]} (same prompt, answers and annotator)",
                    r.record,
                )
            )
            continue
        first_key[key] = r.line
        out.append(r)
    return out


def _bad_lines(errors: list[RowError]) -> set[tuple[int | None, int | None]]:
    return {(e.line, e.record) for e in errors}


def import_file(
    session: Session,
    path: str | Path,
    fmt: str = "auto",
    queue: str | None = None,
    skip_bad: bool = False,
    dry_run: bool = False,
    encoding: str | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_field_chars: int = MAX_FIELD_CHARS,
    rubric: str | None = None,
    user_id: int | None = None,
) -> ImportReport:
    """Validate a whole file, then (unless ``dry_run``) write it in ``session``'s transaction."""
    require_role(session, user_id, "researcher")
    p = Path(path)
    fmt, n_records, rows, errors = parse_file(p, fmt, encoding, max_line_bytes, max_field_chars)
    qname = (queue or f"import-{fmt}-{file_stem(p.stem)}")[:128]
    report = ImportReport(p.name, fmt, qname, n_records=n_records, dry_run=dry_run)
    try:
        q = queue_row(session, qname)
    except QueueError:
        q = None
    items: dict[str, QueueItem] = {}
    seen_labels: dict[tuple[str, str], int] = {}
    seen_ids: set[str] = set()
    if q is not None:
        for it in session.scalars(select(QueueItem).where(QueueItem.queue_id == qname)):
            if it.content_key:
                items[it.content_key] = it
        by_item = {it.id: k for k, it in items.items()}
        for lab in session.scalars(select(Label).where(Label.queue == qname)):
            key = by_item.get(lab.item_id)
            if key:
                seen_labels[(key, lab.annotator + "\x00" + str((lab.meta or {}).get("turn")))] = lab.id
            ext = (lab.meta or {}).get("external_id")
            if ext:
                seen_ids.add(str(ext))
    fresh = []
    for r in rows:
        key = content_key(r.prompt, r.answers)
        who = r.annotator + "\x00" + str(r.meta.get("turn"))
        if (key, who) in seen_labels:
            errors.append(
                RowError(
                    r.line, None, f"already in queue {qname!r} (label {seen_labels[(key, who)]})", r.record
                )
            )
        elif r.external_id is not None and r.external_id in seen_ids:
            errors.append(
                RowError(r.line, r.id_field, f"id {r.external_id!r} is already in queue {qname!r}", r.record)
            )
        else:
            fresh.append(r)
    errors.sort(key=lambda e: (e.line or 0, e.record or 0))
    if errors and not skip_bad:
        report.errors = errors
        raise ImportValidationError(report)
    report.skipped = errors
    bad = _bad_lines(errors)
    rows = [r for r in fresh if (r.line, r.record) not in bad]
    if not rows and not dry_run:
        report.errors = errors or [RowError(None, None, "no rows to import")]
        raise ImportValidationError(report)
    report.n_labels = len(rows)
    keys = {content_key(r.prompt, r.answers) for r in rows}
    report.n_items_existing = len(keys & set(items))
    report.n_items_new = len(keys - set(items))
    if dry_run:
        return report
    if q is None:
        default_rubric = rubric or ("helpsteer2" if fmt == "helpsteer2" else None)
        create_queue(
            session,
            qname,
            "import",
            get_rubric(default_rubric) if default_rubric else None,
            1,
            config={"format": fmt},
            source=p.name,
        )
    _write_rows(session, qname, fmt, p.name, rows, items)
    return report


LABEL_META = ("preference", "provenance", "lines", "input", "instruction")


def _write_rows(
    session: Session, queue: str, fmt: str, source: str, rows: list[ImportRow], items: dict[str, QueueItem]
) -> None:
    """Bulk write in three flushes: new items, then labels, then rubric scores."""
    keys = [content_key(r.prompt, r.answers) for r in rows]
    new: dict[str, QueueItem] = {}
    for r, key in zip(rows, keys, strict=True):
        if key not in items and key not in new:
            meta = {k: v for k, v in r.meta.items() if k in ("prompt_2", "question_id", "turn", "category")}
            new[key] = make_item(queue, NewItem(r.prompt, list(r.answers), list(r.stamps), meta=meta))
    session.add_all(new.values())
    session.flush()
    items.update(new)
    labels: list[tuple[Label, ImportRow, bool]] = []
    for r, key in zip(rows, keys, strict=True):
        item = items[key]
        flip = len(r.answers) == 2 and item.answer_1 != r.answers[0]
        label = Label(
            item_id=item.id,
            queue=queue,
            annotator=r.annotator[:128],
            kind="import",
            outcome=flipped(r.outcome) if flip else r.outcome,
            reason=r.reason,
            meta={
                "format": fmt,
                "source": source,
                "line": r.line,
                "external_id": r.external_id,
                "turn": r.meta.get("turn"),
                **{k: v for k, v in r.meta.items() if k in LABEL_META},
            },
        )
        if r.created_at is not None:
            label.created_at = r.created_at
        labels.append((label, r, flip))
    session.add_all(lab for lab, _, _ in labels)
    session.flush()
    session.add_all(
        RubricScore(
            item_id=label.item_id,
            label_id=label.id,
            criterion=c,
            side=(flipped(side) if flip else side),
            value=v,
        )
        for label, r, flip in labels
        for c, side, v in r.scores
    )
