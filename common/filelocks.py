"""Files that several processes write: an exclusive lock beside a file, and writes that land whole or not at
all.

``file_lock(path)`` holds an exclusive ``flock`` on ``path`` for the block, making the file if missing.
Processes on one host take turns, and so do hosts on a shared file system that honours ``flock`` (local
disks, NFSv4). Threads of one process take turns too, since each call opens its own file description.

``unique_tmp(target)`` names a temporary file or folder beside ``target`` that no other writer uses. The
name holds the host, pid, thread and a random part. So two writers never share one temporary file.
``atomic_write_bytes`` writes one and renames it over the target (``os.replace`` is atomic on POSIX). A
reader sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def unique_tmp(target: Path) -> Path:
    """A temporary name beside ``target`` that is this writer's alone."""
    host = socket.gethostname().split(".")[0][:32] or "host"
    tag = f"{host}-{os.getpid()}-{threading.get_ident() % 100000}-{secrets.token_hex(4)}"
    return target.with_name(f".{target.name}.{tag}.tmp")


def atomic_write_bytes(target: Path, data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``target`` through a temporary file of this writer's own, then rename it into place."""
    tmp = unique_tmp(target)
    try:
        tmp.write_bytes(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
