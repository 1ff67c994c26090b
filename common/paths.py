"""Names that become paths: the one rule for a safe name, and paths resolved under a root they cannot leave.

A name a user types (a queue, an export, a snapshot label) may end up in a file name. ``check_safe_name``
is the rule where such a name is *created*: 1 to 128 characters, none of ``/ \\ :``, no control or format
characters, not starting with ``.``, ``-`` or a space and not ending with a space; so it can never be ``..``,
an absolute path or hold a separator. ``file_stem`` turns any name (also one stored before the rule) into a
file-name stem of word characters, ``.``, ``+`` and ``-``. ``under(root, *parts)`` resolves a path below
``root`` (symlinks followed) and refuses anything that lands outside it, whatever the parts hold.

It lives in ``db`` (the bottom layer) because queues, exports, snapshots and jobs all need it; it imports
nothing else from the studio but the settings.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

MAX_NAME_CHARS = 128
_FORBIDDEN = set("/\\:")


class UnsafeName(ValueError):
    """A name that cannot become part of a path; the message says why without repeating it."""


def check_safe_name(name: object, what: str = "name") -> str:
    """``name`` stripped, or UnsafeName saying which rule it broke (the name itself is not echoed)."""
    if not isinstance(name, str):
        raise UnsafeName(f"a {what} must be text")
    name = name.strip()
    if not name:
        raise UnsafeName(f"a {what} is required")
    if len(name) > MAX_NAME_CHARS:
        raise UnsafeName(f"a {what} has at most {MAX_NAME_CHARS} characters (this one has {len(name)})")
    if any(c in _FORBIDDEN for c in name):
        raise UnsafeName(f"a {what} must not contain '/', '\\' or ':'")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in name):
        raise UnsafeName(f"a {what} must not contain control characters")
    if name[0] in ".-":
        raise UnsafeName(f"a {what} must not start with '.' or '-'")
    return name


def file_stem(name: str, limit: int = 60) -> str:
    """A file-name stem from any name: runs of other characters become ``-``; never empty, never dots only."""
    stem = re.sub(r"[^\w.+-]+", "-", name, flags=re.UNICODE).strip("-.")[:limit].strip("-.")
    return stem or "unnamed"


class OutsideRoot(ValueError):
    """A path that would leave its root (``..``, an absolute part, a symlink pointing out)."""


def under(root: str | Path, *parts: str) -> Path:
    """``root / parts`` resolved (symlinks followed, ``..`` applied); OutsideRoot when it is not inside
    ``root`` (resolved too). The root need not exist yet."""
    base = Path(root).expanduser().resolve()
    target = base.joinpath(*parts).resolve()
    if target != base and base not in target.parents:
        raise OutsideRoot("the path would leave its folder")
    return target
