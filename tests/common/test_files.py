"""The one reader of untrusted JSON / JSONL files splits lines on "\\n" only: every Unicode line break that JSON
allows inside a string stays inside its row, and errors still name the right line."""

from __future__ import annotations

import gzip
import json

import pytest

from vibestudio.common.files import iter_json_lines, read_records, records_from_bytes, split_json_lines

# Characters str.splitlines() breaks on besides "\n"; JSON allows the first three raw inside a string and the
# rest escaped (a raw control character inside a JSON string is invalid JSON).
BREAKS = {
    "U+2028": "\u2028",
    "U+2029": "\u2029",
    "U+0085": "\x85",
    "form feed": "\x0c",
    "vertical tab": "\x0b",
    "lone CR": "\r",
    "U+001C": "\x1c",
    "U+001D": "\x1d",
    "U+001E": "\x1e",
}


def _jsonl(rows: list) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


@pytest.mark.parametrize("name", list(BREAKS))
def test_a_line_break_inside_a_string_stays_in_its_row(tmp_path, name):
    ch = BREAKS[name]
    rows = [{"id": 1, "text": "plain"}, {"id": 2, "text": f"one{ch}two{ch}"}, {"id": 3, "text": "x"}]
    text = _jsonl(rows)
    if name.startswith("U+20") or name == "U+0085":
        assert ch in text and len(text.splitlines()) > 3  # raw in the file: splitlines() would cut the row
    assert [(n, v) for n, v in iter_json_lines(text)] == [(1, rows[0]), (2, rows[1]), (3, rows[2])]
    for path, data in (
        (tmp_path / "r.jsonl", text.encode()),
        (tmp_path / "r.jsonl.gz", gzip.compress(text.encode())),
    ):
        path.write_bytes(data)
        records, errors = read_records(path)
        assert errors == [] and [r.value for r in records] == rows and [r.line for r in records] == [1, 2, 3]
    records, errors = records_from_bytes(text.encode("utf-8"))
    assert errors == [] and [r.value for r in records] == rows


def test_crlf_blank_lines_and_line_numbers_of_errors():
    text = '{"a": "x\u2028y"}\r\n\r\n  \n{"a": 2}\r\n{"a": "broken\n{"a": 4}'
    got = list(iter_json_lines(text))
    assert got[0] == (1, {"a": "x\u2028y"}) and got[1] == (4, {"a": 2}) and got[3] == (6, {"a": 4})
    line, err = got[2]
    assert line == 5 and err.line == 5 and "invalid JSON" in err.message
    assert err.format("f.jsonl").startswith("f.jsonl:5:")
    assert [ln for ln, _ in split_json_lines("a\u2028b\n\x0c\nc\x85")] == [1, 2, 3]


def test_a_raw_separator_outside_a_string_is_not_taken_for_whitespace():
    # JSON whitespace is space, tab, CR and LF; a form feed or U+2028 between tokens is an error, not a new row
    for junk in ("\x0c", "\u2028"):
        ((line, value),) = iter_json_lines('{"a": 1}' + junk)
        assert line == 1 and not isinstance(value, dict)


def test_arrays_and_bom_keep_lines_counted_by_newlines_only():
    rows = [{"t": "a\u2028b"}, {"t": "c\u2029d"}]
    body = "[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n]\n"
    records, errors = records_from_bytes(b"\xef\xbb\xbf" + body.encode())
    assert errors == [] and [r.value for r in records] == rows and [r.line for r in records] == [2, 3]
    records, errors = records_from_bytes(body.encode("utf-16"))
    assert errors == [] and [r.value for r in records] == rows
    records, errors = records_from_bytes(b'{"t": "ok"}\n{"t": "\xff"}\n')
    assert [r.value for r in records] == [] and errors[0].line == 2 and "0xff" in errors[0].message
