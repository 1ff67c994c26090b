"""Running a code answer against its tests in a separate Python process with resource limits.

The answer and the tests are written to files in a fresh scratch directory, never onto a command line.
``python -I`` runs them there with an empty environment and ``resource.setrlimit`` limits:
- CPU seconds, address space, file size and open files;
- no new processes;
- a wall-clock timeout that kills the process group.
The limits stop runaway loops, memory hogs and fork bombs written by mistake. They are not a security
boundary against a hostile answer: it can still read what the user running the studio can read. That is
why code checks are off unless the operator turns them on (``VIBESTUDIO_CODE_CHECKS``; docs/security.md).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

_RUNNER = """
import sys
ns = {"__name__": "__answer__"}
exec(compile(open("answer.py", encoding="utf-8").read(), "answer.py", "exec"), ns)
exec(compile(open("tests.py", encoding="utf-8").read(), "tests.py", "exec"), ns)
print("ALL TESTS PASSED")
"""


def _limits(cpu_s: float, memory_mb: int) -> None:  # runs in the child, before exec
    import resource

    cpu = max(1, int(cpu_s))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    mem = memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_FSIZE, (2**20, 2**20))
    resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    os.setsid()


def run_python_tests(code: str, tests: str, cpu_s: float = 5.0, memory_mb: int = 256) -> tuple[bool, str]:
    """(passed, why): ``code`` then ``tests`` in one limited child process; passed only on a clean exit."""
    with tempfile.TemporaryDirectory(prefix="vibestudio-code-") as tmp:
        Path(tmp, "answer.py").write_text(code, encoding="utf-8")
        Path(tmp, "tests.py").write_text(tests, encoding="utf-8")
        Path(tmp, "run.py").write_text(_RUNNER, encoding="utf-8")
        proc = subprocess.Popen(
            [sys.executable, "-I", "run.py"],
            cwd=tmp,
            env={},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: _limits(cpu_s, memory_mb),
        )
        try:
            out, err = proc.communicate(timeout=cpu_s * 2 + 2)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.communicate()
            return False, f"timed out after {cpu_s * 2 + 2:g} s (wall clock)"
    if proc.returncode == 0 and b"ALL TESTS PASSED" in out:
        return True, "tests passed"
    if proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return False, f"killed: CPU limit of {cpu_s:g} s"
    last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
    return False, last[0][:300]
