"""The one reader of untrusted files. It reads JSON, JSONL and Parquet (prompt sets, battles, preference
files, snapshots), CSV (prompt sets) and YAML (personas, rubrics, job configs, verdict rules, prices).

Every record keeps the line it starts on, so errors can name it.
- **JSON lines** are split on the newline character only; a carriage return before it is dropped. We never
  use ``str.splitlines()``. It also breaks at U+2028, U+2029, U+0085, form feed, vertical tab, a lone CR
  and more. JSON allows all of these inside a string, and real files hold them (Arena-Hard, LMSYS-Chat,
  WildChat).
- **A JSONL line** longer than ``max_line_bytes`` is reported and skipped without being held in memory.
- **Encodings.** UTF-8 is the default; a BOM selects UTF-8-SIG or UTF-16; ``encoding`` overrides. A line
  in another encoding is reported with the byte that broke it.
- **A JSON array** is parsed element by element, so one broken element is reported at its line.
- **A CSV row** keeps the line it starts on (a quoted field may span lines). A row with more fields than
  the header is reported, not silently folded.
- **YAML** is read with PyYAML's safe loader (plain types only), as UTF-8. It must be a plain file of at
  most ``MAX_YAML_BYTES``, read by ``common.paths.read_regular``; a device or a FIFO is refused unread. A
  document is refused when its aliases expand past ``MAX_YAML_VALUES`` values (a "billion laughs" bomb) or
  when it refers to itself. A syntax error names its line and column.

**Budgets, not one limit a format can sidestep** (``Budget``). One import is a file, or every file of a
folder. It may decode at most ``VIBESTUDIO_MAX_IMPORT_MB`` bytes (at most ``MAX_FILE_BYTES``),
``VIBESTUDIO_MAX_IMPORT_ROWS`` rows and ``VIBESTUDIO_MAX_IMPORT_VALUES`` values. A value is each string,
number, list or object the file turns into. All three are counted *before* the memory is spent.
- **Text** (JSON, JSONL, CSV, compressed or not) goes through a counting reader. So a ``.gz`` is measured
  by what it expands to, as it is decompressed, never held whole. A JSON text's values are counted from
  its separators (``, : [ {``, an upper bound) before it is parsed. So ``[[],[],...]`` cannot turn 256 MB
  into 5 GB of lists.
- **Parquet and Arrow** (``datasets`` ``save_to_disk`` writes Arrow) are decoded one small record batch at
  a time. Each batch is measured from its Arrow buffers before it becomes Python values. A dictionary
  column counts the lengths of the entries its indices name. So a 3 KB file repeating one long entry a
  million times counts as the gigabytes it decodes to. A null column counts its values.
- **Refused column types**: those an import never needs and whose decoded size the buffers cannot tell.
  These are list views, run-end encoded columns, unions and dictionaries of nested values.

A refusal names the limit and the setting that raises it. Nothing half-read comes back. Reading never
raises on bad content. Problems come back as ``RowError`` values next to the records that could be read.

It lives in ``common``, the bottom layer, because every layer reads files people bring. These are prompt
sets and battles in ``arena``, preference files and snapshots in ``annotation``, snapshots and task sets
in ``training``. It imports no studio code but ``common.paths``, for the bounded read of one plain file.
"""

from __future__ import annotations

import bisect
import csv
import gzip
import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from vibestudio.common.paths import PathRefused, read_regular

MAX_LINE_BYTES = 16 * 2**20
MAX_FILE_BYTES = 2 * 2**30  # the ceiling; VIBESTUDIO_MAX_IMPORT_MB may set a lower one
MAX_YAML_BYTES = 4 * 2**20
MAX_YAML_VALUES = 100_000  # after aliases are expanded
_BOMS = ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))
JSON_SPACE = " \t\r\n"  # the only whitespace JSON allows between tokens


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


def _encoding_hint(enc: str, raw: bytes | bytearray, pos: int, choose: bool = True) -> str:
    byte = raw[pos : pos + 1].hex() if pos < len(raw) else "?"
    how = " or give its encoding (e.g. --encoding cp1252)" if choose else ""
    return (
        f"not valid {enc} (byte 0x{byte} at position {pos + 1} of the line); re-save the file as UTF-8{how}"
    )


class TooLarge(OSError):
    """An import over one of its budgets (bytes once decompressed, rows or values); the message names the limit
    and the setting that governs it."""


@dataclass
class Budget:
    """What one import may decode, and what it has decoded so far. ``take`` raises ``TooLarge`` at the first
    measure over its limit; a folder's files share one budget."""

    max_bytes: int
    max_rows: int
    max_values: int
    bytes: int = 0
    rows: int = 0
    values: int = 0

    @classmethod
    def from_settings(cls) -> Budget:
        from vibestudio.common.settings import get_settings

        st = get_settings()
        return cls(max_file_bytes(), max(1, st.max_import_rows), max(1, st.max_import_values))

    def take(self, nbytes: int = 0, rows: int = 0, values: int = 0) -> None:
        self.bytes += nbytes
        self.rows += rows
        self.values += values
        if self.bytes > self.max_bytes:
            raise TooLarge(
                f"refused: the import decodes to more than {_mb(self.max_bytes)} (counted after decompression; "
                "the limit is VIBESTUDIO_MAX_IMPORT_MB)"
            )
        if self.rows > self.max_rows:
            raise TooLarge(
                f"refused: the import holds more than {self.max_rows:,} rows (the limit is "
                "VIBESTUDIO_MAX_IMPORT_ROWS)"
            )
        if self.values > self.max_values:
            raise TooLarge(
                f"refused: the import decodes to more than {self.max_values:,} values (the limit is "
                "VIBESTUDIO_MAX_IMPORT_VALUES)"
            )


def json_values(text: bytes | bytearray | str) -> int:
    """An upper bound on the values a JSON text parses to, counted before parsing: every value but the first
    follows a ``,`` ``:`` ``[`` or ``{`` (inside strings these overcount, which only errs on the safe side)."""
    if isinstance(text, str):
        return 1 + text.count(",") + text.count(":") + text.count("[") + text.count("{")
    return 1 + text.count(b",") + text.count(b":") + text.count(b"[") + text.count(b"{")


class _Capped(io.RawIOBase):
    """A binary stream that charges every byte read from it to a ``Budget`` (``TooLarge`` once over): a ``.gz``
    is measured by what it expands to, as it is decompressed, never held whole."""

    def __init__(self, raw: IO[bytes], budget: Budget) -> None:
        self.raw, self.budget = raw, budget
        self.cap = budget.max_bytes

    def readable(self) -> bool:
        return True

    @property
    def seen(self) -> int:
        return self.budget.bytes

    def _count(self, data: bytes) -> bytes:
        self.budget.take(nbytes=len(data))
        return data

    def read(self, size: int = -1) -> bytes:
        want = self.cap + 1 - self.seen if size is None or size < 0 else min(size, self.cap + 1 - self.seen)
        return self._count(self.raw.read(max(want, 0)))

    def readline(self, size: int | None = -1) -> bytes:
        want = self.cap + 1 - self.seen if size is None or size < 0 else min(size, self.cap + 1 - self.seen)
        return self._count(self.raw.readline(max(want, 0)))

    def close(self) -> None:
        self.raw.close()
        super().close()


def _mb(n: int) -> str:
    return f"{n / 2**30:.0f} GB" if n >= 2**30 else f"{n / 2**20:.0f} MB"


def max_file_bytes() -> int:
    """The most bytes one imported file may hold after decompression (``VIBESTUDIO_MAX_IMPORT_MB``)."""
    from vibestudio.common.settings import get_settings

    return min(MAX_FILE_BYTES, get_settings().max_import_mb * 2**20)


def _open(path: Path, budget: Budget) -> IO[bytes]:
    raw: IO[bytes] = gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")  # type: ignore[assignment]
    return _Capped(raw, budget)  # type: ignore[return-value]


def _sniff(path: Path) -> tuple[bytes, str | None]:
    """The first bytes (to tell an array from JSONL) and the BOM's encoding if any (charged to no budget: the
    reading that follows counts them)."""
    with _open(path, Budget(4096, 1, 1)) as fh:
        head = fh.read(4096)
    for bom, enc in _BOMS:
        if head.startswith(bom):
            return head[len(bom) :], enc
    return head, None


def read_records(
    path: str | Path,
    encoding: str | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
    budget: Budget | None = None,
) -> tuple[list[RawRecord], list[RowError]]:
    """All records of a JSON / JSONL / Parquet / Arrow file (JSON optionally .gz), with the errors met on the way.
    ``budget`` (default: a fresh one from the settings) is charged with what the file decodes to; pass one
    budget for every file of a folder."""
    p = Path(path)
    if not p.exists():
        return [], [RowError(None, None, f"file {p.name} does not exist")]
    budget = budget or Budget.from_settings()
    start = (budget.bytes, budget.rows, budget.values)
    try:
        if p.stat().st_size > budget.max_bytes - budget.bytes:
            budget.take(nbytes=p.stat().st_size)  # raises: the file alone is over what is left
        if p.suffix == ".parquet":
            return _read_parquet(p, budget)
        if p.suffix == ".arrow":
            return _read_arrow(p, budget)
        try:
            head, bom_enc = _sniff(p)
        except TooLarge:
            raise
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            return [], [RowError(None, None, f"cannot read the file ({exc})")]
        enc = encoding or bom_enc or "utf-8"
        first = head.lstrip()[:1]
        if bom_enc == "utf-16" or (encoding and encoding.lower().replace("_", "-").startswith("utf-16")):
            return _read_text_whole(p, enc, budget)
        if first == b"[":
            return _read_text_whole(p, enc, budget)
        return _read_jsonl(p, enc, max_line_bytes, budget)
    except TooLarge as exc:
        budget.bytes, budget.rows, budget.values = start  # the budget is left as it was before this file
        return [], [RowError(None, None, str(exc))]  # nothing half-read comes back


def _read_parquet(p: Path, budget: Budget) -> tuple[list[RawRecord], list[RowError]]:
    try:
        import pyarrow.parquet as pq

        batches = pq.ParquetFile(p).iter_batches(batch_size=ARROW_BATCH_ROWS)  # a few rows at a time
        return _batch_rows(batches, budget)
    except TooLarge:
        raise
    except Exception as exc:  # pyarrow raises many types for a bad file
        return [], [RowError(None, None, f"not a readable Parquet file ({_short(exc)})")]


#: Rows per decoded Arrow batch: each batch is measured before it becomes Python values, so a batch is the most
#: that is decoded before a refusal.
ARROW_BATCH_ROWS = 64
#: What one decoded value costs beyond its bytes, for the byte budget of a columnar file (a Python object's
#: header and the pointer that holds it, about): a column of nulls or zeros is not free to decode.
VALUE_BYTES = 16


def _batch_rows(batches: Iterable[Any], budget: Budget) -> tuple[list[RawRecord], list[RowError]]:
    """Rows of Arrow record batches (Parquet or Arrow IPC), each batch charged to ``budget`` (its rows, its values
    and the bytes they decode to, measured from the Arrow buffers) before it is turned into Python values."""
    rows: list[Any] = []
    for batch in batches:
        nbytes, values = 0, batch.num_rows  # one dict per row
        for column in batch.columns:
            b, v = _arrow_cost(column)
            nbytes, values = nbytes + b, values + v
        budget.take(nbytes=nbytes + values * VALUE_BYTES, rows=batch.num_rows, values=values)
        rows += batch.to_pylist()
    return [RawRecord(None, i, r) for i, r in enumerate(rows)], []


def _arrow_cost(arr: Any) -> tuple[int, int]:
    """``(bytes, values)`` that ``arr.to_pylist()`` would produce, measured from the array's buffers without
    decoding it. Raises ``TooLarge`` for a column type whose decoded size cannot be told that way."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t, n = arr.type, len(arr)
    if pa.types.is_dictionary(t):
        vt = t.value_type
        if _is_binary_like(vt):
            sizes = pc.fill_null(pc.binary_length(arr.dictionary), 0)
            picked = pc.sum(pc.take(sizes, arr.indices)).as_py() or 0
            return int(picked), n
        if pa.types.is_primitive(vt) or pa.types.is_null(vt):
            return n * max(1, (vt.bit_width or 8) // 8), n
        raise TooLarge(f"refused: a column of type {_type_name(t)} is not read by imports")
    if _is_binary_like(t):
        return int(pc.sum(pc.fill_null(pc.binary_length(arr), 0)).as_py() or 0), n
    if pa.types.is_null(t) or pa.types.is_boolean(t):
        return 0, n
    if pa.types.is_primitive(t) or pa.types.is_decimal(t) or pa.types.is_fixed_size_binary(t):
        return n * max(1, t.bit_width // 8), n
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        b, v = _arrow_cost(arr.flatten())
        return b, v + n
    if pa.types.is_map(t):
        kb, kv = _arrow_cost(arr.keys)  # the map's keys and items, flattened
        ib, iv = _arrow_cost(arr.items)
        return kb + ib, kv + iv + n
    if pa.types.is_struct(t):
        b, v = 0, n
        for child in arr.flatten():
            cb, cv = _arrow_cost(child)
            b, v = b + cb, v + cv
        return b, v
    raise TooLarge(f"refused: a column of type {_type_name(t)} is not read by imports")


def _is_binary_like(t: Any) -> bool:
    import pyarrow as pa

    return bool(
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or getattr(pa.types, "is_string_view", lambda _t: False)(t)
        or getattr(pa.types, "is_binary_view", lambda _t: False)(t)
    )


def _type_name(t: Any) -> str:
    """The Arrow type's kind (``list_view``, ``run_end_encoded``...), never the file's field names."""
    return re.sub(r"[^a-z_]", "", str(t).split("<", 1)[0].split("[", 1)[0])[:40] or "unknown"


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def _read_arrow(p: Path, budget: Budget) -> tuple[list[RawRecord], list[RowError]]:
    """An Arrow IPC file as ``datasets`` ``save_to_disk`` writes it (the stream format), or the random-access
    file format; decoded one record batch at a time, each measured before it is decoded (``_batch_rows``)."""
    try:
        import pyarrow as pa

        with pa.memory_map(str(p), "r") as source:
            try:
                reader: Any = pa.ipc.open_stream(source)
                batches: Iterator[Any] = iter(reader)
            except pa.ArrowInvalid:
                source.seek(0)
                reader = pa.ipc.open_file(source)
                batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
            return _batch_rows(_small(batches), budget)
    except TooLarge:
        raise
    except Exception as exc:  # pyarrow raises many types for a bad file
        return [], [RowError(None, None, f"not a readable Arrow file ({_short(exc)})")]


def _small(batches: Iterable[Any]) -> Iterator[Any]:
    """Arrow IPC batches cut into slices of ``ARROW_BATCH_ROWS`` rows (a slice is a view: nothing is copied)."""
    for batch in batches:
        for start in range(0, batch.num_rows, ARROW_BATCH_ROWS):
            yield batch.slice(start, ARROW_BATCH_ROWS)


def _read_jsonl(p: Path, enc: str, limit: int, budget: Budget) -> tuple[list[RawRecord], list[RowError]]:
    records: list[RawRecord] = []
    errors: list[RowError] = []
    lineno = 0
    with _open(p, budget) as fh:
        while True:
            try:
                chunk = fh.readline(limit + 1)
            except TooLarge:
                raise
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
            text = text.strip(JSON_SPACE)
            if not text:
                continue
            budget.take(rows=1, values=json_values(text))  # before parsing
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


def _read_text_whole(p: Path, enc: str, budget: Budget) -> tuple[list[RawRecord], list[RowError]]:
    buf = bytearray()
    with _open(p, budget) as fh:
        while chunk := fh.read(1 << 20):  # in pieces: at a refusal, at most the budget is held, once
            buf += chunk
    raw = buf  # a bytearray decodes like bytes, without a copy
    budget.take(
        values=json_values(raw)
    )  # before parsing (UTF-16 separators count too: their low byte is ASCII)
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
    records, errors = parse_json_text(text)
    budget.take(rows=len(records))
    return records, errors


def parse_json_text(text: str) -> tuple[list[RawRecord], list[RowError]]:
    """A JSON array parsed element by element (each with its line), or JSON lines, or one JSON object."""
    newlines = [m.start() for m in re.finditer("\n", text)]

    def line_at(pos: int) -> int:
        return bisect.bisect_left(newlines, pos) + 1

    dec = json.JSONDecoder()
    i, n = 0, len(text)
    while i < n and text[i] in JSON_SPACE:
        i += 1
    if i == n:
        return [], []
    if text[i] != "[":
        if text[i] == "{":
            try:
                value, end = dec.raw_decode(text, i)
            except json.JSONDecodeError as exc:
                return [], [RowError(line_at(exc.pos), None, f"invalid JSON ({exc.msg})")]
            rest = text[end:].strip(JSON_SPACE)
            if not rest:
                return [RawRecord(line_at(i), 0, value)], []
        records: list[RawRecord] = []
        errors: list[RowError] = []
        for ln, value in iter_json_lines(text):
            if isinstance(value, RowError):
                errors.append(value)
            else:
                records.append(RawRecord(ln, len(records), value))
        return records, errors
    records = []
    i += 1
    while True:
        while i < n and text[i] in JSON_SPACE:
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
        while i < n and text[i] in JSON_SPACE:
            i += 1
        if i < n and text[i] == ",":
            i += 1
            continue
        if i < n and text[i] == "]":
            break
        return records, [RowError(line_at(i), None, "invalid JSON (expected ',' or ']' after an element)")]
    if text[i + 1 :].strip(JSON_SPACE):
        return records, [RowError(line_at(i + 1), None, "extra text after the JSON array")]
    return records, []


def split_json_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) for each non-blank line of JSONL text, split on ``\n`` only (``\r\n`` too)."""
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.strip(JSON_SPACE)
        if line:
            yield number, line


def iter_json_lines(text: str) -> Iterator[tuple[int, Any]]:
    """(line number, value) for each non-blank JSONL line; the value is a ``RowError`` when the line is not JSON."""
    for number, line in split_json_lines(text):
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, RowError(number, None, f"invalid JSON ({exc.msg} at column {exc.colno})")
        except RecursionError:
            yield number, RowError(number, None, "invalid JSON (nested too deeply)")


def decode_bytes(
    data: bytes, encoding: str | None = None, choose: bool = True
) -> tuple[str | None, RowError | None]:
    """The text of a file's bytes (a BOM selects UTF-8-SIG or UTF-16, else ``encoding``, else UTF-8; the BOM is
    dropped), or the error naming the line and byte that broke it. ``choose`` says whether the message may offer
    an encoding option (only commands that take ``--encoding``)."""
    enc = encoding
    for bom, bom_enc in _BOMS:
        if enc is None and data.startswith(bom):
            enc = bom_enc
    enc = enc or "utf-8"
    try:
        text = data.decode(enc)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        start = data.rfind(b"\n", 0, exc.start) + 1
        return None, RowError(
            line, None, _encoding_hint(exc.encoding, data[start:], exc.start - start, choose)
        )
    except LookupError:
        return None, RowError(None, None, f"unknown encoding {enc!r}")
    return text.removeprefix("\ufeff"), None


def records_from_bytes(
    data: bytes, encoding: str | None = None, budget: Budget | None = None
) -> tuple[list[RawRecord], list[RowError]]:
    """Records of an uploaded file's bytes: a JSON array, one JSON object or JSON lines (BOM-aware, UTF-8
    default), within ``budget`` (default: one from the settings)."""
    budget = budget or Budget.from_settings()
    try:
        budget.take(nbytes=len(data), values=json_values(data))
    except TooLarge as exc:
        return [], [RowError(None, None, str(exc))]
    text, error = decode_bytes(data, encoding)
    if error is not None or text is None:
        return [], [error or RowError(None, None, "cannot read the file")]
    records, errors = parse_json_text(text)
    try:
        budget.take(rows=len(records))
    except TooLarge as exc:
        return [], [RowError(None, None, str(exc))]
    return records, errors


def csv_records_from_bytes(
    data: bytes, encoding: str | None = None, budget: Budget | None = None
) -> tuple[list[RawRecord], list[RowError]]:
    """Rows of a CSV file with a header line, each a ``{column: text}`` dict (a short row's missing columns are
    None) at the line it starts on. A row with more fields than the header is an error; a broken quote or an
    oversized field stops reading there."""
    budget = budget or Budget.from_settings()
    try:
        budget.take(nbytes=len(data))
    except TooLarge as exc:
        return [], [RowError(None, None, str(exc))]
    text, error = decode_bytes(data, encoding, choose=False)
    if error is not None or text is None:
        return [], [error or RowError(None, None, "cannot read the file")]
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
    except csv.Error as exc:
        return [], [RowError(reader.line_num, None, f"not a valid CSV file ({exc})")]
    if header is None:
        return [], []
    records: list[RawRecord] = []
    errors: list[RowError] = []
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader, None)
        except csv.Error as exc:
            errors.append(
                RowError(reader.line_num, None, f"not a valid CSV file ({exc}); reading stopped here")
            )
            break
        if row is None:
            break
        if not row:
            continue
        try:
            budget.take(rows=1, values=len(header) + 1)
        except TooLarge as exc:
            return [], [RowError(None, None, str(exc))]  # nothing half-read comes back
        if len(row) > len(header):
            errors.append(
                RowError(start, None, f"{len(row)} fields but the header names {len(header)}", len(records))
            )
            continue
        records.append(
            RawRecord(
                start, len(records), dict(zip(header, row + [None] * (len(header) - len(row)), strict=True))
            )
        )
    return records, errors


def _expanded_values(value: Any) -> int:
    """How many values ``value`` holds once every alias is written out (raises ValueError when it refers to
    itself); shared sub-trees are measured once, so a bomb is measured without being expanded."""
    sizes: dict[int, int] = {}

    def size(v: Any) -> int:
        if not isinstance(v, list | dict):
            return 1
        key = id(v)
        if key in sizes:
            if sizes[key] < 0:
                raise ValueError("the YAML refers to itself (a recursive alias)")
            return sizes[key]
        sizes[key] = -1
        parts = [*v.keys(), *v.values()] if isinstance(v, dict) else v
        n = 1
        for part in parts:
            n += size(part)
            if n > MAX_YAML_VALUES:
                break
        sizes[key] = n
        return n

    return size(value)


def parse_yaml(text: str) -> tuple[Any, RowError | None]:
    """One YAML document with plain types only, or the error with its line (never raises)."""
    import yaml  # imported here: reading JSON pays nothing for it

    try:
        value = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "syntax error"
        if exc.context and exc.problem and not exc.context.startswith("while"):
            problem = (
                f"{exc.context} {exc.problem}"  # "expected a single document in the stream but found ..."
            )
        if mark is None:
            return None, RowError(None, None, f"not valid YAML ({problem})")
        return None, RowError(mark.line + 1, None, f"not valid YAML ({problem}, column {mark.column + 1})")
    except yaml.YAMLError as exc:
        return None, RowError(None, None, f"not valid YAML ({exc})")
    except RecursionError:
        return None, RowError(None, None, "not valid YAML (nested too deeply)")
    try:
        n = _expanded_values(value)
    except ValueError as exc:
        return None, RowError(None, None, str(exc))
    except RecursionError:
        return None, RowError(None, None, "not valid YAML (nested too deeply)")
    if n > MAX_YAML_VALUES:
        return None, RowError(
            None,
            None,
            f"the YAML expands to more than {MAX_YAML_VALUES:,} values through its aliases (a YAML bomb?)",
        )
    return value, None


def yaml_from_bytes(data: bytes) -> tuple[Any, RowError | None]:
    """A YAML file's bytes (UTF-8, a BOM allowed; at most ``MAX_YAML_BYTES``) parsed by ``parse_yaml``."""
    if len(data) > MAX_YAML_BYTES:
        return None, RowError(
            None,
            None,
            f"file is {len(data) / 2**20:.1f} MB, over the {MAX_YAML_BYTES // 2**20} MB limit for YAML",
        )
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None, RowError(None, None, "YAML files are read as UTF-8; re-save the file as UTF-8")
    text, error = decode_bytes(data, "utf-8-sig", choose=False)
    if error is not None or text is None:
        return None, error or RowError(None, None, "cannot read the file")
    return parse_yaml(text)


def read_yaml(path: str | Path) -> tuple[Any, RowError | None]:
    """A YAML file people bring (see ``yaml_from_bytes``); a missing or unreadable file is an error too."""
    p = Path(path)
    try:
        # a device or a FIFO is refused, never read until memory runs out
        data = read_regular(p, MAX_YAML_BYTES)
    except PathRefused as exc:
        why = str(exc).removeprefix("file: ")
        if "larger" in why:
            why = f"file is larger than the {MAX_YAML_BYTES // 2**20} MB limit for YAML"
        return None, RowError(None, None, why)
    except OSError as exc:
        return None, RowError(None, None, f"cannot read the file ({exc.strerror or exc})")
    return yaml_from_bytes(data)


def read_json_lines(path: str | Path) -> tuple[list[RawRecord], list[RowError]]:
    """Records of a JSON / JSONL file the studio wrote or ships (a snapshot, an export, a data file)."""
    return records_from_bytes(Path(path).read_bytes())
