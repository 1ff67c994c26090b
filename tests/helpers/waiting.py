"""Waiting in a test for a state another thread or process reaches when the scheduler lets it.

``until`` polls a condition and returns its first true value; a fixed pause instead fails on a busy machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def until(check: Callable[[], T], timeout: float = 60.0, what: str = "condition", every: float = 0.1) -> T:
    """The first true value of ``check()``, polled every ``every`` seconds; AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)
