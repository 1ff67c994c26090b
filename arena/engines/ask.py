"""The one way to ask an engine for finished answers: probes, evals, on-policy queues, judges, reports,
rewards.

``ask`` does three things:
- It takes a slot in the engine's gate (``arena.engines.gate``) before it generates. So batch work waits
  in the same first-come line as the arena's battles instead of jumping it.
- It always closes the stream, also when the engine or the caller raises. So a llama.cpp instance or a
  transformers lock is never left held.
- It returns a plain ``Reply``: text with the prefill, generated tokens, whether the token cap cut it,
  seconds.

``ask_batch`` answers a list of ``Request``s in order. It is the one place that decides how.
- An engine with its own ``generate_batch`` uses it, one gate slot per chunk. The transformers and
  llama.cpp engines batch natively; the protocol gives no default.
- Otherwise ``ask_each`` runs one ``ask`` per request on up to ``concurrency`` threads (at most
  ``MAX_WORKERS``). A vLLM or OpenAI-compatible server batches them itself.

The live arena streams deltas to a page and keeps its own loop (``arena.streaming``), through the same
gate. Engine errors (``EngineError``) pass through unchanged. The caller decides what a failed answer
means.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from vibestudio.arena.engines.base import GenerationStats, Reply, Request, Sampling, hit_cap
from vibestudio.arena.engines.gate import gate_for

MAX_WORKERS = 8  # threads per batch on a streaming engine; more would only wait in its gate


def ask(engine: Any, messages: list[dict[str, str]], sampling: Sampling, prefill: str = "") -> Reply:
    """One answer, through the engine's gate, its stream always closed."""
    gate = gate_for(engine)
    gate.acquire()
    try:
        stream = engine.stream_chat(messages, sampling, prefill)
        try:
            text = "".join(stream)
        finally:
            close = getattr(stream, "close", None)  # a Stream, or any iterator of deltas a stub engine gives
            if close is not None:
                close()
    finally:
        gate.release()
    st = getattr(stream, "stats", None) or GenerationStats()
    return Reply(text, st.tokens, hit_cap(st, sampling.max_tokens), st.seconds, st.ttft, st.tokens_per_s)


def ask_each(engine: Any, requests: Sequence[Request]) -> list[Reply]:
    """``generate_batch`` on top of ``stream_chat``: one ``ask`` per request, up to the engine's concurrency."""
    workers = max(1, min(int(getattr(engine, "concurrency", 1)), MAX_WORKERS, len(requests)))

    def one(r: Request) -> Reply:
        return ask(engine, r.messages, r.sampling, r.prefill)

    if workers == 1:
        return [one(r) for r in requests]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(one, requests))


def ask_batch(engine: Any, requests: Sequence[Request]) -> list[Reply]:
    """Answers to ``requests`` in order: the engine's own ``generate_batch`` when it has one, else ``ask_each``."""
    native = getattr(engine, "generate_batch", None)
    return list(native(requests)) if native is not None else ask_each(engine, requests)
