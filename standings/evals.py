"""A small verifiable eval set the studio runs itself: prompts whose answers a program can check.

`standings/data/verifiable_evals.jsonl` holds one item a line: `id`, `category` (format, arithmetic),
`prompt` and a `check` (`{"type": ..., params}`). `CHECKS` maps each type to a checker `f(answer,
**params) -> (passed, detail)`.
- Format checks follow IFEval's spirit: exact bullet counts, all lowercase, required / forbidden words,
  JSON with given keys, word limits, opening / closing phrases.
- Arithmetic checks compare the last number in the answer with the exact result.

`run_evals(db, contestant)` asks the contestant exactly as the arena does: its engine, system prompt,
prefill and sampling. It goes through the engine's concurrency gate, so arena players keep their place in
the queue. It checks each answer and stores one `EvalResult` row per item, each in its own short
transaction. So an interrupted run keeps what it did.

Results belong to an eval set named after the file's content hash. Editing the file starts a new set, so
scores never mix versions. `eval_scores(session)` gives each contestant's share of passed items. It uses
the latest answer per item; engine failures are not counted as answers.

It knows nothing about ratings or the UI. Progress goes to an optional callback.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from vibestudio.accounts import require_role
from vibestudio.arena.engines.ask import ask
from vibestudio.arena.engines.base import EngineError, Sampling
from vibestudio.arena.registry import (
    ContestantInfo,
    engine_for,
    messages_for,
    resolve_contestant,
)
from vibestudio.common.files import RowError, decode_bytes, iter_json_lines
from vibestudio.db.models import Contestant, EvalResult
from vibestudio.db.session import Database
from vibestudio.textfeatures import vibes

EVALS_PATH = Path(__file__).parent / "data" / "verifiable_evals.jsonl"
CheckResult = tuple[bool, str]
Progress = Callable[[int, int, str], None]
#: Engine failures after which a run stops (the engine will not answer the next item either).
FATAL_KINDS = ("down", "config")


class EvalError(ValueError):
    """A bad eval file, an unknown contestant, or a run that cannot start."""


# -- checkers ------------------------------------------------------------------------------------------------------
# Bullets, numbered items, words and code fences are the definitions of `textfeatures.vibes` (the ones drift reports,
# vibe control and the GRPO format rewards count with); a bullet inside a code block is not a bullet.
_NUMBER = re.compile(r"-?\d(?:[\d,]*\d)?(?:\.\d+)?")
_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "list": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "boolean": lambda v: isinstance(v, bool),
    "any": lambda v: True,
}


def check_bullets(answer: str, n: int) -> CheckResult:
    count = vibes.bullet_count(answer)
    return count == n, f"{count} bullet points (wanted exactly {n})"


def check_numbered(answer: str, n: int) -> CheckResult:
    count = vibes.numbered_count(answer)
    return count == n, f"{count} numbered items (wanted exactly {n})"


def check_lowercase(answer: str) -> CheckResult:
    upper = [c for c in answer if c.isupper()]
    if not any(c.isalpha() for c in answer):
        return False, "no letters in the answer"
    return not upper, "all lowercase" if not upper else f"{len(upper)} capital letters (first: {upper[0]!r})"


def check_uppercase(answer: str) -> CheckResult:
    lower = [c for c in answer if c.islower()]
    if not any(c.isalpha() for c in answer):
        return False, "no letters in the answer"
    return not lower, "all capitals" if not lower else f"{len(lower)} lowercase letters (first: {lower[0]!r})"


def _has_word(answer: str, word: str) -> bool:
    # a word starting with it counts ("lanterns" has "lantern"); case does not matter
    return re.search(rf"(?<!\w){re.escape(word)}", answer, re.IGNORECASE) is not None


def check_include_words(answer: str, words: list[str]) -> CheckResult:
    missing = [w for w in words if not _has_word(answer, w)]
    return not missing, "has every required word" if not missing else f"missing: {', '.join(missing)}"


def check_exclude_words(answer: str, words: list[str]) -> CheckResult:
    used = [w for w in words if _has_word(answer, w)]
    return not used, "uses none of the forbidden words" if not used else f"uses: {', '.join(used)}"


def check_json(answer: str, keys: dict[str, str], lengths: dict[str, int] | None = None) -> CheckResult:
    text = answer.strip()
    fenced = vibes.fenced_body(text)
    if fenced is not None:
        text = fenced.strip()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return False, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    if not isinstance(value, dict):
        return False, f"JSON {type(value).__name__}, not an object"
    for key, kind in keys.items():
        if key not in value:
            return False, f"no key {key!r}"
        if not _JSON_TYPES[kind](value[key]):
            return False, f"{key!r} is not a {kind}"
    for key, n in (lengths or {}).items():
        got = len(value.get(key) or [])
        if got != n:
            return False, f"{key!r} has {got} items (wanted {n})"
    return True, "valid JSON with the required keys"


def check_max_words(answer: str, n: int) -> CheckResult:
    count = vibes.word_count(answer)
    return 0 < count <= n, f"{count} words (at most {n})"


def check_starts_with(answer: str, options: list[str]) -> CheckResult:
    text = answer.lstrip(" \t\r\n\"'*#>_")
    ok = any(re.match(rf"{re.escape(o)}(?!\w)", text, re.IGNORECASE) for o in options)
    return ok, f"starts with {text[:20]!r}"


def check_ends_with(answer: str, text: str) -> CheckResult:
    end = answer.rstrip()
    return end.endswith(text), f"ends with {end[-len(text) - 5 :]!r}"


def check_no_commas(answer: str) -> CheckResult:
    n = answer.count(",")
    return bool(answer.strip()) and n == 0, f"{n} commas"


def check_quoted(answer: str) -> CheckResult:
    text = answer.strip()
    ok = len(text) >= 2 and text[0] in '"\u201c' and text[-1] in '"\u201d'
    return ok, "wrapped in double quotes" if ok else f"starts {text[:1]!r}, ends {text[-1:]!r}"


def check_equals(answer: str, text: str) -> CheckResult:
    got = answer.strip().strip(" \t\r\n.!\"'*_`").casefold()
    return got == text.casefold(), f"answered {answer.strip()[:40]!r}"


def check_number(answer: str, value: float) -> CheckResult:
    numbers = _NUMBER.findall(answer)
    if not numbers:
        return False, "no number in the answer"
    last = float(numbers[-1].replace(",", ""))
    return abs(last - float(value)) < 1e-9, f"last number {numbers[-1]} (expected {value:g})"


def check_all(answer: str, checks: list[dict[str, Any]]) -> CheckResult:
    results = [run_check(spec, answer) for spec in checks]
    return all(ok for ok, _ in results), "; ".join(detail for _, detail in results)


CHECKS: dict[str, Callable[..., CheckResult]] = {
    "bullets": check_bullets,
    "numbered": check_numbered,
    "lowercase": check_lowercase,
    "uppercase": check_uppercase,
    "include_words": check_include_words,
    "exclude_words": check_exclude_words,
    "json": check_json,
    "max_words": check_max_words,
    "starts_with": check_starts_with,
    "ends_with": check_ends_with,
    "no_commas": check_no_commas,
    "quoted": check_quoted,
    "equals": check_equals,
    "number": check_number,
    "all": check_all,
}


def run_check(spec: dict[str, Any], answer: str) -> CheckResult:
    """Apply one check spec (`{"type": name, **params}`) to an answer."""
    params = {k: v for k, v in spec.items() if k != "type"}
    return CHECKS[spec["type"]](answer, **params)


def validate_check(spec: Any) -> None:
    """Raise ValueError when a check spec names an unknown type or has parameters its checker does not take."""
    if not isinstance(spec, dict) or spec.get("type") not in CHECKS:
        raise ValueError(f"check type must be one of {', '.join(CHECKS)}, got {spec!r}")
    if spec["type"] == "all":
        if not isinstance(spec.get("checks"), list) or not spec["checks"]:
            raise ValueError("an 'all' check needs a non-empty list 'checks'")
        for sub in spec["checks"]:
            validate_check(sub)
    if spec["type"] == "json" and any(k not in _JSON_TYPES for k in (spec.get("keys") or {}).values()):
        raise ValueError(f"json key types must be among {', '.join(_JSON_TYPES)}")
    try:
        run_check(spec, "")  # wrong or missing parameters fail here, whatever the answer
    except TypeError as exc:
        raise ValueError(f"check {spec['type']!r}: {exc}") from exc


# -- the eval set --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EvalItem:
    id: str
    category: str
    prompt: str
    check: dict[str, Any]


@cache
def _load(path: Path, mtime_ns: int) -> tuple[str, tuple[EvalItem, ...]]:
    raw = path.read_bytes()
    text, error = decode_bytes(raw, "utf-8-sig", choose=False)
    if error is not None or text is None:
        raise EvalError((error or RowError(None, None, "cannot read the file")).format(path.name))
    items: list[EvalItem] = []
    seen: set[str] = set()
    for line_no, obj in iter_json_lines(text):
        try:
            if isinstance(obj, RowError):
                raise ValueError(obj.message)
            item = EvalItem(
                str(obj["id"]), str(obj.get("category") or "other"), str(obj["prompt"]), obj["check"]
            )
            if not item.prompt.strip():
                raise ValueError("empty prompt")
            if item.id in seen:
                raise ValueError(f"duplicate id {item.id!r}")
            validate_check(item.check)
        except (json.JSONDecodeError, KeyError, ValueError, TypeError) as exc:
            what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
            raise EvalError(f"{path.name}: line {line_no}: {what}") from exc
        seen.add(item.id)
        items.append(item)
    name = f"verifiable-{hashlib.sha256(raw).hexdigest()[:10]}"
    return name, tuple(items)


def load_items(path: Path | None = None) -> tuple[str, list[EvalItem]]:
    """(eval set name, items) of an eval file (default: the built-in one). The name carries the content hash."""
    path = Path(path or EVALS_PATH)
    name, items = _load(path, path.stat().st_mtime_ns)
    return name, list(items)


def spread(items: list[EvalItem], n: int) -> list[EvalItem]:
    """``n`` of ``items`` taken in turn from each category (in the order categories first appear, file order within
    one), so a report on part of the set still covers every kind of check; all of them when ``n`` < 0 or >= the
    set."""
    if n < 0 or n >= len(items):
        return list(items)
    groups: dict[str, list[EvalItem]] = {}
    for item in items:
        groups.setdefault(item.category, []).append(item)
    out: list[EvalItem] = []
    depth = 0
    while len(out) < n:
        for group in groups.values():
            if depth < len(group) and len(out) < n:
                out.append(group[depth])
        depth += 1
    return out


# -- running -------------------------------------------------------------------------------------------------------
@dataclass
class ItemResult:
    item_id: str
    category: str
    passed: bool
    detail: str
    answer: str
    error: str | None = None
    tokens: int | None = None


@dataclass
class EvalRun:
    run_id: str
    contestant: str
    eval_set: str
    results: list[ItemResult] = field(default_factory=list)
    seconds: float = 0.0
    stopped: str | None = None  # why the run ended early (an engine that is down or misconfigured)

    @property
    def answered(self) -> int:
        return sum(1 for r in self.results if r.error is None)

    @property
    def passed(self) -> int:
        return sum(1 for r in self.results if r.passed)

    @property
    def score(self) -> float | None:
        return self.passed / self.answered if self.answered else None

    def summary(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "contestant": self.contestant,
            "eval_set": self.eval_set,
            "items": len(self.results),
            "answered": self.answered,
            "passed": self.passed,
            "score": self.score,
            "seconds": round(self.seconds, 2),
            "stopped": self.stopped,
        }


def run_evals(
    db: Database,
    contestant: int | str | ContestantInfo,
    limit: int | None = None,
    progress: Progress | None = None,
    *,
    items: Iterable[EvalItem] | None = None,
    max_tokens: int | None = None,
    user_id: int | None = None,
) -> EvalRun:
    """Ask `contestant` every eval item (the first `limit`), check the answers and store one row per item.

    `progress(done, total, item_id)` is called before the first item and after each one. `max_tokens` caps the
    contestant's own limit (handy for quick runs). Needs the researcher role when `user_id` is given.
    """
    require_role(db, user_id, "researcher")
    eval_set, all_items = load_items()
    chosen = list(items) if items is not None else all_items
    if limit is not None:
        chosen = chosen[: max(0, int(limit))]
    info = resolve_contestant(db, contestant, EvalError)
    sampling = Sampling.from_dict(info.sampling)
    if max_tokens is not None:
        sampling.max_tokens = max(1, min(sampling.max_tokens, int(max_tokens)))
    run = EvalRun(uuid.uuid4().hex, info.public_name, eval_set)
    t0 = time.perf_counter()
    total = len(chosen)
    if progress:
        progress(0, total, "")
    for done, item in enumerate(chosen, start=1):
        row = EvalResult(
            run_id=run.run_id,
            contestant_id=info.id,
            eval_set=eval_set,
            item_id=item.id,
            category=item.category,
        )
        try:
            reply = ask(engine_for(info), messages_for(info, [], item.prompt), sampling, info.prefill)
            answer = reply.text
            passed, detail = run_check(item.check, answer)
            row.answer, row.passed, row.detail = answer, passed, detail
            row.tokens, row.latency, row.tps = reply.tokens, reply.ttft, reply.tokens_per_s
        except EngineError as exc:
            row.answer, row.passed, row.detail, row.error = "", False, None, f"[{exc.kind}] {exc}"
            if exc.kind in FATAL_KINDS:
                run.stopped = f"{info.public_name}: {exc.public_message} ({exc.kind})"
        with db.session() as s:
            s.add(row)
        run.results.append(
            ItemResult(
                item.id, item.category, row.passed, row.detail or "", row.answer, row.error, row.tokens
            )
        )
        if progress:
            progress(done, total, item.id)
        if run.stopped:
            break
    run.seconds = time.perf_counter() - t0
    return run


# -- scores --------------------------------------------------------------------------------------------------------
def eval_scores(session: Session, eval_set: str | None = None) -> dict[str, dict[str, Any]]:
    """Per contestant name: `score` (passed / answered, latest answer per item of the current set), `answered`,
    `passed`, `items` (size of the set), `by_category` scores, `last_run_at`, and generation speed of those answers
    (`tokens_per_s`, `latency_s`, `tokens` medians)."""
    eval_set = eval_set or load_items()[0]
    n_items = len(load_items()[1]) if eval_set == load_items()[0] else None
    q = (
        select(EvalResult, Contestant.public_name)
        .join(Contestant, EvalResult.contestant_id == Contestant.id)
        .where(EvalResult.eval_set == eval_set)
        .order_by(EvalResult.created_at, EvalResult.id)
    )
    latest: dict[tuple[str, str], EvalResult] = {}
    for row, name in session.execute(q):
        if row.error is None:
            latest[(name, row.item_id)] = row
    out: dict[str, dict[str, Any]] = {}
    per: dict[str, list[EvalResult]] = {}
    for (name, _), row in latest.items():
        per.setdefault(name, []).append(row)
    for name, rows in sorted(per.items()):
        cats: dict[str, list[bool]] = {}
        for r in rows:
            cats.setdefault(r.category or "other", []).append(r.passed)
        passed = sum(r.passed for r in rows)
        out[name] = {
            "score": passed / len(rows),
            "answered": len(rows),
            "passed": passed,
            "items": n_items,
            "by_category": {c: sum(v) / len(v) for c, v in sorted(cats.items())},
            "last_run_at": max(r.created_at for r in rows).isoformat(timespec="seconds"),
            "tokens_per_s": _median([r.tps for r in rows]),
            "latency_s": _median([r.latency for r in rows]),
            "tokens": _median([float(r.tokens) if r.tokens is not None else None for r in rows]),
        }
    return out


def _median(values: list[float | None]) -> float | None:
    known = sorted(v for v in values if v is not None)
    if not known:
        return None
    mid = len(known) // 2
    return known[mid] if len(known) % 2 else (known[mid - 1] + known[mid]) / 2


def record_checked(
    db: Database,
    contestant_id: int,
    items: list[EvalItem],
    answers: list[str],
    passed: list[bool],
    run_id: str,
) -> None:
    """Store answers checked elsewhere (a checkpoint report's evals) as this contestant's eval results.

    The report and the decision card then read one record of the same answers. `eval_scores` keeps the latest
    answer per item, so these stand for their items until a later run answers them again."""
    eval_set = load_items()[0]
    with db.session() as s:
        for item, answer, ok in zip(items, answers, passed, strict=True):
            s.add(
                EvalResult(
                    run_id=run_id,
                    contestant_id=contestant_id,
                    eval_set=eval_set,
                    item_id=item.id,
                    category=item.category,
                    passed=bool(ok),
                    answer=answer,
                    detail="checkpoint report",
                )
            )
