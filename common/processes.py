"""Is a process alive on this host? The one liveness check, for job runners and heartbeats alike.

A zombie counts as gone; when it is our own child it is reaped on the way. A pid can be reused by another
program. So a caller that knows what ran may pass ``command``: a process whose command line lacks it is
gone. Without ``/proc`` (macOS) the check trusts ``kill(pid, 0)`` alone. Standard library only.
"""

from __future__ import annotations

import os
from pathlib import Path


def process_alive(pid: int | None, *, command: str | None = None) -> bool:
    """True when ``pid`` is a live, non-zombie process here (and its command line holds ``command``, if given)."""
    if not pid or pid < 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, under another user
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True  # no /proc: trust kill(0)
    if state in ("Z", "X"):
        try:
            os.waitpid(pid, os.WNOHANG)  # our own child: reap it
        except ChildProcessError:
            pass
        return False
    if command is None:
        return True
    try:
        return command.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # it went between the two reads: the next check sees it gone
