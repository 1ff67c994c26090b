"""Uploads after use: a file a handler has read leaves Gradio's upload cache, so a user's data does not stay on
the server's disk. Only files inside that cache are removed (never a path from anywhere else)."""

from __future__ import annotations

from pathlib import Path

from common.paths import OutsideRoot, under


def upload_folder() -> Path:
    from gradio.utils import get_upload_folder

    return Path(get_upload_folder())


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
