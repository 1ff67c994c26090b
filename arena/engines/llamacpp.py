"""llama.cpp engine (GGUF on the CPU, the studio's default).

On this engine a contestant's ``adapter_ref`` is a llama.cpp LoRA adapter in GGUF
(``training.publishing.gguf_adapter``). It is applied at run time on its parent's file. So a LoRA child
plays without losing its training to re-quantization.

Each engine keeps a small pool of ``Llama`` instances of its GGUF file. So both sides of a battle can
stream at the same time; one llama.cpp context is not safe to share between threads. The engine cache
(``arena.engines.factory``) shares one engine per file. It unloads the least recently used beyond the
memory budget.

The chat prompt is rendered from the template stored in the GGUF. The render runs in the sandbox, within
bounds (``arena.engines.chat_template``). Then the persona's prefill is appended and the model continues
from there. ``generate_batch`` decodes a chunk of requests together in one context
(``arena.engines.llamacpp_batch``). A report's few hundred answers then run at several times the tokens
per second of one stream each.
"""

from __future__ import annotations

import atexit
import os
import queue
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

from vibestudio.arena.engines.base import (
    Engine,
    EngineError,
    GenerationStats,
    Reply,
    Request,
    Sampling,
    Stream,
    timed,
)
from vibestudio.arena.engines.gate import gate_for
from vibestudio.common.settings import get_settings


def pool_size() -> int:
    return max(1, get_settings().llama_pool)


def default_n_ctx() -> int:
    return get_settings().llama_ctx


def _threads_per_instance(size: int) -> int:
    return max(1, (os.cpu_count() or 2) // size)


#: Every ``Llama`` loaded here and still alive, closed at exit: left to the garbage collector at interpreter
#: shutdown, its ``__del__`` runs after llama_cpp's own globals are gone and prints a TypeError per instance.
_LOADED: weakref.WeakSet[Any] = weakref.WeakSet()


@atexit.register
def _close_loaded() -> None:
    for llm in list(_LOADED):
        try:
            llm.close()
        except Exception:  # exiting anyway: a close that fails frees nothing more
            pass


def _load(path: str, n_ctx: int, threads: int, adapter: str | None = None) -> Any:
    from llama_cpp import Llama

    for p in (path, adapter):
        if p is not None and not os.path.exists(p):
            raise EngineError(f"GGUF file not found: {p}", kind="down")
    try:
        llm = Llama(
            model_path=path, lora_path=adapter, n_ctx=n_ctx, n_threads=threads, n_batch=256, verbose=False
        )
    except Exception as exc:  # a corrupt or foreign file
        raise EngineError(f"llama.cpp could not load {path}: {exc}", kind="config") from exc
    _LOADED.add(llm)
    return llm


def _pool(path: str, n_ctx: int, size: int, adapter: str | None = None) -> queue.Queue[Any]:
    q: queue.Queue[Any] = queue.Queue()
    for _ in range(size):
        q.put(_load(path, n_ctx, _threads_per_instance(size), adapter))
    return q


def render_chat(template: str, messages: list[dict[str, str]], bos: str, eos: str) -> str:
    """The chat prompt from the GGUF's template, rendered in the sandbox within bounds of size, time and memory
    (``arena.engines.chat_template``: a template from a model file is code its maker wrote)."""
    from vibestudio.arena.engines.chat_template import render_chat as bounded

    return bounded(template, messages, bos, eos)


class LlamaCppEngine(Engine):
    """Streams chat completions from a GGUF file with llama-cpp-python; serves ``concurrency`` answers at once."""

    name = "llama_cpp"
    batch_size = 16  # requests decoded together in generate_batch

    def __init__(self, model_path: str, n_ctx: int | None = None, adapter_path: str | None = None) -> None:
        self.model_path = model_path
        self.adapter_path = adapter_path
        self.n_ctx = n_ctx or default_n_ctx()
        self.concurrency = pool_size()
        self._pool = _pool(model_path, self.n_ctx, self.concurrency, adapter_path)
        # What the engine cache counts: the weights, mapped once and shared by the pool's instances; with an
        # adapter llama.cpp loads the model into each instance (no mmap), so both count once per instance.
        size = os.path.getsize(model_path)
        self.memory_bytes = (
            self.concurrency * (size + os.path.getsize(adapter_path)) if adapter_path else size
        )

    def _prompt(self, llm: Any, messages: list[dict[str, str]], prefill: str) -> tuple[str, list[str]]:
        meta = llm.metadata or {}
        template = meta.get("tokenizer.chat_template")
        bos = llm.detokenize([llm.token_bos()]).decode("utf-8", "ignore") if llm.token_bos() >= 0 else ""
        eos = llm.detokenize([llm.token_eos()]).decode("utf-8", "ignore") if llm.token_eos() >= 0 else ""
        if template:
            text = render_chat(template, messages, bos, eos)
        else:  # ChatML fallback
            text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
            text += "<|im_start|>assistant\n"
        stops = [s for s in {eos, "<|im_end|>", "<|im_start|>"} if s]
        return text + prefill, stops

    def generate_batch(self, requests: Sequence[Request]) -> list[Reply]:
        """Answers in request order, decoded ``batch_size`` at a time in one context each
        (``arena.engines.llamacpp_batch``); each chunk takes one slot in the engine's gate and one pool instance
        (for its model and vocabulary)."""
        from vibestudio.arena.engines.llamacpp_batch import generate

        out: list[Reply] = []
        gate = gate_for(self)
        for start in range(0, len(requests), self.batch_size):
            chunk = requests[start : start + self.batch_size]
            gate.acquire()
            llm = self._pool.get()
            try:
                prompts: list[tuple[str, Sampling, str]] = []
                stops: list[str] = []
                for r in chunk:
                    text, stops = self._prompt(llm, r.messages, r.prefill)
                    prompts.append((text, r.sampling, r.prefill))
                out.extend(generate(llm, prompts, self.n_ctx, stops))
            finally:
                self._pool.put(llm)
                gate.release()
        return out

    def count_tokens(self, text: str) -> int:
        llm = self._pool.get()
        try:
            return len(llm.tokenize(text.encode("utf-8"), add_bos=False))
        finally:
            self._pool.put(llm)

    def stream_chat(self, messages: list[dict[str, str]], sampling: Sampling, prefill: str = "") -> Stream:
        stats = GenerationStats()
        return Stream(
            timed(self._generate(messages, sampling, prefill, stats), stats, prefill=prefill), stats
        )

    def _generate(
        self,
        messages: list[dict[str, str]],
        sampling: Sampling,
        prefill: str,
        stats: GenerationStats | None = None,
    ) -> Iterator[str]:
        llm = self._pool.get()
        try:
            prompt, stops = self._prompt(llm, messages, prefill)
            n_prompt = len(llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))
            if n_prompt + 8 >= self.n_ctx:
                raise EngineError(
                    f"conversation is {n_prompt} tokens; this engine's context is {self.n_ctx}",
                    kind="too_long",
                )
            max_tokens = min(sampling.max_tokens, self.n_ctx - n_prompt - 1)
            chunks = llm.create_completion(
                prompt,
                max_tokens=max_tokens,
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                repeat_penalty=sampling.repeat_penalty,
                seed=sampling.seed if sampling.seed is not None else -1,
                stop=stops,
                stream=True,
            )
            finish = None
            for chunk in chunks:
                choice = chunk["choices"][0]
                finish = choice.get("finish_reason") or finish
                yield choice.get("text") or ""
            if stats is not None and finish is not None:
                # llama.cpp's own word: deltas undercount tokens (several per delta near a stop string, none for
                # half a character), so a capped answer full of emoji once read as 196 of 200 and went unmarked
                stats.finish = "length" if finish == "length" else "stop"
                if stats.finish == "length":
                    stats.tokens = max_tokens
        except EngineError:
            raise
        except Exception as exc:  # llama.cpp raises plain exceptions
            raise EngineError(f"llama.cpp failed: {exc}") from exc
        finally:
            self._pool.put(llm)
