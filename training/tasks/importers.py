"""Task rows from files people bring: JSONL / JSON / Parquet files, or a folder of them (a data set's files),
read through the studio's one reader of untrusted files (``common.files``) and checked row by row.

Layouts recognised per row (the first that fits):

- ``prompt`` + ``answer`` (also ``question`` / ``problem`` / ``input`` + ``target`` / ``output``), with an
  optional ``verifier`` (a spec or a type name), ``choices`` and ``meta``;
- GSM8K: ``question`` + ``answer`` whose last line is ``#### N``: the answer is N, checked numerically;
- MATH: ``problem`` + ``solution`` with ``\\boxed{...}``: the answer is the last boxed text (numeric when it
  reads as a number, else normalised exact);
- multiple choice: ``choices`` (a list, or ARC's ``{"label": [...], "text": [...]}``) with the answer a letter
  (``answer`` / ``answerKey``) or a 0-based index (MMLU): the choices are listed in the prompt as ``A) ...``;
- code: ``tests`` (Python test code) with the task's prompt: checked by running the answer against the tests.

Without a ``verifier`` the set's default is used (``--verifier``), else numeric when the answer is a number
and normalised exact otherwise. Every problem is a ``RowError`` with the file, line (or row) and field; nothing
here writes anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common.files import RawRecord, RowError, read_records
from training.tasks.verifiers import VerifierError, check_reference, check_spec, last_boxed

PROMPT_KEYS = ("prompt", "question", "problem", "input", "instruction")
ANSWER_KEYS = ("answer", "answerKey", "solution", "target", "output", "reference")
SUFFIXES = (".jsonl", ".json", ".parquet", ".jsonl.gz", ".json.gz")
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


def task_files(path: str | Path) -> list[Path]:
    """The file itself, or the task files in a folder (recursively, sorted), e.g. a data set's ``data/``."""
    p = Path(path)
    if p.is_dir():
        found = sorted(f for f in p.rglob("*") if f.is_file() and f.name.endswith(SUFFIXES))
        return [f for f in found if not f.name.startswith(".")]
    return [p]


def read_task_files(path: str | Path, default_verifier: dict[str, Any] | None = None) -> FileRows:
    """Every task row of ``path`` (a file or a folder), with the errors of each bad row."""
    files = task_files(path)
    out = FileRows([], [], [str(f.name) for f in files])
    if not files:
        arrow = Path(path).is_dir() and any(Path(path).rglob("*.arrow"))
        hint = (
            " (a `datasets` save_to_disk folder: write it out with `ds.to_parquet(...)` or `ds.to_json(...)`)"
            if arrow
            else ""
        )
        out.errors.append((str(path), RowError(None, None, f"no .jsonl, .json or .parquet files{hint}")))
        return out
    for f in files:
        records, errors = read_records(f)
        out.errors += [(f.name, e) for e in errors]
        for rec in records:
            row, errs = parse_row(rec, default_verifier)
            out.errors += [(f.name, e) for e in errs]
            if row is not None:
                row.source = f.name
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
