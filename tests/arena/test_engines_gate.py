"""The per-engine concurrency gate: limit, first-come first-served order, visible positions, time-out, cancel."""

from __future__ import annotations

import threading
import time

from tests.helpers.waiting import until
from vibestudio.arena.engines.base import GenerationStats, timed
from vibestudio.arena.engines.gate import Gate, gate_for


def test_gate_limits_and_serves_in_arrival_order_with_positions():
    gate = Gate(1)
    assert gate.acquire(timeout=1)
    order: list[str] = []
    positions: dict[str, list[int]] = {"x": [], "y": []}

    def waiter(name: str) -> None:
        assert gate.acquire(timeout=5, on_position=positions[name].append)
        order.append(name)
        time.sleep(0.05)
        gate.release()

    tx = threading.Thread(target=waiter, args=("x",))
    tx.start()
    until(
        lambda: gate.waiting == 1, 10, "x in the gate", every=0.01
    )  # x queued before y starts: arrival order is what the gate keeps
    ty = threading.Thread(target=waiter, args=("y",))
    ty.start()
    until(lambda: gate.waiting == 2, 10, "y in the gate", every=0.01)
    assert gate.waiting == 2 and gate.active == 1
    gate.release()
    tx.join(2)
    ty.join(2)
    assert order == ["x", "y"]
    assert positions["x"] == [0] and positions["y"][:2] == [1, 0]


def test_gate_times_out_and_cancels_without_holding_a_slot():
    gate = Gate(1)
    assert gate.acquire()
    t0 = time.monotonic()
    assert gate.acquire(timeout=0.2) is False
    assert 0.15 < time.monotonic() - t0 < 2
    cancel = threading.Event()
    threading.Timer(0.1, cancel.set).start()
    assert gate.acquire(cancel=cancel) is False
    assert gate.waiting == 0 and gate.active == 1
    gate.release()
    assert gate.acquire(timeout=0.1)


def test_gate_for_is_one_gate_per_engine_sized_by_its_concurrency():
    class E:
        concurrency = 3

    e1, e2 = E(), E()
    assert gate_for(e1) is gate_for(e1) and gate_for(e1) is not gate_for(e2)
    assert gate_for(e1).limit == 3


def test_timed_counts_model_text_only_and_closes_the_inner_stream():
    closed = []

    def inner():
        try:
            yield from ["a", "", "b", "c"]
        finally:
            closed.append(True)

    stats = GenerationStats()
    out = list(timed(inner(), stats, prefill="P: "))
    assert out == ["P: ", "a", "b", "c"] and stats.tokens == 3 and stats.ttft is not None
    stats2 = GenerationStats()
    gen = timed(inner(), stats2)
    next(gen)
    gen.close()
    assert closed == [True, True]
