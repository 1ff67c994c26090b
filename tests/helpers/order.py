"""The order test files are handed to the test processes: the longest first.

pytest-xdist (``--dist loadfile``) gives each process one file at a time, in the order it gets them. Its own
order puts files with more tests first, so a file of one long test (a SmolLM2 training run, a browser sweep)
came last, and one process ran it while the other sat idle. Here each file weighs the measured seconds of the
tests this run selected from it (``tests/durations.json``, written from the lanes' JUnit XML by
``scripts/durations_table.py``). A test the table does not know weighs an estimate from its markers. Tests inside
a file keep their order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DURATIONS = Path(__file__).resolve().parents[1] / "durations.json"
#: Estimated seconds of a test the table does not know: a real model or a browser, else a quick one.
UNKNOWN_HEAVY_S = 30.0
UNKNOWN_LIGHT_S = 0.5
HEAVY_MARKS = ("slow", "e2e", "learning", "vllm")


def load_durations(path: Path = DURATIONS) -> dict[str, dict[str, float]]:
    """Measured seconds per test, by file and test name ({} when there is no table, or it cannot be read)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    files = data.get("files", {}) if isinstance(data, dict) else {}
    return {
        str(f): {str(t): float(v) for t, v in tests.items() if isinstance(v, int | float)}
        for f, tests in files.items()
        if isinstance(tests, dict)
    }


def split_id(nodeid: str) -> tuple[str, str]:
    """A test id's file and name: ``tests/a/test_b.py::test_c[x]`` -> (``tests/a/test_b.py``, ``test_c[x]``)."""
    name, _, test = nodeid.partition("::")
    return name, test


def estimate(markers: Sequence[str]) -> float:
    """Seconds guessed for one test the table does not know, from its markers."""
    return UNKNOWN_HEAVY_S if any(m in HEAVY_MARKS for m in markers) else UNKNOWN_LIGHT_S


def seconds(item: Any, durations: dict[str, dict[str, float]]) -> float:
    """One test's weight: its measured seconds, else the estimate from its markers."""
    name, test = split_id(item.nodeid)
    known = durations.get(name, {}).get(test)
    return known if known is not None else estimate([m.name for m in item.iter_markers()])


def longest_first(items: Sequence[Any], durations: dict[str, dict[str, float]]) -> list[Any]:
    """``items`` (pytest items: ``nodeid`` and ``iter_markers``) grouped by file, the heaviest file first.

    A file weighs the sum of its selected tests' ``seconds``. Files of equal weight, and the tests inside a file,
    keep the order they were collected in."""
    groups: dict[str, list[Any]] = {}
    for item in items:
        groups.setdefault(split_id(item.nodeid)[0], []).append(item)
    weight = {name: sum(seconds(item, durations) for item in group) for name, group in groups.items()}
    ordered = sorted(groups, key=lambda name: -weight[name])
    return [item for name in ordered for item in groups[name]]
