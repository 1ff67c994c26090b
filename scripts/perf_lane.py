"""The performance lane: run each benchmark named in ``benchmarks/budgets.toml`` and check its ratio against its budget.

Each entry of the budget file names a command (a benchmark in ``benchmarks/``, run with this interpreter from the
repository root) that prints, as one line of its output, ``ratio: <number>``: something measured in that same run
against its own baseline (a reference process, a bare import, the fit without the feature). Absolute seconds are
never compared, only ratios, so a slower or busier machine moves both sides. An entry passes when its ratio is at
least its ``floor`` (or at most its ``ceiling``); a command that fails, times out or prints no ratio is a miss.
The lane prints one table (benchmark, measured ratio, budget, pass/fail, seconds) and exits 1 on any miss.

    python scripts/perf_lane.py                    # every entry (what `make perf` and CI run)
    python scripts/perf_lane.py --only flip-overhead --only help-vs-typer
    python scripts/perf_lane.py --list             # the entries and their reasons
    python scripts/perf_lane.py --table FILE       # also write the table to FILE (the CI summary prints it)

A new benchmark is a new ``[[budget]]`` entry: ``name``, ``command`` (a list; ``"python"`` is this interpreter),
``floor`` or ``ceiling``, ``reason`` (why that number, with the headroom it leaves), optional ``timeout`` (seconds
before the command counts as a miss; default 300) and ``needs`` (a path, ``~`` allowed, without which the entry is
skipped and says so).

Every entry names its truth check in ``truth``: a fast path is only accepted beside a paired check that it
computes what the slow path computes. ``truth`` starts with ``printed:`` when the benchmark runs that check in the
same run and prints ``truth: pass ...`` (the lane then requires that line, and counts ``truth: FAIL`` or a
missing line as a miss), or with ``test:`` and one or more ``tests/FILE.py::test_name`` that hold it (the lane
checks they exist; CI runs them in its test lanes).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGETS = ROOT / "benchmarks" / "budgets.toml"
RATIO = re.compile(r"^\s*ratio:\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)", re.MULTILINE)


@dataclass
class Budget:
    """One entry of the budget file."""

    name: str
    command: list[str]
    reason: str
    floor: float | None = None
    ceiling: float | None = None
    timeout: float = 300.0
    needs: str | None = None
    truth: str = ""

    def bound(self) -> str:
        return f">= {self.floor:g}" if self.floor is not None else f"<= {self.ceiling:g}"

    def holds(self, ratio: float) -> bool:
        if not math.isfinite(ratio):
            return False
        if self.floor is not None:
            return ratio >= self.floor
        assert self.ceiling is not None
        return ratio <= self.ceiling


@dataclass
class Outcome:
    """What one entry measured: its ratio (None: no ratio), pass/fail/skip, seconds, and why it missed."""

    budget: Budget
    ratio: float | None
    status: str
    seconds: float
    detail: str = ""
    output: str = field(default="", repr=False)


def load(path: Path = BUDGETS) -> list[Budget]:
    """The budget file's entries, checked: unique names, a command, a reason, exactly one of floor and ceiling."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    known = {"name", "command", "reason", "floor", "ceiling", "timeout", "needs", "truth"}
    out: list[Budget] = []
    for k, entry in enumerate(data.get("budget", [])):
        where = f"{path.name}: entry {k + 1} ({entry.get('name', '?')})"
        unknown = set(entry) - known
        if unknown:
            raise ValueError(f"{where}: unknown keys {', '.join(sorted(unknown))}")
        if not isinstance(entry.get("name"), str) or not entry["name"]:
            raise ValueError(f"{where}: needs a name")
        command = entry.get("command")
        if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
            raise ValueError(f"{where}: command must be a non-empty list of strings")
        if not isinstance(entry.get("reason"), str) or not entry["reason"].strip():
            raise ValueError(f"{where}: needs a reason (why this number, and its headroom)")
        truth_problem = check_truth(entry.get("truth"))
        if truth_problem:
            raise ValueError(f"{where}: {truth_problem}")
        if ("floor" in entry) == ("ceiling" in entry):
            raise ValueError(f"{where}: give exactly one of floor and ceiling")
        bound = entry.get("floor", entry.get("ceiling"))
        if isinstance(bound, bool) or not isinstance(bound, int | float) or not math.isfinite(bound):
            raise ValueError(f"{where}: floor/ceiling must be a number")
        if any(b.name == entry["name"] for b in out):
            raise ValueError(f"{where}: the name {entry['name']!r} is used twice")
        out.append(
            Budget(
                name=entry["name"],
                command=list(command),
                reason=entry["reason"].strip(),
                floor=float(entry["floor"]) if "floor" in entry else None,
                ceiling=float(entry["ceiling"]) if "ceiling" in entry else None,
                timeout=float(entry.get("timeout", 300.0)),
                needs=entry.get("needs"),
                truth=entry["truth"].strip(),
            )
        )
    if not out:
        raise ValueError(f"{path.name}: no [[budget]] entries")
    return out


TEST_REF = re.compile(r"(tests/[\w/]+\.py)::(\w+)")
TRUTH = re.compile(r"^\s*truth:\s*(pass|FAIL)\b", re.MULTILINE)


def check_truth(truth: object) -> str | None:
    """What is wrong with an entry's ``truth``, or None: ``printed: ...`` or ``test: tests/F.py::name ...``
    naming tests that exist."""
    if not isinstance(truth, str) or not truth.strip():
        return "needs a truth check (printed: ... or test: tests/FILE.py::test_name): what proves the fast path computes what the slow one does"
    text = truth.strip()
    if text.startswith("printed:"):
        return None
    if not text.startswith("test:"):
        return f"truth must start with 'printed:' or 'test:', got {text[:30]!r}"
    refs = TEST_REF.findall(text)
    if not refs:
        return "truth 'test:' names no tests/FILE.py::test_name"
    for file, name in refs:
        path = ROOT / file
        if not path.is_file() or not re.search(rf"^def {name}\(", path.read_text(), re.MULTILINE):
            return f"truth names {file}::{name}, which does not exist"
    return None


def parse_truth(output: str) -> str | None:
    """The last ``truth: pass|FAIL`` a benchmark printed."""
    found = TRUTH.findall(output)
    return found[-1] if found else None


def parse_ratio(output: str) -> float | None:
    """The last ``ratio: X`` line of a benchmark's output."""
    found = RATIO.findall(output)
    return float(found[-1]) if found else None


def run(budget: Budget) -> Outcome:
    """Run one entry's command from the repository root and judge its ratio."""
    if budget.needs and not Path(os.path.expanduser(budget.needs)).exists():
        return Outcome(budget, None, "skip", 0.0, f"needs {budget.needs}")
    cmd = [sys.executable if c == "python" else c for c in budget.command]
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    )
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=budget.timeout, check=False
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout if isinstance(exc.stdout, str) else (exc.stdout or b"").decode(errors="replace")
        return Outcome(
            budget, None, "FAIL", time.perf_counter() - start, f"timed out ({budget.timeout:g} s)", out
        )
    seconds = time.perf_counter() - start
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        return Outcome(budget, None, "FAIL", seconds, f"exit status {proc.returncode}", output)
    ratio = parse_ratio(proc.stdout)
    if ratio is None:
        return Outcome(budget, None, "FAIL", seconds, "printed no 'ratio:' line", output)
    if budget.truth.startswith("printed:") and parse_truth(proc.stdout) != "pass":
        said = parse_truth(proc.stdout)
        why = "its truth check failed" if said == "FAIL" else "printed no 'truth: pass' line"
        return Outcome(budget, ratio, "FAIL", seconds, f"{why}: a ratio met by another result", output)
    return Outcome(budget, ratio, "pass" if budget.holds(ratio) else "FAIL", seconds, "", output)


def table(outcomes: list[Outcome]) -> str:
    """The lane's table: one row per entry."""
    width = max(len("benchmark"), *(len(o.budget.name) for o in outcomes))
    lines = [f"{'benchmark':<{width}}  {'measured':>9}  {'budget':>9}  {'result':<6}  {'seconds':>7}  note"]
    for o in outcomes:
        measured = "-" if o.ratio is None else f"{o.ratio:.3g}"
        lines.append(
            f"{o.budget.name:<{width}}  {measured:>9}  {o.budget.bound():>9}  {o.status:<6}  "
            f"{o.seconds:7.1f}  {o.detail}".rstrip()
        )
    missed = sum(o.status == "FAIL" for o in outcomes)
    lines.append(f"{len(outcomes)} budgets: {missed} missed" + (", all kept" if not missed else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", type=Path, default=BUDGETS, help="the budget file")
    parser.add_argument("--only", action="append", default=[], help="run only this entry (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the entries and their reasons, run nothing")
    parser.add_argument("--table", type=Path, default=None, help="also write the table to this file")
    args = parser.parse_args(argv)
    budgets = load(args.budgets)
    if args.only:
        unknown = sorted(set(args.only) - {b.name for b in budgets})
        if unknown:
            parser.error(f"no such budget: {', '.join(unknown)}")
        budgets = [b for b in budgets if b.name in args.only]
    if args.list:
        for b in budgets:
            print(f"{b.name} ({b.bound()}): {' '.join(b.command)}\n  {b.reason}\n")
        return 0
    outcomes = []
    for b in budgets:
        print(f"== {b.name}: {' '.join(b.command)}", flush=True)
        outcome = run(b)
        print(outcome.output.rstrip() or "(no output)", flush=True)
        outcomes.append(outcome)
    text = table(outcomes)
    print("\n" + text)
    if args.table is not None:
        args.table.write_text(text + "\n", encoding="utf-8")
    return 1 if any(o.status == "FAIL" for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
