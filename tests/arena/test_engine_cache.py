"""Bounded memory: the engine cache unloads the least recently used models beyond the budget in settings,
evicted models are freed, and an evicted model plays again (reloaded) with the same answers."""

from __future__ import annotations

import gc
import math
import weakref
from pathlib import Path

import pytest

from tests.helpers.models import make_tiny_llama
from vibestudio.arena.engines import factory
from vibestudio.arena.engines.base import Sampling
from vibestudio.arena.engines.cache import MB, EngineCache
from vibestudio.arena.registry import ContestantSpec, engine_for, get_contestant, register


class FakeEngine:
    def __init__(self, mb: int) -> None:
        self.memory_bytes = mb * MB
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_least_recently_used_goes_first_and_is_closed():
    cache = EngineCache(budget_bytes=25 * MB)
    a, b, c = FakeEngine(10), FakeEngine(10), FakeEngine(10)
    cache.add("a", a)
    cache.add("b", b)
    assert cache.get("a") is a  # a is now the most recently used
    cache.add("c", c)
    assert "b" not in cache and b.closed
    assert cache.get("a") is a and cache.get("c") is c and not a.closed
    assert cache.total_bytes() == 20 * MB


def test_the_newest_engine_stays_even_alone_over_budget():
    cache = EngineCache(budget_bytes=5 * MB)
    small, big = FakeEngine(1), FakeEngine(50)
    cache.add("small", small)
    cache.add("big", big)
    assert len(cache) == 1 and cache.get("big") is big and small.closed


def test_a_second_add_of_the_same_key_returns_the_first():
    cache = EngineCache(budget_bytes=100 * MB)
    first, second = FakeEngine(1), FakeEngine(1)
    assert cache.add("k", first) is first
    assert cache.add("k", second) is first and len(cache) == 1


def test_the_budget_is_read_from_settings_at_each_insertion(monkeypatch):
    cache = EngineCache()
    monkeypatch.setenv("VIBESTUDIO_ENGINE_CACHE_MB", "100")
    cache.add("a", FakeEngine(40))
    cache.add("b", FakeEngine(40))
    assert len(cache) == 2
    monkeypatch.setenv("VIBESTUDIO_ENGINE_CACHE_MB", "50")
    cache.add("c", FakeEngine(40))
    assert len(cache) == 1 and "c" in cache


@pytest.fixture(scope="module")
def children(tmp_path_factory: pytest.TempPathFactory, tokenizer_dir: Path) -> list[Path]:
    """Three tiny checkpoints, as three published children would be (different weights each)."""
    root = tmp_path_factory.mktemp("children")
    return [make_tiny_llama(tokenizer_dir, root / f"child-{i}", seed=i) for i in range(3)]


def _play(db, name: str) -> tuple[str, weakref.ref]:
    with db.session() as s:
        info = get_contestant(s, name)
    engine = engine_for(info)
    stream = engine.stream_chat([{"role": "user", "content": "Hi"}], Sampling(max_tokens=6, seed=0))
    text = "".join(stream)
    return text, weakref.ref(engine.model)  # type: ignore[attr-defined]


def test_children_played_in_turn_stay_within_the_budget_and_reload(db, children, monkeypatch):
    monkeypatch.setattr(factory, "ENGINES", EngineCache())  # this test's own cache, read from settings
    with db.session() as s:
        for i, path in enumerate(children):
            register(s, ContestantSpec(f"child-{i}", engine="transformers", model_ref=str(path)))
    from transformers import AutoModelForCausalLM

    from vibestudio.arena.engines.hf import weight_bytes

    one = weight_bytes(AutoModelForCausalLM.from_pretrained(children[0]))
    budget_mb = math.floor(2.5 * one / MB)  # room for two children, not three
    monkeypatch.setenv("VIBESTUDIO_ENGINE_CACHE_MB", str(budget_mb))

    loaded: list[weakref.ref] = []
    answers = []
    for name in ["child-0", "child-1", "child-2", "child-1", "child-0"]:
        text, model = _play(db, name)
        answers.append(text)
        loaded.append(model)
        gc.collect()
        alive = {id(m()) for m in loaded if m() is not None}
        assert len(factory.ENGINES) <= 2 and len(alive) <= 2, name
        assert factory.ENGINES.total_bytes() <= budget_mb * MB
    # child-0 was evicted (and freed) when child-2 loaded, child-2 when child-0 came back.
    assert loaded[0]() is None and loaded[2]() is None
    # child-1 was played second and fourth without a reload in between: the same model object.
    assert loaded[1]() is not None and loaded[1]() is loaded[3]()
    # The reloaded child answers as before (same weights, same seed).
    assert answers[4] == answers[0] and answers[3] == answers[1]
