"""Agreement with LMArena's published ranking code (`arena-rank`, JAX) on the same battles, and both whole processes
timed side by side.

`arena-rank` pins JAX and numpy versions, so it is kept out of the studio's dependencies: this benchmark installs it
into its own virtual environment (default `~/.cache/vibestudio/arena-rank-venv`, made on first use with
`python -m venv` + `pip install arena-rank pandas`). Its side is a small script run with that interpreter:
`pandas.read_json` of the file, `PairDataset.from_pandas`, `BradleyTerry.compute_ratings_and_cis(ci_method=
"sandwich")`. Ours: `vibestudio ratings --battles F --ci sandwich --json` (and `--ci bootstrap`). Both are fresh
processes. Checks: ratings within 0.5 points after centring both boards on their mean, every model's intervals
overlapping. (arena-rank's bootstrap path forks a process pool around JAX threads; it hung on the build machines,
so only its sandwich path is timed.)

    python benchmarks/arena_rank_agreement.py                      # the 1M-battle file and a simulated team arena
    python benchmarks/arena_rank_agreement.py --n 100000 --venv DIR
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
THEIRS = """
import json, sys
import pandas as pd
from arena_rank.models.bradley_terry import BradleyTerry
from arena_rank.utils.data_utils import PairDataset

frame = pd.read_json(sys.argv[1], lines=True)
# arena-rank's outcome map knows model_a, model_b, tie and both_bad; every other tie label is also a tie (0.5)
data = PairDataset.from_pandas(frame)
out = BradleyTerry(len(data.competitors)).compute_ratings_and_cis(data, ci_method="sandwich")
json.dump({str(n): [float(r), float(lo), float(hi)] for n, r, lo, hi in zip(
    out["competitors"], out["ratings"], out["rating_lower"], out["rating_upper"])}, sys.stdout)
"""


def ensure_venv(path: Path) -> Path:
    python = path / "bin" / "python"
    if not python.exists():
        print(f"creating {path} and installing arena-rank (JAX) into it ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "arena-rank", "pandas"], check=True)
    return python


def timed(cmd: list[str], repeat: int) -> tuple[float, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    best, out = float("inf"), ""
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
        best = min(best, time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"{cmd[:3]} failed:\n{proc.stderr[-3000:]}")
        out = proc.stdout
    return best, out


def compare(path: Path, python: Path, repeat: int) -> None:
    ours_cmd = [
        sys.executable,
        "-m",
        "vibestudio.studio.cli",
        "ratings",
        "--battles",
        str(path),
        "--json",
        "--no-flip",
    ]
    t_theirs, raw = timed([str(python), "-c", THEIRS, str(path)], repeat)
    theirs = json.loads(raw)
    print(f"\n{path.name}: {len(theirs)} models")
    print(f"  arena-rank (sandwich), whole process:  {t_theirs:7.2f} s")
    for ci in ("sandwich", "bootstrap"):
        t_ours, raw = timed([*ours_cmd, "--ci", ci], repeat)
        ours = {m["name"]: (m["rating"], m["ci_low"], m["ci_high"]) for m in json.loads(raw)["models"]}
        mean_o = sum(v[0] for v in ours.values()) / len(ours)
        mean_t = sum(v[0] for v in theirs.values()) / len(theirs)
        diff = max(abs((ours[n][0] - mean_o) - (theirs[n][0] - mean_t)) for n in ours)
        overlap = sum(
            ours[n][1] - mean_o <= theirs[n][2] - mean_t and theirs[n][1] - mean_t <= ours[n][2] - mean_o
            for n in ours
        )
        width = sorted((ours[n][2] - ours[n][1]) / (theirs[n][2] - theirs[n][1]) for n in ours)[
            len(ours) // 2
        ]
        print(
            f"  ours --ci {ci:<9}, whole process: {t_ours:7.2f} s   ratio {t_theirs / t_ours:5.1f}x; "
            f"max |rating difference| {diff:.3f} points (goal <= 0.5); intervals overlap {overlap}/{len(ours)}; "
            f"median width ours/theirs {width:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=150)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--venv", type=Path, default=Path.home() / ".cache" / "vibestudio" / "arena-rank-venv"
    )
    parser.add_argument("--file", type=Path, action="append", default=[], help="compare on this file too")
    args = parser.parse_args()
    python = ensure_venv(args.venv)
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT))
    from ratings_process import build_file

    from vibestudio.standings.ratings._simulate import simulate_arena

    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "battles-1m.jsonl"
        build_file(big, args.n, args.models, 0)
        team = Path(tmp) / "team-arena.jsonl"
        simulate_arena(seed=1)[0].to_json(team, orient="records", lines=True)
        for path in [big, team, *args.file]:
            compare(path, python, args.repeat)


if __name__ == "__main__":
    main()
