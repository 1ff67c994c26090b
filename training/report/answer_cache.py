"""Answers a report already has, kept so that the next report of the same side does not decode them again.

An entry is a model file's answer to a prompt under one persona, decoding and seed. Every child of a
parent is reported against that parent on the same held-out prompts and eval items, with the same seeds.
Without this, each report decodes the parent's answers anew: half of its work, the same every time.

An answer is reused only when everything that decides it is the same:
- the engine and its settings. Only llama.cpp qualifies: each sequence there draws from its own seeded
  generator, so an answer does not depend on which other answers were decoded beside it.
- the GGUF file: its real path, size and modification time;
- the messages as sent (system prompt and prompt), and the prefill;
- every sampling setting, with the seed and token cap;
- the llama.cpp version and ``DECODER_VERSION``. That is raised when the batched sampler changes what a
  seed draws.
A reused answer is the one that decoding would have drawn again with the same seed. The report says how
many it reused.

The store is one small JSON file per answer under ``<VIBESTUDIO_HOME>/cache/report_answers``. Each is
written to a temporary name and renamed, so a reader never sees half a file. One that does not parse is
decoded again. Deleting the folder only costs time. It holds model answers to the studio's own held-out
prompts and eval items, nothing a user typed.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from vibestudio.arena.engines.base import Reply
from vibestudio.arena.registry import ContestantInfo, messages_for, resolve_model_ref
from vibestudio.common.settings import get_settings

#: Raised when ``arena.engines.llamacpp_batch`` changes what a seed draws (the sampler's order or constants).
DECODER_VERSION = 1


def cache_dir() -> Path:
    return get_settings().data_home / "cache" / "report_answers"


def _model_identity(info: ContestantInfo) -> dict[str, Any] | None:
    if info.engine != "llama_cpp" or info.adapter_ref:
        return None
    try:
        path = Path(resolve_model_ref(info.model_ref)).resolve(strict=True)
        stat = path.stat()
    except (OSError, ValueError, RuntimeError):
        return None
    try:
        import llama_cpp

        version = str(llama_cpp.__version__)
    except ImportError:
        return None
    return {"path": str(path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "llama_cpp": version}


def keeps(info: ContestantInfo) -> bool:
    """Whether ``info``'s answers are kept for later reports (llama.cpp without an adapter, a file that reads)."""
    return _model_identity(info) is not None


def answer_key(info: ContestantInfo, prompt: str, sampling: dict[str, Any]) -> str | None:
    """The key of ``info``'s answer to ``prompt`` under ``sampling`` (seed included), or None when it cannot be
    reused (not llama.cpp, or the model file cannot be read)."""
    return answer_keys(info, [prompt], [sampling])[0]


def answer_keys(
    info: ContestantInfo, prompts: list[str], samplings: list[dict[str, Any]]
) -> list[str | None]:
    """``answer_key`` for each prompt and its sampling, the model file read once for all of them."""
    model = _model_identity(info)
    if model is None:
        return [None] * len(prompts)
    keys: list[str | None] = []
    for prompt, sampling in zip(prompts, samplings, strict=True):
        spec = {
            "decoder": DECODER_VERSION,
            "engine": info.engine,
            "engine_config": info.engine_config,
            "model": model,
            "messages": messages_for(info, [], prompt),
            "prefill": info.prefill,
            "sampling": {k: sampling[k] for k in sorted(sampling)},
        }
        keys.append(hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest())
    return keys


def _path(key: str) -> Path:
    return cache_dir() / key[:2] / f"{key}.json"


def load(key: str) -> Reply | None:
    """The kept answer for ``key``, or None (none kept, or a file that does not read as one)."""
    try:
        data = json.loads(_path(key).read_text(encoding="utf-8"))
        return Reply(str(data["text"]), int(data["tokens"]), bool(data["truncated"]), 0.0)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(key: str, reply: Reply) -> None:
    """Keep ``reply`` under ``key``; a store that cannot be written is skipped (the cache only saves time)."""
    path = _path(key)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"text": reply.text, "tokens": reply.tokens, "truncated": reply.truncated}, fh)
        os.replace(tmp, path)
    except OSError:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
