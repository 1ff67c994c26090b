"""The one reader of untrusted files also reads CSV and YAML: each problem comes back as a ``RowError`` naming the
line (and the file when formatted), never as an exception, and hostile YAML (alias bombs, recursion, deep nesting,
wrong encodings, huge files) is refused before any caller walks it."""

from __future__ import annotations

import pytest

from vibestudio.common.files import (
    MAX_YAML_BYTES,
    MAX_YAML_VALUES,
    csv_records_from_bytes,
    parse_yaml,
    read_yaml,
    yaml_from_bytes,
)


def _bomb(levels: int = 9) -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_yaml_syntax_errors_name_line_and_column():
    value, err = parse_yaml("name: x\nversion: 1\ncriteria: [\n  - {")
    assert value is None and err is not None and err.line == 4
    assert err.format("x.yaml").startswith("x.yaml:4: not valid YAML (") and "column" in err.message
    _, err = parse_yaml("a: 1\n---\nb: 2\n")
    assert err is not None and err.line == 2 and "single document" in err.message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_bomb(), f"more than {MAX_YAML_VALUES:,} values"),
        ("a: &a [1, *a]\n", "refers to itself"),
        ("[" * 5000 + "]" * 5000, "nested too deeply"),
    ],
)
def test_hostile_yaml_is_refused_without_being_expanded(text, message):
    value, err = parse_yaml(text)
    assert value is None and err is not None and message in err.message


def test_a_few_aliases_are_fine():
    value, err = parse_yaml("base: &b {temperature: 0.7}\nfirst: *b\nsecond: *b\n")
    assert err is None and value["second"] == {"temperature": 0.7}


def test_yaml_files_are_utf8_and_size_limited(tmp_path):
    assert yaml_from_bytes(b"\xef\xbb\xbfname: x\n") == ({"name": "x"}, None)
    _, err = yaml_from_bytes("a: 1\nname: café\n".encode("latin-1"))
    assert err is not None and err.line == 2 and "not valid utf-8 (byte 0xe9" in err.message
    _, err = yaml_from_bytes("name: x\n".encode("utf-16"))
    assert err is not None and "UTF-8" in err.message
    big = tmp_path / "big.yaml"
    big.write_bytes(b"x: " + b"y" * MAX_YAML_BYTES)
    _, err = read_yaml(big)
    assert err is not None and "MB limit" in err.message
    _, err = read_yaml(tmp_path / "missing.yaml")
    assert err is not None and err.format("missing.yaml").startswith("missing.yaml: cannot read the file")


def test_csv_rows_keep_their_first_line_and_extra_fields_are_reported():
    data = b'turn1,category\n"two\nlines",w\n\nshort\na,b,extra\n'
    records, errors = csv_records_from_bytes(data)
    assert [(r.line, r.value) for r in records] == [
        (2, {"turn1": "two\nlines", "category": "w"}),
        (5, {"turn1": "short", "category": None}),
    ]
    assert [(e.line, e.message) for e in errors] == [(6, "3 fields but the header names 2")]


def test_csv_errors_name_the_line():
    _, errors = csv_records_from_bytes(b'turn1\nok\n"' + b"y" * 2**18 + b'"\n')
    assert errors[0].line == 3 and "field larger than field limit" in errors[0].message
    _, errors = csv_records_from_bytes("turn1\nok\ncafé\n".encode("latin-1"))
    assert errors[0].format("p.csv").startswith("p.csv:3: not valid utf-8 (byte 0xe9")
    assert csv_records_from_bytes(b"") == ([], [])
