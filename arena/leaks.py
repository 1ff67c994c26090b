"""Identity-leak check: does an assistant answer name a contestant (public name, family, persona, maker)?

Only assistant text is scanned, never the user's own words. Matching is whole-word and case-insensitive.
The separators inside an alias are loose: "Hugging Face" also matches "HuggingFace" and "hugging-face".
Aliases shorter than three characters are ignored, since they would match ordinary words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

MIN_ALIAS_CHARS = 3


@lru_cache(maxsize=1024)
def _pattern(alias: str) -> re.Pattern[str]:
    parts = [re.escape(p) for p in re.split(r"[\s_\-]+", alias) if p]
    return re.compile(r"(?<!\w)" + r"[\s_\-]?".join(parts) + r"(?!\w)", flags=re.IGNORECASE)


def find_leak(answer: str, aliases: Iterable[str]) -> str | None:
    """Return the first alias that the answer names, or None."""
    for alias in aliases:
        alias = (alias or "").strip()
        if len(alias) < MIN_ALIAS_CHARS:
            continue
        if _pattern(alias).search(answer):
            return alias
    return None
