r"""Text features of one answer, defined once: length, markdown, emoji and the phrases people react to.

Every part of the studio that counts something in a text counts it here. So the same answer gets the same
count everywhere:
- drift reports (``training.report.steps``);
- style and vibe control (``standings.ratings``, the leaderboard's vote cache);
- vibe profiles;
- the GRPO format rewards (``training.objectives.rewards``);
- the verifiable evals' checkers (``standings.evals``).

The primitives:
- ``token_count`` counts words and punctuation marks. It is a regex approximation of a tokenizer, so
  counts are comparable across contestants whatever their tokenizer. ``word_count`` counts words; "don't"
  and "well-known" are one.
- ``emoji_count`` counts emoji as people see them: one per grapheme cluster. So each of these counts once:
  a ZWJ sequence (family, heart on fire), a skin-tone modifier, a flag (regional-indicator pair or tag
  sequence) and a keycap. Some symbols have text presentation by default: the copyright sign, trademark,
  arrows, a bare heart. They count only when an emoji variation selector (U+FE0F) asks for the emoji form.
  Unicode's own properties decide this, through the ``regex`` package (``\p{Emoji_Presentation}``,
  ``\p{Extended_Pictographic}``, ``\X`` grapheme clusters). It follows each Unicode release. The ``emoji``
  package would add a dependency for the same table.
- markdown structure: ``header_count``, ``bullet_count`` / ``numbered_count`` (``list_item_count`` is
  both), ``bold_count``, ``code_block_count``, and ``has_markdown`` for "no markdown" checks.
  - Headers, list items, bold and exclamation marks are counted in the *prose* only. ``prose`` is the text
    without fenced code blocks and inline code spans. So a ``# comment`` or ``!=`` inside code is not a
    header or an exclamation.
  - These are line-based regular expressions, in the spirit of Chatbot Arena's style-control counts
    (FastChat's ``count_markdown_elements``). They are not a CommonMark parse with markdown-it-py. Style
    control mixes counts that battles bring precomputed (FastChat's ``conv_metadata``) with counts made
    here. So the definitions must match what the model wrote, line by line. A CommonMark parser folds "2)
    next" after a paragraph into that paragraph. A full parse per answer also costs about twenty times
    more over a large vote log.

`features(text)` turns an answer into a flat dict. It holds those counts, the sycophancy and hedging
markers, refusal, and the tone toward the user (``textfeatures.tone``, sentences per answer):
- ``flattery``: praise of the user or their question;
- ``agreement``, ``apology``, ``enthusiasm``;
- ``feelings``: first-person feelings or experience.
Each tone axis is read from who a sentence is about and the VADER lexicon, not from a phrase list.
`profile(texts)` summarises many answers.

The marker phrase lists live in the versioned file `textfeatures/data/vibe_markers.yaml`, loaded once.
They are loaded by ``textfeatures.text_parts``, with ``prose``. Those are the primitives this module and
``textfeatures.tone`` both read, so neither imports the other's half. Since features version 3, the
multi-word flattery markers are one of the ways a sentence counts as praise (``textfeatures.tone``). They
are no longer a count of their own. ``FEATURES_VERSION`` changes whenever a definition here changes. So
counts stored with an older definition are recomputed. This module knows nothing about battles, models or
ratings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from typing import Any

from vibestudio.textfeatures import tone
from vibestudio.textfeatures.text_parts import (  # noqa: F401  (MARKERS_PATH, markers_version: read from here by callers)
    _INLINE_CODE,
    MARKER_CATEGORIES,
    MARKERS_PATH,
    _closes,
    _fence_open,
    _split_code,
    load_markers,
    markers_version,
    prose,
)

#: Version of the counting rules below (stored next to cached counts together with the markers' version).
FEATURES_VERSION = 5

#: Features used by style control (the Chatbot Arena style-control covariates).
STYLE_FEATURES: tuple[str, ...] = ("tokens", "headers", "list_items", "bold")
#: Extra covariates used by vibe control.
VIBE_FEATURES: tuple[str, ...] = (
    "emoji",
    "exclamations",
    "flattery",
    "sycophancy",
    "hedging",
    "refusal",
    "agreement",
    "apology",
    "enthusiasm",
    "feelings",
)
#: Every key `features()` returns, in order.
FEATURE_NAMES: tuple[str, ...] = STYLE_FEATURES + ("code_blocks",) + VIBE_FEATURES

# -- the text features --------------------------------------------------------------------------------------------
TOKEN_RE = re.compile(r"\w+|[^\w\s]")
WORD_RE = re.compile(r"\w+(?:['\u2019-]\w+)*")
HEADER_RE = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+\S", re.MULTILINE)
BULLET_RE = re.compile(r"^[ \t]*[-*+\u2022][ \t]+\S", re.MULTILINE)
NUMBERED_RE = re.compile(r"^[ \t]*\d{1,3}[.)][ \t]+\S", re.MULTILINE)
BOLD_RE = re.compile(r"\*\*(?=\S)[^*\n]+?\*\*|__(?=\S)[^_\n]+?__")


def token_count(text: str) -> int:
    """Words and punctuation marks (each mark one token), over the whole text."""
    return len(TOKEN_RE.findall(text or ""))


def word_count(text: str) -> int:
    """Words over the whole text; an apostrophe or hyphen inside a word keeps it one word."""
    return len(WORD_RE.findall(text or ""))


def code_block_count(text: str) -> int:
    """Fenced code blocks (backticks or tildes; an unclosed fence counts, running to the end)."""
    return _split_code(text or "")[1]


def fenced_body(text: str) -> str | None:
    """The content of a text that is exactly one fenced code block (```json ... ```), else None."""
    lines = (text or "").strip().split("\n")
    fence = _fence_open(lines[0]) if len(lines) >= 2 else None
    if fence is None or not _closes(lines[-1], fence):
        return None
    if any(_closes(line, fence) for line in lines[1:-1]):
        return None
    return "\n".join(lines[1:-1])


def header_count(text: str) -> int:
    """ATX headers (``# Title`` to ``###### Title``) outside code."""
    return len(HEADER_RE.findall(prose(text)))


def starts_with_header(text: str) -> bool:
    """The text (leading blank space aside) opens with an ATX header."""
    return HEADER_RE.match((text or "").lstrip("\n\r\t ")) is not None


def bullet_count(text: str) -> int:
    """Bullet list items (``-``, ``*``, ``+`` or a bullet sign then a space and text) outside code."""
    return len(BULLET_RE.findall(prose(text)))


def numbered_count(text: str) -> int:
    """Numbered list items (``1.`` or ``1)`` then a space and text) outside code."""
    return len(NUMBERED_RE.findall(prose(text)))


def list_item_count(text: str) -> int:
    """Bullet and numbered list items outside code."""
    body = prose(text)
    return len(BULLET_RE.findall(body)) + len(NUMBERED_RE.findall(body))


def bold_count(text: str) -> int:
    """Bold spans (``**x**`` or ``__x__`` on one line) outside code."""
    return len(BOLD_RE.findall(prose(text)))


def exclamation_count(text: str) -> int:
    """Exclamation marks outside code (``!=`` in a code block is not an exclamation)."""
    return prose(text).count("!")


@cache
def _emoji_pattern() -> Any:
    import regex  # imported on first use: importing this module stays cheap

    return regex.compile(
        r"(?=\p{Emoji_Presentation}|\p{Extended_Pictographic}\uFE0F|\p{Regional_Indicator}|[0-9#*]\uFE0F?\u20E3)\X"
    )


def emoji_list(text: str) -> list[str]:
    """Each emoji of the text as one string (a whole ZWJ sequence, flag, keycap or modified emoji)."""
    if not text or text.isascii():  # every emoji, keycaps included, has a non-ASCII code point
        return []
    return list(_emoji_pattern().findall(text))


def emoji_count(text: str) -> int:
    """Emoji as people see them, over the whole text (see the module docstring for what counts)."""
    return len(emoji_list(text))


def has_markdown(text: str) -> bool:
    """Any header, list item, bold span or fenced code block (the same definitions as the counts)."""
    body, blocks = _split_code(text or "")
    if blocks:
        return True
    body = _INLINE_CODE.sub("", body) if "`" in body else body
    return any(rx.search(body) for rx in (HEADER_RE, BULLET_RE, NUMBERED_RE, BOLD_RE))


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
    """Counts for one answer; `refusal` is 1.0 when any refusal marker occurs, else 0.0; the tone axes
    (``textfeatures.tone.AXES``) count sentences, 0 where they do not apply (empty, code only, not English)."""
    text = _fold(text or "")
    markers = _marker_patterns()
    body, blocks = _split_code(text)
    if "`" in body:
        body = _INLINE_CODE.sub("", body)
    out = {
        "tokens": float(len(TOKEN_RE.findall(text))),
        "headers": float(len(HEADER_RE.findall(body))),
        "list_items": float(len(BULLET_RE.findall(body)) + len(NUMBERED_RE.findall(body))),
        "bold": float(len(BOLD_RE.findall(body))),
        "code_blocks": float(blocks),
        "emoji": float(len(emoji_list(text))),
        "exclamations": float(body.count("!")),
    }
    for category in ("sycophancy", "hedging"):
        out[category] = float(len(markers[category].findall(text)))
    out["refusal"] = 1.0 if markers["refusal"].search(text) else 0.0
    out.update(tone.axes(text) or dict.fromkeys(tone.AXES, 0.0))  # not applicable (code, not English): none
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


# -- thinking aloud -------------------------------------------------------------------------------------------------
#: Phrases with which an answer reasons in the open before it answers ("Let's think step by step", "First, we
#: need to ..."). Not part of ``features()`` (vibe control and cached counts stay as they are): the checkpoint
#: report measures it on its own, on everyday prompts and on a task set's answers (``training.tasks.report``).
_THINKING = re.compile(
    r"(?<!\w)(?:let'?s\s+think|let\s+us\s+think|step\s+by\s+step|step\s+\d+\b|think(?:ing)?\s+(?:about\s+)?(?:this|it)"
    r"\s+through|let\s+me\s+(?:think|see|calculate|work|figure|break|start|check)|let'?s\s+(?:see|break|calculate"
    r"|start|figure|work|solve|analy[sz]e|denote)|first(?:ly)?,?\s+(?:we|i|let'?s)\b|we\s+need\s+to|to\s+(?:find|solve"
    r"|calculate)\s+(?:this|the|how)|so,?\s+the\s+(?:answer|result|total)|therefore|hence|thus)(?!\w)",
    re.IGNORECASE,
)
#: A worked step: ``a <op> b = c`` with numbers.
_WORKED = re.compile(r"\d\s*[-+*/x×÷]\s*\d[\d.,]*\s*=\s*-?\d")


def thinking_aloud(text: str) -> float:
    """1.0 when an answer reasons aloud before (or instead of) answering: a reasoning phrase ("Let's think step
    by step", "First, we need to", "Therefore") or two or more worked steps (``3 + 4 = 7``); else 0.0."""
    text = _fold(text or "")
    return 1.0 if _THINKING.search(text) or len(_WORKED.findall(text)) >= 2 else 0.0


def words_before(text: str, result: str | None) -> float | None:
    """Words an answer writes before it first states ``result`` (None when it never does)."""
    if not result:
        return None
    m = re.search(rf"(?<![\w.]){re.escape(result.strip())}(?![\w])", text or "")
    return None if m is None else float(word_count(text[: m.start()]))
