"""Small files in the real layouts, written by the tests themselves."""

from __future__ import annotations

import json
from pathlib import Path


def write_json(path: Path, rows: list, lines: bool = False) -> Path:
    """``rows`` as one JSON document, or as JSON Lines when ``lines``."""
    if lines:
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    else:
        path.write_text(json.dumps(rows, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def conv(*turns: str) -> list[dict]:
    """A conversation alternating user and assistant messages, user first."""
    roles = ["user", "assistant"]
    return [{"role": roles[i % 2], "content": t} for i, t in enumerate(turns)]
