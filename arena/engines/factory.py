"""Build an engine from a contestant's engine kind and model reference; engines are cached and shared."""

from __future__ import annotations

import threading
from typing import Any

from arena.engines.base import Engine, EngineError

_ENGINES: dict[tuple[str, str, str | None], Any] = {}
_LOCK = threading.Lock()

ENGINE_KINDS = ("llama_cpp", "transformers")


def get_engine(kind: str, model_ref: str, adapter_ref: str | None = None) -> Engine:
    key = (kind, model_ref, adapter_ref)
    with _LOCK:
        if key in _ENGINES:
            return _ENGINES[key]
    if kind == "llama_cpp":
        from arena.engines.llamacpp import LlamaCppEngine

        engine: Any = LlamaCppEngine(model_ref)
    elif kind == "transformers":
        from arena.engines.hf import TransformersEngine

        engine = TransformersEngine(model_ref, adapter_ref)
    else:
        raise EngineError(f"unknown engine kind {kind!r}; known: {', '.join(ENGINE_KINDS)}")
    with _LOCK:
        return _ENGINES.setdefault(key, engine)
