"""Verifiers: does an answer solve a task? One spec dict per verifier, checked once, then applied to answers.

A spec is ``{"type": ..., **params}``. ``check_spec`` validates it (``VerifierError`` naming the
parameter). ``verify(spec, answer, task)`` returns a ``Check``: passed, what was read from the answer, and
an ``error`` when the verifier itself failed (it raised, timed out, or is switched off). Types:
- ``numeric``: the answer's final number equals the reference within ``tolerance`` (absolute, default
  1e-6) or ``rel`` (relative). The final number comes after ``####``, inside ``\\boxed{}``, after "answer
  is" / "answer:", else it is the last number. Thousands separators (``1,234``), signs, decimals,
  fractions (``3/4``), percents, currency signs and units are read. A unit on both sides of one dimension
  (m/km/cm/mm, g/kg, s/min/h, ml/l) is converted; a unit of another dimension fails. ``match: any`` passes
  when *any* number in the answer matches. That is a gameable verifier: list several numbers and one is
  right. It is kept so the report's hack detectors can be shown to catch it.
- ``exact``: the final answer (as above, or the whole answer) equals the reference. Case, spaces,
  surrounding quotes and end punctuation are normalised first.
- ``choice``: a letter (A-Z) among ``choices``, read from "answer is B", "(B)", "B)" or a lone letter. An
  answer naming two different letters is ambiguous and fails. An answer that is exactly one choice's text
  counts.
- ``regex``: the answer matches ``pattern``; ``{answer}`` in it stands for the escaped reference. It runs
  with the ``regex`` module's own timeout, so a catastrophic pattern cannot hang a job.
- ``json_schema``: the first JSON value in the answer validates against ``schema`` (or the reference, read
  as a schema). With ``jsonschema`` installed, it does the validation. Without it, a small subset is
  checked, and the check's ``note`` says so. The subset is type, properties, required,
  additionalProperties false, enum, items, minimum, maximum, minLength, maxLength.
- ``reward``: any ``training.objectives.rewards`` spec (``reward: {type: contains, keywords: [..]}``). It
  passes when its score is at least ``threshold`` (default 1.0).
- ``code``: the answer's code (a fenced block, else the whole answer) runs with the task's reference (test
  code, e.g. asserts). It runs in a separate Python process with CPU-time, memory, file-size and process
  limits (``resource.setrlimit``), no environment and a scratch directory. It is off unless the operator
  sets ``VIBESTUDIO_CODE_CHECKS=true``. See docs/security.md: the limits contain mistakes, not an
  attacker.

Every verifier runs under a wall-clock limit (``timeout_s``, default 2 s) on the main thread (SIGALRM). A
verifier that raises or overruns gives ``Check(passed=False, error=...)``. A job counts that as a skip,
never as a wrong answer. This module knows nothing about the database or jobs.

A deliberate recursion with ``training.objectives.rewards``: a ``reward`` verifier holds a reward spec,
and a ``task`` reward holds a verifier. So the two modules are one spec language, nested to any depth.
Each side imports the other only inside the function that descends (``check_spec``'s and ``_reward``'s
``reward`` branch). So importing either module alone imports nothing of the other.
"""

from __future__ import annotations

import json
import math
import re
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

TYPES = ("numeric", "exact", "choice", "regex", "json_schema", "reward", "code")
DEFAULT_TIMEOUT_S = 2.0
_PARAMS: dict[str, set[str]] = {
    "numeric": {"tolerance", "rel", "match"},
    "exact": {"extract"},
    "choice": set(),
    "regex": {"pattern", "flags"},
    "json_schema": {"schema"},
    "reward": {"reward", "threshold"},
    "code": {"cpu_s", "memory_mb"},
}


class VerifierError(ValueError):
    """A verifier spec (or a reference it needs) is unusable; the message names the parameter."""


class VerifierTimeout(Exception):
    """A verifier ran past its wall-clock limit."""


@dataclass
class Check:
    passed: bool
    parsed: str | None = None  # what was read from the answer (None: nothing readable)
    error: str | None = (
        None  # the verifier failed (raised, timed out, switched off): a skip, not a wrong answer
    )
    note: str | None = None


# ---- spec checks ---------------------------------------------------------------------------------------------
def check_spec(spec: Any) -> dict[str, Any]:
    """A verifier spec as a clean dict, or VerifierError naming what is wrong."""
    if isinstance(spec, str):
        spec = {"type": spec}
    if not isinstance(spec, dict):
        raise VerifierError(f"a verifier is a mapping like {{type: numeric}}, got {spec!r}")
    kind = spec.get("type")
    if kind not in TYPES:
        raise VerifierError(f"verifier type {kind!r} unknown; choose one of {', '.join(TYPES)}")
    unknown = set(spec) - {"type", "timeout_s"} - _PARAMS[kind]
    if unknown:
        raise VerifierError(f"verifier {kind}: unknown parameter(s) {', '.join(sorted(unknown))}")
    timeout = spec.get("timeout_s", DEFAULT_TIMEOUT_S)
    if not isinstance(timeout, int | float) or not 0 < timeout <= 60:
        raise VerifierError(f"verifier {kind}: timeout_s must be in (0, 60] seconds (got {timeout!r})")
    if kind == "numeric":
        for name in ("tolerance", "rel"):
            value = spec.get(name, 0)
            if not isinstance(value, int | float) or value < 0:
                raise VerifierError(f"verifier numeric: {name} must be a number >= 0 (got {value!r})")
        if spec.get("match", "final") not in ("final", "any"):
            raise VerifierError("verifier numeric: match must be 'final' or 'any'")
    if kind == "regex":
        if not spec.get("pattern"):
            raise VerifierError("verifier regex: 'pattern' is required")
        _compile(str(spec["pattern"]).replace("{answer}", "x"), str(spec.get("flags", "")))
    if kind == "exact" and spec.get("extract"):
        _compile(str(spec["extract"]), "")
    if kind == "json_schema" and "schema" in spec and not isinstance(spec["schema"], dict):
        raise VerifierError("verifier json_schema: 'schema' must be a mapping")
    if kind == "reward":
        from vibestudio.training.objectives.rewards import RewardSpecError, validate_specs

        inner = spec.get("reward")
        if not isinstance(inner, dict):
            raise VerifierError(
                "verifier reward: 'reward' must be a training.objectives.rewards spec, e.g. {type: length}"
            )
        try:
            validate_specs([inner])
        except RewardSpecError as exc:
            raise VerifierError(f"verifier reward: {exc}") from exc
    return dict(spec)


def check_reference(spec: dict[str, Any], answer: str, choices: list[str] | None) -> str | None:
    """Why ``answer`` cannot serve as this verifier's reference (None when it can): what an import reports."""
    kind = spec["type"]
    if kind != "json_schema" and kind != "reward" and not str(answer).strip():
        return "the answer is empty"
    if kind == "numeric" and parse_number(str(answer)) is None:
        return f"the answer {str(answer)[:40]!r} is not a number the numeric verifier can read"
    if kind == "choice":
        if not choices:
            return "a choice task needs 'choices'"
        letter = str(answer).strip().upper().strip("().")
        if len(letter) != 1 or not "A" <= letter < chr(ord("A") + len(choices)):
            return f"the answer {str(answer)[:20]!r} is not a letter among the {len(choices)} choices"
    if kind == "json_schema" and "schema" not in spec:
        try:
            if not isinstance(json.loads(answer), dict):
                return "the answer must be a JSON schema (an object)"
        except ValueError:
            return "the answer is not a JSON schema (not valid JSON)"
    return None


# ---- running -------------------------------------------------------------------------------------------------
@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise VerifierTimeout after ``seconds`` (main thread only: elsewhere the regex and subprocess limits are
    the only ones, which is said in the check's note by the caller)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise VerifierTimeout(f"the verifier ran past {seconds:g} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def verify(spec: dict[str, Any], answer: str, reference: str, choices: list[str] | None = None) -> Check:
    """Apply a checked spec to one answer. Never raises: a failing verifier is ``Check(False, error=...)``."""
    kind = spec["type"]
    timeout = float(spec.get("timeout_s", DEFAULT_TIMEOUT_S))
    try:
        with time_limit(timeout + (float(spec.get("cpu_s", 5)) + 2 if kind == "code" else 0)):
            return _VERIFY[kind](spec, str(answer), str(reference), choices, timeout)
    except VerifierTimeout as exc:
        return Check(False, error=f"timeout: {exc}")
    except Exception as exc:  # a verifier that raises is a counted skip, never a crash
        return Check(False, error=f"{type(exc).__name__}: {exc}")


# ---- numbers -------------------------------------------------------------------------------------------------
_NUMBER = re.compile(
    r"(?<![\w.])([-+−]?)\s?[$€£]?\s?((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?:\s?/\s?(\d+)(?![\d.]))?"
    r"\s?(%|[a-zA-Zµ]+)?"
)
_UNITS: dict[str, tuple[str, float]] = {
    "mm": ("length", 0.001),
    "cm": ("length", 0.01),
    "m": ("length", 1.0),
    "meter": ("length", 1.0),
    "meters": ("length", 1.0),
    "km": ("length", 1000.0),
    "kilometers": ("length", 1000.0),
    "g": ("mass", 0.001),
    "grams": ("mass", 0.001),
    "kg": ("mass", 1.0),
    "kilograms": ("mass", 1.0),
    "s": ("time", 1.0),
    "sec": ("time", 1.0),
    "seconds": ("time", 1.0),
    "min": ("time", 60.0),
    "minutes": ("time", 60.0),
    "h": ("time", 3600.0),
    "hours": ("time", 3600.0),
    "ml": ("volume", 0.001),
    "l": ("volume", 1.0),
    "liters": ("volume", 1.0),
    "litres": ("volume", 1.0),
}


@dataclass
class Number:
    value: float
    unit: str | None  # a known unit (lower case) or None
    text: str


_LATEX_FRAC = re.compile(r"\\d?frac\{\s*(\d+)\s*\}\{\s*(\d+)\s*\}")


def numbers(text: str) -> list[Number]:
    """Every number in ``text``, in order, with its unit when it is a known one (``\\frac{a}{b}`` reads a/b)."""
    out = []
    text = _LATEX_FRAC.sub(r"\1/\2", text)
    for m in _NUMBER.finditer(text):
        sign, digits, denom, unit = m.groups()
        try:
            value = float(Fraction(digits.replace(",", "")))
            if denom:
                if int(denom) == 0:
                    continue
                value = value / int(denom)
        except (ValueError, ZeroDivisionError):
            continue
        if sign in ("-", "−"):
            value = -value
        u = (unit or "").lower()
        if u == "%":
            value, u = value / 100, ""
        out.append(Number(value, u if u in _UNITS else None, m.group(0).strip()))
    return out


def final_answer_text(text: str) -> str:
    """The part of an answer that states its result: after ``####``, inside the last ``\\boxed{}``, after the
    last "answer is" / "answer:", else the whole text."""
    if "####" in text:
        return text.rsplit("####", 1)[1]
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed
    m = list(re.finditer(r"answer\s*(?:is|:|=)\s*", text, re.I))
    if m:
        return text[m[-1].end() :]
    return text


def last_boxed(text: str) -> str | None:
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    i, depth = start + len("\\boxed{"), 1
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i:j]
    return None


def parse_number(text: str) -> Number | None:
    """The number an answer gives as its result (the first number of its final part, else its last number)."""
    final = final_answer_text(text)
    found = numbers(final)
    if found and final is not text:
        return found[0]
    every = numbers(text)
    return every[-1] if every else None


def _close(a: Number, b: Number, tol: float, rel: float) -> bool:
    x, y = a.value, b.value
    if a.unit and b.unit:
        (da, fa), (db, fb) = _UNITS[a.unit], _UNITS[b.unit]
        if da != db:
            return False
        x = x * fa / fb
    return math.isclose(x, y, abs_tol=max(tol, 1e-9), rel_tol=rel)


def _numeric(spec: dict[str, Any], answer: str, ref: str, choices: Any, timeout: float) -> Check:
    want = parse_number(ref)
    if want is None:
        return Check(False, error=f"the reference {ref[:40]!r} is not a number")
    tol, rel = float(spec.get("tolerance", 1e-6)), float(spec.get("rel", 0.0))
    if spec.get("match") == "any":
        found = numbers(answer)
        hit = next((n for n in found if _close(n, want, tol, rel)), None)
        shown = hit.text if hit else (found[-1].text if found else None)
        return Check(hit is not None, shown)
    got = parse_number(answer)
    if got is None:
        return Check(False, None)
    return Check(_close(got, want, tol, rel), got.text)


# ---- text ----------------------------------------------------------------------------------------------------
def normalise(text: str) -> str:
    t = " ".join(str(text).casefold().split())
    for _ in range(2):  # quotes around end punctuation, or punctuation after quotes
        t = t.strip().strip("\"'`*").strip().rstrip(".!?;:").strip()
    return t


def _exact(spec: dict[str, Any], answer: str, ref: str, choices: Any, timeout: float) -> Check:
    if spec.get("extract"):
        m = _compile(str(spec["extract"]), "S").search(answer, timeout=timeout)
        if not m:
            return Check(False, None)
        text = m.group(1) if m.groups() else m.group(0)
    else:
        final = final_answer_text(answer)
        text = final if final is not answer else answer.strip().split("\n")[-1] if answer.strip() else ""
        if normalise(answer) == normalise(ref):
            text = answer
    return Check(normalise(text) == normalise(ref), text.strip()[:200])


_LETTER_CUES = (
    r"answer\s*(?:is|:)?\s*\(?([A-Z])\)?(?![\w])",
    r"^\s*\(?([A-Z])\)?(?:[.):\s]|$)",
    r"\(([A-Z])\)",
    r"(?<![\w'])([A-Z])\)",
)


def _choice(spec: dict[str, Any], answer: str, ref: str, choices: list[str] | None, timeout: float) -> Check:
    n = len(choices or [])
    valid = {chr(ord("A") + i) for i in range(n)}
    want = ref.strip().upper().strip("().")
    for i, c in enumerate(choices or []):
        if normalise(answer) == normalise(c):
            got = chr(ord("A") + i)
            return Check(got == want, got)
    found: list[str] = []
    for cue in _LETTER_CUES:
        found += [g for g in re.findall(cue, answer, re.M) if g in valid]
        if found and cue == _LETTER_CUES[0]:
            break
    letters = sorted(set(found))
    if len(letters) != 1:
        return Check(False, None, note="ambiguous: several letters" if letters else None)
    return Check(letters[0] == want, letters[0])


def _compile(pattern: str, flags: str) -> Any:
    import regex

    value = 0
    for letter in flags:
        value |= {"I": regex.I, "M": regex.M, "S": regex.S, "X": regex.X}.get(letter.upper(), 0)
    try:
        return regex.compile(pattern, value)
    except regex.error as exc:
        raise VerifierError(f"bad pattern {pattern[:60]!r} ({exc})") from exc


def _regex(spec: dict[str, Any], answer: str, ref: str, choices: Any, timeout: float) -> Check:
    import regex

    pattern = str(spec["pattern"]).replace("{answer}", regex.escape(ref.strip()))
    try:
        m = _compile(pattern, str(spec.get("flags", ""))).search(answer, timeout=timeout)
    except TimeoutError as exc:
        raise VerifierTimeout(f"the pattern ran past {timeout:g} s") from exc
    return Check(m is not None, m.group(0)[:200] if m else None)


# ---- JSON schema ---------------------------------------------------------------------------------------------
def first_json(text: str) -> Any:
    """The first JSON value (object or array) in ``text``; ValueError when there is none."""
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                return decoder.raw_decode(text[i:])[0]
            except ValueError:
                continue
    raise ValueError("no JSON object or array in the answer")


_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def subset_errors(value: Any, schema: dict[str, Any], where: str = "$") -> list[str]:
    """The small JSON-schema subset used when ``jsonschema`` is not installed."""
    errs: list[str] = []
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind else []
    if kinds and not any(_JSON_TYPES.get(k, lambda v: False)(value) for k in kinds):
        return [f"{where}: expected {kind}"]
    if "enum" in schema and value not in schema["enum"]:
        errs.append(f"{where}: not one of {schema['enum']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        errs += [f"{where}: missing {k!r}" for k in schema.get("required", []) if k not in value]
        if schema.get("additionalProperties") is False:
            errs += [f"{where}: unexpected {k!r}" for k in value if k not in props]
        for k, sub in props.items():
            if k in value and isinstance(sub, dict):
                errs += subset_errors(value[k], sub, f"{where}.{k}")
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            errs += subset_errors(item, schema["items"], f"{where}[{i}]")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errs.append(f"{where}: below {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errs.append(f"{where}: above {schema['maximum']}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errs.append(f"{where}: shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errs.append(f"{where}: longer than {schema['maxLength']}")
    return errs


def _json_schema(spec: dict[str, Any], answer: str, ref: str, choices: Any, timeout: float) -> Check:
    schema = spec.get("schema") or json.loads(ref)
    try:
        value = first_json(answer)
    except ValueError:
        return Check(False, None)
    try:
        import jsonschema
    except ImportError:
        errs = subset_errors(value, schema)
        return Check(
            not errs, json.dumps(value)[:200], note="checked with the built-in subset (no jsonschema)"
        )
    ok = not list(jsonschema.Draft202012Validator(schema).iter_errors(value))
    return Check(ok, json.dumps(value)[:200])


# ---- rewards and code ----------------------------------------------------------------------------------------
def _reward(spec: dict[str, Any], answer: str, ref: str, choices: Any, timeout: float) -> Check:
    from vibestudio.training.objectives.rewards import make_reward

    fn = make_reward(spec["reward"])
    score = fn(prompts=[""], completions=[answer], reference=[ref])[0]
    return Check(float(score) >= float(spec.get("threshold", 1.0)), f"{float(score):.3g}")


def _code(spec: dict[str, Any], answer: str, ref: str, choices: Any, timeout: float) -> Check:
    from vibestudio.common.settings import get_settings
    from vibestudio.training.tasks.sandbox import run_python_tests

    if not get_settings().code_checks:
        return Check(
            False, error="code checks are off (the operator turns them on with VIBESTUDIO_CODE_CHECKS)"
        )
    blocks = re.findall(r"```(?:python|py)?\s*\n(.*?)```", answer, re.S)
    code = blocks[0] if blocks else answer
    ok, why = run_python_tests(
        code, ref, cpu_s=float(spec.get("cpu_s", 5)), memory_mb=int(spec.get("memory_mb", 256))
    )
    return Check(ok, code[:200], note=why)


_VERIFY: dict[str, Callable[..., Check]] = {
    "numeric": _numeric,
    "exact": _exact,
    "choice": _choice,
    "regex": _regex,
    "json_schema": _json_schema,
    "reward": _reward,
    "code": _code,
}
