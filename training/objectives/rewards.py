"""Verifiable reward functions for GRPO (RLVR), each built from a small spec dict that a job config holds.

The kinds are format constraints, exact match, length bounds, regex, and a trained reward model. A spec is
``{"type": ..., "weight": 1.0, **params}``. ``build_rewards(specs)`` returns TRL-ready callables
``f(prompts, completions, **columns) -> list[float]`` and their weights. Each callable has a readable
``__name__``, which TRL uses for the per-function metric ``rewards/<name>/mean``. The functions are pure
and fast; only ``reward_model`` loads a model. This module knows nothing about jobs or the database.

Types and their parameters:
- ``length``: ``min`` / ``max`` (inclusive) in ``unit`` ``words`` or ``chars``. Words are the default,
  counted by ``textfeatures.vibes.word_count``. 1.0 inside the bounds, falling linearly to 0 at twice the
  distance. So the policy gets a gradient towards the window.
- ``regex``: ``pattern`` (Python ``re``), ``flags`` (e.g. ``"IMS"``), ``mode`` ``search`` (default) or
  ``fullmatch``. ``negate: true`` rewards *not* matching. 1.0 or 0.0.
- ``format``: ``format`` is one of ``json``, ``markdown_heading``, ``bullets``, ``no_markdown``,
  ``no_emoji``, ``single_paragraph``, ``ends_with_punctuation``. 1.0 or 0.0. Headers, bullets, markdown
  and emoji are the definitions of ``textfeatures.vibes``. Drift reports, vibe control and the evals count
  with the same ones.
- ``exact_match``: compares the answer with the dataset column ``column`` (default ``reference``). With
  ``extract`` (a regex), it compares the first group instead. Case and spaces are normalised unless
  ``normalize: false``. 1.0 or 0.0.
- ``contains``: a ``keywords`` list, ``mode`` ``any`` (default) or ``all``; case-insensitive. 1.0 or 0.0.
- ``reward_model``: the ``path`` of a reward-model checkpoint made by a ``reward`` job. Or ``job``: its
  id, resolved by the job process. The raw scalar score.
- ``judge``: ``judge`` is a contestant (id or name), resolved by the job process into its engine. It
  compares each answer with the dataset column ``against`` (default ``reference``, the snapshot's chosen
  answer). It uses ``annotation.judges.judge_pair``, both orders. It scores 1 per win, 0.5 per tie, 0 per
  loss, averaged over the parsed verdicts. It gives 0.5 when the judge gives none. ``focus`` is passed to
  the judge prompt.
- ``task``: the answer checked against the task's reference by a verifier (``training.tasks.verifiers``).
  It is the task's own verifier, from the dataset columns ``answer``, ``verifier``, ``choices`` (as a GRPO
  job on a task set provides them). ``verifier`` may name another one for every task. 1.0 or 0.0. It gives
  ``None`` when the verifier raises, times out or is switched off; that is left out, counted in
  ``skipped``.

A deliberate recursion with ``training.tasks.verifiers``: the two modules are one spec language. A
``task`` reward holds a verifier, and a ``reward`` verifier holds a reward spec, nested to any depth. Each
side imports the other only inside the function that descends (``make_reward``'s ``task`` branch,
``TaskScorer``). So importing either module alone imports nothing of the other.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from vibestudio.common.outcomes import score_first
from vibestudio.textfeatures import vibes

RewardFn = Callable[..., list[float]]

FORMATS = (
    "json",
    "markdown_heading",
    "bullets",
    "no_markdown",
    "no_emoji",
    "single_paragraph",
    "ends_with_punctuation",
)
TYPES = ("length", "regex", "format", "exact_match", "contains", "reward_model", "judge", "task")


class RewardSpecError(ValueError):
    """A reward spec is malformed (the message names the spec index and the parameter)."""


def completion_text(completion: Any) -> str:
    """The text of one completion, standard (a string) or conversational (a list of messages)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(m.get("content", "") for m in completion if m.get("role", "assistant") == "assistant")
    if isinstance(completion, dict):
        return str(completion.get("content", ""))
    return str(completion)


def _normalise(text: str) -> str:
    return " ".join(text.lower().split()).strip(" .!?")


# ---- the functions -------------------------------------------------------------------------------------------
def length_score(text: str, lo: float, hi: float, unit: str = "words") -> float:
    n = vibes.word_count(text) if unit == "words" else len(text)
    if lo <= n <= hi:
        return 1.0
    if n < lo:
        return max(0.0, 1.0 - (lo - n) / max(lo, 1))
    return max(0.0, 1.0 - (n - hi) / max(hi, 1))


def format_ok(text: str, fmt: str) -> bool:
    t = text.strip()
    if fmt == "json":
        try:
            json.loads(t)
            return True
        except ValueError:
            return False
    if fmt == "markdown_heading":
        return vibes.starts_with_header(t)
    if fmt == "bullets":
        return vibes.bullet_count(t) > 0
    if fmt == "no_markdown":
        return not vibes.has_markdown(t)
    if fmt == "no_emoji":
        return vibes.emoji_count(t) == 0
    if fmt == "single_paragraph":
        return bool(t) and "\n\n" not in t
    if fmt == "ends_with_punctuation":
        return t.endswith((".", "!", "?"))
    raise RewardSpecError(f"unknown format {fmt!r}")


def _named(fn: Callable[..., list[float]], name: str) -> RewardFn:
    fn.__name__ = name
    return fn


def make_reward(spec: dict[str, Any], index: int = 0) -> RewardFn:
    """One TRL reward function from a spec (validated here)."""
    kind = spec.get("type")
    where = f"reward {index} ({kind})"
    allowed = {"type", "weight", "name"} | _PARAMS.get(str(kind), set())
    if kind not in TYPES:
        raise RewardSpecError(f"reward {index}: type {kind!r} unknown; choose one of {', '.join(TYPES)}")
    unknown = set(spec) - allowed
    if unknown:
        raise RewardSpecError(f"{where}: unknown parameter(s) {', '.join(sorted(unknown))}")
    name = str(spec.get("name") or kind)
    if kind == "length":
        lo, hi = float(spec.get("min", 0)), float(spec.get("max", 1e9))
        unit = spec.get("unit", "words")
        if unit not in ("words", "chars") or lo < 0 or hi < lo:
            raise RewardSpecError(f"{where}: need 0 <= min <= max and unit words|chars")

        def length(completions: Sequence[Any], **_: Any) -> list[float]:
            return [length_score(completion_text(c), lo, hi, unit) for c in completions]

        return _named(length, name)
    if kind == "regex":
        pattern = spec.get("pattern")
        if not pattern:
            raise RewardSpecError(f"{where}: 'pattern' is required")
        flags = 0
        for letter in str(spec.get("flags", "")):
            flags |= {"I": re.I, "M": re.M, "S": re.S, "X": re.X}.get(letter.upper(), 0)
        try:
            rx = re.compile(pattern, flags)
        except re.error as exc:
            raise RewardSpecError(f"{where}: bad pattern ({exc})") from exc
        match = rx.fullmatch if spec.get("mode", "search") == "fullmatch" else rx.search
        negate = bool(spec.get("negate", False))
        return _named(
            lambda completions, **_: [
                float(bool(match(completion_text(c).strip())) != negate) for c in completions
            ],
            name,
        )
    if kind == "format":
        fmt = spec.get("format")
        if fmt not in FORMATS:
            raise RewardSpecError(f"{where}: format {fmt!r} unknown; choose one of {', '.join(FORMATS)}")

        def formatted(completions: Sequence[Any], **_: Any) -> list[float]:
            return [float(format_ok(completion_text(c), fmt)) for c in completions]

        return _named(formatted, str(spec.get("name") or f"format_{fmt}"))
    if kind == "exact_match":
        column = spec.get("column", "reference")
        extract = re.compile(spec["extract"], re.S) if spec.get("extract") else None
        normalise = bool(spec.get("normalize", True))

        def exact(completions: Sequence[Any], **columns: Any) -> list[float]:
            refs = columns.get(column)
            if refs is None:
                raise RewardSpecError(f"{where}: the dataset has no column {column!r}")
            out = []
            for c, ref in zip(completions, refs, strict=True):
                text = completion_text(c)
                if extract is not None:
                    m = extract.search(text)
                    text = (m.group(1) if m and m.groups() else m.group(0)) if m else ""
                a, b = (
                    (_normalise(text), _normalise(str(ref)))
                    if normalise
                    else (text.strip(), str(ref).strip())
                )
                out.append(float(a == b))
            return out

        return _named(exact, name)
    if kind == "contains":
        words = [str(w).lower() for w in spec.get("keywords", [])]
        if not words:
            raise RewardSpecError(f"{where}: 'keywords' must be a non-empty list")
        test = all if spec.get("mode", "any") == "all" else any
        return _named(
            lambda completions, **_: [
                float(test(w in completion_text(c).lower() for w in words)) for c in completions
            ],
            name,
        )
    if kind == "judge":
        if not spec.get("engine"):
            raise RewardSpecError(
                f"{where}: 'judge' must be resolved to an engine first (the job process does this)"
            )
        return _named(
            JudgeScorer(spec["engine"], spec.get("against", "reference"), spec.get("focus", "")), name
        )
    if kind == "task":
        override = None
        if spec.get("verifier"):
            from vibestudio.training.tasks.verifiers import VerifierError, check_spec

            try:
                override = check_spec(spec["verifier"])
            except VerifierError as exc:
                raise RewardSpecError(f"{where}: {exc}") from exc
        return _named(TaskScorer(override), str(spec.get("name") or "task"))  # type: ignore[arg-type]
    path = spec.get("path")
    if not path:
        raise RewardSpecError(f"{where}: 'path' (or 'job', resolved by the job process) is required")
    return _named(RewardModelScorer(str(path)), name)


_PARAMS: dict[str, set[str]] = {
    "length": {"min", "max", "unit"},
    "regex": {"pattern", "flags", "mode", "negate"},
    "format": {"format"},
    "exact_match": {"column", "extract", "normalize"},
    "contains": {"keywords", "mode"},
    "reward_model": {"path", "job"},
    "judge": {"judge", "against", "focus", "engine"},
    "task": {"verifier"},
}


def validate_specs(specs: list[dict[str, Any]]) -> None:
    """Check every spec without loading anything (reward models are checked by the job process)."""
    if not specs:
        raise RewardSpecError("at least one reward function is needed")
    for i, spec in enumerate(specs):
        if not isinstance(spec, dict):
            raise RewardSpecError(f"reward {i}: expected a mapping like {{type: length, max: 80}}")
        if not isinstance(spec.get("weight", 1.0), int | float):
            raise RewardSpecError(f"reward {i}: weight must be a number")
        if spec.get("type") == "reward_model":
            if not (spec.get("path") or spec.get("job")):
                raise RewardSpecError(f"reward {i} (reward_model): 'path' or 'job' is required")
            continue
        if spec.get("type") == "judge":
            if not spec.get("judge") and not spec.get("engine"):
                raise RewardSpecError(f"reward {i} (judge): 'judge' (a contestant id or name) is required")
            unknown = set(spec) - {"type", "weight", "name"} - _PARAMS["judge"]
            if unknown:
                raise RewardSpecError(
                    f"reward {i} (judge): unknown parameter(s) {', '.join(sorted(unknown))}"
                )
            continue
        make_reward(spec, i)


def build_rewards(specs: list[dict[str, Any]]) -> tuple[list[Guarded], list[float]]:
    """TRL reward functions and weights, names made unique (``length``, ``length_2``...)."""
    validate_specs(specs)
    funcs: list[Guarded] = []
    weights: list[float] = []
    seen: dict[str, int] = {}
    for i, spec in enumerate(specs):
        fn = make_reward(spec, i)
        count = seen.get(fn.__name__, 0) + 1
        seen[fn.__name__] = count
        name = fn.__name__ if count == 1 else f"{fn.__name__}_{count}"
        funcs.append(Guarded(fn, name))
        weights.append(float(spec.get("weight", 1.0)))
    return funcs, weights


class Guarded:
    """A reward function that survives answers it cannot score: when the batch call raises, each answer is
    scored alone and the ones that raise get ``None`` (TRL leaves them out of that function's mean and of the
    weighted sum). Only when every answer raises does the error stop the job. ``errors`` counts the misses."""

    def __init__(self, fn: RewardFn, name: str) -> None:
        self.fn, self.__name__, self.errors = fn, name, 0

    def __call__(
        self, prompts: Sequence[Any] = (), completions: Sequence[Any] = (), **columns: Any
    ) -> list[float | None]:
        try:
            return list(self.fn(prompts=prompts, completions=completions, **columns))
        except Exception as batch_error:
            n = len(completions)
            out: list[float | None] = []
            for i in range(n):
                cols = {
                    k: [v[i]] if isinstance(v, list | tuple) and len(v) == n else v
                    for k, v in columns.items()
                }
                try:
                    out.append(self.fn(prompts=[prompts[i]], completions=[completions[i]], **cols)[0])
                except Exception as exc:
                    out.append(None)
                    self.errors += 1
                    print(
                        f"[reward] {self.__name__} failed on one answer: {type(exc).__name__}: {exc}",
                        flush=True,
                    )
            if all(v is None for v in out):
                raise RuntimeError(
                    f"reward {self.__name__} failed on every answer: {batch_error}"
                ) from batch_error
            return out


class RewardModelScorer:
    """Scores completions with a reward model saved by a ``reward`` job (full model or LoRA + score head)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._model: Any = None
        self._tok: Any = None
        self.__name__ = "reward_model"

    def _load(self) -> None:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        from vibestudio.training.publishing.artifacts import read_manifest

        manifest = read_manifest(self.path)
        base = manifest.get("base_path") or self.path
        self._tok = AutoTokenizer.from_pretrained(self.path)
        model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1, dtype=torch.float32)
        if manifest.get("adapter"):
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, self.path)
        model.config.pad_token_id = self._tok.pad_token_id
        self._model = model.eval()

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **_: Any) -> list[float]:
        import torch

        if self._model is None:
            self._load()
        texts = []
        for p, c in zip(prompts, completions, strict=True):
            msgs = list(p) if isinstance(p, list) else [{"role": "user", "content": str(p)}]
            msgs.append({"role": "assistant", "content": completion_text(c)})
            texts.append(self._tok.apply_chat_template(msgs, tokenize=False))
        enc = self._tok(texts, return_tensors="pt", padding=True, truncation=True, max_length=1024)
        device = next(self._model.parameters()).device
        with torch.no_grad():
            scores = self._model(**{k: v.to(device) for k, v in enc.items()}).logits[:, 0]
        return [float(s) for s in scores]


class JudgeScorer:
    """Pairwise AI judge as a reward: the completion against a reference answer, in both orders.

    ``engine`` is either an Engine or a dict ``{kind, model_ref, adapter_ref, engine_config}`` built lazily.
    """

    def __init__(self, engine: Any, against: str = "reference", focus: str = "") -> None:
        self._engine = engine
        self.against, self.focus = against, focus
        self.__name__ = "judge"

    def engine(self) -> Any:
        if isinstance(self._engine, dict):
            from vibestudio.arena.engines.factory import get_engine

            e = self._engine
            self._engine = get_engine(
                e["kind"], e["model_ref"], e.get("adapter_ref"), e.get("engine_config") or {}
            )
        return self._engine

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any) -> list[float]:
        from vibestudio.annotation.judges import judge_pair

        refs = columns.get(self.against)
        if refs is None:
            raise RewardSpecError(f"judge: the dataset has no column {self.against!r}")
        out = []
        for p, c, ref in zip(prompts, completions, refs, strict=True):
            question = p[-1]["content"] if isinstance(p, list) else str(p)
            runs = judge_pair(self.engine(), question, completion_text(c), str(ref), self.focus)
            scores = [s for v, _ in runs if (s := score_first(v)) is not None]
            out.append(sum(scores) / len(scores) if scores else 0.5)
        return out


class TaskScorer:
    """The ``task`` reward: 1.0 when the verifier passes the answer, 0.0 when it fails it, None when it cannot
    say (``skipped`` counts those, ``scored`` the others)."""

    def __init__(self, override: dict[str, Any] | None = None) -> None:
        self.override = override
        self.scored = self.skipped = 0
        self.__name__ = "task"

    def __call__(self, completions: Sequence[Any], **columns: Any) -> list[float | None]:
        from vibestudio.training.tasks.verifiers import verify

        answers, specs, choices = columns.get("answer"), columns.get("verifier"), columns.get("choices")
        if answers is None:
            raise RewardSpecError(
                "task: the dataset has no 'answer' column (train on a task set: tasks: NAME)"
            )
        out: list[float | None] = []
        for i, c in enumerate(completions):
            spec = self.override if self.override else (json.loads(specs[i]) if specs is not None else None)
            if spec is None:
                raise RewardSpecError("task: no verifier for the task and none in the reward spec")
            opts = json.loads(choices[i]) if choices is not None and choices[i] else None
            check = verify(spec, completion_text(c), str(answers[i]), opts)
            if check.error is not None:
                self.skipped += 1
                out.append(None)
            else:
                self.scored += 1
                out.append(float(check.passed))
        return out
