"""Names that become paths: the one rule for a safe name, and paths resolved under a root they cannot leave.

A name a user types (a queue, an export, a snapshot label) may end up in a file name. ``check_safe_name``
is the rule where such a name is *created*:
- 1 to 128 characters, none of ``/ \\ :``, no control or format characters;
- not starting with ``.``, ``-`` or a space, and not ending with a space.
So it can never be ``..``, an absolute path or hold a separator. ``file_stem`` turns any name into a
file-name stem of word characters, ``.``, ``+`` and ``-``. That includes names stored before the rule.
``under(root, *parts)`` resolves a path below ``root``, following symlinks. It refuses anything that lands
outside, whatever the parts hold.

**Paths a user names are capabilities, not strings.** Some fields name a server file: a rules or rubric
file, a launcher config, a persona's model or adapter, a job's base model.
- ``named_path`` checks such a field against the folders allowed for that purpose. An absolute path must
  lie inside one of them. A relative one is looked up inside each in turn. A path outside all of them is
  refused before the disk is asked anything (no existence oracle). One whose symlinks lead out of its
  folder is refused after they are resolved.
- ``regular_file`` adds that it is a plain file of at most ``max_bytes``, checked before anything is read.
  No device, FIFO, socket or folder passes.
- ``read_named_file`` reads it through a descriptor that is checked again. It opens without following a
  last symlink and without blocking on a FIFO, and reads at most ``max_bytes``.
- ``model_folder`` checks a folder of weights the same way. Every entry must be a plain file or folder,
  and every symlink must stay inside the root.
- ``read_regular`` is that bounded read for files the studio itself chose (``common.files.read_yaml``).
Every refusal is a ``PathRefused`` naming the field, never the server's folders or the value.

It lives in ``common`` (the bottom layer) because queues, exports, snapshots, personas and jobs all need
it. It imports nothing from the studio.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from collections.abc import Sequence
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


# ---- paths a user names ----------------------------------------------------------------------------------------
MAX_PATH_CHARS = 4096
MAX_FOLDER_ENTRIES = 10_000  # files and folders one model folder may hold (a checkpoint has tens)


class PathRefused(ValueError):
    """A path named in a field that may not be used; the message names the field (never the value or a folder)."""


def is_inside(path: Path, root: Path) -> bool:
    """Whether ``path`` is ``root`` or lies below it (both as given: resolve them first)."""
    return path == root or root in path.parents


def _lexical(value: str, root: Path) -> Path:
    """``value`` made absolute against ``root`` (an absolute value stays itself) and normalised (``..``
    applied) without touching the disk."""
    return Path(os.path.normpath(root / Path(value).expanduser()))


def named_path(value: object, field: str, roots: Sequence[str | Path], where: str = "") -> tuple[Path, Path]:
    """(the resolved path, the root it lies in) for a path named in ``field``, or PathRefused.

    ``roots``: the folders allowed for this purpose; ``where``: how a message names them to a user (e.g. "the
    data home's rules folder"). An absolute path (``~`` expanded) must lie inside a root as written and again
    once its symlinks are resolved; a relative one is tried inside each root in turn, the first where it exists
    (else the first root). A value outside every root is refused before any file is looked at."""
    where = where or "the folders allowed for it"
    if not isinstance(value, str) or not value.strip():
        raise PathRefused(f"{field}: a file name is required")
    if len(value) > MAX_PATH_CHARS or any(unicodedata.category(c) in ("Cc", "Cf") for c in value):
        raise PathRefused(f"{field}: not a usable path (too long, or control characters)")
    absolute = value.startswith("~") or Path(value).is_absolute()
    candidates: list[tuple[Path, Path]] = []  # (the path as written, the root's real path)
    for r in roots:
        written, real_root = Path(r).expanduser().absolute(), Path(r).expanduser().resolve()
        for base in dict.fromkeys((written, real_root)):
            path = _lexical(value, base)
            if is_inside(path, base):
                candidates.append((path, real_root))
                break
    if not candidates:
        raise PathRefused(f"{field}: the path must be inside {where}; this one is not")
    if not absolute:  # the first root where it exists
        candidates = [c for c in candidates if os.path.lexists(c[0])] or candidates[:1]
    path, base = candidates[0]
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        raise PathRefused(f"{field}: no such file in {where}") from None
    if not is_inside(real, base):
        raise PathRefused(f"{field}: the path leads outside {where} (a link pointing out)")
    return real, base


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a plain file"


def _check_regular(st: os.stat_result, field: str, max_bytes: int | None) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise PathRefused(f"{field}: must name a plain file; this is {_kind(st.st_mode)}")
    if max_bytes is not None and st.st_size > max_bytes:
        raise PathRefused(f"{field}: the file is larger than the {_size(max_bytes)} limit for it")


def _size(n: int) -> str:
    return f"{n / 2**20:g} MB" if n >= 2**20 else f"{n / 2**10:g} KB"


def regular_file(
    value: object, field: str, roots: Sequence[str | Path], max_bytes: int | None, where: str = ""
) -> Path:
    """``named_path``, and it is a plain file of at most ``max_bytes`` (None: any size), checked before a read."""
    path, _ = named_path(value, field, roots, where)
    try:
        st = os.stat(path)
    except OSError:
        raise PathRefused(f"{field}: the file cannot be read") from None
    _check_regular(st, field, max_bytes)
    return path


def read_regular(path: str | Path, max_bytes: int, field: str = "file", follow: bool = True) -> bytes:
    """The bytes of a plain file of at most ``max_bytes``: opened without blocking (a FIFO cannot hang the
    reader) and checked on the open descriptor before and while reading, so a device, a FIFO or a file that
    grows is refused without reading more than ``max_bytes + 1`` bytes (PathRefused naming ``field``).
    ``follow=False``: a last part that is a link is not opened. OSError when it cannot be opened."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        _check_regular(os.fstat(fd), field, max_bytes)
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise PathRefused(f"{field}: the file is larger than the {_size(max_bytes)} limit for it")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_named_file(
    value: object, field: str, roots: Sequence[str | Path], max_bytes: int, where: str = ""
) -> bytes:
    """The bytes of the file named in ``field``: ``regular_file`` and then ``read_regular`` (the last part of
    the resolved path is opened without following a link, so a swap after the check is refused too)."""
    path = regular_file(value, field, roots, max_bytes, where)
    try:
        return read_regular(path, max_bytes, field, follow=False)
    except PathRefused:
        raise
    except OSError:
        raise PathRefused(f"{field}: the file cannot be read") from None


def model_folder(
    value: object,
    field: str,
    roots: Sequence[str | Path],
    where: str = "",
    needs: str | None = None,
    max_entries: int = MAX_FOLDER_ENTRIES,
) -> Path:
    """``named_path`` naming a folder of model files: everything in it (walked, links not followed) is a plain
    file or a folder, a link resolves inside the same root to one of those, and at most ``max_entries``
    entries; ``needs``: a plain file it must hold (``config.json``). A plain file is accepted too when
    ``needs`` is None (a GGUF)."""
    path, root = named_path(value, field, roots, where)
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        if needs is None:
            _check_regular(st, field, None)
            return path
        raise PathRefused(f"{field}: must name a model folder; this is {_kind(st.st_mode)}")
    seen = 0
    stack, walked = [path], {path}
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                seen += 1
                if seen > max_entries:
                    raise PathRefused(f"{field}: the folder holds more than {max_entries} entries")
                target = Path(entry.path)
                if entry.is_symlink():
                    try:
                        target = target.resolve(strict=True)
                    except (OSError, RuntimeError):
                        raise PathRefused(f"{field}: the folder holds a broken link") from None
                    if not is_inside(target, root):
                        raise PathRefused(
                            f"{field}: the folder holds a link that leads outside {where or 'it'}"
                        )
                mode = os.stat(target, follow_symlinks=False).st_mode
                if stat.S_ISDIR(mode):
                    if target not in walked:
                        walked.add(target)
                        stack.append(target)
                elif not stat.S_ISREG(mode):
                    raise PathRefused(f"{field}: the folder holds {_kind(mode)}, not only plain files")
    if needs is not None:
        try:
            _check_regular(os.stat(path / needs), field, None)
        except OSError:
            raise PathRefused(f"{field}: not a model folder (no {needs})") from None
    return path
