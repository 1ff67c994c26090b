"""The studio's processes let idle OpenMP threads sleep (``common.threads``), and a user's explicit choice stands."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from vibestudio.common.threads import sleeping_thread_waits

ROOT = Path(__file__).resolve().parents[2]


def test_passive_unless_the_environment_says_otherwise(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    sleeping_thread_waits()
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    sleeping_thread_waits()
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


def _cli_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def test_the_command_line_sets_it_before_any_command_runs():
    code = (
        "import os, sys\nsys.argv = ['vibestudio', '--help']\nfrom studio.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\nprint('policy=' + os.environ.get('OMP_WAIT_POLICY', '-'))"
    )
    for extra, want in (({}, "PASSIVE"), ({"OMP_WAIT_POLICY": "ACTIVE"}, "ACTIVE")):
        out = subprocess.run(
            [sys.executable, "-c", code], env=_cli_env(extra), capture_output=True, text=True, check=True
        ).stdout
        assert f"policy={want}" in out, out[-500:]
