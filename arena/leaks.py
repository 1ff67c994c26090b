"""Identity-leak check: does an assistant answer name its contestant (family, persona, maker)?

Only assistant text is scanned, never the user's own words; matching is whole-word and case-insensitive.
"""

from __future__ import annotations

import re
from collections.abc import Iterable


def find_leak(answer: str, aliases: Iterable[str]) -> str | None:
    """Return the first alias that the answer names, or None."""
    for alias in aliases:
        alias = alias.strip()
        if len(alias) < 3:
            continue
        if re.search(rf"(?<!\w){re.escape(alias)}(?!\w)", answer, flags=re.IGNORECASE):
            return alias
    return None
