"""CI's summary: each test lane's passed / skipped / failed / error counts and minutes, read from the JUnit XML
files pytest writes (``--junitxml``), then the slowest tests of all lanes (setup, call and teardown together).

Usage: python scripts/ci_summary.py [--slowest 20] LANE=FILE.xml [LANE=FILE.xml ...] [--line LANE=TEXT ...]

A lane whose file is missing (it never ran, or crashed before writing) prints as MISSING, not as passed; a lane
with no tests run prints as EMPTY. ``--line`` adds a lane that reports in one line of its own (the vLLM lane's
last line), printed as given with SKIPPED in capitals when it skipped. Exits 0: the summary reports, the lanes'
own exit codes decide the build."""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Lane:
    name: str
    passed: int = 0
    skipped: int = 0
    failed: int = 0
    errors: int = 0
    seconds: float = 0.0
    times: list[tuple[float, str]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.passed + self.skipped + self.failed + self.errors


def read_junit(name: str, path: Path) -> Lane:
    """One lane's counts and test times from a pytest JUnit XML file."""
    lane = Lane(name)
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    for suite in suites:
        lane.seconds += float(suite.get("time") or 0.0)
        for case in suite.iter("testcase"):
            kinds = {child.tag for child in case}
            if "failure" in kinds:
                lane.failed += 1
            elif "error" in kinds:
                lane.errors += 1
            elif "skipped" in kinds:
                lane.skipped += 1
            else:
                lane.passed += 1
            test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
            lane.times.append((float(case.get("time") or 0.0), test_id))
    return lane


def lane_line(lane: Lane) -> str:
    if lane.total == 0:
        return f"== {lane.name}: EMPTY (no test ran)"
    verdict = "FAILED" if lane.failed or lane.errors else "ok"
    return (
        f"== {lane.name}: {verdict}: {lane.passed} passed, {lane.skipped} skipped, {lane.failed} failed, "
        f"{lane.errors} errors in {lane.seconds / 60:.1f} min"
    )


def one_line(name: str, text: str) -> str:
    text = text.strip() or "no result line (see its log)"
    if "skipped" in text.lower():
        text = text.replace("skipped", "SKIPPED")
    return f"== {name}: {text}"


def summary(lanes: list[tuple[str, Path]], lines: list[tuple[str, str]], slowest: int) -> str:
    out: list[str] = []
    read: list[Lane] = []
    for name, path in lanes:
        if not path.exists():
            out.append(f"== {name}: MISSING (no {path.name}: the lane did not finish)")
            continue
        lane = read_junit(name, path)
        read.append(lane)
        out.append(lane_line(lane))
    out += [one_line(name, text) for name, text in lines]
    times = sorted(((t, n, lane.name) for lane in read for t, n in lane.times), reverse=True)[:slowest]
    if times:
        out.append(f"== the {len(times)} slowest tests")
        out += [f"{t:8.1f} s  [{lane}] {n}" for t, n, lane in times]
    return "\n".join(out)


def _pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected LANE=VALUE, got {text!r}")
    return name, value


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lanes", nargs="*", type=_pair, help="LANE=FILE.xml")
    ap.add_argument("--line", action="append", type=_pair, default=[], help="LANE=TEXT (a one-line lane)")
    ap.add_argument("--slowest", type=int, default=20)
    args = ap.parse_args(argv)
    print(summary([(n, Path(p)) for n, p in args.lanes], args.line, args.slowest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
