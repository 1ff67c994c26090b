"""Build an engine from a contestant's engine kind, model reference, adapter and engine config.

Engines are cached and shared per (kind, model, adapter, config): two contestants on the same GGUF share one
llama.cpp pool and so one concurrency gate. ``validate(kind, config)`` checks an engine config without building
anything (used when a contestant is registered).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from arena.engines.base import Engine, EngineError

_ENGINES: dict[tuple[str, str, str | None, str], Any] = {}
_LOCK = threading.Lock()

ENGINE_KINDS = ("llama_cpp", "transformers", "openai", "vllm")


def validate(kind: str, config: dict[str, Any] | None) -> None:
    """Raise ValueError naming the offending field when ``config`` does not fit engine ``kind``."""
    config = config or {}
    if kind not in ENGINE_KINDS:
        raise ValueError(f"engine {kind!r} unknown; known: {', '.join(ENGINE_KINDS)}")
    if kind == "openai":
        from arena.engines.openai_http import validate_config

        validate_config(config)
    elif kind == "vllm":
        from arena.engines.vllm import validate_vllm_config

        validate_vllm_config(config)
    elif config:
        raise ValueError(f"engine {kind!r} takes no engine_config (got {', '.join(sorted(config))})")


def get_engine(
    kind: str, model_ref: str, adapter_ref: str | None = None, config: dict[str, Any] | None = None
) -> Engine:
    config = dict(config or {})
    key = (kind, model_ref, adapter_ref, json.dumps(config, sort_keys=True, default=str))
    with _LOCK:
        if key in _ENGINES:
            return _ENGINES[key]
    engine: Any
    if kind == "llama_cpp":
        from arena.engines.llamacpp import LlamaCppEngine

        engine = LlamaCppEngine(model_ref)
    elif kind == "transformers":
        from arena.engines.hf import TransformersEngine

        engine = TransformersEngine(model_ref, adapter_ref)
    elif kind == "openai":
        from arena.engines.openai_http import OpenAIEngine

        engine = OpenAIEngine(model_ref, config)
    elif kind == "vllm":
        from arena.engines.vllm import VLLMEngine

        engine = VLLMEngine(model_ref, adapter_ref, config)
    else:
        raise EngineError(f"unknown engine kind {kind!r}; known: {', '.join(ENGINE_KINDS)}", kind="config")
    with _LOCK:
        return _ENGINES.setdefault(key, engine)
