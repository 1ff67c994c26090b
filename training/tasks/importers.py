"""Task rows from files people bring: JSONL / JSON / Parquet / Arrow files, or a folder of them.

A folder is a data set's files. Everything is read through the studio's one reader of untrusted files
(``common.files``) and checked row by row.

A folder written by ``datasets``' ``save_to_disk`` is read by its own index. That call writes two layouts:
- a ``Dataset``: ``state.json`` naming its ``.arrow`` files;
- a ``DatasetDict``: ``dataset_dict.json`` naming its splits, each a ``Dataset`` folder.
Every split's rows are imported; the studio makes its own train / held-out split by content hash. Each is
named by ``split/file`` in errors and provenance. Any other folder is searched for task files (``.jsonl``,
``.json``, ``.parquet``, ``.arrow``).

Layouts recognised per row (the first that fits):
- ``prompt`` + ``answer``, also ``question`` / ``problem`` / ``input`` + ``target`` / ``output``.
  Optional: ``verifier`` (a spec or a type name), ``choices`` and ``meta``.
- GSM8K: ``question`` + ``answer`` whose last line is ``#### N``. The answer is N, checked numerically.
- MATH: ``problem`` + ``solution`` with ``\\boxed{...}``. The answer is the last boxed text: numeric when
  it reads as a number, else normalised exact.
- multiple choice: ``choices`` (a list, or ARC's ``{"label": [...], "text": [...]}``). The answer is a
  letter (``answer`` / ``answerKey``) or a 0-based index (MMLU). The choices are listed in the prompt as
  ``A) ...``.
- code: ``tests`` (Python test code) with the task's prompt. It is checked by running the answer against
  the tests.

Without a ``verifier``, the set's default is used (``--verifier``). Otherwise numeric when the answer is a
number, and normalised exact when not. Every problem is a ``RowError`` with the file, line (or row) and
field. Nothing here writes anything.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vibestudio.common.files import Budget, RawRecord, RowError, read_records
from vibestudio.training.tasks.verifiers import VerifierError, check_reference, check_spec, last_boxed

PROMPT_KEYS = ("prompt", "question", "problem", "input", "instruction")
ANSWER_KEYS = ("answer", "answerKey", "solution", "target", "output", "reference")
SUFFIXES = (".jsonl", ".json", ".parquet", ".arrow", ".jsonl.gz", ".json.gz")
MAX_INDEX_BYTES = 2**20  # a save_to_disk folder's state.json / dataset_dict.json
MAX_PROMPT_CHARS = 20_000


@dataclass
class TaskRow:
    prompt: str
    answer: str
    verifier: dict[str, Any] | None  # None: the set's default
    choices: list[str] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    line: int | None = None
    source: str = ""
    layout: str = "prompt/answer"


@dataclass
class FileRows:
    rows: list[TaskRow]
    errors: list[tuple[str, RowError]]  # (file name, error)
    files: list[str]


class DatasetsDirError(ValueError):
    """A ``save_to_disk`` folder whose index (``state.json`` / ``dataset_dict.json``) cannot be followed."""

    def __init__(self, where: str, field: str | None, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where, self.field, self.message = where, field, message


def _index(path: Path, root: Path) -> dict[str, Any]:
    where = path.relative_to(root).as_posix()
    if path.stat().st_size > MAX_INDEX_BYTES:
        raise DatasetsDirError(where, None, f"larger than {MAX_INDEX_BYTES} bytes")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetsDirError(where, None, f"not valid JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise DatasetsDirError(where, None, "expected a JSON object")
    return value


def _safe_child(folder: Path, name: Any, root: Path, where: str, field: str) -> Path:
    """``folder/name`` when ``name`` is a plain name inside ``folder`` (no separators, no ``..``)."""
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name:
        raise DatasetsDirError(where, field, f"{name!r} is not a plain file or folder name")
    child = folder / name
    if not child.resolve().is_relative_to(root.resolve()):
        raise DatasetsDirError(where, field, f"{name!r} points outside the folder")
    return child


def _dataset_files(folder: Path, root: Path) -> list[Path]:
    """The ``.arrow`` files a ``Dataset`` folder's ``state.json`` names, in order."""
    where = (folder / "state.json").relative_to(root).as_posix()
    entries = _index(folder / "state.json", root).get("_data_files")
    if not isinstance(entries, list) or not entries:
        raise DatasetsDirError(where, "_data_files", "expected a non-empty list of {filename}")
    files = []
    for i, entry in enumerate(entries):
        name = entry.get("filename") if isinstance(entry, dict) else None
        f = _safe_child(folder, name, root, where, f"_data_files[{i}].filename")
        if not f.name.endswith(".arrow") or not f.is_file():
            raise DatasetsDirError(
                where, f"_data_files[{i}].filename", f"{name!r} is not an .arrow file here"
            )
        files.append(f)
    return files


def datasets_dir_files(path: Path) -> list[Path] | None:
    """The data files of a ``datasets`` ``save_to_disk`` folder (a ``Dataset`` or a ``DatasetDict``), or None
    when ``path`` is not one. Raises ``DatasetsDirError`` for an index that cannot be followed."""
    if (path / "dataset_dict.json").is_file():
        where = "dataset_dict.json"
        splits = _index(path / where, path).get("splits")
        if not isinstance(splits, list) or not splits:
            raise DatasetsDirError(where, "splits", "expected a non-empty list of split names")
        files: list[Path] = []
        for i, split in enumerate(splits):
            sub = _safe_child(path, split, path, where, f"splits[{i}]")
            if not (sub / "state.json").is_file():
                raise DatasetsDirError(where, f"splits[{i}]", f"split {split!r} has no state.json")
            files += _dataset_files(sub, path)
        return files
    if (path / "state.json").is_file() and (path / "dataset_info.json").is_file():
        return _dataset_files(path, path)
    return None


def task_files(path: str | Path) -> list[Path]:
    """The file itself, a ``save_to_disk`` folder's Arrow files, or the task files in a folder (recursively,
    sorted), e.g. a data set's ``data/``."""
    p = Path(path)
    if p.is_dir():
        saved = datasets_dir_files(p)
        if saved is not None:
            return saved
        found = sorted(f for f in p.rglob("*") if f.is_file() and f.name.endswith(SUFFIXES))
        return [f for f in found if not f.name.startswith(".") and not _is_cache(f)]
    return [p]


def _is_cache(f: Path) -> bool:
    """A ``datasets`` cache file (``cache-*.arrow``): derived data, not the rows someone saved."""
    return f.name.startswith("cache-") and f.name.endswith(".arrow")


def read_task_files(path: str | Path, default_verifier: dict[str, Any] | None = None) -> FileRows:
    """Every task row of ``path`` (a file or a folder), with the errors of each bad row."""
    root = Path(path)
    try:
        files = task_files(path)
    except DatasetsDirError as exc:
        return FileRows([], [(exc.where, RowError(None, exc.field, exc.message))], [])
    names = [f.relative_to(root).as_posix() if root.is_dir() else f.name for f in files]
    out = FileRows([], [], names)
    if not files:
        out.errors.append((str(path), RowError(None, None, "no .jsonl, .json, .parquet or .arrow files")))
        return out
    budget = Budget.from_settings()  # one budget for every file of the folder
    for f, name in zip(files, names, strict=True):
        records, errors = read_records(f, budget=budget)
        out.errors += [(name, e) for e in errors]
        for rec in records:
            row, errs = parse_row(rec, default_verifier)
            out.errors += [(name, e) for e in errs]
            if row is not None:
                row.source = name
                out.rows.append(row)
    return out


def _first(value: dict[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for k in keys:
        if k in value and value[k] is not None:
            return k, value[k]
    return None, None


def _choices(raw: Any) -> list[str] | None:
    if isinstance(raw, dict) and isinstance(raw.get("text"), list):
        raw = raw["text"]
    if isinstance(raw, list) and raw and all(isinstance(c, str | int | float) for c in raw):
        return [str(c) for c in raw]
    return None


def parse_row(
    rec: RawRecord, default_verifier: dict[str, Any] | None
) -> tuple[TaskRow | None, list[RowError]]:
    """One record as a task, or the errors that stop it (each naming its field)."""

    def err(fld: str | None, msg: str) -> tuple[None, list[RowError]]:
        return None, [RowError(rec.line, fld, msg, record=rec.index)]

    value = rec.value
    if not isinstance(value, dict):
        return err(None, "expected an object with a prompt and an answer")
    pkey, prompt = _first(value, PROMPT_KEYS)
    if pkey is None or not isinstance(prompt, str) or not prompt.strip():
        return err(pkey or "prompt", "no prompt (give 'prompt', 'question' or 'problem' as non-empty text)")
    if len(prompt) > MAX_PROMPT_CHARS:
        return err(pkey, f"the prompt is longer than {MAX_PROMPT_CHARS} characters")
    raw_meta = value.get("meta")
    meta: dict[str, Any] = dict(raw_meta) if isinstance(raw_meta, dict) else {}
    spec: dict[str, Any] | None = None
    if value.get("verifier") is not None:
        try:
            spec = check_spec(value["verifier"])
        except VerifierError as exc:
            return err("verifier", str(exc))
    layout = "prompt/answer"
    choices = None
    if "tests" in value:
        if not isinstance(value["tests"], str) or not value["tests"].strip():
            return err("tests", "the tests must be non-empty Python code")
        answer, spec, layout = value["tests"], spec or {"type": "code"}, "code"
    else:
        akey, answer = _first(value, ANSWER_KEYS)
        if akey is None or answer is None or (isinstance(answer, str) and not answer.strip()):
            return err(akey or "answer", "no answer (give 'answer', 'solution' or 'target')")
        if "choices" in value:
            choices = _choices(value["choices"])
            if choices is None or len(choices) < 2 or len(choices) > 26:
                return err("choices", "choices must be a list of 2 to 26 texts (or {label, text})")
            if isinstance(answer, int) and not isinstance(answer, bool):
                if not 0 <= answer < len(choices):
                    return err(akey, f"answer index {answer} is not among the {len(choices)} choices")
                answer = chr(ord("A") + answer)
            listed = "\n".join(f"{chr(ord('A') + i)}) {c}" for i, c in enumerate(choices))
            prompt = f"{prompt.rstrip()}\n\n{listed}\n\nAnswer with the letter of the right choice."
            spec, layout = spec or {"type": "choice"}, "choice"
        elif not isinstance(answer, str | int | float) or isinstance(answer, bool):
            return err(akey, f"the answer must be text or a number, got {type(answer).__name__}")
        answer = str(answer)
        if layout == "prompt/answer" and "####" in answer:
            answer, layout = answer.rsplit("####", 1)[1].strip().replace(",", ""), "gsm8k"
            spec = spec or {"type": "numeric"}
        elif layout == "prompt/answer" and "\\boxed{" in answer:
            boxed = last_boxed(answer)
            if boxed is None or not boxed.strip():
                return err(akey, "the \\boxed{} answer is empty or not closed")
            answer, layout = boxed.strip(), "math"
        if spec is None:
            spec = dict(default_verifier) if default_verifier else None
        if spec is None:
            spec = {"type": "numeric"} if _is_number(answer) else {"type": "exact"}
    problem = check_reference(spec, answer, choices)
    if problem:
        return err("answer" if layout != "code" else "tests", problem)
    return TaskRow(prompt.strip(), answer.strip(), spec, choices, dict(meta), rec.line, layout=layout), []


_PLAIN_NUMBER = re.compile(r"\s*[-+−]?[$€£]?\s*(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s*/\s*\d+)?\s*%?\s*")


def _is_number(text: str) -> bool:
    return _PLAIN_NUMBER.fullmatch(text) is not None
