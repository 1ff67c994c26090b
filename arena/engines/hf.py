"""transformers engine: an HF checkpoint directory, optionally with a PEFT (LoRA) adapter on top.

This is how freshly trained checkpoints play in the arena without any conversion step. Each engine owns
its model. The engine cache (``arena.engines.factory``) shares one per (model, adapter). It unloads the
least recently used beyond the memory budget. Generation for one model is serialised with a lock.

``generate_batch`` is native. Requests come in chunks of ``batch_size`` that share their decoding (all but
the seed). Each chunk is left-padded into one ``generate``, seeded with the chunk's first request. Each
chunk takes one slot in the engine's gate. So a report's hundred answers cost a few batched calls. Two
models asked the same requests meet identical seeds and batches.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
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


def _load(model_ref: str, adapter_ref: str | None) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(model_ref)
        model: Any = AutoModelForCausalLM.from_pretrained(model_ref, dtype=torch.float32)
        if adapter_ref:
            from peft import PeftModel

            # Merged for inference: an unmerged LoRA roughly halves CPU decoding speed.
            model = PeftModel.from_pretrained(model, adapter_ref).merge_and_unload()
    except Exception as exc:
        raise EngineError(
            f"could not load model {model_ref!r} (adapter {adapter_ref!r}): {exc}", kind="down"
        ) from exc
    model.eval()
    return tok, model


def weight_bytes(model: Any) -> int:
    """Memory of a torch model's parameters and buffers."""
    tensors = [*model.parameters(), *model.buffers()]
    return sum(t.numel() * t.element_size() for t in tensors)


def _generate_args(sampling: Sampling) -> dict[str, Any]:
    """``generate()`` arguments for a ``Sampling`` (temperature 0 is greedy), shared by streaming and batches."""
    return {
        "max_new_tokens": sampling.max_tokens,
        "do_sample": sampling.temperature > 0,
        "temperature": max(sampling.temperature, 1e-5),
        "top_p": sampling.top_p,
        "repetition_penalty": sampling.repeat_penalty,
    }


class TransformersEngine(Engine):
    """Streams from a transformers model with ``TextIteratorStreamer``; counts generated tokens exactly."""

    name = "transformers"
    concurrency = 1  # one generate() per model at a time (the model lock); more requests queue in the gate
    batch_size = 16  # requests per batched generate() in generate_batch

    def __init__(self, model_ref: str, adapter_ref: str | None = None) -> None:
        self.model_ref = model_ref
        self.adapter_ref = adapter_ref
        self.tokenizer, self.model = _load(model_ref, adapter_ref)
        self.lock = threading.Lock()
        self.memory_bytes = weight_bytes(self.model)  # what the engine cache counts against its budget

    def stream_chat(self, messages: list[dict[str, str]], sampling: Sampling, prefill: str = "") -> Stream:
        stats = GenerationStats()
        deltas = self._generate(messages, sampling, prefill, stats)
        return Stream(timed(deltas, stats, count_tokens=False, prefill=prefill), stats)

    def _generate(
        self, messages: list[dict[str, str]], sampling: Sampling, prefill: str, stats: GenerationStats
    ) -> Iterator[str]:
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList, TextIteratorStreamer

        tok = self.tokenizer
        prompt = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False) + prefill
        inputs = tok(prompt, return_tensors="pt", add_special_tokens=False)
        streamer = TextIteratorStreamer(tok, skip_prompt=True, skip_special_tokens=True)
        result: dict[str, Any] = {}
        stop = threading.Event()

        class _Stop(StoppingCriteria):  # lets a closed stream end generation early and free the model lock
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                return torch.full((input_ids.shape[0],), stop.is_set(), dtype=torch.bool)

        def run() -> None:
            try:
                if sampling.seed is not None:
                    torch.manual_seed(sampling.seed)
                with self.lock, torch.no_grad():
                    out = self.model.generate(
                        **inputs,
                        **_generate_args(sampling),
                        streamer=streamer,
                        stopping_criteria=StoppingCriteriaList([_Stop()]),
                        pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
                    )
                result["tokens"] = int(out.shape[-1] - inputs["input_ids"].shape[-1])
            except Exception as exc:
                result["error"] = exc
                streamer.end()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        try:
            yield from streamer
        finally:
            stop.set()
        thread.join()
        if "error" in result:
            raise EngineError(f"transformers generation failed: {result['error']}")
        stats.tokens = result.get("tokens", 0)
        stats.finish = "length" if stats.tokens >= sampling.max_tokens else "stop"

    def generate_batch(self, requests: Sequence[Request]) -> list[Reply]:
        """Answers in request order, one left-padded ``generate`` per chunk of requests sharing their decoding."""
        out: list[Reply] = []
        start = 0
        while start < len(requests):
            first = requests[start].sampling
            end = start + 1
            while (
                end < len(requests)
                and end - start < self.batch_size
                and replace(requests[end].sampling, seed=first.seed) == first
            ):
                end += 1
            out.extend(self._batch(requests[start:end]))
            start = end
        return out

    def _batch(self, chunk: Sequence[Request]) -> list[Reply]:
        import torch

        tok, s = self.tokenizer, chunk[0].sampling
        eos = tok.eos_token_id
        configured = getattr(self.model.generation_config, "eos_token_id", None)
        stops = {eos, *(configured if isinstance(configured, list) else [configured])} - {None}
        pad = tok.pad_token_id if tok.pad_token_id is not None else eos
        texts = [
            tok.apply_chat_template(r.messages, add_generation_prompt=True, tokenize=False) + r.prefill
            for r in chunk
        ]
        gate = gate_for(self)
        gate.acquire()
        t0 = time.perf_counter()
        try:
            with self.lock, torch.no_grad():
                side, tok.padding_side = tok.padding_side, "left"
                try:
                    enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
                finally:
                    tok.padding_side = side
                if s.seed is not None:
                    torch.manual_seed(s.seed)
                gen = self.model.generate(
                    **enc,
                    **_generate_args(s),
                    pad_token_id=pad,
                )
        except Exception as exc:
            raise EngineError(f"transformers batch generation failed: {exc}") from exc
        finally:
            gate.release()
        seconds = time.perf_counter() - t0
        replies = []
        for r, row in zip(chunk, gen[:, enc["input_ids"].shape[1] :].tolist(), strict=True):
            end = next((i for i, t in enumerate(row) if t in stops), None)
            ids = [t for t in (row if end is None else row[:end]) if t != pad]
            text = r.prefill + tok.decode(ids, skip_special_tokens=True)
            replies.append(Reply(text, len(ids), end is None and len(ids) >= s.max_tokens, seconds))
        return replies
