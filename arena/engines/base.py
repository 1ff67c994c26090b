"""The engine protocol: stream a chat completion and report tokens, time to first token and tokens/s.

An engine knows how to turn messages + sampling parameters into text. It knows nothing about battles,
contestants or the database. ``prefill`` is an answer opening the model continues (and that is part of the
answer), which is how personas get visible vibes out of small models that follow system prompts weakly.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol


class EngineError(RuntimeError):
    """The engine could not produce an answer (down, timed out, returned garbage)."""


@dataclass
class Sampling:
    temperature: float = 0.7
    top_p: float = 0.95
    max_tokens: int = 256
    seed: int | None = None
    repeat_penalty: float = 1.1

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> Sampling:
        d = dict(d or {})
        unknown = set(d) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown sampling field(s): {', '.join(sorted(unknown))}")
        return cls(**d)


@dataclass
class GenerationStats:
    tokens: int = 0
    ttft: float | None = None  # seconds from request to first text
    seconds: float = 0.0
    tokens_per_s: float | None = None


@dataclass
class Stream:
    """Iterate to get text deltas; ``stats`` is complete once iteration ends."""

    deltas: Iterator[str]
    stats: GenerationStats = field(default_factory=GenerationStats)

    def __iter__(self) -> Iterator[str]:
        return self.deltas


class Engine(Protocol):
    name: str

    def stream_chat(
        self, messages: list[dict[str, str]], sampling: Sampling, prefill: str = ""
    ) -> Stream: ...


def timed(
    deltas: Iterator[str], stats: GenerationStats, count_tokens: bool = True, prefill: str = ""
) -> Iterator[str]:
    """Wrap a delta iterator so it fills ``stats`` (ttft, tokens when counted per delta, tokens/s).

    ``prefill`` is yielded first but is not model output: it counts neither as first token nor as tokens.
    """
    t0 = time.perf_counter()
    if prefill:
        yield prefill
    for text in deltas:
        if not text:
            continue
        if stats.ttft is None:
            stats.ttft = time.perf_counter() - t0
        if count_tokens:
            stats.tokens += 1
        yield text
    stats.seconds = time.perf_counter() - t0
    gen_time = stats.seconds - (stats.ttft or 0.0)
    if stats.tokens > 1 and gen_time > 0:
        stats.tokens_per_s = (stats.tokens - 1) / gen_time
