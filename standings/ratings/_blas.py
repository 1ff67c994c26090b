"""Run the rating fits with OpenBLAS on one thread.

The dense matrices here are small (models x models). For those, BLAS threads only add synchronisation. On
a busy machine every synchronisation can wait for a scheduler time slice. On a loaded 2-core box, a 154 x
154 solve went from 0.2 ms (one thread) to 60 ms (two threads).

`single_threaded_blas()` sets OpenBLAS to one thread for its duration and restores the previous count.
Only the outermost call acts; it is re-entrant and thread-safe. It finds the loaded OpenBLAS libraries
through /proc/self/maps, numpy's and scipy's bundled copies included. Where there are none (another BLAS,
another OS) it does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Callable, Iterator
from functools import cache, wraps
from threading import Lock
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

_lock = Lock()
_depth = 0
_saved: list[int] = []


@cache
def _controls() -> list[tuple[Callable[[], int], Callable[[int], None]]]:
    try:
        with open("/proc/self/maps", encoding="utf-8") as handle:
            paths = {line.split()[-1] for line in handle if "openblas" in line.lower()}
    except OSError:
        return []
    found = []
    for path in sorted(p for p in paths if p.startswith("/")):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in ("scipy_openblas", "openblas"):
            for suffix in ("64_", ""):
                try:
                    get = getattr(lib, f"{prefix}_get_num_threads{suffix}")
                    put = getattr(lib, f"{prefix}_set_num_threads{suffix}")
                except AttributeError:
                    continue
                get.restype = ctypes.c_int
                put.argtypes = [ctypes.c_int]
                found.append((get, put))
                break
            else:
                continue
            break
    return found


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Context in which OpenBLAS uses one thread."""
    global _depth
    with _lock:
        if _depth == 0:
            _saved[:] = []
            for get, put in _controls():
                _saved.append(int(get()))
                put(1)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                for (_, put), count in zip(_controls(), _saved, strict=True):
                    put(count)


def single_threaded(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorator: run `fn` inside `single_threaded_blas()`."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with single_threaded_blas():
            return fn(*args, **kwargs)

    return wrapper
