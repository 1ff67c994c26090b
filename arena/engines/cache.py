"""The engine cache: built engines kept for reuse, least recently used first out beyond a memory budget.

Each engine says how much memory its model holds (``memory_bytes``). That is transformers weights or a
GGUF file; engines that talk to a server say 0. The budget is ``VIBESTUDIO_ENGINE_CACHE_MB``, read at
every insertion. When the total passes it, the least recently used engines are dropped until it fits
again. The one just added always stays, even alone over the budget. A dropped engine is closed when it has
a ``close()``. Otherwise it is freed once the last stream using it ends. Asking for it again loads it
again.
"""

from __future__ import annotations

import gc
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

from vibestudio.common.settings import get_settings

MB = 1024 * 1024


def memory_bytes(engine: Any) -> int:
    """The engine's own estimate of the memory its model holds (0 when it does not say)."""
    return int(getattr(engine, "memory_bytes", 0) or 0)


class EngineCache:
    """A thread-safe LRU mapping of engine keys to engines, bounded by the sum of their ``memory_bytes``."""

    def __init__(self, budget_bytes: int | None = None) -> None:
        self._budget = budget_bytes  # None: the settings' budget, read at every insertion
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def budget_bytes(self) -> int:
        if self._budget is not None:
            return self._budget
        return max(0, get_settings().engine_cache_mb) * MB

    def get(self, key: Hashable) -> Any | None:
        """The cached engine (now the most recently used), or None."""
        with self._lock:
            engine = self._entries.get(key)
            if engine is not None:
                self._entries.move_to_end(key)
            return engine

    def add(self, key: Hashable, engine: Any) -> Any:
        """Cache ``engine`` under ``key`` unless another thread got there first; return the cached one.

        Evicts least recently used engines until the total fits the budget (never the one returned).
        """
        with self._lock:
            existing = self._entries.get(key)
            if existing is not None:
                self._entries.move_to_end(key)
                return existing
            self._entries[key] = engine
            evicted = self._evict(self.budget_bytes)
        _release(evicted)
        return engine

    def _evict(self, budget: int) -> list[Any]:
        evicted = []
        total = sum(memory_bytes(e) for e in self._entries.values())
        while total > budget and len(self._entries) > 1:
            _key, old = self._entries.popitem(last=False)
            total -= memory_bytes(old)
            evicted.append(old)
        return evicted

    def clear(self) -> None:
        with self._lock:
            evicted = list(self._entries.values())
            self._entries.clear()
        _release(evicted)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def total_bytes(self) -> int:
        """Memory the cached engines hold, by their own estimates."""
        with self._lock:
            return sum(memory_bytes(e) for e in self._entries.values())


def _release(engines: list[Any]) -> None:
    """Close what can be closed and drop the cache's references (the caller's list is emptied)."""
    if not engines:
        return
    while engines:
        close = getattr(engines.pop(), "close", None)
        if callable(close):
            close()
        close = None
    gc.collect()  # model objects can sit in reference cycles; free them now, not at some later collection
