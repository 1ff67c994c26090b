"""Budgets, not limits a format can sidestep (``common.files.Budget``): decoded bytes, rows and values are all
counted, before the memory is spent, for every importer: JSON, JSONL, CSV, Parquet, Arrow, a folder of files,
compressed or not. Each refusal names the limit and its setting, and echoes no path or field name.

The two bombs of the review are measured in a child process (its peak resident memory): a 1 MB gzip JSON file
under the default budget, and a few-KB Parquet file whose dictionary column decodes to gigabytes under a 1 MB
limit.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from vibestudio.common.files import csv_records_from_bytes, read_records, records_from_bytes

ROOT = Path(__file__).resolve().parents[2]


def _gzip_bomb(path: Path, members: int = 12, member_mb: int = 64) -> Path:
    """About 1 MB of gzip that expands to ``members * member_mb`` MB of one JSON array of short objects padded
    with the whitespace JSON allows (what compresses best): one compressed member, repeated (gzip allows members
    back to back), so it is made in about a second."""
    unit = b'{"prompt":"p","chosen":"a","rejected":"b"},'
    unit += b" " * (4096 - len(unit))
    body = unit * (member_mb * 2**20 // len(unit))
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: a gzip member
    member = comp.compress(body) + comp.flush()
    with open(path, "wb") as fh:
        head = zlib.compressobj(9, zlib.DEFLATED, 31)
        fh.write(head.compress(b"[") + head.flush())
        for _ in range(members):
            fh.write(member)
    return path


def _dictionary_bomb(path: Path, rows: int = 1_000_000, entry_kb: int = 4) -> Path:
    """A Parquet file of about 3 KB whose one column is a dictionary of a single ``entry_kb`` KB string that every
    row names: ``rows * entry_kb`` KB (4 GB) once decoded, while each Arrow batch's own memory counts the entry
    once (what the old reader measured: it decoded 256 MB before its count passed 1 MB)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    dictionary = pa.array(["x" * (entry_kb * 1024)])
    col = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, dtype=np.int32)), dictionary)
    # no statistics: pyarrow would compute a min and max over the decoded strings (seconds) to write them
    pq.write_table(
        pa.table({"prompt": col}), path, compression="zstd", row_group_size=rows, write_statistics=False
    )
    return path


_MEASURE = """
import json, os, resource, sys
from vibestudio.common.files import read_records
import pyarrow.parquet  # imported before the baselines: its own size is not a file's
out = []
for path, mb in zip(sys.argv[1::2], sys.argv[2::2]):
    os.environ.pop("VIBESTUDIO_MAX_IMPORT_MB", None)  # "default": the shipped default
    if mb != "default":
        os.environ["VIBESTUDIO_MAX_IMPORT_MB"] = mb
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    records, errors = read_records(path)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out.append([(peak - base) / 1024, len(records), errors[0].message if errors else ""])
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def bombs(tmp_path_factory) -> dict[str, tuple[float, str]]:
    """Both bombs read in one fresh interpreter (one start-up paid), the Parquet one first (its budget is the
    smaller, so the gzip one's growth is measured above a low peak): {name: (growth of peak memory in MB, error)}."""
    import os

    folder = tmp_path_factory.mktemp("bombs")
    gz, pq = _gzip_bomb(folder / "bomb.json.gz"), _dictionary_bomb(folder / "bomb.parquet")
    assert gz.stat().st_size < 1.2 * 2**20 and pq.stat().st_size < 8_000  # 768 MB and 4 GB decoded
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(pq), "1", str(gz), "default"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout)
    assert [n for _, n, _ in got] == [0, 0], "nothing half-read comes back"
    return {"parquet": (got[0][0], got[0][2]), "gzip": (got[1][0], got[1][2]), "folder": str(folder)}  # type: ignore[dict-item]


def test_a_one_mb_gzip_json_bomb_is_refused_within_the_default_budget(bombs):
    growth, message = bombs["gzip"]
    assert "VIBESTUDIO_MAX_IMPORT_MB" in message and "256 MB" in message and bombs["folder"] not in message
    # the default budget is 256 MB of text: the reader holds at most that (all 768 MB and its parse before)
    assert growth < 400, f"peak grew by {growth:.0f} MB"


def test_a_tiny_parquet_file_that_decodes_huge_is_refused_before_it_is_decoded(bombs):
    growth, message = bombs["parquet"]
    assert "VIBESTUDIO_MAX_IMPORT_MB" in message and "prompt" not in message
    assert growth < 32, f"peak grew by {growth:.0f} MB"  # refused within its first batches


def test_a_column_of_nulls_is_not_free(tmp_path, monkeypatch):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"a": pa.nulls(300_000), "b": pa.nulls(300_000)}), path)
    assert path.stat().st_size < 20_000
    monkeypatch.setenv("VIBESTUDIO_MAX_IMPORT_MB", "1")
    records, errors = read_records(path)
    assert records == [] and "VIBESTUDIO_MAX_IMPORT_MB" in errors[0].message
    monkeypatch.setenv("VIBESTUDIO_MAX_IMPORT_MB", "256")
    monkeypatch.setenv("VIBESTUDIO_MAX_IMPORT_ROWS", "1000")
    records, errors = read_records(path)
    assert (
        records == []
        and "1,000 rows" in errors[0].message
        and "VIBESTUDIO_MAX_IMPORT_ROWS" in errors[0].message
    )


def test_an_arrow_file_is_counted_by_batch_slices_and_odd_types_are_refused(tmp_path, monkeypatch):
    pa = pytest.importorskip("pyarrow")

    dictionary = pa.array(["y" * 2**20])
    col = pa.DictionaryArray.from_arrays(pa.array([0] * 2000, type=pa.int32()), dictionary)
    path = tmp_path / "data.arrow"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, pa.schema([("t", col.type)])) as w:
        w.write_batch(pa.record_batch([col], names=["t"]))  # one batch of 2000 rows: 2 GB decoded
    monkeypatch.setenv("VIBESTUDIO_MAX_IMPORT_MB", "8")
    records, errors = read_records(path)
    assert records == [] and "VIBESTUDIO_MAX_IMPORT_MB" in errors[0].message

    ree = pa.RunEndEncodedArray.from_arrays(pa.array([1_000_000], pa.int32()), pa.array(["z" * 1000]))
    odd = tmp_path / "ree.arrow"
    with (
        pa.OSFile(str(odd), "wb") as sink,
        pa.ipc.new_stream(sink, pa.schema([("secret_field", ree.type)])) as w,
    ):
        w.write_batch(pa.record_batch([ree], names=["secret_field"]))
    records, errors = read_records(odd)
    assert (
        records == [] and "run_end_encoded" in errors[0].message and "secret_field" not in errors[0].message
    )


def test_json_values_are_counted_before_parsing(tmp_path, monkeypatch):
    monkeypatch.setenv("VIBESTUDIO_MAX_IMPORT_VALUES", "100000")
    nested = b"[" + b"[]," * 200_000 + b"[]]"  # 600 KB of text, 200k lists: the bytes budget alone lets it in
    (tmp_path / "lists.json").write_bytes(nested)
    records, errors = read_records(tmp_path / "lists.json")
    assert records == [] and "VIBESTUDIO_MAX_IMPORT_VALUES" in errors[0].message
    lines = b"\n".join(b'{"k": [' + b"0," * 999 + b"0]}" for _ in range(200))  # 200k values in JSONL
    (tmp_path / "lines.jsonl.gz").write_bytes(gzip.compress(lines))
    records, errors = read_records(tmp_path / "lines.jsonl.gz")
    assert records == [] and "100,000 values" in errors[0].message
    records, errors = records_from_bytes(nested)
    assert records == [] and "VIBESTUDIO_MAX_IMPORT_VALUES" in errors[0].message
    monkeypatch.setenv("VIBESTUDIO_MAX_IMPORT_VALUES", "1000000")
    records, errors = read_records(tmp_path / "lines.jsonl.gz")
    assert errors == [] and len(records) == 200


def test_csv_rows_and_bytes_are_counted(monkeypatch):
    data = b"prompt,category\n" + b"hello,x\n" * 5000
    monkeypatch.setenv("VIBESTUDIO_MAX_IMPORT_ROWS", "1000")
    records, errors = csv_records_from_bytes(data)
    assert records == [] and "VIBESTUDIO_MAX_IMPORT_ROWS" in errors[0].message
    monkeypatch.setenv("VIBESTUDIO_MAX_IMPORT_ROWS", "10000")
    monkeypatch.setenv("VIBESTUDIO_MAX_IMPORT_MB", "1")
    records, errors = csv_records_from_bytes(data * 40)
    assert records == [] and "VIBESTUDIO_MAX_IMPORT_MB" in errors[0].message
    monkeypatch.setenv("VIBESTUDIO_MAX_IMPORT_MB", "8")
    records, errors = csv_records_from_bytes(data)
    assert errors == [] and len(records) == 5000


def test_a_folders_files_share_one_budget(tmp_path, monkeypatch):
    from vibestudio.training.tasks.importers import read_task_files

    folder = tmp_path / "tasks"
    folder.mkdir()
    for i in range(3):  # each file alone is within the row limit, the three together are not
        rows = [json.dumps({"prompt": f"{i}-{k} + 1 =", "answer": str(k)}) for k in range(400)]
        (folder / f"part{i}.jsonl").write_text("\n".join(rows) + "\n")
    monkeypatch.setenv("VIBESTUDIO_MAX_IMPORT_ROWS", "1000")
    out = read_task_files(folder)
    messages = [e.message for _, e in out.errors]
    assert any("VIBESTUDIO_MAX_IMPORT_ROWS" in m for m in messages), messages
    assert len(out.rows) <= 1000
    monkeypatch.setenv("VIBESTUDIO_MAX_IMPORT_ROWS", "5000")
    assert not read_task_files(folder).errors
