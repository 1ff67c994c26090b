"""Tests for textfeatures.vibes: feature counts on crafted answers, the versioned marker file, profiles."""

from __future__ import annotations

import re

import pytest

from vibestudio.textfeatures import vibes

ANSWER = """Great question! You're absolutely right to ask.

# Overview
## Details

- first point with **bold** text
- second point
1. numbered item
2) another one

It's important to note that this might depend on context. 🚀🎉

```python
print("hi")
```
"""


def test_features_counts_markdown_and_markers() -> None:
    f = vibes.features(ANSWER)
    assert set(f) == set(vibes.FEATURE_NAMES)
    assert f["headers"] == 2
    assert f["list_items"] == 4
    assert f["bold"] == 1
    assert f["code_blocks"] == 1
    assert f["emoji"] == 2
    assert f["exclamations"] == 1
    assert f["flattery"] == 1
    assert f["sycophancy"] == 1  # "you're absolutely right" counted once, not again as "you're right"
    assert f["hedging"] == 2  # "it's important to note", "might"
    assert f["refusal"] == 0.0
    assert f["tokens"] > 40


def test_refusal_and_curly_apostrophes() -> None:
    assert vibes.features("I’m sorry, but I can’t help with that.")["refusal"] == 1.0
    assert vibes.features("Sure, here you go.")["refusal"] == 0.0
    assert vibes.features("You’re absolutely right.")["sycophancy"] == 1


def test_markers_need_whole_words() -> None:
    assert vibes.features("The mighty river")["hedging"] == 0  # "might" inside "mighty"
    assert vibes.features("This might work")["hedging"] == 1


def test_the_vibe_childs_openings_count_as_flattery_once_each() -> None:
    # "Glad you asked" (an opening a real DPO child trained on flattery votes used, docs/training.md) and praise of
    # the question in the same vein. Since features version 3 flattery counts sentences that praise the user or
    # their question (textfeatures.tone), so two markers in one sentence count once.
    text = "I’m glad you asked! Awesome question. What an interesting question, thanks for asking!"
    assert vibes.features(text)["flattery"] == 3
    assert vibes.features("What a great question!")["flattery"] == 1
    assert vibes.features("The question is interesting. I asked him.")["flattery"] == 0


def test_empty_and_plain_text() -> None:
    f = vibes.features("")
    assert all(v == 0.0 for v in f.values())
    g = vibes.features("Just three words")
    assert g["tokens"] == 3 and g["headers"] == 0 and g["list_items"] == 0


def test_marker_file_is_versioned_and_every_phrase_is_counted_in_its_category() -> None:
    data = vibes.load_markers()
    declared = re.search(r"^version: (\d+)$", vibes.MARKERS_PATH.read_text(encoding="utf-8"), re.M)
    assert declared is not None and vibes.markers_version() == int(declared.group(1))
    for category in vibes.MARKER_CATEGORIES:
        assert len(data[category]) >= 3, category
        for phrase in data[category]:
            # Each phrase, upper-cased inside a sentence, counts once in its own category. A one-word flattery
            # marker ("brilliant") counts only when said of the user (textfeatures.tone, features version 3).
            text = (
                f"Well, {phrase.upper()} then."
                if " " in phrase or category != "flattery"
                else f"You are {phrase}."
            )
            assert vibes.features(text)[category] == 1.0, (category, phrase)


def test_profile_and_compare() -> None:
    prof = vibes.profile(["Great question!", "Plain answer.", "Another plain one."])
    assert prof["flattery"]["rate"] == pytest.approx(1 / 3)
    assert prof["flattery"]["mean"] == pytest.approx(1 / 3)
    assert prof["exclamations"]["median"] == 0.0
    empty = vibes.profile([])
    assert empty["tokens"] == {"mean": 0.0, "rate": 0.0, "median": 0.0}
    diff = vibes.compare_profiles(prof, empty)
    assert diff["flattery"]["mean_diff"] == pytest.approx(1 / 3)
