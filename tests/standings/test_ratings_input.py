"""Tests for reading battle files and records: both engines, JSON and JSONL, errors naming line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from vibestudio.standings.ratings import (
    BattleRecords,
    RatingsInputError,
    as_records,
    leaderboard,
    load_battles_file,
)

GOOD = [
    {"model_a": "a", "model_b": "b", "winner": "model_a", "tstamp": 1.0, "question_id": "q1", "turn": 1},
    {
        "model_a": "b",
        "model_b": "c",
        "winner": "tie",
        "tstamp": 2.0,
        "category": "coding",
        "sampling_prob": 0.5,
    },
    {
        "model_a": "c",
        "model_b": "a",
        "winner": "tie (bothbad)",
        "conversation_a": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "**hey**"}],
        "conversation_b": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
    },
    {"model_a": "a", "model_b": "c", "winner": "tie (bothgood)", "language": "en"},
]


def write_jsonl(path: Path, rows: list, blank_after: int | None = None) -> Path:
    lines = [json.dumps(r) if not isinstance(r, str) else r for r in rows]
    if blank_after is not None:
        lines.insert(blank_after, "")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("engine", ["python", "duckdb"])
@pytest.mark.parametrize("as_array", [False, True])
def test_loads_json_and_jsonl(tmp_path: Path, engine: str, as_array: bool) -> None:
    path = tmp_path / ("b.json" if as_array else "b.jsonl")
    if as_array:
        path.write_text(json.dumps(GOOD, indent=2), encoding="utf-8")
    else:
        write_jsonl(path, GOOD)
    records, skipped = load_battles_file(path, engine=engine)
    assert skipped == []
    assert isinstance(records, BattleRecords) and len(records) == 4
    assert records[0]["model_a"] == "a" and records[0]["winner"] == "model_a"
    assert records[1]["sampling_prob"] == 0.5
    assert records[2]["conversation_a"][1]["content"] == "**hey**"
    assert records[3]["language"] == "en"
    board = leaderboard(records, ci_method="sandwich", min_battles=1)
    assert {m.name for m in board.models} == {"a", "b", "c"}


def test_engines_agree_on_ratings(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "b.jsonl", GOOD * 5)
    ratings = [
        leaderboard(load_battles_file(path, engine=e)[0], ci_method="sandwich").ratings()
        for e in ("python", "duckdb")
    ]
    assert ratings[0] == pytest.approx(ratings[1])


BAD_CASES = [
    ({"model_a": "a", "model_b": "b", "winner": "draw"}, "winner", "unknown winner label 'draw'"),
    ({"model_a": "a", "winner": "model_a"}, "model_b", "missing"),
    ({"model_a": "a", "model_b": "a", "winner": "tie"}, "model_b", "self-battle"),
    ({"model_a": "a", "model_b": "", "winner": "tie"}, "model_b", "non-empty model name"),
    ({"model_a": "a", "model_b": "b", "winner": "tie", "sampling_prob": 0}, "sampling_prob", "(0, 1]"),
    ({"model_a": "a", "model_b": "b", "winner": "tie", "tstamp": "noon"}, "tstamp", "expected a number"),
    ({"model_a": "a", "model_b": "b", "winner": "tie", "turn": 0}, "turn", "whole number"),
    ({"model_a": "a", "model_b": "b", "winner": "tie", "conversation_a": "hi"}, "conversation_a", "list"),
    (
        {"model_a": "a", "model_b": "b", "winner": "tie", "conversation_b": [{"role": "user"}]},
        "conversation_b",
        "content",
    ),
    ({"generator_1": "a", "generator_2": "b", "preference": 1}, "generator_1", "AlpacaEval layout"),
]


@pytest.mark.parametrize("engine", ["python", "duckdb"])
@pytest.mark.parametrize(("bad", "field", "text"), BAD_CASES)
def test_bad_row_error_names_line_and_field(
    tmp_path: Path, engine: str, bad: dict, field: str, text: str
) -> None:
    path = write_jsonl(tmp_path / "b.jsonl", [GOOD[0], GOOD[1], bad, GOOD[3]], blank_after=1)
    with pytest.raises(RatingsInputError) as info:
        load_battles_file(path, engine=engine)
    err = info.value
    assert err.line == 4 and err.field == field  # a blank line sits before it
    assert "line 4" in str(err) and f"field '{field}'" in str(err) and text in str(err)


def test_invalid_json_line_is_named(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "b.jsonl", [GOOD[0], '{"model_a": "a",', GOOD[1]])
    with pytest.raises(RatingsInputError, match="line 2: invalid JSON"):
        load_battles_file(path)


def test_json_array_errors_name_the_line(tmp_path: Path) -> None:
    rows = [GOOD[0], {"model_a": "x", "model_b": "y", "winner": "bad"}]
    path = tmp_path / "b.json"
    path.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    with pytest.raises(RatingsInputError) as info:
        load_battles_file(path)
    expected_line = json.dumps(rows, indent=2).splitlines().index("  {", 2) + 1
    assert info.value.line == expected_line and info.value.field == "winner"


def test_skip_bad_collects_reasons(tmp_path: Path) -> None:
    rows = [GOOD[0], {"model_a": "a", "model_b": "b", "winner": "?"}, "not json", GOOD[1], {"x": 1}]
    path = write_jsonl(tmp_path / "b.jsonl", rows)
    records, skipped = load_battles_file(path, skip_bad=True)
    assert len(records) == 2
    assert [line for line, _ in skipped] == [2, 3, 5]
    assert (
        "field 'winner'" in skipped[0][1] and "invalid JSON" in skipped[1][1] and "model_a" in skipped[2][1]
    )
    assert records.lines is not None and records.lines.tolist() == [1, 4]


def test_mixed_layouts_are_rejected(tmp_path: Path) -> None:
    alpaca = {"generator_1": "a", "generator_2": "b", "preference": 2, "instruction": "q", "output_1": "x"}
    path = write_jsonl(tmp_path / "b.jsonl", [alpaca, GOOD[0]])
    with pytest.raises(
        RatingsInputError, match="line 2, field 'model_a'.*FastChat battle layout.*line 1 uses"
    ):
        load_battles_file(path)


def test_alpaca_eval_layout_is_converted(tmp_path: Path) -> None:
    rows = [
        {
            "generator_1": "gpt",
            "generator_2": "base",
            "preference": 1,
            "instruction": "q",
            "output_1": "long",
            "output_2": "s",
        },
        {"generator_1": "gpt", "generator_2": "base", "preference": 2, "instruction": "r"},
        {"generator_1": "gpt", "generator_2": "base", "preference": 1.5, "instruction": "s"},
    ]
    records, _ = load_battles_file(write_jsonl(tmp_path / "a.jsonl", rows))
    assert [r["winner"] for r in records] == ["model_a", "model_b", "tie"]
    assert records[0]["conversation_a"] == [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "long"},
    ]


def test_preference_pairs_are_not_battles(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [{"prompt": "q", "chosen": "a", "rejected": "b"}])
    with pytest.raises(RatingsInputError, match="line 1.*names no models"):
        load_battles_file(path)


def test_missing_file() -> None:
    with pytest.raises(RatingsInputError, match="no such file"):
        load_battles_file("/nonexistent/battles.jsonl")


def test_in_memory_records_name_the_index() -> None:
    with pytest.raises(RatingsInputError) as info:
        leaderboard([GOOD[0], {"model_a": "a", "model_b": "b", "winner": 3}])
    assert info.value.index == 1 and info.value.field == "winner" and "records[1]" in str(info.value)


def test_dataframe_input_is_checked() -> None:
    frame = pd.DataFrame(GOOD[:2])
    assert len(as_records(frame)) == 2
    bad = pd.DataFrame([GOOD[0], {"model_a": "z", "model_b": "z", "winner": "tie"}])
    with pytest.raises(RatingsInputError, match=r"records\[1\], field 'model_b': self-battle"):
        as_records(bad)
    with pytest.raises(RatingsInputError, match="field 'winner': missing column"):
        as_records(pd.DataFrame({"model_a": ["a"], "model_b": ["b"]}))
    # the caller's frame is not modified
    assert frame["model_a"].dtype != "category"


@pytest.mark.parametrize("engine", ["python", "duckdb"])
def test_style_control_without_answers_names_the_record(tmp_path: Path, engine: str) -> None:
    path = write_jsonl(tmp_path / "b.jsonl", [GOOD[2], GOOD[0], GOOD[1]], blank_after=1)
    records, _ = load_battles_file(path, engine=engine)
    with pytest.raises(RatingsInputError, match="line 3, field 'conversation_a': style/vibe control needs"):
        leaderboard(records, style_control=True)


def test_conv_metadata_is_used_for_style(tmp_path: Path) -> None:
    def meta(long: str, short: str) -> dict:
        return {
            f"sum_assistant_{long}_tokens": 300,
            f"sum_assistant_{short}_tokens": 100,
            f"header_count_{long}": {"h1": 1, "h2": 2},
            f"header_count_{short}": {"h1": 0},
            f"list_count_{long}": {"ordered": 1, "unordered": 3},
            f"list_count_{short}": {"ordered": 0, "unordered": 0},
            f"bold_count_{long}": {"**": 2, "__": 0},
            f"bold_count_{short}": {"**": 0, "__": 1},
        }

    rows = [
        {
            "model_a": "m1" if k % 2 else "m2",
            "model_b": "m2" if k % 2 else "m1",
            "winner": "model_a" if k % 3 else "model_b",
            "conv_metadata": meta("a", "b") if k % 4 else meta("b", "a"),
        }
        for k in range(80)
    ]
    coefficients, cant_tell = {}, {}
    for engine in ("python", "duckdb"):
        records, _ = load_battles_file(write_jsonl(tmp_path / f"{engine}.jsonl", rows), engine=engine)
        board = leaderboard(records, style_control=True, ci_method="sandwich")
        coefficients[engine], cant_tell[engine] = board.style_coefficients, board.style_cant_tell
    # Every count comes from the metadata; the side with the longer, richer answer wins 48 of the 80 votes. The four
    # counts move together here, so one is fitted and the other three read can't tell, naming the collinearity.
    assert set(coefficients["python"]) | set(cant_tell["python"]) == {
        "tokens",
        "headers",
        "list_items",
        "bold",
    }
    assert coefficients["python"] and all(c > 0 for c in coefficients["python"].values()), coefficients
    assert all("collinear" in why for why in cant_tell["python"].values()), cant_tell
    assert coefficients["duckdb"] == pytest.approx(coefficients["python"])


@pytest.mark.parametrize("engine", ["python", "duckdb"])
def test_parquet_export(tmp_path: Path, engine: str) -> None:
    path = tmp_path / "battles.parquet"
    pd.DataFrame(GOOD[:2] * 3).to_parquet(path)
    records, _ = load_battles_file(path, engine=engine)
    assert len(records) == 6 and records[1]["winner"] == "tie"
    bad = tmp_path / "bad.parquet"
    pd.DataFrame([GOOD[0], {"model_a": "a", "model_b": "b", "winner": "nope"}]).to_parquet(bad)
    with pytest.raises(RatingsInputError, match="row 2, field 'winner'"):
        load_battles_file(bad, engine=engine)
    records, skipped = load_battles_file(bad, skip_bad=True, engine=engine)
    assert len(records) == 1 and skipped[0][0] == 2
