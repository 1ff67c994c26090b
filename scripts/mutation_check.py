"""Mutation check of the core rules: mutmut mutates each module of ``scripts/mutation_check.toml`` (the outcome
mapping, lifecycle transitions, verdict rules, ratings fit) and runs only that module's own tests against each
mutant; a mutant no test fails on "survived". Prints each module's score (killed / mutants tested) and its
survivors, then the total. A target's ``equivalent`` table names the survivors that behave exactly like the
original (with why); they are left out of the score, and a listed one that is no longer a survivor is reported.

Usage: python scripts/mutation_check.py [--only NAME] [--max-children N] [--show] [--keep DIR] [--recheck DIR]

Each module runs in a fresh copy of the working tree (tracked and untracked, not ignored files) under a temporary
folder with its own ``[tool.mutmut]`` table, so the tree is never touched and no ``mutants/`` folder is left in it.
``--show`` prints each survivor's diff. Not part of CI: four modules took tens of minutes on two busy cores.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "scripts" / "mutation_check.toml"
sys.path.insert(0, str(ROOT / "scripts"))
from house import PACKAGES as STUDIO_PACKAGES  # noqa: E402  (the one list of the studio's packages)

#: What a mutant's copy needs beside the mutated module: every studio package, the scripts and the tests.
PACKAGES = [*STUDIO_PACKAGES, "scripts", "tests"]


def _copy_tree(dest: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(x) for x in items) + "]"


def _configure(work: Path, module: str, tests: list[str]) -> None:
    """The copy's pyproject gets a ``[tool.mutmut]`` table for this one module and its tests."""
    py = work / "pyproject.toml"
    text = re.sub(r"(?ms)^\[tool\.mutmut\].*?(?=^\[|\Z)", "", py.read_text())
    also = [p for p in PACKAGES if (work / p).exists()]
    text += (
        "\n[tool.mutmut]\n"
        f"paths_to_mutate = {_toml_list([module])}\n"
        f"tests_dir = {_toml_list(tests)}\n"
        f"also_copy = {_toml_list(also)}\n"
        f"pytest_add_cli_args = {_toml_list(['-p', 'no:cacheprovider', '-q', '-p', 'no:randomly'])}\n"
        f"pytest_add_cli_args_test_selection = {_toml_list(tests)}\n"
    )
    py.write_text(text)


def _results(work: Path, env: dict[str, str]) -> dict[str, str]:
    """Each mutant's status as ``mutmut results --all true`` prints it (name: status)."""
    out = subprocess.run(
        [sys.executable, "-m", "mutmut", "results", "--all", "true"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    ).stdout
    found = {}
    for line in out.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and name:
            found[name] = status.strip()
    return found


def run_target(
    target: dict, max_children: int, show: bool, keep: Path | None, recheck: list[Path] | None = None
) -> tuple[int, int, list[str]]:
    """(killed, tested, survivors) for one module. With ``recheck`` (the ``--keep`` folder of an earlier full run,
    then of any rechecks since) only the survivors are run again and the killed mutants count as killed: a test
    added since cannot make a killed mutant survive, and the survivors are the slow ones (every test runs on
    them)."""
    earlier: dict[str, str] = {}
    for i, folder in enumerate(recheck or []):
        old = folder / target["module"].replace("/", "_") / "tree"
        found = _results(old, {**os.environ, "PYTHONPATH": str(old)}) if old.is_dir() else {}
        if not found:
            raise SystemExit(f"no earlier results for {target['module']} under {folder}")
        if i == 0:
            earlier = found
        else:  # a later recheck (perhaps stopped part way) settles the survivors it got to
            for n, s in earlier.items():
                if s == "survived" and found.get(n) in ("killed", "timeout", "survived"):
                    earlier[n] = found[n]
    base = (
        Path(tempfile.mkdtemp(prefix="mutation-"))
        if keep is None
        else keep / target["module"].replace("/", "_")
    )
    if not (ROOT / target["module"]).is_file():
        raise SystemExit(f"{target['module']} does not exist: update {CONFIG.relative_to(ROOT)}")
    work = base / "tree"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    _copy_tree(work)
    _configure(work, target["module"], target["tests"])
    env = {**os.environ, "PYTHONPATH": str(work), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("VIBESTUDIO_CI_REQUIRE", None)
    start = time.monotonic()
    dotted = target["module"].removesuffix(".py").replace("/", ".")
    # mutmut names a mutant MODULE.x_FUNCTION__mutmut_N (a method: MODULE.xǁCLASSǁMETHOD__mutmut_N)
    patterns = [f"{dotted}.x_{f}__mutmut_*" for f in target.get("functions", [])]
    if target.get("functions"):
        wanted = tuple(f"{dotted}.x_{f}__mutmut_" for f in target["functions"])
        earlier = {n: s for n, s in earlier.items() if n.startswith(wanted)}
    if earlier:
        patterns = sorted(n for n, s in earlier.items() if s == "survived") or [f"{dotted}.nothing_survived"]
    done = subprocess.run(
        [sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children), *patterns],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.monotonic() - start
    statuses = _results(work, env)
    if not statuses:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-30:])
        raise SystemExit(f"mutmut gave no results for {target['module']} (exit {done.returncode}):\n{tail}")
    if target.get("functions"):
        wanted = tuple(f"{dotted}.x_{f}__mutmut_" for f in target["functions"])
        statuses = {n: s for n, s in statuses.items() if n.startswith(wanted)}
    if earlier:
        statuses = {n: statuses.get(n, "not checked") if s == "survived" else s for n, s in earlier.items()}
    # a mutant that makes the tests hang past mutmut's timeout is caught too (an endless loop, say)
    statuses = {n: "killed" if s == "timeout" else s for n, s in statuses.items()}
    killed = sum(s == "killed" for s in statuses.values())
    equivalent = target.get("equivalent", {})
    survivors = sorted(n for n, s in statuses.items() if s == "survived" and n not in equivalent)
    same = sorted(n for n, s in statuses.items() if s == "survived" and n in equivalent)
    other = sorted(f"{n} ({s})" for n, s in statuses.items() if s not in ("killed", "survived"))
    tested = killed + len(survivors)
    print(
        f"== {target['name']} ({target['module']}): {killed}/{tested} killed"
        f" ({100 * killed / max(tested, 1):.0f}%), {len(same)} equivalent (listed, not counted),"
        f" {len(other)} not tested, {seconds:.0f} s",
        flush=True,
    )
    for name in sorted(set(equivalent) - set(same)):
        print(f"  listed as equivalent but not a survivor now (the source moved? update the list): {name}")
    for name in survivors:
        print(f"  survived: {name}")
        if show:
            diff = subprocess.run(
                [sys.executable, "-m", "mutmut", "show", name],
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
            ).stdout
            print("    " + "\n    ".join(diff.strip().splitlines()))
    for name in other:
        print(f"  not tested: {name}")
    if keep is None:
        shutil.rmtree(base, ignore_errors=True)
    return killed, tested, survivors


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[], help="a target's name or module (repeatable)")
    ap.add_argument("--max-children", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    ap.add_argument(
        "--functions",
        default="",
        help="comma-separated functions to mutate instead of the config's (with --only)",
    )
    ap.add_argument("--show", action="store_true", help="print each survivor's diff")
    ap.add_argument("--keep", type=Path, default=None, help="keep the work copies (and mutmut's state) here")
    ap.add_argument(
        "--recheck",
        type=Path,
        action="append",
        default=[],
        help="the --keep folder of an earlier full run: run only its survivors again (its killed ones stay "
        "killed); repeat it with the folders of later rechecks, even unfinished ones, to go on from them",
    )
    args = ap.parse_args(argv)
    targets = tomllib.loads(CONFIG.read_text())["target"]
    if args.only:
        targets = [t for t in targets if t["name"] in args.only or t["module"] in args.only]
    if args.functions:
        targets = [{**t, "functions": args.functions.split(",")} for t in targets]
    total_killed = total_tested = 0
    for target in targets:
        killed, tested, _ = run_target(target, args.max_children, args.show, args.keep, args.recheck)
        total_killed += killed
        total_tested += tested
    score = 100 * total_killed / max(total_tested, 1)
    print(f"mutation score: {total_killed}/{total_tested} killed ({score:.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
