"""Write ``tests/durations.json``: each test's seconds, read from the JUnit XML files of a test run.

The test processes take the longest files first from that table (``tests/helpers/order.py``). Refresh it when
tests are added or get slower: run the lanes with ``--junitxml``, then

    python scripts/durations_table.py /tmp/default.xml /tmp/extra.xml

A test in several files keeps its longest time. Tests under half a second are left out: the order weighs an unknown quick test at that.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.ci_summary import read_junit  # noqa: E402
from tests.helpers.order import DURATIONS  # noqa: E402

FLOOR_S = 0.5


ROOT = Path(__file__).resolve().parents[1]


def file_and_test(test_id: str) -> tuple[str, str]:
    """A JUnit test id (``tests.a.test_b.TestC::test_d[x]``) as pytest names it: (``tests/a/test_b.py``,
    ``TestC::test_d[x]``). The file is the longest prefix of the class name that is a file."""
    module, _, test = test_id.partition("::")
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        if (ROOT / Path(*parts[:i])).with_suffix(".py").is_file():
            return "/".join(parts[:i]) + ".py", "::".join([*parts[i:], test])
    return module.replace(".", "/") + ".py", test


def table(paths: list[Path]) -> dict[str, dict[str, float]]:
    files: dict[str, dict[str, float]] = {}
    for path in paths:
        for secs, test_id in read_junit(path.name, path).times:
            name, test = file_and_test(test_id)
            if secs >= FLOOR_S:
                tests = files.setdefault(name, {})
                tests[test] = max(tests.get(test, 0.0), round(secs, 1))
    return {name: dict(sorted(tests.items())) for name, tests in sorted(files.items())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("xml", nargs="+", type=Path, help="JUnit XML files (pytest --junitxml).")
    ap.add_argument("--out", type=Path, default=DURATIONS)
    args = ap.parse_args()
    files = table(args.xml)
    args.out.write_text(json.dumps({"files": files}, indent=1) + "\n")
    total = sum(sum(t.values()) for t in files.values())
    print(
        f"{args.out}: {sum(len(t) for t in files.values())} tests in {len(files)} files, {total / 60:.1f} min"
    )


if __name__ == "__main__":
    main()
