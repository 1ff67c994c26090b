"""Read records from the files people bring, without trusting them: JSON arrays, JSONL, Parquet, gzip.

Every record keeps the line it starts on, so errors can name it. A JSONL line longer than ``max_line_bytes`` is
reported and skipped without being held in memory; a line in another encoding is reported with the byte that
broke it (UTF-8 is the default; a BOM selects UTF-8-SIG or UTF-16; ``encoding`` overrides). A JSON array is
parsed element by element, so one broken element is reported at its line. Reading never raises on bad content:
problems come back as ``RowError`` values next to the records that could be read.
"""

from __future__ import annotations

import bisect
import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

MAX_LINE_BYTES = 16 * 2**20
MAX_FILE_BYTES = 2 * 2**30
_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


@dataclass
class RowError:
    """A problem with one row (``line``/``record`` where known) and one field (when it is about a field)."""

    line: int | None
    field: str | None
    message: str
    record: int | None = None

    def where(self, source: str = "") -> str:
        loc = source
        if self.line is not None:
            loc += f":{self.line}"
        elif self.record is not None:
            loc += f" row {self.record + 1}"
        return loc

    def format(self, source: str = "") -> str:
        head = self.where(source)
        fld = f" field {self.field!r}:" if self.field else ""
        return f"{head}:{fld} {self.message}" if head else f"{fld.strip()} {self.message}".strip()

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "record": self.record, "field": self.field, "message": self.message}


@dataclass
class RawRecord:
    line: int | None
    index: int
    value: Any


def _encoding_hint(enc: str, raw: bytes, pos: int) -> str:
    byte = raw[pos : pos + 1].hex() if pos < len(raw) else "?"
    return (
        f"not valid {enc} (byte 0x{byte} at position {pos + 1} of the line); re-save the file as UTF-8 "
        "or give its encoding (e.g. --encoding cp1252)"
    )


def _open(path: Path) -> IO[bytes]:
    if path.suffix == ".gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return path.open("rb")


def _sniff(path: Path) -> tuple[bytes, str | None]:
    """The first bytes (to tell an array from JSONL) and the BOM's encoding if any."""
    with _open(path) as fh:
        head = fh.read(4096)
    for bom, enc in _BOMS:
        if head.startswith(bom):
            return head[len(bom) :], enc
    return head, None


def read_records(
    path: str | Path, encoding: str | None = None, max_line_bytes: int = MAX_LINE_BYTES
) -> tuple[list[RawRecord], list[RowError]]:
    """All records of a JSON / JSONL / Parquet file (optionally .gz), with the errors met on the way."""
    p = Path(path)
    if not p.exists():
        return [], [RowError(None, None, f"file {p} does not exist")]
    if p.stat().st_size > MAX_FILE_BYTES:
        return [], [RowError(None, None, f"file is larger than {MAX_FILE_BYTES // 2**30} GB")]
    if p.suffix == ".parquet":
        return _read_parquet(p)
    try:
        head, bom_enc = _sniff(p)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        return [], [RowError(None, None, f"cannot read the file ({exc})")]
    enc = encoding or bom_enc or "utf-8"
    first = head.lstrip()[:1]
    if bom_enc == "utf-16" or (encoding and encoding.lower().replace("_", "-").startswith("utf-16")):
        return _read_text_whole(p, enc)
    if first == b"[":
        return _read_text_whole(p, enc)
    return _read_jsonl(p, enc, max_line_bytes)


def _read_parquet(p: Path) -> tuple[list[RawRecord], list[RowError]]:
    try:
        import pyarrow.parquet as pq

        rows = pq.read_table(p).to_pylist()
    except Exception as exc:  # pyarrow raises many types for a bad file
        return [], [RowError(None, None, f"not a readable Parquet file ({exc})")]
    return [RawRecord(None, i, r) for i, r in enumerate(rows)], []


def _read_jsonl(p: Path, enc: str, limit: int) -> tuple[list[RawRecord], list[RowError]]:
    records: list[RawRecord] = []
    errors: list[RowError] = []
    lineno = 0
    with _open(p) as fh:
        while True:
            try:
                chunk = fh.readline(limit + 1)
            except (OSError, EOFError) as exc:
                errors.append(RowError(lineno + 1, None, f"cannot read ({exc})"))
                break
            if not chunk:
                break
            lineno += 1
            if len(chunk) > limit and not chunk.endswith(b"\n"):
                size = len(chunk)
                while True:
                    more = fh.readline(1 << 20)
                    size += len(more)
                    if not more or more.endswith(b"\n"):
                        break
                errors.append(
                    RowError(
                        lineno,
                        None,
                        f"line is {size / 2**20:.1f} MB, over the {limit / 2**20:.0f} MB limit for one record "
                        "(raise the limit with --max-line-mb to accept it)",
                    )
                )
                continue
            if lineno == 1 and enc == "utf-8-sig" and chunk.startswith(b"\xef\xbb\xbf"):
                chunk = chunk[3:]
            try:
                text = chunk.decode("utf-8" if enc == "utf-8-sig" else enc)
            except UnicodeDecodeError as exc:
                errors.append(RowError(lineno, None, _encoding_hint(exc.encoding, chunk, exc.start)))
                continue
            except LookupError:
                return [], [RowError(None, None, f"unknown encoding {enc!r}")]
            text = text.strip()
            if not text:
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                errors.append(RowError(lineno, None, f"invalid JSON ({exc.msg} at column {exc.colno})"))
                continue
            except RecursionError:
                errors.append(RowError(lineno, None, "invalid JSON (nested too deeply)"))
                continue
            records.append(RawRecord(lineno, len(records), value))
    return records, errors


def _read_text_whole(p: Path, enc: str) -> tuple[list[RawRecord], list[RowError]]:
    with _open(p) as fh:
        raw = fh.read()
    try:
        text = raw.decode(enc)
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        start = raw.rfind(b"\n", 0, exc.start) + 1
        return [], [RowError(line, None, _encoding_hint(exc.encoding, raw[start:], exc.start - start))]
    except LookupError:
        return [], [RowError(None, None, f"unknown encoding {enc!r}")]
    if text.startswith("\ufeff"):
        text = text[1:]
    return parse_json_text(text)


def parse_json_text(text: str) -> tuple[list[RawRecord], list[RowError]]:
    """A JSON array parsed element by element (each with its line), or JSON lines, or one JSON object."""
    newlines = [m.start() for m in re.finditer("\n", text)]

    def line_at(pos: int) -> int:
        return bisect.bisect_left(newlines, pos) + 1

    dec = json.JSONDecoder()
    i, n = 0, len(text)
    while i < n and text[i].isspace():
        i += 1
    if i == n:
        return [], []
    if text[i] != "[":
        if text[i] == "{":
            try:
                value, end = dec.raw_decode(text, i)
            except json.JSONDecodeError as exc:
                return [], [RowError(line_at(exc.pos), None, f"invalid JSON ({exc.msg})")]
            rest = text[end:].strip()
            if not rest:
                return [RawRecord(line_at(i), 0, value)], []
        lines = text.splitlines()
        records: list[RawRecord] = []
        errors: list[RowError] = []
        for ln, raw in enumerate(lines, start=1):
            if raw.strip():
                try:
                    records.append(RawRecord(ln, len(records), json.loads(raw)))
                except json.JSONDecodeError as exc:
                    errors.append(RowError(ln, None, f"invalid JSON ({exc.msg} at column {exc.colno})"))
        return records, errors
    records = []
    i += 1
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i < n and text[i] == "]":
            break
        try:
            value, end = dec.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            return records, [
                RowError(line_at(exc.pos), None, f"invalid JSON ({exc.msg}); reading stopped here")
            ]
        except RecursionError:
            return records, [
                RowError(line_at(i), None, "invalid JSON (nested too deeply); reading stopped here")
            ]
        records.append(RawRecord(line_at(i), len(records), value))
        i = end
        while i < n and text[i].isspace():
            i += 1
        if i < n and text[i] == ",":
            i += 1
            continue
        if i < n and text[i] == "]":
            break
        return records, [RowError(line_at(i), None, "invalid JSON (expected ',' or ']' after an element)")]
    if text[i + 1 :].strip():
        return records, [RowError(line_at(i + 1), None, "extra text after the JSON array")]
    return records, []
