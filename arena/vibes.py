"""Vibe features of one answer: length, markdown, emoji and the phrases people react to.

`features(text)` turns an answer into a flat dict of counts (tokens, markdown headers, list items, bold spans, code
blocks, emoji, exclamation marks, flattery / sycophancy / hedging markers, refusal) and `profile(texts)` summarises
many answers. The marker phrase lists live in the versioned file `arena/data/vibe_markers.yaml`, loaded once.

This module knows nothing about battles, models or ratings: ratings use it for style and vibe control, drift reports
and vibe profiles use it on raw answers. Tokens are a regex approximation (words and punctuation marks), not a model
tokenizer, so counts are comparable across contestants whatever their tokenizer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import yaml

MARKERS_PATH = Path(__file__).parent / "data" / "vibe_markers.yaml"

#: Features used by style control (the Chatbot Arena style-control covariates).
STYLE_FEATURES: tuple[str, ...] = ("tokens", "headers", "list_items", "bold")
#: Extra covariates used by vibe control.
VIBE_FEATURES: tuple[str, ...] = ("emoji", "exclamations", "flattery", "sycophancy", "hedging", "refusal")
#: Every key `features()` returns, in order.
FEATURE_NAMES: tuple[str, ...] = STYLE_FEATURES + ("code_blocks",) + VIBE_FEATURES
MARKER_CATEGORIES: tuple[str, ...] = ("flattery", "sycophancy", "hedging", "refusal")

_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
_HEADER_RE = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+\S", re.MULTILINE)
_LIST_RE = re.compile(r"^[ \t]*(?:[-*+\u2022]|\d{1,3}[.)])[ \t]+\S", re.MULTILINE)
_BOLD_RE = re.compile(r"\*\*(?=\S)[^*\n]+?\*\*|__(?=\S)[^_\n]+?__")
_FENCE_RE = re.compile(r"^[ \t]*```", re.MULTILINE)
_EMOJI_RE = re.compile(
    "[\U0001f300-\U0001faff\U0001f1e6-\U0001f1ff\u2600-\u27bf\u2b50\u2b55\u2b1b\u2b1c\u231a\u231b\u23e9-\u23fa]"
)


@cache
def load_markers() -> dict[str, Any]:
    """The marker file as a dict: `version` plus one list of phrases per category (read once, cached)."""
    data = yaml.safe_load(MARKERS_PATH.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or "version" not in data:
        raise ValueError(f"{MARKERS_PATH}: expected a mapping with a 'version' key")
    for category in MARKER_CATEGORIES:
        phrases = data.get(category)
        if not isinstance(phrases, list) or not all(isinstance(p, str) and p.strip() for p in phrases):
            raise ValueError(f"{MARKERS_PATH}: '{category}' must be a list of non-empty phrases")
    return data


def markers_version() -> int:
    """Version of the marker lists, to be stored next to anything computed with them."""
    return int(load_markers()["version"])


@cache
def _marker_patterns() -> dict[str, re.Pattern[str]]:
    patterns = {}
    for category in MARKER_CATEGORIES:
        phrases = sorted({_fold(p.strip()) for p in load_markers()[category]}, key=len, reverse=True)
        body = "|".join(r"\s+".join(re.escape(word) for word in p.split()) for p in phrases)
        patterns[category] = re.compile(rf"(?<!\w)(?:{body})(?!\w)", re.IGNORECASE)
    return patterns


def _fold(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'")


def features(text: str) -> dict[str, float]:
    """Counts for one answer; `refusal` is 1.0 when any refusal marker occurs, else 0.0."""
    text = _fold(text or "")
    markers = _marker_patterns()
    out = {
        "tokens": float(len(_TOKEN_RE.findall(text))),
        "headers": float(len(_HEADER_RE.findall(text))),
        "list_items": float(len(_LIST_RE.findall(text))),
        "bold": float(len(_BOLD_RE.findall(text))),
        "code_blocks": float(len(_FENCE_RE.findall(text)) // 2),
        "emoji": float(len(_EMOJI_RE.findall(text))),
        "exclamations": float(text.count("!")),
    }
    for category in ("flattery", "sycophancy", "hedging"):
        out[category] = float(len(markers[category].findall(text)))
    out["refusal"] = 1.0 if markers["refusal"].search(text) else 0.0
    return {name: out[name] for name in FEATURE_NAMES}


def profile(texts: Iterable[str]) -> dict[str, dict[str, float]]:
    """Per feature: `mean` count, `rate` (share of answers where it occurs at all) and `median`, over `texts`.

    An empty input gives zeros. The result is plain data, ready for a table or a side-by-side comparison.
    """
    rows = [features(t) for t in texts]
    out: dict[str, dict[str, float]] = {}
    for name in FEATURE_NAMES:
        values = sorted(r[name] for r in rows)
        n = len(values)
        if n == 0:
            out[name] = {"mean": 0.0, "rate": 0.0, "median": 0.0}
            continue
        mid = n // 2
        median = values[mid] if n % 2 else (values[mid - 1] + values[mid]) / 2
        out[name] = {
            "mean": sum(values) / n,
            "rate": sum(1 for v in values if v > 0) / n,
            "median": float(median),
        }
    return out


def compare_profiles(
    a: dict[str, dict[str, float]], b: dict[str, dict[str, float]]
) -> dict[str, dict[str, float]]:
    """Side-by-side view of two profiles: per feature the two means, the two rates and the mean difference a - b."""
    return {
        name: {
            "mean_a": a[name]["mean"],
            "mean_b": b[name]["mean"],
            "rate_a": a[name]["rate"],
            "rate_b": b[name]["rate"],
            "mean_diff": a[name]["mean"] - b[name]["mean"],
        }
        for name in FEATURE_NAMES
        if name in a and name in b
    }


#: Degeneration signals of one answer (`degeneration()`): each 0/1 except `repetition` (a share).
DEGENERATION_SIGNALS: tuple[str, ...] = ("empty", "repetition", "off_topic", "language_switch", "truncated")
_WORD_RE = re.compile(r"[^\W\d_]+")


def _latin_share(text: str) -> float | None:
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return None
    return sum(1 for c in letters if c.isascii() or "\u00c0" <= c <= "\u024f") / len(letters)


def degeneration(answer: str, prompt: str = "", truncated: bool = False) -> dict[str, float]:
    """Signs that an answer broke down rather than changed style.

    `empty`: no word at all. `repetition`: share of the answer's word 4-grams that repeat an earlier one (0 for
    short answers). `off_topic`: the prompt has content words (4+ letters) and the answer uses none of them (a
    crude lexical test; a paraphrasing answer can trip it, so it is meant to be compared between two models, not
    read alone). `language_switch`: the prompt is mostly Latin script and the answer mostly not. `truncated`: the
    answer hit the token cap without ending (endless answers).
    """
    words = [w.casefold() for w in _WORD_RE.findall(answer or "")]
    grams = [tuple(words[i : i + 4]) for i in range(len(words) - 3)]
    repeated = len(grams) - len(set(grams))
    prompt_words = {w.casefold() for w in _WORD_RE.findall(prompt or "") if len(w) >= 4}
    stems = {w[:5] for w in prompt_words}
    on_topic = any(w[:5] in stems for w in words if len(w) >= 4)
    p_share, a_share = _latin_share(prompt or ""), _latin_share(answer or "")
    return {
        "empty": 0.0 if words else 1.0,
        "repetition": repeated / len(grams) if len(grams) >= 8 else 0.0,
        "off_topic": 1.0 if words and prompt_words and not on_topic else 0.0,
        "language_switch": 1.0
        if p_share is not None and a_share is not None and p_share > 0.8 and a_share < 0.5
        else 0.0,
        "truncated": 1.0 if truncated else 0.0,
    }
