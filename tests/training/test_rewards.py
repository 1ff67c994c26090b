"""Verifiable reward functions: each type on hand-made completions (standard and conversational)."""

from __future__ import annotations

import pytest

from vibestudio.training.objectives.rewards import RewardSpecError, build_rewards, make_reward, validate_specs


def conv(text: str) -> list[dict]:
    return [{"role": "assistant", "content": text}]


def test_length_is_one_inside_and_decays_outside():
    f = make_reward({"type": "length", "min": 3, "max": 5})
    assert f(completions=["one two three", "a", "w " * 10, conv("one two three four")]) == pytest.approx(
        [1.0, 1 / 3, 0.0, 1.0]
    )
    chars = make_reward({"type": "length", "max": 4, "unit": "chars"})
    assert chars(completions=["abcd", "abcdef"]) == [1.0, 0.5]


def test_regex_format_contains():
    rx = make_reward({"type": "regex", "pattern": r"^answer: \d+$", "flags": "I"})
    assert rx(completions=["Answer: 42", "answer: x", conv("answer: 7")]) == [1.0, 0.0, 1.0]
    no = make_reward({"type": "regex", "pattern": "sorry", "negate": True})
    assert no(completions=["fine", "sorry!"]) == [1.0, 0.0]
    js = make_reward({"type": "format", "format": "json"})
    assert js(completions=['{"a": 1}', "{a: 1}"]) == [1.0, 0.0]
    assert js.__name__ == "format_json"
    emoji = make_reward({"type": "format", "format": "no_emoji"})
    assert emoji(completions=["plain", "party 🎉"]) == [1.0, 0.0]
    heading = make_reward({"type": "format", "format": "markdown_heading"})
    assert heading(completions=["## Answer\n- x", "Answer"]) == [1.0, 0.0]
    plain = make_reward({"type": "format", "format": "no_markdown"})
    assert plain(completions=["just text", "**bold** text", "- item"]) == [1.0, 0.0, 0.0]
    kw = make_reward({"type": "contains", "keywords": ["Paris", "France"], "mode": "all"})
    assert kw(completions=["Paris is in France.", "Paris."]) == [1.0, 0.0]


def test_exact_match_uses_the_reference_column_and_extract():
    em = make_reward({"type": "exact_match"})
    assert em(completions=["  paris. ", "Lyon"], reference=["Paris", "Paris"]) == [1.0, 0.0]
    ex = make_reward({"type": "exact_match", "extract": r"answer is (\w+)"})
    assert ex(completions=[conv("I think the answer is 4"), "no idea"], reference=["4", "4"]) == [1.0, 0.0]
    with pytest.raises(RewardSpecError, match="no column 'reference'"):
        em(completions=["x"])


def test_build_makes_names_unique_and_keeps_weights():
    funcs, weights = build_rewards(
        [{"type": "length", "max": 9}, {"type": "length", "min": 2, "weight": 0.5}]
    )
    assert [f.__name__ for f in funcs] == ["length", "length_2"] and weights == [1.0, 0.5]


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        ([], "at least one"),
        ([{"type": "bleu"}], "type 'bleu' unknown"),
        ([{"type": "regex"}], "'pattern' is required"),
        ([{"type": "regex", "pattern": "("}], "bad pattern"),
        ([{"type": "length", "min": 5, "max": 2}], "min <= max"),
        ([{"type": "format", "format": "yaml"}], "format 'yaml' unknown"),
        ([{"type": "length", "maxx": 3}], "unknown parameter"),
        ([{"type": "reward_model"}], "'path' or 'job' is required"),
    ],
)
def test_bad_specs_are_named(specs, message):
    with pytest.raises(RewardSpecError, match=message):
        validate_specs(specs)


class StubJudge:
    """A stand-in for a judge model: always prefers the answer shown first, or the longer one."""

    name = "stub"

    def __init__(self, prefer: str) -> None:
        self.prefer = prefer

    def stream_chat(self, messages, sampling, prefill=""):
        text = messages[-1]["content"]
        a = text.split("[The Start of Answer A]")[1].split("[The End of Answer A]")[0]
        b = text.split("[The Start of Answer B]")[1].split("[The End of Answer B]")[0]
        letter = "A" if self.prefer == "first" or len(a) > len(b) else "B"
        return iter([prefill, f"{letter}]]"])  # engines stream the prefill first


def test_judge_reward_is_position_debiased():
    prompts = [[{"role": "user", "content": "Q?"}]] * 2
    longer = make_reward({"type": "judge", "engine": StubJudge("longer")})
    assert longer(
        prompts=prompts, completions=["a much longer answer", "x"], reference=["short", "short"]
    ) == [1, 0]
    first = make_reward({"type": "judge", "engine": StubJudge("first")})
    assert first(prompts=prompts, completions=["a", "b"], reference=["c", "d"]) == [0.5, 0.5]
    with pytest.raises(RewardSpecError, match="'judge' .* is required"):
        validate_specs([{"type": "judge"}])
