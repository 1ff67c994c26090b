"""Per-engine concurrency limits: a first-come, first-served gate that says where a waiting request stands.

Every engine object owns one gate (``gate_for(engine)``), sized by its ``concurrency``. A request takes a
slot before it generates and gives it back when it ends. Requests beyond the limit wait in arrival order.
The gate reports each waiter's position (0 = next) whenever it changes, so the UI can show "2 ahead of
you". It knows nothing about battles. Cancellation and time-outs are the caller's.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any


class Gate:
    """A FIFO semaphore with visible queue positions."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, int(limit))
        self._cond = threading.Condition()
        self._active = 0
        self._waiting: deque[object] = deque()

    @property
    def active(self) -> int:
        return self._active

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def acquire(
        self,
        timeout: float | None = None,
        cancel: threading.Event | None = None,
        on_position: Callable[[int], None] | None = None,
    ) -> bool:
        """Wait for a slot. Returns False on time-out or cancellation (then no slot is held)."""
        ticket = object()
        deadline = None if timeout is None else time.monotonic() + timeout
        last = -1
        with self._cond:
            self._waiting.append(ticket)
            try:
                while True:
                    pos = self._waiting.index(ticket)
                    if pos == 0 and self._active < self.limit:
                        self._waiting.popleft()
                        self._active += 1
                        self._cond.notify_all()
                        return True
                    if on_position is not None and pos != last:
                        last = pos
                        on_position(pos)
                    if cancel is not None and cancel.is_set():
                        break
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        break
                    self._cond.wait(0.1 if remaining is None else min(0.1, remaining))
            except BaseException:
                self._drop(ticket)
                raise
            self._drop(ticket)
            return False

    def _drop(self, ticket: object) -> None:
        if ticket in self._waiting:
            self._waiting.remove(ticket)
            self._cond.notify_all()

    def release(self) -> None:
        with self._cond:
            self._active = max(0, self._active - 1)
            self._cond.notify_all()


_GATES: weakref.WeakKeyDictionary[Any, Gate] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def gate_for(engine: Any) -> Gate:
    """The gate of one engine object, created on first use with the engine's ``concurrency`` (default 1)."""
    with _LOCK:
        gate = _GATES.get(engine)
        if gate is None:
            gate = _GATES[engine] = Gate(getattr(engine, "concurrency", 1))
        return gate
