"""Arena-Hard's two prompt layouts import as prompt sets (CLI and Python API), keeping category and subcategory,
and rows holding U+2028 and other Unicode line breaks stay whole."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from vibestudio.arena.prompts import PromptImportError, get_prompt, import_prompt_set, parse_prompt_file
from vibestudio.db.models import Prompt, PromptSet
from vibestudio.db.session import Database
from vibestudio.studio.cli import app

DATA = Path(__file__).parent / "data"
V01 = DATA / "arena_hard_v0.1_question.jsonl"
V20 = DATA / "arena_hard_v2.0_question.jsonl"


def _source_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


def _stored(s, set_name: str) -> list[Prompt]:
    ps = s.scalar(select(PromptSet).where(PromptSet.name == set_name))
    return list(s.scalars(select(Prompt).where(Prompt.set_id == ps.id).order_by(Prompt.id)))


def test_fixtures_hold_the_characters_that_used_to_cut_rows():
    v01, v20 = V01.read_text(encoding="utf-8"), V20.read_text(encoding="utf-8")
    assert "\u2028" in v01 and "\u2029" in v01 and "\x85" in v01 and "\u2028" in v20
    # what the old reader saw: more "lines" than rows
    assert len(v20.splitlines()) > len(_source_rows(V20)) == 6
    assert len(v01.splitlines()) > len(_source_rows(V01)) == 6


def test_arena_hard_v01_imports_with_category_and_cluster(db):
    rows = _source_rows(V01)
    with db.session() as s:
        assert import_prompt_set(s, "ah-v0.1", V01.name, V01.read_bytes()) == len(rows)
    with db.session() as s:
        stored = _stored(s, "ah-v0.1")
        got = [(p.question_id, p.category, p.subcategory, p.turns) for p in stored]
        info = get_prompt(s, stored[1].id)
    assert got == [
        (r["question_id"], r["category"], r["cluster"], [t["content"] for t in r["turns"]]) for r in rows
    ]
    assert "\u2028" in info.turns[0] and info.subcategory == "Array Positioning & SAT Solving"


def test_arena_hard_v20_imports_with_category_and_subcategory(db):
    rows = _source_rows(V20)
    with db.session() as s:
        assert import_prompt_set(s, "ah-v2.0", V20.name, V20.read_bytes()) == len(rows)
    with db.session() as s:
        got = [(p.question_id, p.category, p.subcategory, p.turns) for p in _stored(s, "ah-v2.0")]
    assert got == [(r["uid"], r["category"], r["subcategory"], [r["prompt"]]) for r in rows]
    assert any("\x0c" in t[3][0] and "\x0b" in t[3][0] and "\r" in t[3][0] for t in got)


def test_cli_imports_both_arena_hard_files():
    runner = CliRunner()
    for path, name in ((V01, "arena-hard-v0.1"), (V20, "arena-hard-v2.0")):
        r = runner.invoke(app, ["prompts", "import", str(path), "--name", name])
        assert r.exit_code == 0, r.output
        assert f"Imported 6 prompts into set {name!r}" in r.output
    r = runner.invoke(app, ["prompts", "list"])
    assert "arena-hard-v0.1" in r.output and "arena-hard-v2.0" in r.output
    with Database().session() as s:
        subs = {p.subcategory for p in _stored(s, "arena-hard-v2.0")}
    assert subs == {"coding", "math", "creative_writing"}


def test_errors_name_file_line_and_field_after_a_u2028_row():
    good = V20.read_bytes()
    with pytest.raises(PromptImportError, match=r"q.jsonl:7: field 'turns'"):
        parse_prompt_file("q.jsonl", good + b'{"uid": "x1", "category": "hard_prompt", "prompt": ""}\n')
    with pytest.raises(PromptImportError, match=r"q.jsonl:7: invalid JSON"):
        parse_prompt_file("q.jsonl", good + b'{"uid": "x1", "prompt": "cut\n')
    with pytest.raises(PromptImportError, match=r"q.jsonl:1: field 'prompt' must be a string"):
        parse_prompt_file("q.jsonl", b'{"uid": "a", "prompt": ["list"]}\n')
    with pytest.raises(
        PromptImportError, match=r"q.jsonl:1: field 'turns': every turn object needs a 'content'"
    ):
        parse_prompt_file("q.jsonl", b'{"question_id": "a", "turns": [{"text": "hi"}]}\n')
    with pytest.raises(PromptImportError, match=r"q.jsonl:2: field 'subcategory' contains a NUL"):
        parse_prompt_file("q.jsonl", b'{"prompt": "a"}\n{"prompt": "b", "subcategory": "x\\u0000"}\n')
    with pytest.raises(PromptImportError, match=r"q.jsonl:1: field 'category' is 200 characters"):
        parse_prompt_file("q.jsonl", json.dumps({"prompt": "a", "category": "c" * 200}).encode())
    with pytest.raises(PromptImportError, match=r"q.jsonl:2: field 'question_id' 'a' is duplicated"):
        parse_prompt_file("q.jsonl", b'{"uid": "a", "prompt": "x"}\n{"uid": "a", "prompt": "y"}\n')


def test_json_array_and_csv_carry_the_same_rows():
    rows = _source_rows(V20)
    as_array = json.dumps(rows, ensure_ascii=False, indent=1).encode()
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=["uid", "category", "subcategory", "prompt"])
    w.writeheader()
    w.writerows(rows)
    want = [(r["uid"], r["category"], r["subcategory"], [r["prompt"]]) for r in rows]
    for name, data in (("q.json", as_array), ("q.csv", buf.getvalue().encode())):
        got = parse_prompt_file(name, data)
        assert [(r["question_id"], r["category"], r["subcategory"], r["turns"]) for r in got] == want, name


def test_csv_errors_name_the_line_a_row_starts_on():
    multi = b'turn1,category\n"a prompt\nover two lines",writing\n"x",' + b"c" * 200 + b"\n"
    with pytest.raises(PromptImportError, match=r"q.csv:4: field 'category' is 200 characters"):
        parse_prompt_file("q.csv", multi)
    with pytest.raises(PromptImportError, match=r"q.csv:3: 3 fields but the header names 2"):
        parse_prompt_file("q.csv", b"turn1,category\nfine,writing\ntoo,many,fields\n")
    with pytest.raises(PromptImportError, match=r"q.csv:2: not valid utf-8 \(byte 0xe9"):
        parse_prompt_file("q.csv", "turn1\ncafé\n".encode("latin-1"))
