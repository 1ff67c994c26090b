"""The manifest every job output folder carries (``studio.json``): what the folder holds and what it sits on.

A LoRA adapter is useless without its base. The manifest records the base reference (``builtin:`` or a
path) and its resolved path on this machine. It also records the job kind, step and snapshot. So a later
job can use the folder without the database: GRPO scoring with a reward model, a drift report, a vLLM
server loading the adapter.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MANIFEST = "studio.json"


def write_manifest(folder: str | Path, **fields: Any) -> Path:
    path = Path(folder) / MANIFEST
    path.write_text(json.dumps(fields, indent=2, sort_keys=True, default=str), encoding="utf-8")
    return path


def read_manifest(folder: str | Path) -> dict[str, Any]:
    path = Path(folder) / MANIFEST
    if not path.exists():
        return {}
    return dict(json.loads(path.read_text(encoding="utf-8")))
