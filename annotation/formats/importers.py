"""Parse and validate the preference layouts people bring into one canonical row (``ImportRow``).

Layouts, with field names as their projects publish them:
- ``fastchat``: Chatbot Arena / MT-Bench human-judgment battles. Fields: ``model_a``, ``model_b``,
  ``winner``, ``conversation_a``, ``conversation_b`` (lists of {role, content}). The winner is model_a,
  model_b, tie, tie (bothbad) or tie (bothgood). Optional: ``judge`` (the annotator), ``turn`` (judge only
  that turn), ``tstamp``, ``question_id``.
- ``alpaca_eval``: ``instruction``, ``output_1``, ``output_2``, ``generator_1``, ``generator_2``,
  ``preference``. A preference of 1 means output_1, 2 means output_2, and 1.5 is a tie. Fractional values
  between them are soft preferences. Optional: ``input`` (AlpacaFarm), ``annotator``.
- ``ultrafeedback``: UltraFeedback binarized. Fields: ``prompt``, ``chosen``, ``rejected``,
  ``score_chosen``, ``score_rejected``; optional ``prompt_id``. Chosen and rejected are text, or message
  lists ending with the answer.
- ``helpsteer2``: ``prompt``, ``response``, ``helpfulness``, ``correctness``, ``coherence``,
  ``complexity``, ``verbosity`` (whole numbers 0-4). Responses to the same prompt are paired in file order
  (1st with 2nd...). The more helpful one is preferred. A response left without a partner becomes a
  single-answer item, good when helpfulness >= 3.
- ``trl``: TRL preference rows. They are standard (``prompt``, ``chosen``, ``rejected`` as text),
  conversational (message lists), or with an implicit prompt (``chosen``/``rejected`` full conversations).
  An optional ``provenance``, as this studio exports it, keeps the annotator.

A parser returns rows or adds ``RowError``s naming the line and the field. It writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from vibestudio.common.files import RawRecord, RowError
from vibestudio.common.outcomes import FASTCHAT_WINNERS, item_from_alpaca, item_from_fastchat

ROLES = ("system", "user", "assistant")
HELPSTEER_ATTRS = ("helpfulness", "correctness", "coherence", "complexity", "verbosity")


@dataclass
class ImportRow:
    line: int | None
    record: int
    prompt: list[dict[str, str]]
    answers: list[str]
    outcome: str
    annotator: str
    stamps: list[dict[str, Any]] = field(default_factory=list)
    scores: list[tuple[str, str, float]] = field(default_factory=list)  # (criterion, side "1"/"2", value)
    reason: str | None = None
    external_id: str | None = None
    id_field: str | None = None
    created_at: datetime | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def dedup_key(self) -> str:
        body = json.dumps(
            [self.prompt, self.answers, self.annotator, self.meta.get("prompt_2"), self.meta.get("turn")],
            ensure_ascii=False,
            sort_keys=True,
        )
        return hashlib.sha256(body.encode("utf-8")).hexdigest()


class Check:
    """Field validation for one record; problems are collected, not raised."""

    def __init__(self, rec: RawRecord, errors: list[RowError], max_chars: int) -> None:
        self.rec, self.errors, self.max_chars = rec, errors, max_chars
        self.ok = True

    def fail(self, fld: str | None, msg: str) -> None:
        self.ok = False
        self.errors.append(RowError(self.rec.line, fld, msg, self.rec.index))

    def obj(self) -> dict[str, Any] | None:
        if not isinstance(self.rec.value, dict):
            self.fail(None, f"expected a JSON object, got {type(self.rec.value).__name__}")
            return None
        return self.rec.value

    def text(
        self, d: dict[str, Any], key: str, required: bool = True, allow_empty: bool = False
    ) -> str | None:
        v = d.get(key)
        if v is None:
            if required:
                self.fail(key, "is missing")
            return None
        if not isinstance(v, str):
            self.fail(key, f"must be text, got {type(v).__name__}")
            return None
        if len(v) > self.max_chars:
            self.fail(key, f"is {len(v):,} characters; at most {self.max_chars:,}")
            return None
        if not allow_empty and not v.strip():
            self.fail(key, "is empty")
            return None
        return v

    def number(
        self, d: dict[str, Any], key: str, lo: float, hi: float, required: bool = True, whole: bool = False
    ):
        v = d.get(key)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            if required:
                self.fail(key, "is missing")
            return None
        if isinstance(v, str):
            try:
                v = float(v)
            except ValueError:
                self.fail(key, f"must be a number, got {d.get(key)!r}")
                return None
        if isinstance(v, bool) or not isinstance(v, int | float):
            self.fail(key, f"must be a number, got {type(v).__name__}")
            return None
        if whole and float(v) != int(v):
            self.fail(key, f"must be a whole number, got {v}")
            return None
        if not lo <= v <= hi:
            self.fail(key, f"{v} is outside {lo:g}..{hi:g}")
            return None
        return float(v)

    def messages(self, d: dict[str, Any], key: str, value: Any = None) -> list[dict[str, str]] | None:
        v = d.get(key) if value is None else value
        if not isinstance(v, list) or not v:
            self.fail(key, "must be a non-empty list of {role, content} messages")
            return None
        out = []
        for i, m in enumerate(v):
            if not isinstance(m, dict) or m.get("role") not in ROLES or not isinstance(m.get("content"), str):
                self.fail(f"{key}[{i}]", "must be {role: system|user|assistant, content: text}")
                return None
            if len(m["content"]) > self.max_chars:
                self.fail(
                    f"{key}[{i}].content", f"is {len(m['content']):,} characters; at most {self.max_chars:,}"
                )
                return None
            out.append({"role": m["role"], "content": m["content"]})
        return out

    def timestamp(self, d: dict[str, Any], key: str) -> datetime | None:
        v = d.get(key)
        if v is None:
            return None
        try:
            if isinstance(v, int | float) and not isinstance(v, bool):
                return datetime.fromtimestamp(float(v), UTC).replace(tzinfo=None)
            if isinstance(v, str):
                return datetime.fromisoformat(v.replace("Z", "+00:00")).replace(tzinfo=None)
        except (ValueError, OverflowError, OSError):
            pass
        self.fail(key, f"is not a time (unix seconds or ISO 8601): {v!r}")
        return None


def _ident(v: Any) -> str | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return str(v)


def _cut_to_turn(conv: list[dict[str, str]], turn: int) -> list[dict[str, str]] | None:
    seen = 0
    for i, m in enumerate(conv):
        if m["role"] == "assistant":
            seen += 1
            if seen == turn:
                return conv[: i + 1]
    return None


def parse_fastchat(c: Check) -> list[ImportRow]:
    d = c.obj()
    if d is None:
        return []
    model_a, model_b = c.text(d, "model_a"), c.text(d, "model_b")
    winner = d.get("winner")
    if winner not in FASTCHAT_WINNERS:
        c.fail("winner", f"{winner!r} is not one of {', '.join(FASTCHAT_WINNERS)}")
    conv_a, conv_b = c.messages(d, "conversation_a"), c.messages(d, "conversation_b")
    turn = d.get("turn")
    if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int) or turn < 1):
        c.fail("turn", f"must be a whole number >= 1, got {turn!r}")
        turn = None
    judge = d.get("judge")
    if judge is not None and not isinstance(judge, str):
        c.fail("judge", "must be text")
    created = c.timestamp(d, "tstamp")
    if not c.ok or conv_a is None or conv_b is None:
        return []
    if turn is not None:
        cut_a, cut_b = _cut_to_turn(conv_a, turn), _cut_to_turn(conv_b, turn)
        if cut_a is None or cut_b is None:
            c.fail("turn", f"turn {turn} is past the end of the conversation")
            return []
        conv_a, conv_b = cut_a, cut_b
    for key, conv in (("conversation_a", conv_a), ("conversation_b", conv_b)):
        if conv[-1]["role"] != "assistant" or not any(m["role"] == "user" for m in conv):
            c.fail(key, "must hold a user message and end with the assistant's answer")
            return []
    prompt, prompt_b = conv_a[:-1], conv_b[:-1]
    meta: dict[str, Any] = {"question_id": _ident(d.get("question_id")), "turn": turn}
    if prompt_b != prompt:
        meta["prompt_2"] = prompt_b
    for k in ("category", "language", "anony"):
        if d.get(k) is not None:
            meta[k] = d[k]
    return [
        ImportRow(
            c.rec.line,
            c.rec.index,
            prompt,
            [conv_a[-1]["content"], conv_b[-1]["content"]],
            item_from_fastchat(str(winner)),
            judge or "fastchat",
            stamps=[{"model": model_a}, {"model": model_b}],
            external_id=_ident(d.get("battle_id") or d.get("id")),
            id_field="battle_id" if d.get("battle_id") is not None else "id",
            created_at=created,
            meta=meta,
        )
    ]


def parse_alpaca_eval(c: Check) -> list[ImportRow]:
    d = c.obj()
    if d is None:
        return []
    instruction = c.text(d, "instruction")
    extra = c.text(d, "input", required=False, allow_empty=True)
    out1, out2 = c.text(d, "output_1", allow_empty=True), c.text(d, "output_2", allow_empty=True)
    gen1 = c.text(d, "generator_1", required=False)
    gen2 = c.text(d, "generator_2", required=False)
    pref = c.number(d, "preference", 1.0, 2.0)
    annotator = c.text(d, "annotator", required=False)
    if not c.ok or instruction is None or out1 is None or out2 is None or pref is None:
        return []
    prompt_text = instruction + (f"\n\n{extra}" if extra and extra.strip() else "")
    meta: dict[str, Any] = {"preference": pref}
    if extra:
        meta["input"] = extra
        meta["instruction"] = instruction
    if d.get("dataset") is not None:
        meta["dataset"] = d["dataset"]
    return [
        ImportRow(
            c.rec.line,
            c.rec.index,
            [{"role": "user", "content": prompt_text}],
            [out1, out2],
            item_from_alpaca(pref),
            annotator or "alpaca_eval",
            stamps=[{"model": gen1}, {"model": gen2}],
            meta=meta,
        )
    ]


def _answer_of(c: Check, d: dict[str, Any], key: str) -> tuple[list[dict[str, str]] | None, str | None]:
    """(conversation before the answer or None, answer) from text or a message list ending with the answer."""
    v = d.get(key)
    if isinstance(v, str):
        return None, c.text(d, key, allow_empty=True)
    msgs = c.messages(d, key)
    if msgs is None:
        return None, None
    if msgs[-1]["role"] != "assistant":
        c.fail(key, "the last message must be the assistant's answer")
        return None, None
    return msgs[:-1], msgs[-1]["content"]


def parse_ultrafeedback(c: Check) -> list[ImportRow]:
    d = c.obj()
    if d is None:
        return []
    prompt_text = c.text(d, "prompt")
    conv_c, chosen = _answer_of(c, d, "chosen")
    conv_r, rejected = _answer_of(c, d, "rejected")
    s_c = c.number(d, "score_chosen", -1e9, 1e9, required=False)
    s_r = c.number(d, "score_rejected", -1e9, 1e9, required=False)
    if not c.ok or prompt_text is None or chosen is None or rejected is None:
        return []
    if conv_c is not None and conv_r is not None and conv_c != conv_r:
        c.fail("rejected", "chosen and rejected do not share the same conversation before the answer")
        return []
    prompt = conv_c or conv_r or [{"role": "user", "content": prompt_text}]
    scores = [("score", "1", s_c)] if s_c is not None else []
    scores += [("score", "2", s_r)] if s_r is not None else []
    return [
        ImportRow(
            c.rec.line,
            c.rec.index,
            prompt,
            [chosen, rejected],
            "1",
            "ultrafeedback",
            scores=scores,  # type: ignore[arg-type]
            external_id=_ident(d.get("prompt_id")),
            id_field="prompt_id",
            meta={"prompt_text": prompt_text} if prompt_text != prompt[-1]["content"] else {},
        )
    ]


def parse_helpsteer2(c: Check) -> list[ImportRow]:
    d = c.obj()
    if d is None:
        return []
    prompt = c.text(d, "prompt")
    response = c.text(d, "response", allow_empty=True)
    attrs = {a: c.number(d, a, 0, 4, whole=True) for a in HELPSTEER_ATTRS}
    if not c.ok or prompt is None or response is None:
        return []
    good = "good" if (attrs["helpfulness"] or 0) >= 3 else "bad"
    return [
        ImportRow(
            c.rec.line,
            c.rec.index,
            [{"role": "user", "content": prompt}],
            [response],
            good,
            "helpsteer2",
            scores=[(a, "1", float(v)) for a, v in attrs.items()],  # type: ignore[arg-type]
        )
    ]


def _score(row: ImportRow, name: str) -> float:
    return next(v for k, _, v in row.scores if k == name)


def pair_helpsteer(rows: list[ImportRow]) -> list[ImportRow]:
    """Pair responses to the same prompt in file order: the more helpful one is preferred; equally helpful
    answers are both good (helpfulness >= 3) or both bad."""
    by_prompt: dict[str, list[ImportRow]] = {}
    for r in rows:
        by_prompt.setdefault(r.prompt[0]["content"], []).append(r)
    out: list[ImportRow] = []
    for group in by_prompt.values():
        for i in range(0, len(group) - 1, 2):
            a, b = group[i], group[i + 1]
            ha, hb = _score(a, "helpfulness"), _score(b, "helpfulness")
            outcome = "1" if ha > hb else "2" if hb > ha else ("both_good" if ha >= 3 else "both_bad")
            out.append(
                ImportRow(
                    a.line,
                    a.record,
                    a.prompt,
                    [a.answers[0], b.answers[0]],
                    outcome,
                    "helpsteer2",
                    scores=a.scores + [(k, "2", v) for k, _, v in b.scores],
                    meta={"lines": [a.line, b.line]},
                )
            )
        if len(group) % 2:
            out.append(group[-1])
    return out


def parse_trl(c: Check) -> list[ImportRow]:
    d = c.obj()
    if d is None:
        return []
    prompt_v = d.get("prompt")
    prompt: list[dict[str, str]] | None
    if prompt_v is None:
        prompt = None
    elif isinstance(prompt_v, str):
        t = c.text(d, "prompt")
        prompt = [{"role": "user", "content": t}] if t is not None else None
    else:
        prompt = c.messages(d, "prompt")
    conv_c, chosen = _answer_of(c, d, "chosen")
    conv_r, rejected = _answer_of(c, d, "rejected")
    if not c.ok or chosen is None or rejected is None:
        return []
    if prompt is None and prompt_v is None:
        # implicit prompt: both are full conversations sharing everything but the answer
        if conv_c is None or conv_r is None or not conv_c:
            c.fail("prompt", "is missing (and chosen/rejected are not conversations holding it)")
            return []
        if conv_c != conv_r:
            c.fail("rejected", "chosen and rejected do not share the conversation before the answer")
            return []
        prompt = conv_c
    elif prompt is None:
        return []
    else:
        prompt = prompt + (conv_c or [])
        if (conv_c or []) != (conv_r or []):
            c.fail("rejected", "chosen and rejected hold different turns before the answer")
            return []
    prov: dict[str, Any] = d["provenance"] if isinstance(d.get("provenance"), dict) else {}
    annotators = prov.get("annotators") or []
    annotator = (annotators[0] if annotators else None) or prov.get("judge") or "trl"
    stamps = [
        {"model": prov.get("chosen_model"), "policy_version": prov.get("chosen_policy_version")},
        {"model": prov.get("rejected_model"), "policy_version": prov.get("rejected_policy_version")},
    ]
    return [
        ImportRow(
            c.rec.line,
            c.rec.index,
            prompt,
            [chosen, rejected],
            "1",
            str(annotator),
            stamps=[{k: v for k, v in s.items() if v is not None} for s in stamps],
            external_id=_ident(d.get("id")),
            id_field="id",
            meta={"provenance": prov} if prov else {},
        )
    ]


PARSERS: dict[str, Callable[[Check], list[ImportRow]]] = {
    "fastchat": parse_fastchat,
    "alpaca_eval": parse_alpaca_eval,
    "ultrafeedback": parse_ultrafeedback,
    "helpsteer2": parse_helpsteer2,
    "trl": parse_trl,
}
FORMATS = tuple(PARSERS)


def detect_format(first: Any) -> str | None:
    """Guess the layout from the first record's keys."""
    if not isinstance(first, dict):
        return None
    keys = set(first)
    if {"conversation_a", "conversation_b", "winner"} <= keys:
        return "fastchat"
    if {"instruction", "output_1", "output_2"} <= keys:
        return "alpaca_eval"
    if {"response", "helpfulness"} <= keys:
        return "helpsteer2"
    if {"chosen", "rejected"} <= keys and ("score_chosen" in keys or "prompt_id" in keys):
        return "ultrafeedback"
    if {"chosen", "rejected"} <= keys:
        return "trl"
    return None
