"""transformers engine: an HF checkpoint directory, optionally with a PEFT (LoRA) adapter on top.

This is how freshly trained checkpoints play in the arena without any conversion step. Models are loaded once
per (model, adapter) and kept; generation for one model is serialised with a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from arena.engines.base import EngineError, GenerationStats, Sampling, Stream, timed

_CACHE: dict[tuple[str, str | None], tuple[Any, Any, threading.Lock]] = {}
_CACHE_LOCK = threading.Lock()


def load_model(model_ref: str, adapter_ref: str | None = None) -> tuple[Any, Any, threading.Lock]:
    key = (model_ref, adapter_ref)
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
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
        _CACHE[key] = (tok, model, threading.Lock())
        return _CACHE[key]


class TransformersEngine:
    """Streams from a transformers model with ``TextIteratorStreamer``; counts generated tokens exactly."""

    name = "transformers"
    concurrency = 1  # one generate() per model at a time (the model lock); more requests queue in the gate

    def __init__(self, model_ref: str, adapter_ref: str | None = None) -> None:
        self.model_ref = model_ref
        self.adapter_ref = adapter_ref
        self.tokenizer, self.model, self._lock = load_model(model_ref, adapter_ref)

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
                with self._lock, torch.no_grad():
                    out = self.model.generate(
                        **inputs,
                        max_new_tokens=sampling.max_tokens,
                        do_sample=sampling.temperature > 0,
                        temperature=max(sampling.temperature, 1e-5),
                        top_p=sampling.top_p,
                        repetition_penalty=sampling.repeat_penalty,
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
