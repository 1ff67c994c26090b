"""The one way to ask an engine (``arena.engines.ask``): it waits in the engine's gate, always closes the stream
and gives the slot back (also when the engine fails mid-answer), keeps request order in a batch, never runs more
than the engine's concurrency at once, and takes an engine's own ``generate_batch`` when it has one."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from tests.helpers.waiting import until
from vibestudio.arena.engines.ask import ask, ask_batch, ask_each
from vibestudio.arena.engines.base import (
    EngineError,
    GenerationStats,
    Reply,
    Request,
    Sampling,
    Stream,
    timed,
)
from vibestudio.arena.engines.gate import gate_for


class Scripted:
    """An engine that answers with the last user message's words, one per delta, and records what happened."""

    name = "scripted"

    def __init__(self, concurrency: int = 1, fail_after: int | None = None, delay: float = 0.0) -> None:
        self.concurrency = concurrency
        self.fail_after, self.delay = fail_after, delay
        self.closed = 0
        self.running = self.peak = 0
        self._lock = threading.Lock()

    def stream_chat(self, messages: list[dict[str, str]], sampling: Sampling, prefill: str = "") -> Stream:
        stats = GenerationStats()
        return Stream(timed(self._words(messages[-1]["content"], sampling), stats, prefill=prefill), stats)

    def _words(self, text: str, sampling: Sampling) -> Iterator[str]:
        with self._lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
        try:
            for i, word in enumerate(text.split()[: sampling.max_tokens]):
                if self.fail_after is not None and i >= self.fail_after:
                    raise EngineError("scripted failure", "garbage")
                time.sleep(self.delay)
                yield word + " "
        finally:
            with self._lock:
                self.running -= 1
                self.closed += 1


def _user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def test_ask_returns_plain_data_and_flags_the_token_cap():
    engine = Scripted()
    whole = ask(engine, _user("one two three"), Sampling(max_tokens=8), prefill="Sure! ")
    assert whole == Reply("Sure! one two three ", 3, False, whole.seconds, whole.ttft, whole.tokens_per_s)
    cut = ask(engine, _user("one two three four five"), Sampling(max_tokens=2))
    assert cut.text == "one two " and cut.tokens == 2 and cut.truncated
    assert engine.closed == 2 and gate_for(engine).active == 0


def test_a_failing_engine_still_closes_its_stream_and_frees_the_slot():
    engine = Scripted(fail_after=1)
    with pytest.raises(EngineError, match="scripted failure"):
        ask(engine, _user("one two three"), Sampling())
    assert engine.closed == 1 and gate_for(engine).active == 0
    engine.fail_after = None
    assert ask(engine, _user("again"), Sampling()).text == "again "  # the gate was not left held


def test_ask_waits_behind_a_battle_holding_the_engines_only_slot():
    engine = Scripted(concurrency=1)
    gate = gate_for(engine)
    assert gate.acquire(timeout=1)  # the arena streams an answer on this engine
    done: list[Reply] = []
    t = threading.Thread(target=lambda: done.append(ask(engine, _user("later"), Sampling())))
    t.start()
    until(lambda: gate.waiting, 10, "the ask in the gate", every=0.01)  # when the scheduler lets it
    assert done == [] and gate.waiting == 1  # queued in the same line, not jumping it
    gate.release()
    t.join(5)
    assert [r.text for r in done] == ["later "]


def test_a_batch_keeps_request_order_and_the_engines_concurrency():
    engine = Scripted(concurrency=3, delay=0.01)
    requests = [Request(_user(" ".join([f"w{i}"] * (1 + i % 4))), Sampling(max_tokens=3)) for i in range(12)]
    replies = ask_each(engine, requests)
    assert [r.text.split()[0] for r in replies] == [f"w{i}" for i in range(12)]
    assert [r.truncated for r in replies] == [1 + i % 4 >= 3 for i in range(12)]
    assert 1 < engine.peak <= 3 and engine.closed == 12 and gate_for(engine).active == 0
    assert ask_each(engine, []) == []


def test_ask_batch_takes_the_engines_own_batching_when_it_has_one():
    class Batching(Scripted):
        def __init__(self) -> None:
            super().__init__()
            self.batches: list[int] = []

        def generate_batch(self, requests: list[Request]) -> list[Reply]:
            self.batches.append(len(requests))
            return [Reply(r.prefill + "batched", 1, False) for r in requests]

    engine = Batching()
    replies = ask_batch(engine, [Request(_user("a"), Sampling(), "> ")] * 5)
    assert engine.batches == [5] and {r.text for r in replies} == {"> batched"} and engine.closed == 0
    plain = Scripted()
    assert [r.text for r in ask_batch(plain, [Request(_user("x y"), Sampling())])] == ["x y "]


def test_an_engine_on_the_protocol_without_a_native_batch_is_asked_one_gated_stream_each():
    """The protocol gives no ``generate_batch`` default (the OpenAI-compatible engine's case): ``ask_batch`` alone
    decides, so a subclass of ``Engine`` that only streams still answers, through the gate, every stream closed."""
    from vibestudio.arena.engines.base import Engine
    from vibestudio.arena.engines.openai_http import OpenAIEngine

    class Streaming(Scripted, Engine):
        pass

    assert not hasattr(Engine, "generate_batch") and not hasattr(OpenAIEngine, "generate_batch")
    engine = Streaming(concurrency=2)
    replies = ask_batch(engine, [Request(_user(f"w{i} x"), Sampling()) for i in range(4)])
    assert [r.text for r in replies] == [f"w{i} x " for i in range(4)]
    assert engine.closed == 4 and gate_for(engine).active == 0


def test_transformers_batches_natively_in_chunks_that_share_their_decoding(tiny_model_dir):
    from dataclasses import replace

    from vibestudio.arena.engines.hf import TransformersEngine

    engine = TransformersEngine(str(tiny_model_dir))
    engine.batch_size = 2
    calls: list[int] = []
    real = engine.model.generate

    def counted(**kw):  # type: ignore[no-untyped-def]
        calls.append(int(kw["input_ids"].shape[0]))
        return real(**kw)

    engine.model.generate = counted
    short = Sampling(temperature=0.0, top_p=1.0, max_tokens=4, seed=1)
    longer = replace(short, max_tokens=6)
    requests = [
        Request(_user("hi"), short, "Ok, "),
        Request(_user("hello there, how are you today?"), replace(short, seed=2)),  # a seed alone: same chunk
        Request(_user("x"), short),  # the chunk is full
        Request(_user("tell me a story"), longer),  # other decoding: a chunk of its own
    ]
    gate = gate_for(engine)
    assert gate.acquire(timeout=1)  # a battle holds the engine: the batch waits in its gate
    out: list[list[Reply]] = []
    t = threading.Thread(target=lambda: out.append(ask_batch(engine, requests)))
    t.start()
    until(lambda: gate.waiting, 10, "the batch in the gate", every=0.01)
    assert out == [] and calls == [] and gate.waiting == 1
    gate.release()
    t.join(120)
    replies = out[0]
    assert calls == [2, 1, 1] and gate.active == 0
    assert replies[0].text.startswith("Ok, ")
    assert all(r.tokens <= req.sampling.max_tokens for r, req in zip(replies, requests, strict=True))
    assert all(
        r.truncated == (r.tokens == req.sampling.max_tokens) for r, req in zip(replies, requests, strict=True)
    )
    alone = ask(engine, requests[3].messages, longer)  # unpadded, greedy: the streamed answer is the same
    assert alone.text == replies[3].text
