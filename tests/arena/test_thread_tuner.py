"""The batched llama.cpp decode picks its thread count by timing (``arena.engines.llamacpp_batch.ThreadTuner``):
it keeps the candidate that was fastest per token over its timed probe steps, ignores the first step after each
switch, probes again after ``RECHECK_STEPS`` so a change of load is followed, and switching threads between steps
does not change a greedy answer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vibestudio.arena.engines import llamacpp_batch
from vibestudio.arena.engines.llamacpp_batch import ThreadTuner


def _run(
    tuner: ThreadTuner, cost: dict[int, float], steps: int, tokens: int = 8, first: float = 0.0
) -> list[int]:
    """Drive ``steps`` decode steps; a step at ``n`` threads takes ``cost[n]`` per token (plus ``first`` on the
    first step after a switch). Returns the thread count of each step."""
    used, last = [], None
    for _ in range(steps):
        n = tuner.threads()
        extra = first if n != last else 0.0
        tuner.record(n, cost[n] * tokens + extra, tokens)
        used.append(n)
        last = n
    return used


def test_the_candidates_cover_all_cores_half_and_one():
    assert ThreadTuner(2).candidates == [2, 1]
    assert ThreadTuner(8).candidates == [8, 4, 1]
    assert ThreadTuner(1).candidates == [1]


def test_a_loaded_machine_decodes_on_fewer_threads_and_a_quiet_one_on_all():
    loaded = ThreadTuner(2)
    _run(loaded, {2: 0.020, 1: 0.015}, loaded.PROBE_STEPS * 2)
    assert loaded.best == 1
    assert _run(loaded, {2: 0.020, 1: 0.015}, 10) == [1] * 10
    quiet = ThreadTuner(2)
    _run(quiet, {2: 0.008, 1: 0.015}, quiet.PROBE_STEPS * 2 + 10)
    assert quiet.best == 2


def test_the_first_step_after_a_switch_is_not_timed():
    """Starting threads costs a step; counted, it would make the faster candidate look slower."""
    tuner = ThreadTuner(2)
    _run(tuner, {2: 0.008, 1: 0.015}, tuner.PROBE_STEPS * 2, first=5.0)
    assert tuner.best == 2


def test_the_load_is_measured_again():
    tuner = ThreadTuner(2)
    probes = tuner.PROBE_STEPS * 2
    _run(tuner, {2: 0.008, 1: 0.015}, probes + tuner.RECHECK_STEPS)
    assert tuner.best == 2
    used = _run(tuner, {2: 0.030, 1: 0.015}, probes + 5)  # another process took a core
    assert used[:probes] == [2] * tuner.PROBE_STEPS + [1] * tuner.PROBE_STEPS
    assert tuner.best == 1 and used[probes:] == [1] * 5


def test_one_core_never_probes():
    tuner = ThreadTuner(1)
    assert set(_run(tuner, {1: 0.01}, 500)) == {1}


@settings(max_examples=200, deadline=None)
@given(
    cores=st.integers(1, 16),
    costs=st.lists(st.floats(1e-4, 1.0), min_size=3, max_size=3),
    tokens=st.integers(1, 32),
)
def test_the_choice_is_the_fastest_candidate_per_token(cores, costs, tokens):
    tuner = ThreadTuner(cores)
    cost = dict(zip(tuner.candidates, costs, strict=False))
    used = _run(tuner, cost, tuner.PROBE_STEPS * len(tuner.candidates) + 3, tokens)
    fastest = min(cost.values())
    assert cost[tuner.best] <= fastest * (1 + 1e-9)
    assert used[-3:] == [tuner.best] * 3


class _Alternating(ThreadTuner):
    """Switches between 2 and 1 threads every step: the worst case for answers that must not depend on it."""

    def __init__(self) -> None:
        super().__init__(2)
        self.calls = 0

    def threads(self) -> int:
        self.calls += 1
        return 1 + self.calls % 2

    def record(self, threads: int, seconds: float, tokens: int) -> None:
        pass


def test_switching_threads_between_steps_keeps_greedy_answers(monkeypatch: pytest.MonkeyPatch):
    from vibestudio.arena.default_model import default_gguf_path
    from vibestudio.arena.engines.base import Request, Sampling
    from vibestudio.arena.engines.llamacpp import LlamaCppEngine

    engine = LlamaCppEngine(str(default_gguf_path()))
    greedy = Sampling(temperature=0.0, max_tokens=12, repeat_penalty=1.0, seed=0)
    asks = [
        Request([{"role": "user", "content": p}], greedy) for p in ("Name a colour.", "What is 2+2?", "Hi")
    ]
    monkeypatch.setattr(llamacpp_batch, "tuner", lambda cores: ThreadTuner(1))
    steady = [r.text for r in engine.generate_batch(asks)]
    alternating = _Alternating()
    monkeypatch.setattr(llamacpp_batch, "tuner", lambda cores: alternating)
    switched = [r.text for r in engine.generate_batch(asks)]
    assert alternating.calls > 10
    assert switched == steady
