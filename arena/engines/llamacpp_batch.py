"""Batched generation on llama.cpp: many answers decoded together, one sequence each in one context.

A report asks a GGUF for a few hundred answers. One stream per answer runs a matrix-vector product per
token. Decoding every sequence's next token in one ``llama_decode`` makes it a matrix-matrix product. On a
CPU that is several times the tokens per second for a small model.

``generate`` takes a chunk of requests. It renders and tokenizes their prompts as the stream path does:
chat template, prefill, BOS. It feeds them into one context of the model: a unified KV cache sized to the
chunk, all cores. Then it decodes one token per unfinished sequence per step. A sequence stops at an
end-of-generation or stop token, or at its token cap.

Tokens are chosen here from the logits, in the order llama-cpp-python's sampler applies them:
- repeat penalty (over the last 64 tokens), top-k 40, top-p, min-p 0.05, temperature;
- a draw from each request's own seeded generator (temperature 0 is greedy).
So an answer is reproducible from its seed. Two models asked the same requests meet the same decoding.
Above temperature 0, a batched answer is not token-identical to a streamed one (a different random
stream). The engine (``arena.engines.llamacpp``) takes one gate slot per chunk.

The decode's thread count is chosen by timing (``ThreadTuner``). llama.cpp's threads meet at a barrier in
every layer. When another process holds a core, the thread sharing it holds up the others. Then fewer
threads than cores decode faster. Measured on two cores, 16 SmolLM2 answers of 64 tokens:
- quiet: 2 threads 131 tok/s, 1 thread 69;
- beside one busy process: 2 threads 45 tok/s, 1 thread 61.
The tuner tries each candidate for a few steps and keeps the fastest per token. It tries again every
``RECHECK_STEPS`` as the load changes. Greedy answers do not depend on the thread count: each thread
computes whole rows of a product.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from vibestudio.arena.engines.base import EngineError, Reply, Sampling

TOP_K = 40
MIN_P = 0.05
PENALTY_LAST_N = 64


def pick(logits: np.ndarray, recent: Sequence[int], s: Sampling, rng: np.random.Generator) -> int:
    """The next token from one sequence's logits under ``s`` (``recent``: its tokens so far)."""
    x = logits.astype(np.float64)
    if s.repeat_penalty != 1.0 and recent:
        ids = np.unique(np.asarray(recent[-PENALTY_LAST_N:], dtype=np.int64))
        v = x[ids]
        x[ids] = np.where(v > 0, v / s.repeat_penalty, v * s.repeat_penalty)
    if s.temperature <= 0:
        return int(np.argmax(x))
    k = min(TOP_K, x.size)
    idx = np.argpartition(-x, k - 1)[:k]
    idx = idx[np.argsort(-x[idx], kind="stable")]
    vals = x[idx]
    p = np.exp(vals - vals[0])
    p /= p.sum()
    keep = max(1, int(np.searchsorted(np.cumsum(p), s.top_p) + 1)) if s.top_p < 1 else k
    keep = min(keep, int(np.sum(p >= MIN_P * p[0])) or 1)
    vals = vals[:keep] / s.temperature
    q = np.exp(vals - vals[0])
    q /= q.sum()
    return int(idx[rng.choice(keep, p=q)])


class ThreadTuner:
    """Picks the thread count of each decode step: ``PROBE_STEPS`` steps per candidate (the first after a switch
    not timed), then the fastest per token for ``RECHECK_STEPS`` steps, then a new round of probes. One per process
    and core count, shared by every batch (the load it measures is the machine's)."""

    PROBE_STEPS = 3
    RECHECK_STEPS = 192

    def __init__(self, cores: int) -> None:
        self.candidates = sorted({max(1, cores), max(1, cores // 2), 1}, reverse=True)
        self.best = self.candidates[0]
        self._lock = threading.Lock()
        self._step = 0  # position in the cycle: probes first, then RECHECK_STEPS steps at the best
        self._timed: dict[int, list[float]] = {}  # candidate -> [seconds, tokens] over its timed probe steps

    @property
    def _probe_len(self) -> int:
        return self.PROBE_STEPS * len(self.candidates) if len(self.candidates) > 1 else 0

    def threads(self) -> int:
        """The thread count for the next step."""
        with self._lock:
            if self._step < self._probe_len:
                return self.candidates[self._step // self.PROBE_STEPS]
            return self.best

    def record(self, threads: int, seconds: float, tokens: int) -> None:
        """What one step at ``threads`` took for ``tokens`` sequences' next tokens."""
        with self._lock:
            probing = self._step < self._probe_len
            if (
                probing
                and self._step % self.PROBE_STEPS
                and threads == self.candidates[self._step // self.PROBE_STEPS]
            ):
                cell = self._timed.setdefault(threads, [0.0, 0.0])
                cell[0] += seconds
                cell[1] += tokens
            self._step += 1
            if probing and self._step == self._probe_len:
                rates = {c: t / n for c, (t, n) in self._timed.items() if n > 0}
                if rates:
                    self.best = min(rates, key=lambda c: rates[c])
                self._timed = {}
            elif self._step >= self._probe_len + self.RECHECK_STEPS:
                self._step = 0


_TUNERS: dict[int, ThreadTuner] = {}
_TUNERS_LOCK = threading.Lock()


def tuner(cores: int) -> ThreadTuner:
    """This process's tuner for ``cores`` cores."""
    with _TUNERS_LOCK:
        return _TUNERS.setdefault(cores, ThreadTuner(cores))


class _Seq:
    def __init__(self, prompt: list[int], sampling: Sampling, prefill: str, budget: int) -> None:
        self.prompt = prompt
        self.sampling = sampling
        self.prefill = prefill
        self.budget = budget  # tokens it may generate
        self.out: list[int] = []
        self.done = False
        self.capped = False
        seed = sampling.seed if sampling.seed is not None else int.from_bytes(os.urandom(4), "little")
        self.rng = np.random.default_rng(seed)

    def take(self, token: int, stops: set[int], is_eog: Any) -> None:
        if token in stops or is_eog(token):
            self.done = True
            return
        self.out.append(token)
        if len(self.out) >= self.budget:
            self.done, self.capped = True, True


def generate(
    llm: Any, prompts: Sequence[tuple[str, Sampling, str]], n_ctx: int, stops: list[str]
) -> list[Reply]:
    """Answers to ``(rendered prompt, sampling, prefill)`` triples decoded together on ``llm``'s model."""
    import ctypes

    import llama_cpp
    from llama_cpp import _internals

    t0 = time.perf_counter()
    vocab = llama_cpp.llama_model_get_vocab(llm._model.model)
    stop_ids = set()
    for text in stops:
        ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        if len(ids) == 1:
            stop_ids.add(ids[0])

    def is_eog(t: int) -> bool:
        return bool(llama_cpp.llama_vocab_is_eog(vocab, t))

    seqs = []
    for text, s, prefill in prompts:
        ids = llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)
        if len(ids) + 8 >= n_ctx:
            raise EngineError(
                f"conversation is {len(ids)} tokens; this engine's context is {n_ctx}", "too_long"
            )
        seqs.append(_Seq(ids, s, prefill, max(1, min(s.max_tokens, n_ctx - len(ids) - 1))))
    n_batch = 512
    params = llama_cpp.llama_context_default_params()
    params.n_ctx = sum(len(q.prompt) + q.budget for q in seqs) + 16 * len(seqs)
    params.n_batch = params.n_ubatch = n_batch
    params.n_seq_max = len(seqs)
    params.kv_unified = True
    cores = max(1, os.cpu_count() or 1)
    threads = tuner(cores)
    params.n_threads = params.n_threads_batch = threads.threads()
    params.no_perf = True
    try:
        ctx = _internals.LlamaContext(model=llm._model, params=params, verbose=False)
    except Exception as exc:
        raise EngineError(f"llama.cpp could not make a batch context: {exc}") from exc
    adapter = getattr(llm, "_lora_adapter", None)
    if adapter is not None:  # a LoRA child: the adapter is set per context, and this context is new
        adapters = (llama_cpp.llama_adapter_lora_p_ctypes * 1)(adapter)
        scales = (ctypes.c_float * 1)(float(getattr(llm, "lora_scale", 1.0)))
        if llama_cpp.llama_set_adapters_lora(ctx.ctx, adapters, 1, scales):
            ctx.close()
            raise EngineError("llama.cpp could not apply the LoRA adapter to a batch context")
    batch = _internals.LlamaBatch(n_tokens=max(n_batch, len(seqs)), embd=0, n_seq_max=1, verbose=False)
    n_vocab = llm.n_vocab()
    try:
        current = params.n_threads

        def decode(items: list[tuple[int, int, int, bool]]) -> None:
            """(seq, position, token, wants logits) rows in one llama_decode; each wanting row gets its next token."""
            b = batch.batch
            b.n_tokens = len(items)
            for j, (sid, pos, tok, want) in enumerate(items):
                b.token[j], b.pos[j], b.n_seq_id[j], b.logits[j] = tok, pos, 1, want
                b.seq_id[j][0] = sid
            ctx.decode(batch)
            for j, (sid, _pos, _tok, want) in enumerate(items):
                if want:
                    q = seqs[sid]
                    row = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx.ctx, j), shape=(n_vocab,))
                    q.take(pick(row, q.prompt + q.out, q.sampling, q.rng), stop_ids, is_eog)

        rows: list[tuple[int, int, int, bool]] = []
        for sid, q in enumerate(seqs):  # the prompts, packed into batches of n_batch tokens
            for pos, tok in enumerate(q.prompt):
                rows.append((sid, pos, tok, pos == len(q.prompt) - 1))
                if len(rows) == n_batch:
                    decode(rows)
                    rows = []
        if rows:
            decode(rows)
        while True:
            live = [(sid, q) for sid, q in enumerate(seqs) if not q.done]
            if not live:
                break
            n = threads.threads()
            if n != current:
                llama_cpp.llama_set_n_threads(ctx.ctx, n, n)
                current = n
            start = time.perf_counter()
            decode([(sid, len(q.prompt) + len(q.out) - 1, q.out[-1], True) for sid, q in live])
            threads.record(n, time.perf_counter() - start, len(live))
    except EngineError:
        raise
    except Exception as exc:
        raise EngineError(f"llama.cpp batch generation failed: {exc}") from exc
    finally:
        batch.close()
        ctx.close()
    seconds = time.perf_counter() - t0
    return [
        Reply(q.prefill + llm.detokenize(q.out).decode("utf-8", "ignore"), len(q.out), q.capped, seconds)
        for q in seqs
    ]
