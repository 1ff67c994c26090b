"""Rows whose strings hold Unicode line breaks survive import -> export -> import unchanged in every format the
studio reads and writes (JSONL, JSON and Parquet files), and through snapshots and battle files.

U+2028, U+2029 and U+0085 are written raw by the exporters (``ensure_ascii=False``), so a reader that split with
``str.splitlines()`` cut those rows in two; form feed, vertical tab and a lone CR are escaped in JSON but must come
back as the same characters. NUL stays refused on import on purpose (no database stores it in text)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.files import conv, write_json
from vibestudio.annotation.formats import (
    ExportSpec,
    export_file,
    export_rows,
    import_file,
    read_records,
    snapshot_from_labels,
)
from vibestudio.annotation.snapshots import load_snapshot
from vibestudio.standings.ratings import load_battles_file

CHARS = {
    "U+2028": "\u2028",
    "U+2029": "\u2029",
    "U+0085": "\x85",
    "form feed": "\x0c",
    "vertical tab": "\x0b",
    "lone CR": "\r",
}


def t(label: str, what: str) -> str:
    """A string tagged with its character's label, holding the character twice inside it."""
    c = CHARS[label]
    return f"[{label}] {what}{c}second line{c}third"


def _fastchat(label: str) -> list[dict]:
    p = t(label, "prompt")
    return [
        {
            "question_id": f"q{CHARS[label]}{label}",
            "model_a": "m-one",
            "model_b": "m-two",
            "winner": "model_a",
            "judge": "judge1",
            "turn": 1,
            "tstamp": 1700000000.0,
            "conversation_a": conv(p, t(label, "answer a")),
            "conversation_b": conv(p, t(label, "answer b")),
        }
    ]


def _alpaca(label: str) -> list[dict]:
    return [
        {
            "instruction": t(label, "instruction"),
            "input": t(label, "input"),
            "output_1": t(label, "out 1"),
            "output_2": t(label, "out 2"),
            "generator_1": "gpt4",
            "generator_2": "davinci",
            "preference": 1.0,
            "annotator": "alpaca_eval_gpt4",
        }
    ]


def _ultrafeedback(label: str) -> list[dict]:
    prompt, good, bad = t(label, "prompt"), t(label, "good"), t(label, "bad")
    chosen = [{"content": prompt, "role": "user"}, {"content": good, "role": "assistant"}]
    rejected = [{"content": prompt, "role": "user"}, {"content": bad, "role": "assistant"}]
    return [
        {
            "prompt": prompt,
            "prompt_id": f"id-{label}",
            "chosen": chosen,
            "rejected": rejected,
            "messages": chosen,
            "score_chosen": 9.0,
            "score_rejected": 2.0,
        }
    ]


def _helpsteer(label: str) -> list[dict]:
    def row(response: str, h: int) -> dict:
        return {
            "prompt": t(label, "prompt"),
            "response": response,
            "helpfulness": h,
            "correctness": h,
            "coherence": 4,
            "complexity": 1,
            "verbosity": 1,
        }

    return [row(t(label, "better"), 4), row(t(label, "worse"), 1)]


def _trl(label: str) -> list[dict]:
    return [{"prompt": t(label, "prompt"), "chosen": t(label, "chosen"), "rejected": t(label, "rejected")}]


def _trl_conv(label: str) -> list[dict]:
    return [
        {
            "prompt": [{"role": "user", "content": t(label, "prompt")}],
            "chosen": [{"role": "assistant", "content": t(label, "chosen")}],
            "rejected": [{"role": "assistant", "content": t(label, "rejected")}],
        }
    ]


def _fastchat_key(r: dict) -> str:
    by_model = {r["model_a"]: r["conversation_a"], r["model_b"]: r["conversation_b"]}
    win = {"model_a": r["model_a"], "model_b": r["model_b"]}.get(r["winner"], r["winner"])
    return json.dumps([r.get("question_id"), r["judge"], r["turn"], by_model, win], sort_keys=True)


def _plain_key(r: dict) -> str:
    return json.dumps({k: v for k, v in r.items() if k != "provenance"}, sort_keys=True)


# format -> (rows for one character, export spec, canonical form of one row)
FORMATS: dict[str, tuple[Callable[[str], list[dict]], ExportSpec, Callable[[dict], str]]] = {
    "fastchat": (_fastchat, ExportSpec("fastchat"), _fastchat_key),
    "alpaca_eval": (_alpaca, ExportSpec("alpaca_eval"), _plain_key),
    "ultrafeedback": (_ultrafeedback, ExportSpec("ultrafeedback"), _plain_key),
    "helpsteer2": (_helpsteer, ExportSpec("helpsteer2"), _plain_key),
    "trl": (_trl, ExportSpec("trl"), _plain_key),
    "trl-conversational": (_trl_conv, ExportSpec("trl", conversational=True), _plain_key),
}


def _label_of(key: str) -> str:
    return next(label for label in CHARS if f"[{label}]" in key)


def _matrix(want: list[dict], got: list[dict], key: Callable[[dict], str]) -> dict[str, bool]:
    """Per character: were its rows given back exactly (as a multiset of canonical rows)?"""
    out = {}
    for label in CHARS:
        w = sorted(k for k in map(key, want) if _label_of(k) == label)
        g = sorted(k for k in map(key, got) if f"[{label}]" in k)
        out[label] = w == g and len(w) > 0
    return out


def _read_back(path: Path) -> list[dict]:
    records, errors = read_records(path)
    assert errors == []
    return [r.value for r in records]


@pytest.mark.parametrize("file_format", ["jsonl", "json", "parquet"])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_line_breaks_in_strings_survive_import_export_import(db, tmp_path, fmt, file_format):
    build, spec, key = FORMATS[fmt]
    rows = [r for label in CHARS for r in build(label)]
    src = write_json(
        tmp_path / f"in.{'json' if file_format == 'json' else 'jsonl'}", rows, lines=file_format != "json"
    )
    if file_format != "json":
        assert len(src.read_text(encoding="utf-8").splitlines()) > len(rows)  # raw U+2028 etc. in the file
    import_fmt = "trl" if fmt.startswith("trl") else fmt
    with db.session() as s:
        rep = import_file(s, src, import_fmt, queue="first")
        assert rep.n_records == len(rows), rep
        first = export_file(
            s,
            ExportSpec(spec.fmt, conversational=spec.conversational, queues=["first"]),
            tmp_path / f"out.{file_format}",
        )
    exported = _read_back(first.path)
    with db.session() as s:
        import_file(s, first.path, import_fmt, queue="again")
        again, _ = export_rows(s, ExportSpec(spec.fmt, conversational=spec.conversational, queues=["again"]))
    m1, m2 = _matrix(rows, exported, key), _matrix(rows, again, key)
    assert all(m1.values()) and all(m2.values()), {"export": m1, "re-import": m2}


def test_snapshot_and_kto_keep_the_characters(db, tmp_path):
    rows = [r for label in CHARS for r in _helpsteer(label)]
    with db.session() as s:
        import_file(s, write_json(tmp_path / "h.jsonl", rows, lines=True), "helpsteer2")
        snap = snapshot_from_labels(s)
        kto = export_file(s, ExportSpec("kto"), tmp_path / "kto.jsonl")
    back = load_snapshot(snap.path, snap.hash)
    assert len(Path(snap.path).read_text(encoding="utf-8").splitlines()) > len(back) == len(CHARS)
    for label in CHARS:
        (row,) = [r for r in back if f"[{label}]" in r["prompt"][0]["content"]]
        assert row["prompt"][0]["content"] == t(label, "prompt")
        assert row["chosen"][-1]["content"] == t(label, "better")
        assert row["rejected"][-1]["content"] == t(label, "worse")
    completions = {r["completion"] for r in _read_back(kto.path)}
    assert completions == {t(label, w) for label in CHARS for w in ("better", "worse")}


@pytest.mark.parametrize("engine", ["python", "duckdb"])
def test_battle_files_with_line_breaks_in_question_ids_load_for_ratings(tmp_path, engine):
    rows = [r for label in CHARS for r in _fastchat(label)] * 2
    path = write_json(tmp_path / "battles.jsonl", rows, lines=True)
    records, skipped = load_battles_file(path, engine=engine)
    assert skipped == [] and len(records) == len(rows)
    assert [r["question_id"] for r in records] == [r["question_id"] for r in rows]
    assert [r["conversation_a"] for r in records] == [r["conversation_a"] for r in rows]
