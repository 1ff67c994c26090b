"""Prompt sets: import JSONL / JSON / CSV, draw a random prompt.

A file holds one row a line or an array of rows. Layouts read:
- MT-Bench: ``question_id``, ``category``, ``turns`` as a list of strings.
- Arena-Hard v0.1: ``question_id``, ``category``, ``cluster``, ``turns`` as a list of
  ``{"content": ...}``. The cluster is kept as the subcategory.
- Arena-Hard v2.0: ``uid``, ``category``, ``subcategory``, ``prompt``.
- A bare ``prompt``.

JSON and CSV are read by the studio's one reader of untrusted files (``common.files``). So a string
holding U+2028 or another Unicode line break stays one row. A CSV field spanning lines keeps the row's
first line in errors. A CSV row with more fields than the header is refused. The MT-Bench questions ship
as the demo set: 80 prompts, two turns each, from lm-sys/FastChat (Apache-2.0).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from vibestudio.accounts import require_role
from vibestudio.common.files import (
    RowError,
    csv_records_from_bytes,
    decode_bytes,
    iter_json_lines,
    parse_json_text,
)
from vibestudio.db.models import Prompt, PromptSet

MT_BENCH = "mt-bench"
_DATA = Path(__file__).parent / "data"
#: The MT-Bench questions (lm-sys/FastChat, Apache-2.0), shipped as package data (pyproject: arena = ["data/*"]).
MT_BENCH_FILE = _DATA / "mt_bench_questions.jsonl"
MAX_TURN_CHARS = 32_000
MAX_LABEL_CHARS = 128  # category / subcategory / question_id columns


class PromptImportError(ValueError):
    """A prompt file is malformed; the message names the line and field."""


@dataclass
class PromptInfo:
    id: int
    set_name: str
    question_id: str | None
    turns: list[str]
    category: str | None
    subcategory: str | None = None


def parse_prompt_file(name: str, data: bytes) -> list[dict]:
    """Parse and validate every row before anything is written. Returns rows with turns/category/question_id."""
    rows = _csv_rows(name, data) if name.lower().endswith(".csv") else _json_rows(name, data)
    seen: set[str] = set()
    for r in rows:
        where = f"{name}:{r.pop('line')}"
        t = r["turns"]
        if not isinstance(t, list) or not t or not all(isinstance(x, str) and x.strip() for x in t):
            raise PromptImportError(f"{where}: field 'turns' must be a non-empty list of non-empty strings")
        for key in ("category", "subcategory"):
            if r[key] is not None and not isinstance(r[key], str):
                r[key] = str(r[key])
        if r["question_id"] is not None:
            r["question_id"] = str(r["question_id"])
        _check_text(where, r)
        if r["question_id"] is not None:
            if r["question_id"] in seen:
                raise PromptImportError(f"{where}: field 'question_id' {r['question_id']!r} is duplicated")
            seen.add(r["question_id"])
    if not rows:
        raise PromptImportError(f"{name}: no prompts found")
    return rows


def _csv_rows(name: str, data: bytes) -> list[dict]:
    records, errors = csv_records_from_bytes(data, "utf-8-sig")  # prompt files are UTF-8 (a BOM is allowed)
    if errors:
        raise PromptImportError(errors[0].format(name))
    rows = []
    for rec in records:
        row: dict[str, Any] = rec.value
        turns: Any = [row[k] for k in sorted(row) if k and k.startswith("turn") and row[k]]
        if not turns and row.get("prompt"):
            turns = [row["prompt"]]
        rows.append(
            {
                "line": rec.line,
                "turns": turns,
                "category": row.get("category") or None,
                "subcategory": row.get("subcategory") or row.get("cluster") or None,
                "question_id": row.get("question_id") or row.get("uid") or None,
            }
        )
    return rows


def _json_rows(name: str, data: bytes) -> list[dict]:
    text, error = decode_bytes(data, "utf-8-sig", choose=False)  # prompt files are UTF-8 (a BOM is allowed)
    if error is not None or text is None:
        raise PromptImportError((error or RowError(None, None, "cannot read the file")).format(name))
    records, errors = parse_json_text(text)
    if errors:
        raise PromptImportError(errors[0].format(name))
    return [_json_row(name, rec.line, rec.value) for rec in records]


def _json_row(name: str, line: int | None, rec: Any) -> dict:
    """One row in MT-Bench, Arena-Hard v0.1 or v2.0 layout (or a bare ``prompt``) as turns + labels."""
    where = f"{name}:{line}"
    if not isinstance(rec, dict):
        raise PromptImportError(f"{where}: expected an object")
    turns = rec.get("turns")
    if isinstance(turns, list) and turns and all(isinstance(t, dict) for t in turns):
        if not all("content" in t for t in turns):  # Arena-Hard v0.1: [{"content": ...}, ...]
            raise PromptImportError(f"{where}: field 'turns': every turn object needs a 'content'")
        turns = [t["content"] for t in turns]
    if turns is None and "prompt" in rec:
        if not isinstance(rec["prompt"], str):
            raise PromptImportError(f"{where}: field 'prompt' must be a string")
        turns = [rec["prompt"]]
    qid = rec.get("question_id", rec.get("uid"))
    sub = rec.get("subcategory", rec.get("cluster"))
    return {
        "line": line,
        "turns": turns,
        "category": rec.get("category"),
        "subcategory": sub,
        "question_id": qid,
    }


def _check_text(where: str, row: dict) -> None:
    """Text every database can store (no NUL, valid Unicode) and turns short enough to ever be sent."""
    labels = [(k, row[k]) for k in ("question_id", "category", "subcategory")]
    for field, value in (*labels, *(("turns", x) for x in row["turns"])):
        if not isinstance(value, str):
            continue
        if field != "turns" and len(value) > MAX_LABEL_CHARS:
            raise PromptImportError(
                f"{where}: field {field!r} is {len(value)} characters; the limit is {MAX_LABEL_CHARS}"
            )
        if field == "turns" and len(value) > MAX_TURN_CHARS:
            raise PromptImportError(
                f"{where}: a turn is {len(value)} characters; the limit is {MAX_TURN_CHARS}"
            )
        if "\x00" in value:
            raise PromptImportError(f"{where}: field {field!r} contains a NUL character (binary data?)")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise PromptImportError(f"{where}: field {field!r} is not valid Unicode text") from exc


def import_prompt_set(
    session: Session, set_name: str, name: str, data: bytes, source: str = "", user_id: int | None = None
) -> int:
    """Create a prompt set from file bytes in the caller's transaction; returns the number of prompts."""
    require_role(session, user_id, "researcher")
    rows = parse_prompt_file(name, data)
    if session.scalar(select(PromptSet.id).where(PromptSet.name == set_name)) is not None:
        raise PromptImportError(f"a prompt set named {set_name!r} already exists")
    ps = PromptSet(name=set_name, source=source or name)
    session.add(ps)
    session.flush()
    session.add_all(Prompt(set_id=ps.id, **r) for r in rows)
    return len(rows)


def mt_bench_first_turns() -> list[str]:
    """The first turn of every shipped MT-Bench question, in file order (held-out prompts for reports and KL)."""
    rows = iter_json_lines(MT_BENCH_FILE.read_text(encoding="utf-8"))
    return [row["turns"][0].strip() for _, row in rows if isinstance(row, dict) and row.get("turns")]


def ensure_mt_bench(session: Session) -> None:
    if session.scalar(select(PromptSet.id).where(PromptSet.name == MT_BENCH)) is None:
        path = MT_BENCH_FILE
        import_prompt_set(
            session, MT_BENCH, path.name, path.read_bytes(), "MT-Bench (lm-sys/FastChat, Apache-2.0)"
        )


def list_sets(session: Session) -> list[str]:
    return list(session.scalars(select(PromptSet.name).order_by(PromptSet.name)))


def random_prompt(session: Session, set_name: str = MT_BENCH, rng: random.Random | None = None) -> PromptInfo:
    rng = rng or random.Random()
    ps = session.scalar(select(PromptSet).where(PromptSet.name == set_name))
    if ps is None:
        raise PromptImportError(f"no prompt set named {set_name!r}")
    n = session.scalar(select(func.count(Prompt.id)).where(Prompt.set_id == ps.id)) or 0
    if n == 0:
        raise PromptImportError(f"prompt set {set_name!r} is empty")
    p = session.scalar(
        select(Prompt).where(Prompt.set_id == ps.id).order_by(Prompt.id).offset(rng.randrange(n))
    )
    assert p is not None
    return PromptInfo(p.id, set_name, p.question_id, list(p.turns), p.category, p.subcategory)


def get_prompt(session: Session, prompt_id: int) -> PromptInfo:
    p = session.get(Prompt, prompt_id)
    if p is None:
        raise PromptImportError(f"prompt {prompt_id} does not exist")
    return PromptInfo(p.id, p.prompt_set.name, p.question_id, list(p.turns), p.category, p.subcategory)
