"""Build an engine from a contestant's engine kind, model reference, adapter and engine config.

Engines are cached and shared per (kind, model, adapter, config). So two contestants on the same GGUF
share one llama.cpp pool and one concurrency gate. The cache (``arena.engines.cache``) unloads the least
recently used models beyond the memory budget in settings. ``validate(kind, config)`` checks an engine
config without building anything; registering a contestant uses it.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from vibestudio.arena.engines.base import Engine, EngineError
from vibestudio.arena.engines.cache import EngineCache

ENGINES = EngineCache()
_LOADING: dict[tuple[str, str, str | None, str], threading.Lock] = {}  # one per key: a model loads once
_LOADING_LOCK = threading.Lock()

ENGINE_KINDS = ("llama_cpp", "transformers", "openai", "vllm")


def validate(kind: str, config: dict[str, Any] | None, model_ref: str | None = None) -> None:
    """Raise ValueError naming the offending field when ``config`` does not fit engine ``kind`` (for a managed
    vLLM server, ``model_ref`` too: it goes on the server's command line)."""
    config = config or {}
    if kind not in ENGINE_KINDS:
        raise ValueError(f"engine {kind!r} unknown; known: {', '.join(ENGINE_KINDS)}")
    if kind == "openai":
        from vibestudio.arena.engines.openai_http import validate_config

        validate_config(config)
    elif kind == "vllm":
        from vibestudio.arena.engines.vllm import validate_vllm_config

        validate_vllm_config(config, model_ref)
    elif config:
        raise ValueError(f"engine {kind!r} takes no engine_config (got {', '.join(sorted(config))})")


def get_engine(
    kind: str, model_ref: str, adapter_ref: str | None = None, config: dict[str, Any] | None = None
) -> Engine:
    config = dict(config or {})
    key = (kind, model_ref, adapter_ref, json.dumps(config, sort_keys=True, default=str))
    engine = ENGINES.get(key)
    if engine is not None:
        return engine
    with _LOADING_LOCK:
        loading = _LOADING.setdefault(key, threading.Lock())
    with loading:  # both sides of a battle on one model: the second waits for the first's load
        engine = ENGINES.get(key)
        if engine is None:
            engine = ENGINES.add(key, _build(kind, model_ref, adapter_ref, config))
    return engine


def _build(kind: str, model_ref: str, adapter_ref: str | None, config: dict[str, Any]) -> Engine:
    engine: Any
    if kind == "llama_cpp":
        from vibestudio.arena.engines.llamacpp import LlamaCppEngine

        engine = LlamaCppEngine(model_ref, adapter_path=adapter_ref)
    elif kind == "transformers":
        from vibestudio.arena.engines.hf import TransformersEngine

        engine = TransformersEngine(model_ref, adapter_ref)
    elif kind == "openai":
        from vibestudio.arena.engines.openai_http import OpenAIEngine

        engine = OpenAIEngine(model_ref, config)
    elif kind == "vllm":
        from vibestudio.arena.engines.vllm import VLLMEngine

        engine = VLLMEngine(model_ref, adapter_ref, config)
    else:
        raise EngineError(f"unknown engine kind {kind!r}; known: {', '.join(ENGINE_KINDS)}", kind="config")
    return engine
