"""The ratings' input: reading FastChat-layout battle files, validating them, and the column store the
ratings use.

A battle is a dict with `model_a`, `model_b` and `winner`. The winner is one of `WINNERS`, FastChat's
winners from `common.outcomes`. Optional fields:
- `conversation_a` / `conversation_b` (lists of {role, content});
- `tstamp`, `category`, `question_id`, `sampling_prob`, `turn`;
- `conv_metadata` (FastChat's precomputed style counts);
- anything else, kept (e.g. for `leaderboard_by`).
AlpacaEval annotation files are read too and converted (`generator_1`, `generator_2`, `preference`,
`output_1`, `output_2`, `instruction`). One file must use one layout.

Big JSONL/JSON files go through DuckDB after a vectorised validity check. DuckDB parses JSON in parallel
and turns model names into categorical codes in SQL. If anything is off, the file is re-read line by line
in Python. Then the error names the exact line and field. With `skip_bad`, it names the skipped lines and
reasons. In-memory inputs (lists of dicts, DataFrames) get the same checks, with locations like
`records[12]`.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeGuard, overload

import numpy as np
import pandas as pd

from vibestudio.common.files import RowError, iter_json_lines, parse_json_text
from vibestudio.common.outcomes import FASTCHAT_WINNERS

#: FastChat's winner labels; a record's winner code is its position here.
WINNERS: tuple[str, ...] = FASTCHAT_WINNERS
REQUIRED: tuple[str, ...] = ("model_a", "model_b", "winner")
_WINNER_SET = frozenset(WINNERS)
_ALPACA_KEYS = ("generator_1", "generator_2")
_PAIR_KEYS = ("chosen", "rejected")
_LAYOUT_NAMES = {
    "fastchat": "the FastChat battle layout (model_a/model_b/winner)",
    "alpaca_eval": "the AlpacaEval layout (generator_1/generator_2/preference)",
}
#: Files at least this big are read with DuckDB first.
DUCKDB_MIN_BYTES = 256 * 1024


class RatingsInputError(ValueError):
    """Bad battle input; the message names the line (or record index) and the field."""

    def __init__(
        self, message: str, *, line: int | None = None, index: int | None = None, field: str | None = None
    ) -> None:
        super().__init__(message)
        self.line = line
        self.index = index
        self.field = field


class _RowProblem(Exception):
    def __init__(self, field: str | None, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason

    def describe(self) -> str:
        return f"field '{self.field}': {self.reason}" if self.field else self.reason


# ---------------------------------------------------------------------------------------------------- row checks


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    return isinstance(value, float) and math.isnan(value)


def _is_number(value: Any) -> TypeGuard[numbers.Real]:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _check_optional(obj: dict[str, Any]) -> None:
    for field in ("tstamp", "sampling_prob"):
        value = obj.get(field)
        if _missing(value):
            continue
        if not _is_number(value) or not math.isfinite(float(value)):
            raise _RowProblem(field, f"expected a number, got {value!r}")
        if field == "sampling_prob" and not 0.0 < float(value) <= 1.0:
            raise _RowProblem(field, f"must be in (0, 1], got {value!r}")
    turn = obj.get("turn")
    if not _missing(turn) and (not _is_number(turn) or float(turn) % 1 != 0 or float(turn) < 1):
        raise _RowProblem("turn", f"expected a whole number >= 1, got {turn!r}")
    qid = obj.get("question_id")
    if not _missing(qid) and not isinstance(qid, (str, numbers.Integral)):
        raise _RowProblem("question_id", f"expected a string or integer, got {qid!r}")
    category = obj.get("category")
    if not _missing(category) and not isinstance(category, str):
        if not isinstance(category, (list, tuple, np.ndarray)) or not all(
            isinstance(c, str) for c in category
        ):
            raise _RowProblem("category", f"expected a string or a list of strings, got {category!r}")
    for field in ("conversation_a", "conversation_b"):
        conv = obj.get(field)
        if _missing(conv):
            continue
        if not isinstance(conv, (list, tuple, np.ndarray)):
            raise _RowProblem(
                field, f"expected a list of {{role, content}} messages, got {type(conv).__name__}"
            )
        for k, msg in enumerate(conv):
            if not isinstance(msg, Mapping):
                raise _RowProblem(field, f"message {k} is not an object")
            if not isinstance(msg.get("role"), str):
                raise _RowProblem(field, f"message {k} has no string 'role'")
            if not isinstance(msg.get("content"), str):
                raise _RowProblem(field, f"message {k} has no string 'content'")
    meta = obj.get("conv_metadata")
    if not _missing(meta) and not isinstance(meta, Mapping):
        raise _RowProblem("conv_metadata", f"expected an object, got {type(meta).__name__}")


def _check_fastchat(obj: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(obj)
    for field in REQUIRED:
        if _missing(out.get(field)):
            raise _RowProblem(field, "missing")
    for field in ("model_a", "model_b"):
        value = out[field]
        if not isinstance(value, str) or not value.strip():
            raise _RowProblem(field, f"expected a non-empty model name, got {value!r}")
    winner = out["winner"]
    if not isinstance(winner, str) or winner not in _WINNER_SET:
        allowed = ", ".join(WINNERS)
        raise _RowProblem("winner", f"unknown winner label {winner!r} (expected one of: {allowed})")
    if out["model_a"] == out["model_b"]:
        raise _RowProblem("model_b", f"self-battle: model_a and model_b are both {out['model_a']!r}")
    _check_optional(out)
    return out


def _from_alpaca_eval(obj: Mapping[str, Any]) -> dict[str, Any]:
    for field in (*_ALPACA_KEYS, "preference"):
        if _missing(obj.get(field)):
            raise _RowProblem(field, "missing")
    pref = obj["preference"]
    if not _is_number(pref) or float(pref) not in (0.0, 1.0, 1.5, 2.0):
        raise _RowProblem(
            "preference", f"expected 1 (output_1 wins), 2 (output_2 wins) or 1.5 (tie), got {pref!r}"
        )
    winner = {1.0: "model_a", 2.0: "model_b"}.get(float(pref), "tie")
    out: dict[str, Any] = {"model_a": obj["generator_1"], "model_b": obj["generator_2"], "winner": winner}
    instruction = obj.get("instruction")
    for side, key in (("a", "output_1"), ("b", "output_2")):
        if isinstance(obj.get(key), str):
            messages = [{"role": "assistant", "content": obj[key]}]
            if isinstance(instruction, str):
                messages.insert(0, {"role": "user", "content": instruction})
            out[f"conversation_{side}"] = messages
    if isinstance(obj.get("dataset"), str):
        out["category"] = obj["dataset"]
    for key in ("question_id", "tstamp", "sampling_prob", "turn", "category"):
        if key in obj and key not in out:
            out[key] = obj[key]
    return _check_fastchat(out)


def _layout(obj: Mapping[str, Any]) -> str:
    if any(k in obj for k in REQUIRED):
        return "fastchat"
    if any(k in obj for k in _ALPACA_KEYS):
        return "alpaca_eval"
    if all(k in obj for k in _PAIR_KEYS):
        raise _RowProblem(
            None, "a preference pair (prompt/chosen/rejected) names no models, so it is not a battle"
        )
    raise _RowProblem("model_a", "missing (no battle fields model_a/model_b/winner in this record)")


class _Checker:
    """Checks records one by one and remembers the layout of the first one."""

    def __init__(self) -> None:
        self.layout: str | None = None
        self.first_where = ""

    def __call__(self, obj: Any, where: str) -> dict[str, Any]:
        if not isinstance(obj, Mapping):
            raise _RowProblem(None, f"expected a JSON object, got {type(obj).__name__}")
        layout = _layout(obj)
        if self.layout is None:
            self.layout, self.first_where = layout, where
        elif layout != self.layout:
            field = next(k for k in (*REQUIRED, *_ALPACA_KEYS) if k in obj)
            raise _RowProblem(
                field,
                f"this record uses {_LAYOUT_NAMES[layout]} but {self.first_where} uses {_LAYOUT_NAMES[self.layout]}; "
                "one input must use one layout",
            )
        return _check_fastchat(obj) if layout == "fastchat" else _from_alpaca_eval(obj)


# ------------------------------------------------------------------------------------------------------ parsing


def _iter_jsonl(text: str) -> Iterator[tuple[int, Any]]:
    for number, value in iter_json_lines(text):  # the studio's one JSONL reader: lines end at "\n" only
        yield number, _RowProblem(None, value.message) if isinstance(value, RowError) else value


def _iter_json_array(text: str, source: str) -> Iterator[tuple[int, Any]]:
    """The elements of a JSON array file with their lines, read by the studio's one JSON reader
    (``common.files.parse_json_text``: deep nesting and text after the array are errors, not crashes)."""
    records, errors = parse_json_text(text)
    for rec in records:
        yield rec.line or 0, rec.value
    if errors:
        err = errors[0]
        raise RatingsInputError(f"{source}: line {err.line}: {err.message}", line=err.line)


def _is_array_file(path: Path) -> bool:
    with path.open("rb") as handle:
        head = handle.read(4096).lstrip()
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:].lstrip()
    return head.startswith(b"[")


# ---------------------------------------------------------------------------------------------- column store


class BattleRecords(Sequence[dict[str, Any]]):
    """Validated battles: a read-only sequence of dicts, stored column-wise in a pandas DataFrame (`frame`).

    `model_a`, `model_b` (shared categories) and `winner` are categorical columns. `lines[i]` is the file line of
    record i when known (None for in-memory data). Indexing builds a plain dict, so it can be treated like the list
    of dicts it was read from.
    """

    def __init__(
        self,
        frame: pd.DataFrame,
        lines: np.ndarray | Callable[[], np.ndarray | None] | None = None,
        source: str | None = None,
        unit: str = "line",
    ) -> None:
        self.frame = frame
        self._lines = lines
        self.source = source
        self.unit = unit

    @property
    def lines(self) -> np.ndarray | None:
        """File line (or Parquet row) of each record; None for in-memory data. Computed on first use if lazy."""
        if callable(self._lines):
            self._lines = self._lines()
        return self._lines

    def __len__(self) -> int:
        return len(self.frame)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        row = self.frame.iloc[index]
        return {key: _plain(value) for key, value in row.items() if not _is_missing_cell(value)}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i in range(len(self)):
            yield self[i]

    def where(self, position: int) -> str:
        """Human location of record `position`: 'FILE: line N' ('row N' for Parquet) or 'records[i]'."""
        if self.lines is None:
            return f"records[{position}]"
        place = f"{self.unit} {int(self.lines[position])}"
        return f"{self.source}: {place}" if self.source else place

    def line_of(self, position: int) -> int | None:
        return None if self.lines is None else int(self.lines[position])


def _is_missing_cell(value: Any) -> bool:
    if isinstance(value, (list, tuple, np.ndarray, Mapping)):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    return value


def _finish_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Shared categorical codes for model_a/model_b, categorical winner, float tstamp/sampling_prob."""
    frame = frame.copy(deep=False)
    if len(frame) >= 200_000:  # factorizing string columns releases the GIL: do the three at once
        with ThreadPoolExecutor(max_workers=3) as pool:
            jobs = [pool.submit(pd.factorize, frame[c]) for c in ("model_a", "model_b", "winner")]
            (codes_a, seen_a), (codes_b, seen_b), (codes_w, seen_w) = (job.result() for job in jobs)
    else:
        (codes_a, seen_a), (codes_b, seen_b), (codes_w, seen_w) = (
            pd.factorize(frame[c]) for c in ("model_a", "model_b", "winner")
        )
    names = sorted(set(seen_a) | set(seen_b), key=lambda v: (not isinstance(v, str), str(v)))
    index = {name: k for k, name in enumerate(names)}
    categories = pd.Index(names, dtype=object if any(not isinstance(v, str) for v in names) else None)
    for field, codes, seen in (("model_a", codes_a, seen_a), ("model_b", codes_b, seen_b)):
        mapping = np.array([index[v] for v in seen] + [-1], dtype=np.int64)
        frame[field] = pd.Categorical.from_codes(mapping[codes], categories=categories)
    winner_map = np.array(
        [WINNERS.index(v) if v in _WINNER_SET else -1 for v in seen_w] + [-1], dtype=np.int64
    )
    frame["winner"] = pd.Categorical.from_codes(winner_map[codes_w], categories=list(WINNERS))
    for field in ("tstamp", "sampling_prob"):
        if field in frame.columns and frame[field].dtype != np.float64:
            frame[field] = pd.to_numeric(frame[field], errors="coerce").astype(np.float64)
    return frame


def _records_to_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(rows) if rows else pd.DataFrame(columns=list(REQUIRED))
    for field in ("model_a", "model_b"):
        frame[field] = frame[field].astype(object)
    return _finish_frame(frame)


def _frame_is_clean(frame: pd.DataFrame) -> bool:
    """Vectorised validity check of a finished frame (True = every row passes the per-record checks)."""
    a, b = frame["model_a"], frame["model_b"]
    if not all(isinstance(c, str) and c.strip() for c in a.cat.categories):
        return False
    codes_a, codes_b = a.cat.codes.to_numpy(), b.cat.codes.to_numpy()
    if (codes_a < 0).any() or (codes_b < 0).any() or (codes_a == codes_b).any():
        return False
    if (frame["winner"].cat.codes.to_numpy() < 0).any():
        return False
    if any(k in frame.columns and frame[k].notna().any() for k in (*_ALPACA_KEYS, *_PAIR_KEYS)):
        return False
    for field in ("tstamp", "sampling_prob"):
        if field in frame.columns:
            values = frame[field].to_numpy()
            finite = values[~np.isnan(values)]
            if not np.isfinite(finite).all():
                return False
            if field == "sampling_prob" and ((finite <= 0) | (finite > 1)).any():
                return False
    if "turn" in frame.columns:
        given = frame["turn"].notna()
        turn = pd.to_numeric(frame["turn"][given], errors="coerce")
        if turn.isna().any() or (turn < 1).any() or (turn % 1 != 0).any():
            return False
    if "conv_metadata" in frame.columns:
        if not all(_missing_or(v, Mapping) for v in frame["conv_metadata"].to_numpy()):
            return False
    if "category" in frame.columns and frame["category"].dtype == object:
        if not all(
            isinstance(v, str) or _missing_or(v, (list, np.ndarray)) for v in frame["category"].to_numpy()
        ):
            return False
    for field in ("conversation_a", "conversation_b"):
        if field in frame.columns:
            for conv in frame[field].to_numpy():
                if _is_missing_cell(conv):
                    continue
                if not isinstance(conv, (list, tuple, np.ndarray)):
                    return False
                for msg in conv:
                    if not isinstance(msg, Mapping) or not isinstance(msg.get("role"), str):
                        return False
                    if not isinstance(msg.get("content"), str):
                        return False
    return True


def _missing_or(value: Any, kinds: Any) -> bool:
    return isinstance(value, kinds) or _is_missing_cell(value)


def _check_rows(
    items: Iterable[tuple[int, Any]], where: Callable[[int], str], skip_bad: bool, *, by_line: bool
) -> tuple[list[dict[str, Any]], list[int], list[tuple[int, str]]]:
    checker = _Checker()
    rows: list[dict[str, Any]] = []
    kept: list[int] = []
    skipped: list[tuple[int, str]] = []
    for key, obj in items:
        try:
            if isinstance(obj, _RowProblem):
                raise obj
            rows.append(checker(obj, where(key)))
            kept.append(key)
        except _RowProblem as problem:
            if not skip_bad:
                raise RatingsInputError(
                    f"{where(key)}{', ' if problem.field else ': '}{problem.describe()}",
                    line=key if by_line else None,
                    index=None if by_line else key,
                    field=problem.field,
                ) from None
            skipped.append((key, problem.describe()))
    return rows, kept, skipped


# ------------------------------------------------------------------------------------------------------- entry


def load_battles_file(
    path: str | os.PathLike[str], skip_bad: bool = False, *, engine: str = "auto"
) -> tuple[BattleRecords, list[tuple[int, str]]]:
    """Read a JSON (list), JSONL or Parquet battle file; returns (records, skipped), skipped = [(line, reason)].

    Raises `RatingsInputError` naming the line (the row number for Parquet) and field of the first bad record
    unless `skip_bad`. `engine` is "auto" (DuckDB for files of 256 KiB and more), "duckdb" or "python".
    """
    file = Path(path)
    if not file.is_file():
        raise RatingsInputError(f"{file}: no such file")
    if engine not in ("auto", "duckdb", "python"):
        raise ValueError(f"engine must be 'auto', 'duckdb' or 'python', got {engine!r}")
    if file.suffix.lower() in (".parquet", ".pq"):
        if engine != "python":
            fast = _load_duckdb(file, "parquet")
            if fast is not None:
                return fast, []
        return _load_parquet_rows(file, skip_bad)
    kind = "array" if _is_array_file(file) else "jsonl"
    if engine == "duckdb" or (engine == "auto" and file.stat().st_size >= DUCKDB_MIN_BYTES):
        fast = _load_duckdb(file, kind)
        if fast is not None:
            return fast, []
    return _load_python(file, kind == "array", skip_bad)


def _load_parquet_rows(file: Path, skip_bad: bool) -> tuple[BattleRecords, list[tuple[int, str]]]:
    rows = pd.read_parquet(file).to_dict("records")
    items = enumerate(rows, start=1)
    checked, kept, skipped = _check_rows(items, lambda row: f"{file}: row {row}", skip_bad, by_line=True)
    records = BattleRecords(_records_to_frame(checked), np.asarray(kept, dtype=np.int64), str(file), "row")
    return records, skipped


def _load_python(file: Path, is_array: bool, skip_bad: bool) -> tuple[BattleRecords, list[tuple[int, str]]]:
    text = file.read_text(encoding="utf-8-sig")
    items = _iter_json_array(text, str(file)) if is_array else _iter_jsonl(text)
    rows, kept, skipped = _check_rows(items, lambda line: f"{file}: line {line}", skip_bad, by_line=True)
    frame = _records_to_frame(rows)
    return BattleRecords(frame, np.asarray(kept, dtype=np.int64), str(file)), skipped


_SQL_TYPES = {
    "model_a": ("varchar",),
    "model_b": ("varchar",),
    "winner": ("varchar",),
    "tstamp": (
        "double",
        "float",
        "bigint",
        "integer",
        "hugeint",
        "ubigint",
        "decimal",
        "smallint",
        "tinyint",
    ),
    "sampling_prob": ("double", "float", "decimal", "bigint", "integer"),
    "turn": ("bigint", "integer", "smallint", "tinyint", "ubigint", "hugeint"),
    "question_id": ("varchar", "bigint", "integer", "ubigint", "hugeint"),
    "category": ("varchar", "list"),
    "conversation_a": ("list",),
    "conversation_b": ("list",),
    "conv_metadata": ("struct",),
}


def _load_duckdb(file: Path, kind: str) -> BattleRecords | None:
    """Fast path; None when the file needs the line-by-line reader (bad rows, odd types, parse errors)."""
    import duckdb

    if kind == "parquet":
        source = "read_parquet(?)"
    else:
        source = f"read_json(?, format='{'array' if kind == 'array' else 'newline_delimited'}', records=true)"
    con = duckdb.connect()
    try:
        con.execute(f"CREATE TEMP TABLE raw AS SELECT * FROM {source}", [str(file)])
        rel = con.table("raw")
        types = {name: (t.id, str(t)) for name, t in zip(rel.columns, rel.types, strict=True)}
        if any(k not in types for k in REQUIRED) or any(k in types for k in (*_ALPACA_KEYS, *_PAIR_KEYS)):
            return None
        for name, allowed in _SQL_TYPES.items():
            if name in types and types[name][0] not in allowed:
                return None
        for name in ("conversation_a", "conversation_b"):
            if name in types and types[name][1] != 'STRUCT("role" VARCHAR, "content" VARCHAR)[]':
                return None
        winners = ", ".join(f"'{w}'" for w in WINNERS)
        checks = [
            "model_a IS NULL OR model_b IS NULL OR winner IS NULL",
            "trim(model_a) = '' OR trim(model_b) = ''",
            f"winner NOT IN ({winners})",
            "model_a = model_b",
        ]
        if "sampling_prob" in types:
            checks.append(
                "sampling_prob IS NOT NULL AND (sampling_prob <= 0 OR sampling_prob > 1 OR isnan(sampling_prob))"
            )
        if "tstamp" in types and types["tstamp"][0] in ("double", "float"):
            checks.append("tstamp IS NOT NULL AND NOT isfinite(tstamp)")
        if "turn" in types:
            checks.append("turn IS NOT NULL AND turn < 1")
        for name in ("conversation_a", "conversation_b"):
            if name in types:
                checks.append(f"len(list_filter({name}, m -> m.role IS NULL OR m.content IS NULL)) > 0")
        bad = con.execute(
            f"SELECT count(*) FROM raw WHERE {' OR '.join(f'({c})' for c in checks)}"
        ).fetchone()
        if bad is None or bad[0]:
            return None
        n_rows = con.execute("SELECT count(*) FROM raw").fetchone()[0]  # type: ignore[index]
        if kind == "parquet":
            lines: np.ndarray | None = np.arange(1, n_rows + 1, dtype=np.int64)
        elif kind == "array":
            lines = None
        else:
            lines = None
        con.execute(
            "CREATE TYPE _model AS ENUM "
            "(SELECT DISTINCT m FROM (SELECT model_a AS m FROM raw UNION ALL SELECT model_b FROM raw) ORDER BY m)"
        )
        con.execute(f"CREATE TYPE _winner AS ENUM ({winners})")
        frame = con.execute(
            "SELECT * REPLACE (model_a::_model AS model_a, model_b::_model AS model_b, winner::_winner AS winner) "
            "FROM raw"
        ).df()
    except duckdb.Error:
        return None
    finally:
        con.close()
    if "question_id" in frame.columns and frame["question_id"].dtype != object:
        frame["question_id"] = (
            frame["question_id"].astype("string").astype(object).where(frame["question_id"].notna())
        )
    if "turn" in frame.columns:
        frame["turn"] = pd.to_numeric(frame["turn"], errors="coerce").astype(np.float64)
    if kind == "jsonl":
        return BattleRecords(_finish_frame(frame), partial(_jsonl_line_numbers, file, n_rows), str(file))
    return BattleRecords(_finish_frame(frame), lines, str(file), "row" if kind == "parquet" else "line")


def _jsonl_line_numbers(file: Path, n_rows: int) -> np.ndarray | None:
    """Line number of each record in a JSONL file (blank lines skipped); None if they do not match the row count."""
    newlines, last = 0, b"\n"
    with file.open("rb") as handle:
        while chunk := handle.read(1 << 24):
            newlines += chunk.count(b"\n")
            last = chunk[-1:]
    if newlines + (last != b"\n") == n_rows:
        return np.arange(1, n_rows + 1, dtype=np.int64)
    data = np.fromfile(file, dtype=np.uint8)
    ends = np.flatnonzero(data == 10)
    starts = np.concatenate([[0], ends + 1])
    ends = np.concatenate([ends, [len(data)]])
    nonblank = ends > starts
    for k in np.flatnonzero(nonblank & (ends - starts <= 8)):
        nonblank[k] = bool(data[starts[k] : ends[k]].tobytes().strip())
    numbers_ = np.flatnonzero(nonblank) + 1
    return numbers_ if len(numbers_) == n_rows else None


def as_records(records: Any) -> BattleRecords:
    """Validated `BattleRecords` from a BattleRecords, a pandas DataFrame or a sequence of dicts."""
    if isinstance(records, BattleRecords):
        return records
    if isinstance(records, pd.DataFrame):
        for field in REQUIRED:
            if field not in records.columns:
                raise RatingsInputError(f"records: field '{field}': missing column", field=field)
        try:
            frame = _finish_frame(records)
            clean = _frame_is_clean(frame)
        except (TypeError, ValueError):
            clean = False
        if not clean:
            checked, _, _ = _check_rows(
                enumerate(records.to_dict("records")),
                lambda i: f"records[{i}]",
                skip_bad=False,
                by_line=False,
            )
            frame = _records_to_frame(checked)
        return BattleRecords(frame)
    if isinstance(records, (str, os.PathLike)):
        raise TypeError("pass battle records, not a path; use load_battles_file(path) first")
    rows, _, _ = _check_rows(enumerate(records), lambda i: f"records[{i}]", skip_bad=False, by_line=False)
    return BattleRecords(_records_to_frame(rows))
