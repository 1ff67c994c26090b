"""Start-up cost of the ``vibestudio`` command: fresh processes against a raw baseline, in the same run.

Times, as fresh processes (median of ``--repeat`` runs, the commands taking turns so that load hits all alike):

- the raw baseline: ``python -c pass`` (the interpreter alone);
- the CLI's floor: ``python -c "import typer"`` (what any Typer command pays before it does anything);
- ``vibestudio --help``;
- ``vibestudio ratings --battles F`` on a small battles file (``--battles`` FastChat-layout rows, 5 models).

Both sides load bytecode: the project's packages are compiled first, as installing a wheel does
(``benchmarks/_bytecode.py`` says why).

Prints each median, its ratio to the baseline, and the cost above the baseline, then ``ratio:`` = ``vibestudio
--help`` / ``import typer`` (goal <= 1.5; the performance lane's budget). ``--lane`` times only those two.
``--importtime`` also prints the slowest imports of each command (``python -X importtime``), which is how to find
what a command pays for.
Run: ``python benchmarks/startup.py [--repeat 7] [--battles 500] [--importtime] [--lane]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _bytecode import compile_project  # noqa: E402


def vibestudio() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m vibestudio.studio.cli``."""
    script = Path(sys.executable).parent / "vibestudio"
    if script.exists():
        return [str(script)]
    found = shutil.which("vibestudio")
    return [found] if found else [sys.executable, "-m", "vibestudio.studio.cli"]


def battles_file(folder: Path, n: int, seed: int = 0) -> Path:
    """``n`` battles among five models in the FastChat layout (JSONL), written without numpy or pandas."""
    rng = random.Random(seed)
    models = [f"model-{k}" for k in range(5)]
    path = folder / "battles.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            a, b = rng.sample(models, 2)
            winner = rng.choices(["model_a", "model_b", "tie", "tie (bothbad)"], [4, 4, 1, 1])[0]
            fh.write(json.dumps({"model_a": a, "model_b": b, "winner": winner, "tstamp": 1e9 + i}) + "\n")
    return path


def run_once(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def slowest_imports(cmd: list[str], env: dict[str, str], top: int) -> list[tuple[float, str]]:
    """The ``top`` top-level imports with the largest cumulative time (seconds), from ``-X importtime``."""
    if cmd[0] != sys.executable:  # the console script: run the same entry point through this interpreter
        cmd = [sys.executable, "-c", "from studio.cli import main; main()", *cmd[1:]]
    proc = subprocess.run(
        [cmd[0], "-X", "importtime", *cmd[1:]], env=env, cwd=ROOT, capture_output=True, text=True
    )
    rows = []
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if not line.startswith("import time:") or len(parts) != 3 or "cumulative" in line:
            continue
        name = parts[2][1:]  # drop the space after the bar; what is left is indented two spaces per level
        if not name.startswith(" "):
            rows.append((int(parts[1]) / 1e6, name))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7, help="Runs per command (the median is shown).")
    ap.add_argument("--battles", type=int, default=500, help="Battles in the small ratings file.")
    ap.add_argument("--importtime", action="store_true", help="Also show each command's slowest imports.")
    ap.add_argument(
        "--lane", action="store_true", help="Only `--help` against `import typer` (the lane's ratio)."
    )
    args = ap.parse_args()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    with tempfile.TemporaryDirectory() as tmp:
        env["VIBESTUDIO_HOME"] = tmp  # nothing touches the user's studio
        battles = battles_file(Path(tmp), args.battles)
        commands = {
            "python -c pass (baseline)": [sys.executable, "-c", "pass"],
            "python -c 'import typer'": [sys.executable, "-c", "import typer"],
            "vibestudio --help": [*vibestudio(), "--help"],
            f"vibestudio ratings --battles F ({args.battles} battles)": [
                *vibestudio(),
                "ratings",
                "--battles",
                str(battles),
            ],
        }
        if args.lane:
            commands = {k: v for k, v in commands.items() if "typer" in k or k == "vibestudio --help"}
        compile_project()
        for cmd in commands.values():  # warm the file cache and check that each command works
            run_once(cmd, env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, cmd in commands.items():
                times[name].append(run_once(cmd, env))
        medians = {name: statistics.median(ts) for name, ts in times.items()}
        base = medians.get("python -c pass (baseline)", medians["python -c 'import typer'"])
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"median of {args.repeat} fresh processes each (load average {load:.1f})")
        print(f"{'command':52s} {'median':>9s} {'ratio':>7s} {'above baseline':>15s}")
        for name, m in medians.items():
            print(f"{name:52s} {m * 1000:7.0f} ms {m / base:6.1f}x {1000 * (m - base):12.0f} ms")
        typer_only = medians["python -c 'import typer'"]
        print(
            f"ratio: {medians['vibestudio --help'] / typer_only:.2f} (vibestudio --help / python -c 'import typer';"
            " goal <= 1.5)"
        )
        if args.importtime:
            for name, cmd in list(commands.items())[1:]:
                print(f"\nslowest imports of {name}:")
                for seconds, module in slowest_imports(cmd, env, 12):
                    print(f"  {seconds * 1000:7.0f} ms  {module}")


if __name__ == "__main__":
    main()
