"""Uploads live only as long as their request.

Gradio's upload cache is a folder of this process's own, outside the data home, that nothing else serves.
Nothing a user uploaded outlives its use.
- **A folder per process** (``claim_upload_folder``, called by ``studio.app.serve`` before the app is
  built). It is ``<temp>/vibestudio-uploads-<random>``, set as ``GRADIO_TEMP_DIR``; Gradio 6 keeps uploads
  and its cache there. The process holds an exclusive lock on the folder's ``.lock`` for its life. So a
  folder whose lock can be taken belongs to a process that is gone. The sweep at start removes those
  leftovers (a killed server's uploads), never a live replica's. The folder is removed when the server
  closes.
- **After use, and on refusal.** A handler that reads an upload removes it in a ``finally``
  (``discard_upload``). So a refused request (a low role, a bad file) leaves nothing either.
- **Never used.** Gradio's upload route accepts a file from any signed-in user before any handler runs. A
  file no handler took is removed once it is older than ``UPLOAD_TTL_S`` (``sweep_stale``, on a timer).

Only files inside this process's upload folder are removed, never a path from anywhere else.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

from vibestudio.common.paths import OutsideRoot, under

PREFIX = "vibestudio-uploads-"
#: How long an upload that no handler took may stay (seconds): longer than any form takes to submit.
UPLOAD_TTL_S = 15 * 60
#: How often the stale sweep looks (seconds).
SWEEP_EVERY_S = 60

_held: dict[str, IO[bytes]] = {}  # folder -> its open, locked .lock file (held for the process's life)


def upload_folder() -> Path:
    from gradio.utils import get_upload_folder

    return Path(get_upload_folder())


def claim_upload_folder(base: Path | None = None) -> Path:
    """This process's upload folder (made, locked and set as ``GRADIO_TEMP_DIR``), after removing the folders
    of processes that are gone. Idempotent within a process."""
    base = Path(base or tempfile.gettempdir())
    for held, fh in _held.items():
        if Path(held).parent == base and not fh.closed:
            os.environ["GRADIO_TEMP_DIR"] = held
            return Path(held)
    sweep_leftovers(base)
    folder = base / f"{PREFIX}{secrets.token_hex(8)}"
    folder.mkdir(mode=0o700, parents=True)
    fh = open(folder / ".lock", "a+b")  # noqa: SIM115  (held open: the lock lasts as long as the process)
    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    _held[str(folder)] = fh
    os.environ["GRADIO_TEMP_DIR"] = str(folder)
    return folder


def release_upload_folder(folder: Path) -> None:
    """Remove this process's upload folder and everything in it (the server is closing)."""
    fh = _held.pop(str(folder), None)
    shutil.rmtree(folder, ignore_errors=True)
    if fh is not None:
        fh.close()


def sweep_leftovers(base: Path | None = None) -> int:
    """Remove the upload folders under ``base`` whose process is gone (their lock is free); returns how many."""
    base = Path(base or tempfile.gettempdir())
    removed = 0
    for folder in base.glob(f"{PREFIX}*"):
        if str(folder) in _held or not folder.is_dir() or folder.is_symlink():
            continue
        try:
            with open(folder / ".lock", "a+b") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free: its process is gone
                shutil.rmtree(folder, ignore_errors=True)
                removed += 1
        except OSError:  # held by a live process (BlockingIOError), or not ours to touch
            continue
    return removed


def sweep_stale(folder: Path | None = None, ttl_s: float = UPLOAD_TTL_S, now: float | None = None) -> int:
    """Remove the uploads in ``folder`` (default: Gradio's) older than ``ttl_s``: files no handler took."""
    root = (folder or upload_folder()).resolve()
    if not root.is_dir():
        return 0
    cutoff = (now if now is not None else time.time()) - ttl_s
    removed = 0
    for f in list(root.rglob("*")):
        try:
            if f.name == ".lock" or not f.is_file() or f.is_symlink() or f.stat().st_mtime > cutoff:
                continue
            f.unlink()
            removed += 1
            if f.parent != root:
                f.parent.rmdir()  # Gradio keeps each upload in a folder of its own
        except OSError:
            continue
    return removed


class StaleSweeper:
    """A daemon thread running ``sweep_stale`` on this process's upload folder every ``SWEEP_EVERY_S``."""

    def __init__(self, folder: Path, every_s: float = SWEEP_EVERY_S) -> None:
        self.folder, self.every_s = folder, every_s
        self.stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="upload-sweeper", daemon=True)

    def start(self) -> StaleSweeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()

    def _run(self) -> None:
        while not self.stopped.wait(self.every_s):
            sweep_stale(self.folder)


def discard_upload(path: str | Path | None) -> bool:
    """Remove an uploaded file (and its now empty per-upload folder); True when something was removed."""
    if not path:
        return False
    root = upload_folder()
    try:
        target = under(root, str(Path(path).resolve().relative_to(root.resolve())))
    except (OutsideRoot, ValueError, OSError):
        return False
    if target == root.resolve() or not target.is_file():
        return False
    target.unlink(missing_ok=True)
    try:
        if target.parent != root.resolve():
            target.parent.rmdir()  # Gradio keeps each upload in a folder of its own
    except OSError:
        pass
    return True
