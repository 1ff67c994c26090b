"""Task sets: imports in the common layouts, row-by-row errors with file/line/field and nothing written, the
honest split by content hash, generated families, and the CLI that prints rows kept and the split.

The rows here are written for these tests (GSM8K-, MATH-, ARC- and MMLU-shaped, not copied from those sets)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from vibestudio.db.models import Task, TaskSet
from vibestudio.training.tasks import (
    TaskError,
    TaskImportError,
    generate_task_set,
    get_task_set,
    import_task_file,
    list_task_sets,
    load_tasks,
    train_tasks,
)
from vibestudio.training.tasks.generator import generate
from vibestudio.training.tasks.store import content_hash, split_of


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def plain_rows(n, start=0):
    return [{"prompt": f"What is {i} plus {i}?", "answer": str(2 * i)} for i in range(start, start + n)]


def count(db, model):
    with db.session() as s:
        return s.scalar(select(func.count()).select_from(model))


def test_layouts(db, tmp_path):
    rows = plain_rows(12) + [
        {
            "question": "Ana has 1,200 coins and spends 200. How many are left?",
            "answer": "1200-200=1000\n#### 1,000",
        },
        {"problem": "What is half of one?", "solution": "It is $\\boxed{\\frac{1}{2}}$."},
        {"problem": "Name the shape with three sides.", "solution": "\\boxed{triangle}"},
        {"question": "Which is a colour?", "choices": ["dog", "red", "car"], "answer": "B"},
        {
            "question": "Which is a fruit?",
            "choices": {"label": ["A", "B"], "text": ["pear", "rock"]},
            "answerKey": "A",
        },
        {"question": "Which is a number?", "choices": ["cat", "seven"], "answer": 1},
        {
            "prompt": "Give a JSON object with a name.",
            "answer": '{"type": "object", "required": ["name"]}',
            "verifier": "json_schema",
        },
        {
            "prompt": "Say a word with the letter z.",
            "answer": "z",
            "verifier": {"type": "regex", "pattern": "z"},
        },
    ]
    result = import_task_file(db, write_jsonl(tmp_path / "t.jsonl", rows), "mixed", licence="CC0")
    assert result.kept == len(rows) and not result.skipped
    info = get_task_set(db, "mixed")
    assert info.provenance["layouts"] == {"prompt/answer": 14, "gsm8k": 1, "math": 2, "choice": 3}
    assert info.provenance["licence"] == "CC0" and info.provenance["file"] == "t.jsonl"
    tasks = {t.prompt.split("\n")[0]: t for t in load_tasks(db, "mixed")}
    gsm = tasks["Ana has 1,200 coins and spends 200. How many are left?"]
    assert (gsm.answer, gsm.verifier["type"]) == ("1000", "numeric")
    assert (tasks["What is half of one?"].answer, tasks["What is half of one?"].verifier["type"]) == (
        "\\frac{1}{2}",
        "exact",
    )
    assert tasks["Name the shape with three sides."].answer == "triangle"
    mc = tasks["Which is a colour?"]
    assert mc.answer == "B" and mc.choices == ["dog", "red", "car"] and "B) red" in mc.prompt
    assert tasks["Which is a number?"].answer == "B"  # a 0-based index becomes a letter
    assert tasks["What is 3 plus 3?"].verifier == {"type": "numeric"}
    assert info.n_train + info.n_heldout == len(rows)


def test_bad_rows_name_file_line_and_field_and_nothing_is_written(db, tmp_path):
    rows = plain_rows(12) + [
        {"prompt": "no answer here"},
        {"question": "x", "answer": "n\n#### "},
        {"prompt": "Pick", "choices": ["a", "b"], "answer": "C"},
        {"prompt": "Count", "answer": "seven", "verifier": "numeric"},
        {"prompt": "", "answer": "1"},
        {"prompt": "p", "answer": "1", "verifier": {"type": "regex"}},
    ]
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    with path.open("a") as fh:
        fh.write("{broken json\n")
    with pytest.raises(TaskImportError) as info:
        import_task_file(db, path, "bad")
    text = str(info.value)
    assert "nothing was written" in text
    for needle in (
        "bad.jsonl:13: field 'answer': no answer",
        "bad.jsonl:15: field 'answer'",
        "bad.jsonl:16: field 'answer': the answer 'seven' is not a number",
        "bad.jsonl:17: field 'prompt'",
        "bad.jsonl:18: field 'verifier'",
        "bad.jsonl:19",
    ):
        assert needle in text, (needle, text)
    assert count(db, TaskSet) == 0 and count(db, Task) == 0
    result = import_task_file(db, path, "bad", skip_bad=True)
    assert result.kept == 12 and len(result.skipped) == 7
    assert get_task_set(db, "bad").n_skipped == 7


def test_too_small_to_split_and_duplicates_and_names(db, tmp_path):
    with pytest.raises(TaskError, match="too small to split"):
        import_task_file(db, write_jsonl(tmp_path / "s.jsonl", plain_rows(4)), "small")
    rows = plain_rows(12) + [{"prompt": "what IS 1   plus 1?", "answer": "2"}]
    result = import_task_file(db, write_jsonl(tmp_path / "d.jsonl", rows), "dups")
    assert result.kept == 12 and "duplicate prompt of d.jsonl:2" in result.skipped[0]
    with pytest.raises(TaskError, match="already exists"):
        import_task_file(db, tmp_path / "d.jsonl", "dups")
    with pytest.raises(TaskError, match="name"):
        import_task_file(db, tmp_path / "d.jsonl", "../evil")
    with pytest.raises(TaskError, match="no such file"):
        import_task_file(db, tmp_path / "missing.jsonl", "m")


def test_parquet_and_a_dataset_folder(db, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "ds" / "data"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(plain_rows(8)), folder / "train-00000-of-00001.parquet")
    write_jsonl(folder / "test.jsonl", plain_rows(8, start=100))
    result = import_task_file(db, tmp_path / "ds", "folder")
    assert result.kept == 16
    assert sorted(get_task_set(db, "folder").provenance["files"]) == [
        "data/test.jsonl",
        "data/train-00000-of-00001.parquet",
    ]
    (tmp_path / "arrow").mkdir()
    (tmp_path / "arrow" / "data-00000-of-00001.arrow").write_bytes(b"x")
    with pytest.raises(TaskImportError, match="not a readable Arrow file"):
        import_task_file(db, tmp_path / "arrow", "arrow")


def test_datasets_save_to_disk_folders(db, tmp_path):
    """Both layouts ``save_to_disk`` writes (Dataset, DatasetDict), read by their own index, row by row."""
    from datasets import Dataset, DatasetDict

    Dataset.from_list(plain_rows(12)).save_to_disk(str(tmp_path / "one"))
    assert import_task_file(db, tmp_path / "one", "one").kept == 12
    gsm = [
        {"question": f"Ana has {i} coins and finds {i}. How many now?", "answer": f"..\n#### {2 * i:,}"}
        for i in range(995, 1005)
    ]
    DatasetDict(
        {
            "train": Dataset.from_list(gsm),
            "test": Dataset.from_list(gsm[:2] + [dict(gsm[0], question="Q?", answer="")]),
        }
    ).save_to_disk(str(tmp_path / "dict"))
    with pytest.raises(TaskImportError) as bad:  # one empty answer: nothing is written, the row is named
        import_task_file(db, tmp_path / "dict", "dict")
    assert [(src, e.record, e.field) for src, e in bad.value.errors] == [
        ("test/data-00000-of-00001.arrow", 2, "answer")
    ]
    assert "test/data-00000-of-00001.arrow row 3: field 'answer'" in str(bad.value)
    result = import_task_file(db, tmp_path / "dict", "dict", skip_bad=True)
    assert result.kept == 10 and len(result.skipped) == 3  # the bad row and the two duplicates of train rows
    info = get_task_set(db, "dict")
    assert info.provenance["files"] == ["train/data-00000-of-00001.arrow", "test/data-00000-of-00001.arrow"]
    assert {t.answer for t in load_tasks(db, "dict")} >= {"1990", "2000"}  # GSM8K layout, separators gone
    # a tampered index may not point outside the folder, nor at a file that is not there
    state = tmp_path / "one" / "state.json"
    saved = json.loads(state.read_text())
    for name, msg in (("../../etc/passwd", "not a plain file"), ("nope.arrow", "not an .arrow file here")):
        state.write_text(json.dumps({**saved, "_data_files": [{"filename": name}]}))
        with pytest.raises(TaskImportError, match=msg):
            import_task_file(db, tmp_path / "one", f"t{len(name)}")
    (tmp_path / "dict" / "dataset_dict.json").write_text('{"splits": ["train", "../one"]}')
    with pytest.raises(TaskImportError, match=r"dataset_dict.json: field 'splits\[1\]'"):
        import_task_file(db, tmp_path / "dict", "t3")
    # a plain folder of Arrow files is read too, but a datasets cache file is derived data, not rows
    (tmp_path / "plain").mkdir()
    (tmp_path / "dict" / "train" / "data-00000-of-00001.arrow").rename(tmp_path / "plain" / "part.arrow")
    (tmp_path / "plain" / "cache-0123.arrow").write_bytes(b"junk")
    assert import_task_file(db, tmp_path / "plain", "plain").kept == 10


def test_split_is_by_content_hash_and_the_same_everywhere(db, tmp_path):
    rows = plain_rows(60)
    import_task_file(db, write_jsonl(tmp_path / "a.jsonl", rows), "a")
    import_task_file(db, write_jsonl(tmp_path / "b.jsonl", list(reversed(rows))), "b")
    split_a = {t.content_hash: t.split for t in load_tasks(db, "a")}
    split_b = {t.content_hash: t.split for t in load_tasks(db, "b")}
    assert split_a == split_b
    assert 0 < list(split_a.values()).count("heldout") < 60
    for t in load_tasks(db, "a"):
        assert t.content_hash == content_hash(t.prompt) and t.split == split_of(t.content_hash, 0.2)
    assert all(t.split == "train" for t in train_tasks(db, "a"))


def test_a_train_task_held_out_elsewhere_is_refused(db, tmp_path):
    rows = plain_rows(40)
    import_task_file(db, write_jsonl(tmp_path / "a.jsonl", rows), "strict", heldout_fraction=0.5)
    import_task_file(db, write_jsonl(tmp_path / "b.jsonl", rows), "loose", heldout_fraction=0.1)
    train_tasks(db, "strict")
    with pytest.raises(TaskError, match="held out in task set 'strict'.*never trains on a held-out task"):
        train_tasks(db, "loose")


def test_generated_families_are_deterministic_and_checkable(db):
    for family in ("arithmetic", "units", "strings"):
        for d in (1, 2, 3, 4):
            a, b = generate(family, 30, d, seed=1), generate(family, 30, d, seed=1)
            assert a == b and len({r["prompt"] for r in a}) == 30
    assert generate("arithmetic", 5, 1, seed=1) != generate("arithmetic", 5, 1, seed=2)
    result = generate_task_set(db, "units", 50, "units-1", difficulty=2, seed=3)
    assert result.kept == 50 and get_task_set(db, "units-1").provenance["family"] == "units"
    from vibestudio.training.tasks.verifiers import verify

    for t in load_tasks(db, "units-1"):
        assert verify(t.verifier, f"Answer: {t.answer}", t.answer).passed, t
    with pytest.raises(TaskError, match="unknown task family"):
        generate_task_set(db, "poetry", 10, "p")
    with pytest.raises(TaskError, match="difficulty"):
        generate_task_set(db, "arithmetic", 10, "p", difficulty=9)


def test_cli_import_generate_list_show(db, tmp_path, monkeypatch):
    from vibestudio.studio.cli import app

    monkeypatch.setenv("VIBESTUDIO_DATABASE_URL", db.url)
    runner = CliRunner()
    path = write_jsonl(tmp_path / "t.jsonl", plain_rows(30))
    out = runner.invoke(app, ["tasks", "import", str(path), "--name", "sums"])
    assert out.exit_code == 0, out.output
    info = get_task_set(db, "sums")
    assert (
        "kept 30 task(s)" in out.output and f"{info.n_train} train / {info.n_heldout} held-out" in out.output
    )
    out = runner.invoke(app, ["tasks", "generate", "--family", "arithmetic", "--n", "40", "--name", "gen"])
    assert out.exit_code == 0 and "kept 40" in out.output, out.output
    out = runner.invoke(app, ["tasks", "list"])
    assert "sums" in out.output and "gen" in out.output
    out = runner.invoke(app, ["tasks", "show", "sums"])
    assert out.exit_code == 0 and "-- held-out --" in out.output and "What is" in out.output
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"prompt": "x"}] * 3)
    out = runner.invoke(app, ["tasks", "import", str(bad), "--name", "bad"])
    assert out.exit_code == 1 and "bad.jsonl:1: field 'answer': no answer" in out.output
    assert [s.name for s in list_task_sets(db)] == ["sums", "gen"]
