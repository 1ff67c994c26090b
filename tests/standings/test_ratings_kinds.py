"""Prompts by kind: the naive Bayes classifier on MT-Bench's labelled questions beats the majority guess on held-out
prompts, categories too small to train are left out with a note, and "can't tell" without labelled prompts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vibestudio.standings.ratings._kinds import PromptClassifier, cross_validate, features

MT_BENCH = Path(__file__).parents[2] / "arena" / "data" / "mt_bench_questions.jsonl"


def test_held_out_accuracy_on_mt_bench() -> None:
    qs = [json.loads(line) for line in MT_BENCH.read_text().splitlines() if line.strip()]
    report = cross_validate([q["turns"][0] for q in qs], [q["category"] for q in qs], folds=5)
    assert report.n_prompts == 80 and len(report.classes) == 8 and report.majority == pytest.approx(0.125)
    assert report.ci_low > 0.3  # far above guessing the largest category (12.5%)
    assert report.ci_low <= report.accuracy <= report.ci_high
    assert "held-out accuracy" in report.sentence()
    model = PromptClassifier.fit([q["turns"][0] for q in qs], [q["category"] for q in qs])
    assert model.predict("Write a Python function to reverse a linked list.")[0] == "coding"
    assert model.predict("Solve for x: 3x + 5 = 20. What is x?")[0] == "math"


def test_small_and_missing_categories() -> None:
    texts = ["add two numbers", "sum these numbers", "write a poem", "write a story", "odd one", ""]
    labels = ["math", "math", "writing", "writing", "rare", "math"]
    report = cross_validate(texts, labels, folds=2)
    assert report.classes == ["math", "writing"] and any("rare" in n for n in report.notes)
    empty = cross_validate(["a", "b"], [None, None])
    assert empty.accuracy is None and "can't tell" in empty.sentence()
    assert features("Hi there, Bob") == ["hi", "there", "bob", "hi there", "there bob"]
    with pytest.raises(ValueError):
        PromptClassifier.fit([], [])
