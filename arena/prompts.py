"""Prompt sets: import JSONL / CSV (MT-Bench layout: ``turns`` + ``category``), draw a random prompt.

The MT-Bench questions (80 prompts, two turns each; from lm-sys/FastChat, Apache-2.0) ship as the demo set.
"""

from __future__ import annotations

import csv
import io
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from arena.accounts import require_role
from db.models import Prompt, PromptSet

MT_BENCH = "mt-bench"
_DATA = Path(__file__).parent / "data"
MAX_TURN_CHARS = 32_000


class PromptImportError(ValueError):
    """A prompt file is malformed; the message names the line and field."""


@dataclass
class PromptInfo:
    id: int
    set_name: str
    question_id: str | None
    turns: list[str]
    category: str | None


def parse_prompt_file(name: str, data: bytes) -> list[dict]:
    """Parse and validate every row before anything is written. Returns rows with turns/category/question_id."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PromptImportError(f"{name}: not UTF-8 text (byte {exc.start})") from exc
    rows: list[dict] = []
    if name.lower().endswith(".csv"):
        try:
            records = list(csv.DictReader(io.StringIO(text)))
        except csv.Error as exc:
            raise PromptImportError(f"{name}: not a valid CSV file ({exc})") from exc
        for lineno, rec in enumerate(records, start=2):
            turns: Any = [rec[k] for k in sorted(rec) if k and k.startswith("turn") and rec[k]]
            if not turns and rec.get("prompt"):
                turns = [rec["prompt"]]
            rows.append(
                {
                    "line": lineno,
                    "turns": turns,
                    "category": rec.get("category"),
                    "question_id": rec.get("question_id"),
                }
            )
    else:
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise PromptImportError(f"{name}:{lineno}: invalid JSON ({exc.msg})") from exc
            if not isinstance(rec, dict):
                raise PromptImportError(f"{name}:{lineno}: expected an object")
            turns = rec.get("turns")
            if turns is None and isinstance(rec.get("prompt"), str):
                turns = [rec["prompt"]]
            rows.append(
                {
                    "line": lineno,
                    "turns": turns,
                    "category": rec.get("category"),
                    "question_id": rec.get("question_id"),
                }
            )
    seen: set[str] = set()
    for r in rows:
        where = f"{name}:{r.pop('line')}"
        t = r["turns"]
        if not isinstance(t, list) or not t or not all(isinstance(x, str) and x.strip() for x in t):
            raise PromptImportError(f"{where}: field 'turns' must be a non-empty list of non-empty strings")
        _check_text(where, r)
        if r["question_id"] is not None:
            r["question_id"] = str(r["question_id"])
            if r["question_id"] in seen:
                raise PromptImportError(f"{where}: field 'question_id' {r['question_id']!r} is duplicated")
            seen.add(r["question_id"])
    if not rows:
        raise PromptImportError(f"{name}: no prompts found")
    return rows


def _check_text(where: str, row: dict) -> None:
    """Text every database can store (no NUL, valid Unicode) and turns short enough to ever be sent."""
    for field, value in (("category", row["category"]), *(("turns", x) for x in row["turns"])):
        if not isinstance(value, str):
            continue
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


def ensure_mt_bench(session: Session) -> None:
    if session.scalar(select(PromptSet.id).where(PromptSet.name == MT_BENCH)) is None:
        path = _DATA / "mt_bench_questions.jsonl"
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
    return PromptInfo(p.id, set_name, p.question_id, list(p.turns), p.category)


def get_prompt(session: Session, prompt_id: int) -> PromptInfo:
    p = session.get(Prompt, prompt_id)
    if p is None:
        raise PromptImportError(f"prompt {prompt_id} does not exist")
    return PromptInfo(p.id, p.prompt_set.name, p.question_id, list(p.turns), p.category)
