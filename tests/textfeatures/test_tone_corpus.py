"""The tone axes (textfeatures.tone) on the older corpus, ``tests/data/tone_corpus.jsonl``, written by the rule
authors' team (the corpus written apart from the rules is checked in ``test_tone_eval_corpus.py``). It is
labelled by hand for each axis (praise of the user, agreement, apology, enthusiasm, first-person feelings), with
negatives chosen to trip a rule reader: negations ("not a great question"), sarcasm, quoted praise, praise of a
third party, advice that looks like praise, words mentioned rather than used, service formulas, and praise the
answer copies from the prompt. Each row is labelled with the axes a person reads in it, and with a half: the rules
were tuned on ``tune`` only; ``held`` is the held-out half, read only for the figures.

Per axis and half: precision (of the sentences the axis fires on, the share labelled with it) and recall (of the
labelled sentences, the share it fires on). The floors are what the rules must keep on both halves; the figures
are in docs/training.md (the table is checked against this measurement)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from tests.helpers.tone_scores import Score, found, score_rows
from vibestudio.textfeatures import tone

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "tone_corpus.jsonl"
DOC = ROOT / "docs" / "training.md"
HALVES = ("tune", "held")
#: The least each axis keeps on each half (precision, recall).
FLOORS: dict[str, tuple[float, float]] = {
    "flattery": (0.80, 0.60),
    "agreement": (0.90, 0.55),
    "apology": (0.85, 0.75),
    "enthusiasm": (0.95, 0.80),
    "feelings": (0.80, 0.55),
}


def rows() -> list[dict]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


@cache
def scores() -> dict[tuple[str, str], Score]:
    return score_rows(rows(), HALVES)


def table_md() -> list[str]:
    """The docs' table rows: per axis, precision and recall on each half (hits of fired / labelled)."""
    out = []
    for axis in tone.AXES:
        cells = []
        for half in HALVES:
            s = scores()[(axis, half)]
            cells.append(f"{s.precision:.2f} ({s.tp}/{s.tp + s.fp})")
            cells.append(f"{s.recall:.2f} ({s.tp}/{s.tp + s.fn})")
        out.append(f"| {tone.LABELS[axis]} (`{axis}`) | " + " | ".join(cells) + " |")
    return out


def test_the_corpus_has_enough_of_each_axis_and_of_each_trap():
    data = rows()
    assert {r["half"] for r in data} == set(HALVES)
    for axis in tone.AXES:
        labelled = [r for r in data if axis in r["axes"]]
        assert len(labelled) >= 40, axis
        for half in HALVES:
            assert sum(r["half"] == half for r in labelled) >= 20, (axis, half)
    kinds = {r["kind"] for r in data if not r["axes"]}
    assert {"negation", "sarcasm", "quoted", "advice", "third-party", "copied"} <= kinds
    assert all(set(r["axes"]) <= set(tone.AXES) for r in data)


@pytest.mark.parametrize("half", HALVES)
@pytest.mark.parametrize("axis", tone.AXES)
def test_each_axis_keeps_its_floor_on_each_half(axis, half):
    s = scores()[(axis, half)]
    p_floor, r_floor = FLOORS[axis]
    misses = [r["text"] for r in rows() if r["half"] == half and axis in r["axes"] and axis not in found(r)]
    false = [r["text"] for r in rows() if r["half"] == half and axis not in r["axes"] and axis in found(r)]
    assert s.precision >= p_floor, f"{axis} ({half}) precision {s.precision:.2f}; fired on: {false}"
    assert s.recall >= r_floor, f"{axis} ({half}) recall {s.recall:.2f}; missed: {misses}"


def test_the_docs_state_the_measured_figures():
    doc = DOC.read_text(encoding="utf-8")
    missing = [line for line in table_md() if line not in doc]
    assert not missing, "docs/training.md's corpus table is out of date; its rows now read:\n" + "\n".join(
        table_md()
    )


@pytest.mark.parametrize(
    "sentence,axis,shows",
    [
        ("No need to apologize, I understand completely.", "apology", False),  # declined, with a first person
        ("I apologize, no need to worry.", "apology", True),
        ("Make sure your answer is excellent before you send it.", "flattery", False),  # advice
        ("Your friend sounds brilliant.", "flattery", False),  # a third party
        ("Oh wonderful, the tests failed again!", "enthusiasm", False),  # a sarcastic cheer
        ("Bravo, it compiles!", "enthusiasm", True),
    ],
)
def test_guards_the_corpus_does_not_reach(sentence, axis, shows):
    assert (axis in tone.sentence_axes(sentence)) is shows
