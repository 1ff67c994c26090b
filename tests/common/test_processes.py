"""The one liveness check (``common.processes.process_alive``) on real processes: alive, gone, a zombie (reaped on
the way), and a pid whose command line is not the one expected (a reused pid). The job runner reads it too."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vibestudio.common.processes import process_alive
from vibestudio.training.jobs import heartbeat, runner

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)", "sleeper-marker"]


def _started(argv: list[str]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(argv)
    deadline = time.monotonic() + 10
    while b"sleeper-marker" not in Path(f"/proc/{proc.pid}/cmdline").read_bytes():  # exec has happened
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return proc


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_alive_gone_zombie_and_reused() -> None:
    assert process_alive(os.getpid()) and not process_alive(None) and not process_alive(0)
    proc = _started(SLEEPER)
    try:
        assert process_alive(proc.pid)
        assert process_alive(proc.pid, command="sleeper-marker")
        assert not process_alive(proc.pid, command="vibestudio.training.jobs.")  # not a job: a reused pid
        assert not runner.pid_alive(proc.pid)
    finally:
        proc.kill()
    deadline = time.monotonic() + 10
    while Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert not process_alive(proc.pid)  # a zombie is gone, and being ours it is reaped
    assert not Path(f"/proc/{proc.pid}").exists()
    assert not process_alive(proc.pid)


def test_the_heartbeat_and_the_runner_read_the_one_check() -> None:
    assert heartbeat.process_alive is process_alive
    assert runner.process_alive is process_alive
