"""One definition of each text feature: hostile texts (ZWJ sequences, skin tones, flags, keycaps, text-presentation
symbols, CJK, markdown inside code fences) get the same counts in the vibe features (drift, vibe control, profiles),
the GRPO format rewards and the evals' checkers."""

from __future__ import annotations

import pytest

from vibestudio.standings.evals import run_check
from vibestudio.textfeatures import vibes
from vibestudio.training.objectives.rewards import format_ok, length_score, make_reward
from vibestudio.training.report.drift_stats import compare

# (text, emoji as people see them)
EMOJI_CASES = [
    ("plain ASCII text, no emoji at all :-) <3", 0),
    ("family \U0001f468\u200d\U0001f469\u200d\U0001f467 is one emoji", 1),  # ZWJ sequence
    ("heart on fire \u2764\ufe0f\u200d\U0001f525", 1),
    ("rainbow flag \U0001f3f3\ufe0f\u200d\U0001f308", 1),
    ("thumbs \U0001f44d\U0001f3fd and \U0001f44d\U0001f3ff", 2),  # skin tones stay with their emoji
    ("flags \U0001f1eb\U0001f1f7\U0001f1e9\U0001f1ea", 2),  # two regional-indicator pairs
    ("England \U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f", 1),  # tag sequence
    ("keycaps 1\ufe0f\u20e3 #\u20e3 but not 1 or # or *", 2),
    ("text symbols \u00a9 \u2122 \u2194 \u00ae \u203c \u2600 \u2764 stay text", 0),
    ("unless asked: \u00a9\ufe0f \u2764\ufe0f \u2600\ufe0f", 3),
    ("CJK \u6f22\u5b57 \u304b\u306a \ud55c\uad6d\uc5b4 \u3007 and full-width \uff01", 0),
    ("mixed\U0001f44dtext\u2728in\u2705between", 3),
    ("```\ncode \U0001f389 in a fence\n```", 1),  # an emoji is an emoji wherever it is
]


@pytest.mark.parametrize(("text", "n"), EMOJI_CASES)
def test_every_consumer_counts_the_same_emoji(text: str, n: int) -> None:
    assert vibes.emoji_count(text) == n
    assert vibes.features(text)["emoji"] == n  # drift, vibe control, vote cache, profiles
    assert format_ok(text, "no_emoji") is (n == 0)  # the GRPO no_emoji reward
    reward = make_reward({"type": "format", "format": "no_emoji"})
    assert reward(completions=[text]) == [float(n == 0)]
    drift, _ = compare([text] * 3, [""] * 3)
    assert drift["emoji"].parent == n


FENCED = """Here is the code:

```python
# this is a comment, not a header
- not a bullet
1. not a numbered item
x = a != b  # **not bold**!
```

~~~
## still code
~~~~

Done!"""


def test_markdown_inside_code_fences_is_code_everywhere() -> None:
    f = vibes.features(FENCED)
    assert (f["headers"], f["list_items"], f["bold"], f["code_blocks"], f["exclamations"]) == (0, 0, 0, 2, 1)
    assert run_check({"type": "bullets", "n": 0}, FENCED)[0]
    assert run_check({"type": "numbered", "n": 0}, FENCED)[0]
    assert not format_ok(FENCED, "bullets") and not format_ok(FENCED, "markdown_heading")
    assert not format_ok(FENCED, "no_markdown")  # code blocks are markdown
    assert format_ok("Use `**kwargs**` and `- x` here.", "no_markdown")  # inline code is not bold or a list


def test_an_unclosed_fence_runs_to_the_end_and_a_short_one_does_not_close_it() -> None:
    text = "````\n```\n# inside\n```\n- still inside"
    assert vibes.code_block_count(text) == 1
    assert vibes.features(text)["headers"] == 0 and vibes.features(text)["list_items"] == 0


MARKDOWN = "# Title\n\n- one **bold** point\n* two\n\u2022 three\n1. first\n2) second\n\nEnd!"


def test_markdown_counts_agree_between_vibes_rewards_and_evals() -> None:
    f = vibes.features(MARKDOWN)
    bullets, numbered = vibes.bullet_count(MARKDOWN), vibes.numbered_count(MARKDOWN)
    assert (bullets, numbered) == (3, 2) and f["list_items"] == bullets + numbered
    assert f["headers"] == vibes.header_count(MARKDOWN) == 1 and f["bold"] == vibes.bold_count(MARKDOWN) == 1
    assert run_check({"type": "bullets", "n": bullets}, MARKDOWN)[0]
    assert run_check({"type": "numbered", "n": numbered}, MARKDOWN)[0]
    assert format_ok(MARKDOWN, "bullets") and format_ok(MARKDOWN, "markdown_heading")
    assert not format_ok(MARKDOWN, "no_markdown")
    plain = "Just a sentence with 3 numbers, 1.5 and (2) asides.\nAnd a second line."
    assert vibes.features(plain)["list_items"] == 0 and format_ok(plain, "no_markdown")
    assert (
        run_check({"type": "bullets", "n": 0}, plain)[0] and run_check({"type": "numbered", "n": 0}, plain)[0]
    )


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("don't stop the well-known show", 5),
        ("\u6f22\u5b57\u304b\u306a \ud55c\uad6d\uc5b4", 2),
        ("emoji \U0001f468\u200d\U0001f469\u200d\U0001f467 and \u2014 dashes", 3),
        ("", 0),
    ],
)
def test_words_are_counted_once_for_length_rewards_and_eval_limits(text: str, words: int) -> None:
    assert vibes.word_count(text) == words
    assert length_score(text, words, words) == 1.0
    assert run_check({"type": "max_words", "n": max(words, 1)}, text)[0] is (words > 0)


def test_a_fenced_json_answer_is_unwrapped_once() -> None:
    answer = '```json\n{"city": "Paris"}\n```'
    assert vibes.fenced_body(answer) == '{"city": "Paris"}'
    assert run_check({"type": "json", "keys": {"city": "string"}}, answer)[0]
    assert vibes.fenced_body("```\na\n```\nmore\n```") is None  # two blocks, not one
    assert vibes.fenced_body("no fence") is None


def test_tokens_and_discovered_phrases_share_one_tokenizer() -> None:
    from vibestudio.training.report.discover import candidates

    text = "Well, it's great!"
    assert vibes.token_count(text) == vibes.features(text)["tokens"] == 7
    assert ("phrase", "great !") in candidates(text)
