"""Stream two contestants' answers to one turn side by side: one thread per side, one event queue, time-outs.

`stream_pair` starts both answers at once and yields after every event. An event is a place in an engine's
queue, the start of generation, a text delta, the end, or an error. So the caller can show both texts
growing together.

Each side waits for a slot of its engine's gate (`arena.engines.gate`), then streams. The slot must come
within ``queue_timeout_s``. The answer must be complete within ``answer_timeout_s`` of taking the slot.
The first error or time-out on either side stops the turn, cancelling the other side. The caller reads
what happened from the `SideState`s it passed in.

With ``strip_prefill``, a persona's fixed answer opening is left out of the answer. That opening is its
prefill, which the model continues. So the annotator sees only what the model wrote.
`arena.identifiability` measures how much the opening alone gives away. Closing the iterator (the consumer
stopped listening) cancels both sides, so engines stop and free their slots.

This module never touches the database. It knows nothing of battles, left/right or anonymity.
`arena.battles` builds the turn updates and stores the turn.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any

from vibestudio.arena.engines.base import EngineError, GenerationStats, Sampling
from vibestudio.arena.engines.gate import gate_for
from vibestudio.arena.registry import ContestantInfo, engine_for

#: Extra seconds a side may wait past ``queue_timeout_s`` before the stream gives up on it (its gate times out
#: first and says so; this only covers a side whose thread never reports).
QUEUE_GRACE_S = 5.0


@dataclass(frozen=True)
class StreamLimits:
    answer_timeout_s: float  # per answer, from the moment its engine slot is taken
    queue_timeout_s: float  # longest wait for an engine slot
    max_new_tokens: int  # a cap on the answer's length
    strip_prefill: bool = False  # leave the persona's fixed answer opening out of the answer shown and stored


@dataclass
class SideState:
    """One side of a streamed turn, updated as its events arrive."""

    info: ContestantInfo
    text: str = ""
    queue_pos: int | None = None  # requests ahead in the engine's queue (None: not known or not waiting)
    started: float | None = None  # monotonic time the engine slot was taken
    wait_s: float | None = None  # seconds spent waiting for the slot
    stats: GenerationStats | None = None
    error: EngineError | None = None
    done: bool = False

    @property
    def waiting(self) -> int | None:
        """The queue position while still waiting for a slot, else None."""
        return None if self.started or self.done else self.queue_pos


def stream_pair(
    sides: Mapping[str, SideState], messages: Mapping[str, list[dict[str, str]]], limits: StreamLimits
) -> Generator[None, None, None]:
    """Generate every side's answer to its ``messages`` at once; yield after each event that changed a side.

    Stops when all sides are done or one has failed (``SideState.error`` set; a time-out is an `EngineError` of
    kind "timeout"). Closing the iterator early cancels the sides still running.
    """
    events: queue.Queue[tuple[str, str, Any]] = queue.Queue()
    cancel = threading.Event()
    started = time.monotonic()
    for key, side in sides.items():
        args = (key, side.info, messages[key], events, cancel, limits)
        threading.Thread(target=_run_side, args=args, daemon=True).start()

    def deadline(sd: SideState) -> float:
        if sd.started is None:
            return started + limits.queue_timeout_s + QUEUE_GRACE_S
        return sd.started + limits.answer_timeout_s

    try:
        while not all(sd.done for sd in sides.values()):
            pending = [sd for sd in sides.values() if not sd.done]
            wait = min(deadline(sd) for sd in pending) - time.monotonic()
            try:
                key, kind, payload = events.get(timeout=max(0.01, wait))
            except queue.Empty:
                for sd in pending:
                    if time.monotonic() >= deadline(sd):
                        limit = limits.answer_timeout_s if sd.started else limits.queue_timeout_s
                        sd.error = EngineError(f"no complete answer within {limit:.0f} s", "timeout")
                        sd.done = True
                if any(sd.error for sd in sides.values()):
                    return
                continue
            sd = sides[key]
            if kind == "queue":
                sd.queue_pos = int(payload)
            elif kind == "start":
                sd.started, sd.wait_s, sd.queue_pos = time.monotonic(), float(payload), None
            elif kind == "delta":
                sd.text += payload
            elif kind == "done":
                sd.stats, sd.done = payload, True
            elif kind == "error":
                sd.error, sd.done = payload, True
                return
            yield
    finally:
        cancel.set()  # also when the consumer stops listening: engines stop and free their slots


def visible_budget(engine: Any, cap: int, prefill: str, strip_prefill: bool) -> int:
    """The tokens to ask the engine for so that the answer as shown holds at most ``cap``: ``cap`` when the
    opening is hidden, else ``cap`` less the opening's tokens (counted by the engine when it can, else at four
    characters a token), at least 1. So a shown opening is part of the same budget every persona answers under."""
    if strip_prefill or not prefill:
        return cap
    count = getattr(engine, "count_tokens", None)
    try:
        used = int(count(prefill)) if count is not None else -(-len(prefill) // 4)
    except Exception:  # an engine that cannot count now: the character rule
        used = -(-len(prefill) // 4)
    return max(1, cap - used)


def _run_side(
    side: str,
    info: ContestantInfo,
    messages: list[dict[str, str]],
    events: queue.Queue,
    cancel: threading.Event,
    limits: StreamLimits,
) -> None:
    """One side's thread: wait for an engine slot, stream the answer into ``events``, release the slot."""
    try:
        engine = engine_for(info)
        t0 = time.monotonic()
        gate = gate_for(engine)
        took = gate.acquire(
            timeout=limits.queue_timeout_s,
            cancel=cancel,
            on_position=lambda pos: events.put((side, "queue", pos)),
        )
        if not took:
            if not cancel.is_set():
                msg = f"no free {engine.name} slot within {limits.queue_timeout_s:.0f} s"
                events.put((side, "error", EngineError(msg, "timeout")))
            return
        try:
            events.put((side, "start", time.monotonic() - t0))
            sampling = Sampling.from_dict(info.sampling)
            sampling.max_tokens = visible_budget(
                engine, min(sampling.max_tokens, limits.max_new_tokens), info.prefill, limits.strip_prefill
            )
            stream = engine.stream_chat(messages, sampling, info.prefill)
            if getattr(stream, "stats", None) is not None:
                stream.stats.cap = sampling.max_tokens  # what an answer without the engine's word is held to
            # engines yield the prefill as the first delta: hidden, or held until the model's first text (shown
            # at once it would say "this one has an opening" before the other side has started)
            hide = info.prefill if limits.strip_prefill else ""
            held = "" if limits.strip_prefill else info.prefill
            opened = False
            try:
                for delta in stream:
                    if cancel.is_set():
                        return
                    if hide:
                        if delta == hide:
                            continue
                        delta, hide = delta.lstrip(), "" if delta.strip() else hide
                        if not delta:
                            continue
                    elif held:
                        if not opened and delta == held:  # the engine's opening itself
                            opened = True
                            continue
                        held += delta
                        if not delta.strip():  # wait for the model's first visible text
                            continue
                        delta, held = held, ""
                    events.put((side, "delta", delta))
            finally:
                stream.close()
            if held:  # the model wrote nothing after its opening: the opening is the answer
                events.put((side, "delta", held))
            events.put((side, "done", stream.stats))
        finally:
            gate.release()
    except EngineError as exc:
        events.put((side, "error", exc))
    except Exception as exc:  # any other failure ends the battle as errored, detail kept server-side
        events.put((side, "error", EngineError(f"{type(exc).__name__}: {exc}", "failed")))
