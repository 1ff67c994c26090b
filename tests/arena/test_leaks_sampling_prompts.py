"""Leak matching, pair sampling probabilities and prompt-set import/validation."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
from sqlalchemy import func, select

from vibestudio.arena.leaks import find_leak
from vibestudio.arena.prompts import PromptImportError, ensure_mt_bench, import_prompt_set, random_prompt
from vibestudio.arena.sampling import SamplingError, uniform_pair, weighted_pair
from vibestudio.db.models import Prompt


def test_leak_is_whole_word_and_case_insensitive():
    assert find_leak("As smollm2 I think", ["SmolLM2"]) == "SmolLM2"
    assert find_leak("SmolLM2-based answer", ["SmolLM2"]) == "SmolLM2"
    assert find_leak("smollm25 is not a name", ["SmolLM2"]) is None
    assert find_leak("Hi", ["ab"]) is None  # too short to be a meaningful alias
    assert find_leak("made by huggingface", ["Hugging Face"]) == "Hugging Face"
    assert find_leak("I'm smollm2 plain!", ["smollm2-plain"]) == "smollm2-plain"
    assert find_leak("the hugs faced", ["Hugging Face"]) is None


def test_uniform_pair_probability_and_spread():
    rng = random.Random(0)
    draws = [uniform_pair([1, 2, 3, 4], rng) for _ in range(6000)]
    assert all(d.probability == pytest.approx(1 / 6) for d in draws)
    counts = Counter(frozenset((d.a_id, d.b_id)) for d in draws)
    assert len(counts) == 6 and min(counts.values()) > 800
    with pytest.raises(SamplingError, match="at least two"):
        uniform_pair([1], rng)


def test_weighted_pair_reports_exact_probability():
    d = weighted_pair({(1, 2): 3.0, (1, 3): 1.0}, random.Random(3))
    assert d.probability == pytest.approx(0.75 if (d.a_id, d.b_id) == (1, 2) else 0.25)
    fallback = weighted_pair({(1, 2): 0.0}, random.Random(0))  # never a crash: uniform over valid pairs
    assert (fallback.probability, fallback.sampler) == (1.0, "uniform-fallback")


def test_mt_bench_ships_and_draws(db):
    with db.session() as s:
        ensure_mt_bench(s)
        ensure_mt_bench(s)
        assert s.scalar(select(func.count(Prompt.id))) == 80
        p = random_prompt(s, rng=random.Random(0))
    assert len(p.turns) == 2 and p.category


def test_prompt_import_validates_every_row_before_writing(db):
    good = b'{"turns": ["a"], "category": "x", "question_id": 1}\n{"turns": ["b", "c"]}\n'
    bad = good + b'{"turns": []}\n'
    with db.session() as s:
        assert import_prompt_set(s, "mine", "p.jsonl", good) == 2
    with pytest.raises(PromptImportError, match=r"p2.jsonl:3: field 'turns'"), db.session() as s:
        import_prompt_set(s, "other", "p2.jsonl", bad)
    with pytest.raises(PromptImportError, match=r"p3.jsonl:2: invalid JSON"), db.session() as s:
        import_prompt_set(s, "other", "p3.jsonl", b'{"turns": ["a"]}\n{oops\n')
    with pytest.raises(PromptImportError, match="duplicated"), db.session() as s:
        import_prompt_set(
            s, "other", "p4.jsonl", b'{"turns":["a"],"question_id":1}\n{"turns":["b"],"question_id":1}\n'
        )
    with pytest.raises(PromptImportError, match="p5.jsonl:1: not valid utf-8"), db.session() as s:
        import_prompt_set(s, "other", "p5.jsonl", b"\xff\xfe\x00garbage")
    with (
        pytest.raises(
            PromptImportError, match=r"p6.jsonl:2: not valid utf-8 \(byte 0xff at position 13 of the line\)"
        ),
        db.session() as s,
    ):
        import_prompt_set(s, "other", "p6.jsonl", b'{"turns": ["a"]}\n{"turns": ["\xff"]}\n')
    with db.session() as s:
        assert s.scalar(select(func.count(Prompt.id))) == 2
    csv_data = b"turn1,turn2,category\nHello?,And then?,chat\n"
    with db.session() as s:
        assert import_prompt_set(s, "csvset", "p.csv", csv_data) == 1
        assert random_prompt(s, "csvset").turns == ["Hello?", "And then?"]
    assert json.loads(good.splitlines()[0])["turns"] == ["a"]
