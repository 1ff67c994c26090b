"""Fixtures for annotation tests: small files in the real layouts of FastChat, AlpacaEval, UltraFeedback,
HelpSteer2 and TRL, written by the tests themselves."""

from __future__ import annotations

import pytest

from tests.helpers.files import conv


@pytest.fixture
def fastchat_rows() -> list[dict]:
    return [
        {  # judge1 prefers vicuna's answer
            "question_id": 81,
            "model_a": "vicuna-13b",
            "model_b": "alpaca-13b",
            "winner": "model_a",
            "judge": "judge1",
            "turn": 1,
            "tstamp": 1700000000.0,
            "conversation_a": conv("Plan a trip to Hawaii.", "Day 1: Honolulu."),
            "conversation_b": conv("Plan a trip to Hawaii.", "Go."),
        },
        {  # judge2 saw the same pair with the models swapped and agreed
            "question_id": 81,
            "model_a": "alpaca-13b",
            "model_b": "vicuna-13b",
            "winner": "model_b",
            "judge": "judge2",
            "turn": 1,
            "tstamp": 1700000100.0,
            "conversation_a": conv("Plan a trip to Hawaii.", "Go."),
            "conversation_b": conv("Plan a trip to Hawaii.", "Day 1: Honolulu."),
        },
        {
            "question_id": 82,
            "model_a": "gpt-4",
            "model_b": "llama-13b",
            "winner": "tie (bothbad)",
            "judge": "judge1",
            "turn": 1,
            "tstamp": 1700000200.0,
            "conversation_a": conv("Draft an email.", "Dear team,"),
            "conversation_b": conv("Draft an email.", "Hi"),
        },
        {  # a second-turn judgement: each model saw its own first answer
            "question_id": 81,
            "model_a": "vicuna-13b",
            "model_b": "alpaca-13b",
            "winner": "model_b",
            "judge": "judge1",
            "turn": 2,
            "tstamp": 1700000300.0,
            "conversation_a": conv(
                "Plan a trip to Hawaii.", "Day 1: Honolulu.", "Shorter?", "Honolulu, then Maui."
            ),
            "conversation_b": conv("Plan a trip to Hawaii.", "Go.", "Shorter?", "Maui."),
        },
    ]


@pytest.fixture
def alpaca_rows() -> list[dict]:
    return [
        {
            "instruction": "Name a prime number.",
            "output_1": "7",
            "output_2": "8",
            "generator_1": "gpt4",
            "generator_2": "davinci",
            "preference": 1.0,
            "annotator": "alpaca_eval_gpt4",
        },
        {
            "instruction": "Translate 'cat' to French.",
            "output_1": "chien",
            "output_2": "chat",
            "generator_1": "gpt4",
            "generator_2": "davinci",
            "preference": 2.0,
            "annotator": "alpaca_eval_gpt4",
        },
        {
            "instruction": "Say hi.",
            "output_1": "Hi!",
            "output_2": "Hello!",
            "generator_1": "gpt4",
            "generator_2": "davinci",
            "preference": 1.5,
            "annotator": "alpaca_eval_gpt4",
        },
        {
            "instruction": "Add the numbers.",
            "input": "2 and 3",
            "output_1": "5",
            "output_2": "6",
            "generator_1": "gpt4",
            "generator_2": "davinci",
            "preference": 1.2,
            "annotator": "alpaca_eval_gpt4",
        },
    ]


@pytest.fixture
def ultrafeedback_rows() -> list[dict]:
    def row(pid: str, prompt: str, good: str, bad: str, sc: float, sr: float) -> dict:
        chosen = [{"content": prompt, "role": "user"}, {"content": good, "role": "assistant"}]
        rejected = [{"content": prompt, "role": "user"}, {"content": bad, "role": "assistant"}]
        return {
            "prompt": prompt,
            "prompt_id": pid,
            "chosen": chosen,
            "rejected": rejected,
            "messages": chosen,
            "score_chosen": sc,
            "score_rejected": sr,
        }

    return [
        row("a1", "What is 2+2?", "4", "5", 9.0, 2.0),
        row("b2", "Capital of France?", "Paris", "Lyon", 8.5, 3.0),
        row("c3", "Spell 'cat'.", "c-a-t", "k-a-t", 7.0, 6.5),
    ]


@pytest.fixture
def helpsteer_rows() -> list[dict]:
    def row(prompt: str, response: str, h: int, c: int, co: int, cx: int, v: int) -> dict:
        return {
            "prompt": prompt,
            "response": response,
            "helpfulness": h,
            "correctness": c,
            "coherence": co,
            "complexity": cx,
            "verbosity": v,
        }

    return [
        row("Explain gravity.", "Masses attract each other.", 4, 4, 4, 1, 1),
        row("Explain gravity.", "It is magic.", 1, 0, 3, 0, 0),
        row("Write a haiku.", "Autumn moonlight / a worm digs silently / into the chestnut", 3, 3, 4, 2, 1),
        row("Write a haiku.", "Leaves fall down / quietly / on the ground", 3, 2, 3, 1, 1),
        row("Define entropy.", "A measure of disorder.", 2, 3, 4, 2, 0),
    ]


@pytest.fixture
def trl_rows() -> list[dict]:
    return [
        {"prompt": "Name a colour.", "chosen": "Blue.", "rejected": "Seven."},
        {"prompt": "Is the sky green?", "chosen": "No, it is usually blue.", "rejected": "Yes."},
    ]
