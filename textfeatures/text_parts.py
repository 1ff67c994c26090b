"""The primitives both halves of the text features read: an answer's prose and the marker phrase lists.

``textfeatures.vibes`` (the counts) and ``textfeatures.tone`` (the tone axes) both start from here. This
module imports neither, so the two halves do not import each other.
- ``prose`` is an answer without its fenced code blocks and inline code spans; their lines are kept,
  emptied. A fence is three or more backticks or tildes. It is closed by a run of the same character at
  least as long. One never closed runs to the end of the text, as in CommonMark.
- ``load_markers`` reads the versioned phrase lists of ``textfeatures/data/vibe_markers.yaml`` once.
``textfeatures.vibes`` re-exports every public name here, so callers keep reading them from there. This
module knows nothing about battles, models or ratings.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

MARKERS_PATH = Path(__file__).parent / "data" / "vibe_markers.yaml"
MARKER_CATEGORIES: tuple[str, ...] = ("flattery", "sycophancy", "hedging", "refusal")
_FENCE_OPEN = re.compile(r"[ ]{0,3}(`{3,}|~{3,})([^\n]*)")
_FENCE_CLOSE = re.compile(r"[ ]{0,3}(`{3,}|~{3,})[ \t]*")
_INLINE_CODE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")


def _fence_open(line: str) -> str | None:
    m = _FENCE_OPEN.fullmatch(line)
    if m is None or (m.group(1)[0] == "`" and "`" in m.group(2)):  # a backtick fence's info has no backtick
        return None
    return m.group(1)


def _closes(line: str, fence: str) -> bool:
    m = _FENCE_CLOSE.fullmatch(line)
    return m is not None and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence)


def _split_code(text: str) -> tuple[str, int]:
    """(the text with fenced code blocks blanked out line by line, number of fenced blocks).

    A fence is three or more backticks or tildes (indented at most three spaces) and is closed by a run of the
    same character at least as long; a fence never closed runs to the end of the text (as in CommonMark).
    """
    if "```" not in text and "~~~" not in text:
        return text, 0
    out: list[str] = []
    blocks = 0
    fence: str | None = None
    for line in text.split("\n"):
        if fence is None:
            fence = _fence_open(line)
            if fence is not None:
                blocks += 1
                out.append("")
                continue
            out.append(line)
        else:
            if _closes(line, fence):
                fence = None
            out.append("")
    return "\n".join(out), blocks


def prose(text: str) -> str:
    """The text without its fenced code blocks and inline code spans (lines are kept, emptied)."""
    body, _ = _split_code(text or "")
    return _INLINE_CODE.sub("", body) if "`" in body else body


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
