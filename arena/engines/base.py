"""The engine protocol: stream a chat completion and report tokens, time to first token and tokens/s.

An engine knows how to turn messages and sampling parameters into text. It knows nothing about battles,
contestants or the database. ``prefill`` is an answer opening the model continues; it is part of the
answer. That is how personas get visible vibes out of small models that follow system prompts weakly.

An engine that batches natively also answers a list of requests with ``generate_batch``. The transformers
engine makes batched ``generate`` calls. The llama.cpp engine decodes sequences together in one context.
The protocol gives no default for it. ``arena.engines.ask.ask_batch`` is the one place that decides. It
takes an engine's own ``generate_batch`` when it has one, else one gated stream per request
(``ask_each``). Callers outside the live arena go through ``arena.engines.ask``, never either method
directly.

Errors carry a ``kind``: down, timeout, garbage, too_long, config, failed. The message may name files,
URLs or model references; it is for logs and the database only. ``public_message`` is what a browser may
see before a vote. It says what went wrong without saying which model or engine it was.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

ERROR_KINDS = {
    "down": "its engine is not reachable",
    "timeout": "it did not answer in time",
    "garbage": "its engine returned a malformed response",
    "too_long": "the conversation is longer than it can read",
    "config": "it is not configured correctly",
    "failed": "its engine failed",
}


class EngineError(RuntimeError):
    """The engine could not produce an answer (down, timed out, returned garbage...)."""

    def __init__(self, message: str, kind: str = "failed") -> None:
        super().__init__(message)
        self.kind = kind if kind in ERROR_KINDS else "failed"

    @property
    def public_message(self) -> str:
        """Identity-free wording, safe to show before the vote."""
        return ERROR_KINDS[self.kind]


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
            raise ValueError(
                f"unknown sampling field(s): {', '.join(sorted(unknown))} "
                f"(known: {', '.join(cls.__dataclass_fields__)})"
            )
        s = cls(**d)
        if not isinstance(s.max_tokens, int) or s.max_tokens < 1:
            raise ValueError(f"sampling max_tokens must be a positive integer, got {s.max_tokens!r}")
        if not isinstance(s.temperature, int | float) or not 0 <= s.temperature <= 5:
            raise ValueError(f"sampling temperature must be between 0 and 5, got {s.temperature!r}")
        if not isinstance(s.top_p, int | float) or not 0 < s.top_p <= 1:
            raise ValueError(f"sampling top_p must be in (0, 1], got {s.top_p!r}")
        return s


@dataclass
class GenerationStats:
    tokens: int = 0
    ttft: float | None = None  # seconds from request to first model text
    seconds: float = 0.0
    tokens_per_s: float | None = None
    # why generation ended, in the engine's own words: "length" (the token cap) or "stop" (the model ended);
    # None when the engine does not say. Token counts from deltas are not exact (llama.cpp streams several tokens
    # in one delta around a possible stop string and none for half a character), so the engine's word decides.
    finish: str | None = None
    cap: int | None = None  # the token cap the answer was asked under, when the caller recorded it


def hit_cap(stats: GenerationStats, cap: int | None = None) -> bool:
    """True when an answer stopped at its token cap: the engine's own word when it gives one, else its token
    count against ``cap`` (or the cap recorded on ``stats``). One rule for every persona and caller."""
    if stats.finish is not None:
        return stats.finish == "length"
    limit = cap if cap is not None else stats.cap
    return limit is not None and stats.tokens >= limit > 0


@dataclass
class Stream:
    """Iterate to get text deltas; ``stats`` is complete once iteration ends. ``close()`` stops early."""

    deltas: Iterator[str]
    stats: GenerationStats = field(default_factory=GenerationStats)

    def __iter__(self) -> Iterator[str]:
        return self.deltas

    def close(self) -> None:
        close = getattr(self.deltas, "close", None)
        if close is not None:
            close()


@dataclass(frozen=True)
class Request:
    """One answer to ask for: the chat so far, how to decode it, and the answer's opening (``prefill``)."""

    messages: list[dict[str, str]]
    sampling: Sampling
    prefill: str = ""


@dataclass(frozen=True)
class Reply:
    """One finished answer as plain data: the text (prefill included), generated tokens, whether it stopped at
    the token cap rather than by itself, wall seconds (of its whole batch when generated in one), and, when it
    was streamed, the time to first token and tokens/s."""

    text: str
    tokens: int
    truncated: bool
    seconds: float = 0.0
    ttft: float | None = None
    tokens_per_s: float | None = None


class Engine(Protocol):
    name: str
    concurrency: int  # how many answers it serves at once; more requests wait in its gate

    def stream_chat(
        self, messages: list[dict[str, str]], sampling: Sampling, prefill: str = ""
    ) -> Stream: ...


def timed(
    deltas: Iterator[str], stats: GenerationStats, count_tokens: bool = True, prefill: str = ""
) -> Iterator[str]:
    """Wrap a delta iterator so it fills ``stats`` (ttft, tokens when counted per delta, tokens/s).

    ``prefill`` is yielded first but is not model output: it counts neither as first token nor as tokens.
    Closing this generator closes the wrapped one, so engines release their resources on early stops.
    """
    t0 = time.perf_counter()
    try:
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
    finally:
        close = getattr(deltas, "close", None)
        if close is not None:
            close()
    stats.seconds = time.perf_counter() - t0
    gen_time = stats.seconds - (stats.ttft or 0.0)
    if stats.tokens > 1 and gen_time > 0:
        stats.tokens_per_s = (stats.tokens - 1) / gen_time
