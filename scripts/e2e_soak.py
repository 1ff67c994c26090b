"""Soak the browser lane: run ``pytest -m e2e`` several times in a row while other processes burn CPU.

Usage: python scripts/e2e_soak.py [--runs 10] [--burn 1] [--stop-on-fail] [--log-dir DIR] [-- PYTEST_ARGS...]

Each run is a fresh ``python -m pytest -q -p no:cacheprovider -m e2e`` (the CI lane); ``--burn N`` starts N
busy-loop processes for the whole soak, so the server, Chromium and the tests compete for the cores as they do on
a loaded CI machine. For every run it prints the result, the wall time, pytest's summary line and the 1-minute
load average at its start; at the end it prints the pass count and the longest streak of consecutive passes.
Every run's full output is kept in ``--log-dir``. Exit status is 0 only when every run passed.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LANE = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "e2e"]
BURN = "while True:\n    pass\n"


def _summary(output: str) -> str:
    """pytest's last non-empty line ("3 passed in 40.1s"), or a note that it printed none."""
    lines = [x.strip() for x in output.splitlines() if x.strip()]
    return lines[-1] if lines else "(no output)"


def run_once(index: int, extra: list[str], log_dir: Path, timeout_s: float) -> tuple[bool, float, str]:
    """One run of the lane; returns (passed, seconds, summary line). Its output goes to a file as it is written."""
    log = log_dir / f"run-{index:02d}.log"
    start = time.monotonic()
    with log.open("w") as out:
        try:
            passed = (
                subprocess.run(
                    [sys.executable, *LANE, *extra], stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s
                ).returncode
                == 0
            )
        except subprocess.TimeoutExpired:
            out.write(f"\nTIMEOUT after {timeout_s:.0f} s\n")
            passed = False
    return passed, time.monotonic() - start, _summary(log.read_text(errors="replace"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10, help="runs of the e2e lane, one after another")
    ap.add_argument("--burn", type=int, default=1, help="busy-loop processes kept running during the soak")
    ap.add_argument("--stop-on-fail", action="store_true", help="stop at the first failing run")
    ap.add_argument(
        "--log-dir", type=Path, default=None, help="where each run's output goes (default: a temp dir)"
    )
    ap.add_argument(
        "--timeout", type=float, default=1800.0, help="seconds one run may take before it counts failed"
    )
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = ap.parse_args()
    log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="e2e-soak-"))
    log_dir.mkdir(parents=True, exist_ok=True)

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the burners on a plain kill, too
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(max(args.burn, 0))]
    print(
        f"e2e soak: {args.runs} run(s), {len(burners)} busy-loop process(es), {os.cpu_count()} CPU(s), "
        f"logs in {log_dir}",
        flush=True,
    )
    results: list[tuple[bool, float]] = []
    try:
        for i in range(1, args.runs + 1):
            load = os.getloadavg()[0]
            passed, seconds, summary = run_once(i, args.pytest_args, log_dir, args.timeout)
            results.append((passed, seconds))
            verdict = "PASS" if passed else "FAIL"
            print(
                f"run {i:2d}/{args.runs}: {verdict} in {seconds:6.1f} s (load {load:.2f}) | {summary}",
                flush=True,
            )
            if not passed and args.stop_on_fail:
                break
    finally:
        for b in burners:
            b.terminate()
        for b in burners:
            b.wait()

    streak = best = 0
    for passed, _ in results:
        streak = streak + 1 if passed else 0
        best = max(best, streak)
    n_pass = sum(p for p, _ in results)
    times = [s for _, s in results]
    if times:
        print(
            f"passed {n_pass}/{len(results)}; longest streak of consecutive passes: {best}; "
            f"time per run min {min(times):.1f} s, max {max(times):.1f} s, mean {sum(times) / len(times):.1f} s",
            flush=True,
        )
    return 0 if results and n_pass == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
