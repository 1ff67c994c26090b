"""Bad input: every bad row named by line and field before anything is written; skip-and-list on request;
a 50 MB line, wrong encodings and duplicated ids handled without crashing."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from tests.helpers.files import write_json
from vibestudio.annotation.formats import ImportValidationError, import_file, parse_file, read_records
from vibestudio.annotation.queues import list_queues
from vibestudio.db.models import AnnotationQueue, Label, QueueItem


def _count(db, model) -> int:
    with db.session() as s:
        return s.scalar(select(func.count(model.id))) or 0


def _bad_alpaca(tmp_path, alpaca_rows):
    rows = [dict(r) for r in alpaca_rows]
    del rows[1]["output_2"]
    rows[2]["preference"] = 3
    rows[3]["instruction"] = 42
    return write_json(tmp_path / "bad.json", rows)


def test_every_bad_row_is_reported_and_nothing_is_written(db, tmp_path, alpaca_rows):
    path = _bad_alpaca(tmp_path, alpaca_rows)
    with pytest.raises(ImportValidationError) as info, db.session() as s:
        import_file(s, path, "alpaca_eval", queue="bad")
    report = info.value.report
    # JSON array elements keep their line: each record spans 9-10 lines of the indented file
    found = [(e.line, e.field) for e in report.errors]
    assert found == [(11, "output_2"), (19, "preference"), (28, "instruction")]
    assert "bad.json:19: field 'preference': 3 is outside 1..2" in str(info.value)
    assert _count(db, QueueItem) == 0 and _count(db, Label) == 0 and _count(db, AnnotationQueue) == 0


def test_skip_bad_imports_the_good_rows_and_lists_the_rest(db, tmp_path, alpaca_rows):
    path = _bad_alpaca(tmp_path, alpaca_rows)
    with db.session() as s:
        report = import_file(s, path, "alpaca_eval", queue="partly", skip_bad=True)
    assert report.n_labels == 1 and [e.field for e in report.skipped] == [
        "output_2",
        "preference",
        "instruction",
    ]
    assert "skipped 3 bad row(s)" in report.summary()
    assert _count(db, Label) == 1


def test_dry_run_validates_without_writing(db, tmp_path, alpaca_rows):
    with db.session() as s:
        report = import_file(s, write_json(tmp_path / "ok.json", alpaca_rows), "alpaca_eval", dry_run=True)
    assert report.n_labels == 4 and report.dry_run and _count(db, Label) == 0


def test_a_50_mb_jsonl_line_is_reported_without_stopping_the_rest(db, tmp_path, trl_rows):
    path = tmp_path / "huge.jsonl"
    big = {"prompt": "x", "chosen": "y" * (50 * 2**20), "rejected": "z"}
    with path.open("w") as fh:
        fh.write(json.dumps(trl_rows[0]) + "\n")
        fh.write(json.dumps(big) + "\n")
        fh.write(json.dumps(trl_rows[1]) + "\n")
    with db.session() as s:
        report = import_file(s, path, "trl", skip_bad=True)
    assert report.n_labels == 2
    (err,) = report.skipped
    assert err.line == 2 and "50.0 MB, over the 16 MB limit" in err.message


def test_a_50_mb_single_line_json_array_is_parsed_and_the_huge_field_refused(db, tmp_path, alpaca_rows):
    rows = [dict(alpaca_rows[0]), dict(alpaca_rows[1], output_1="w" * (50 * 2**20))]
    path = tmp_path / "one_line.json"
    path.write_text(json.dumps(rows))  # one line, ~50 MB
    assert path.read_bytes().count(b"\n") == 0 and path.stat().st_size > 50 * 2**20
    with pytest.raises(ImportValidationError) as info, db.session() as s:
        import_file(s, path, "alpaca_eval")
    (err,) = info.value.report.errors
    assert (err.line, err.record, err.field) == (1, 1, "output_1")
    assert "52,428,800 characters; at most 1,000,000" in err.message


def test_wrong_encoding_names_the_line_and_an_explicit_encoding_fixes_it(db, tmp_path):
    path = tmp_path / "latin.jsonl"
    good = json.dumps({"prompt": "Say hi", "chosen": "Hi", "rejected": "Yo"}, ensure_ascii=False)
    bad = json.dumps({"prompt": "Café?", "chosen": "Oui, café", "rejected": "Non"}, ensure_ascii=False)
    path.write_bytes(good.encode() + b"\n" + bad.encode("cp1252") + b"\n")
    with pytest.raises(ImportValidationError) as info, db.session() as s:
        import_file(s, path, "trl")
    (err,) = info.value.report.errors
    assert err.line == 2 and "not valid utf-8 (byte 0xe9" in err.message and "--encoding" in err.message
    with db.session() as s:
        report = import_file(s, path, "trl", encoding="cp1252")
    assert report.n_labels == 2
    with db.session() as s:
        assert "Oui, café" in s.scalars(select(QueueItem.answer_1)).all()


def test_bom_utf8_and_utf16_files_are_read(tmp_path, trl_rows):
    text = "\n".join(json.dumps(r) for r in trl_rows) + "\n"
    (tmp_path / "a.jsonl").write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    (tmp_path / "b.jsonl").write_bytes(text.encode("utf-16"))  # with BOM
    (tmp_path / "c.json").write_bytes(json.dumps(trl_rows).encode("utf-16"))
    for name in ("a.jsonl", "b.jsonl", "c.json"):
        records, errors = read_records(tmp_path / name)
        assert errors == [] and [r.value for r in records] == trl_rows, name


def test_duplicated_ids_and_rows_are_errors_naming_the_first_line(db, tmp_path, ultrafeedback_rows):
    rows = [*ultrafeedback_rows, dict(ultrafeedback_rows[0], chosen=ultrafeedback_rows[1]["chosen"])]
    rows.append(dict(ultrafeedback_rows[1], prompt_id="zz"))  # same content as row 2 under another id
    path = write_json(tmp_path / "dups.jsonl", rows, lines=True)
    fmt, n, good, errors = parse_file(path, "ultrafeedback")
    assert n == 5 and len(good) == 3
    assert [(e.line, e.field) for e in errors] == [(4, "rejected"), (5, None)]
    rows[3] = dict(ultrafeedback_rows[2])
    rows[3]["prompt_id"] = "a1"
    path = write_json(tmp_path / "dups2.jsonl", rows[:4], lines=True)
    _, _, _, errors = parse_file(path, "ultrafeedback")
    assert [(e.line, e.field, e.message) for e in errors] == [
        (4, "prompt_id", "id 'a1' is duplicated (first on line 1)")
    ]


def test_importing_the_same_file_twice_is_refused(db, tmp_path, alpaca_rows):
    path = write_json(tmp_path / "once.json", alpaca_rows)
    with db.session() as s:
        import_file(s, path, "alpaca_eval", queue="q")
    with pytest.raises(ImportValidationError, match="already in queue 'q'"), db.session() as s:
        import_file(s, path, "alpaca_eval", queue="q")
    assert _count(db, Label) == 4


def test_invalid_json_and_non_objects_are_reported_per_line(db, tmp_path, trl_rows):
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(trl_rows[0]) + "\n{not json\n[1, 2]\n\n" + json.dumps(trl_rows[1]) + "\n")
    with pytest.raises(ImportValidationError) as info, db.session() as s:
        import_file(s, path)  # format detected from the first record
    assert [(e.line, e.message.split(" (")[0]) for e in info.value.report.errors] == [
        (2, "invalid JSON"),
        (3, "expected a JSON object, got list"),
    ]


def test_broken_json_array_stops_at_the_broken_element(tmp_path, alpaca_rows):
    text = json.dumps(alpaca_rows[:2], indent=1)
    text = text[: text.rindex("}")] + ",, }]"
    (tmp_path / "cut.json").write_text(text)
    records, errors = read_records(tmp_path / "cut.json")
    assert len(records) == 1 and len(errors) == 1 and errors[0].line is not None and errors[0].line > 5


def test_fastchat_bad_conversation_and_unknown_layout(db, tmp_path, fastchat_rows):
    rows = [
        dict(fastchat_rows[0], winner="model_c"),
        dict(fastchat_rows[2], conversation_b=[{"role": "bot"}]),
    ]
    _, _, good, errors = parse_file(write_json(tmp_path / "f.json", rows), "fastchat")
    assert good == [] and [e.field for e in errors] == ["winner", "conversation_b[0]"]
    _, _, good, errors = parse_file(write_json(tmp_path / "u.json", [{"foo": 1}]))
    assert "cannot tell the layout" in errors[0].message
    with db.session() as s:
        assert list_queues(s) == []
