"""Whole-process timing: `vibestudio ratings --battles F --bootstrap 100 --json` vs a FastChat-formula reference.

Ours is the default run (votes-to-flip for every adjacent pair included); `--no-flip` is timed too, so the
flip's whole-process overhead reads off the same run. The last line is `ratio:` = reference / ours (default run).

Both sides run as fresh processes from the shell (interpreter start-up, imports and file reading included), which
is what a user waits for, and both load bytecode (``benchmarks/_bytecode.py``); `benchmarks/ratings.py` part 2 times `ratings_report` inside a warm interpreter instead.
The battles file is the one `benchmarks/ratings.py` builds (synthetic, 150 models, known skills, 10% ties).
The reference is `benchmarks/fastchat_reference.py` (pandas.read_json, FastChat's online Elo loop, scipy L-BFGS
Bradley-Terry with a 100-round multinomial bootstrap). Goal: ours >= 4x faster.

    python benchmarks/ratings_process.py                  # 1M battles
    python benchmarks/ratings_process.py --n 100000       # quicker
    python benchmarks/ratings_process.py --file F.jsonl   # an existing file
    python benchmarks/ratings_process.py --lane --n 300000 --repeat 1   # the performance lane's entry

Also times `vibestudio --help` and `python -c "import vibestudio.standings.ratings"` (start-up cost alone); `--lane` skips
those and the `--no-flip` run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def run(cmd: list[str], repeat: int) -> tuple[float, str]:
    """Best wall time of `repeat` fresh processes, and the last stdout."""
    times, out = [], ""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
        out = proc.stdout
    return min(times), out


def build_file(path: Path, n: int, models: int, seed: int) -> None:
    sys.path.insert(0, str(HERE))
    import duckdb
    from ratings import synthetic  # benchmarks/ratings.py

    frame, _ = synthetic(n, models, seed)
    con = duckdb.connect()
    con.register("battles", frame[["model_a", "model_b", "winner", "tstamp", "question_id"]])
    con.execute(f"COPY battles TO '{path}' (FORMAT json)")
    con.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side (best counts)")
    parser.add_argument(
        "--file", type=Path, default=None, help="use this battles file instead of building one"
    )
    parser.add_argument("--lane", action="store_true", help="only the default run and the reference")
    args = parser.parse_args()
    script = (
        Path(sys.executable).parent / "vibestudio"
    )  # this interpreter's console script, as a user runs it
    studio = str(script) if script.exists() else shutil.which("vibestudio")
    ours_cmd = [studio] if studio else [sys.executable, "-m", "vibestudio.studio.cli"]
    sys.path.insert(0, str(HERE))
    from _bytecode import compile_project

    compile_project()  # ours from bytecode, as the reference's pandas and SciPy are
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file or Path(tmp) / "battles.jsonl"
        if args.file is None:
            build_file(path, args.n, args.models, 0)
        size = path.stat().st_size / 1e6
        print(
            f"{path.name}: {size:.0f} MB, {os.cpu_count()} CPUs, best of {args.repeat} fresh processes each"
        )
        ours = [*ours_cmd, "ratings", "--battles", str(path), "--bootstrap", str(args.rounds), "--json"]
        ref = [sys.executable, str(HERE / "fastchat_reference.py"), str(path), "--rounds", str(args.rounds)]
        t_ref, ref_out = run(ref, args.repeat)
        t_ours, out = run(ours, args.repeat)
        if not args.lane:
            t_noflip, _ = run([*ours, "--no-flip"], args.repeat)
            t_help, _ = run([*ours_cmd, "--help"], args.repeat)
            t_import, _ = run([sys.executable, "-c", "import vibestudio.standings.ratings"], args.repeat)
            t_import_all, _ = run(
                [sys.executable, "-c", "from standings.ratings import ratings_report"], args.repeat
            )
    result = json.loads(out)
    board = {m["name"]: m["rating"] for m in result["models"]}
    ref_board = {k: v["rating"] for k, v in json.loads(ref_out)["models"].items()}
    shift = statistics.mean(ref_board.values()) - statistics.mean(board.values())
    diff = max(abs(board[k] - ref_board[k] + shift) for k in board)
    flips = result.get("flip", {}).get("pairs", [])
    checked = sum(bool(p.get("checked")) for p in flips)
    if not args.lane:
        print(f"  vibestudio --help:                         {t_help:6.2f} s")
        print(f"  python -c 'import standings.ratings':          {t_import:6.2f} s")
        print(f"  python -c 'from standings.ratings import ratings_report': {t_import_all:6.2f} s")
        print(f"  vibestudio ratings ... --no-flip:          {t_noflip:6.2f} s")
        print(f"  votes-to-flip adds {100 * (t_ours / t_noflip - 1):.0f}% to the whole process")
    print(f"  reference process (pandas + scipy):        {t_ref:6.2f} s")
    print(
        f"  vibestudio ratings --bootstrap {args.rounds} --json (default, votes-to-flip for {len(flips)} pairs, "
        f"{checked} checked by refits): {t_ours:6.2f} s"
    )
    print(f"  max rating difference after centring {diff:.3f} points")
    # the truth check beside the ratio: the fast process computed the reference's ratings (goal <= 0.5 points)
    print(
        f"truth: {'pass' if diff <= 0.5 else 'FAIL'} (max rating difference {diff:.4f} points; tolerance 0.5)"
    )
    print(f"ratio: {t_ref / t_ours:.2f} (reference / vibestudio ratings; goal >= 4)")


if __name__ == "__main__":
    main()
