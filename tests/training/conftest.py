"""Training fixtures: a tiny-model parent contestant and frozen preference snapshots written straight to the db."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotation.snapshots import write_snapshot
from arena.registry import ContestantSpec, register

PROMPTS = [
    "What is the capital of France?",
    "Name a primary colour.",
    "How many legs does a spider have?",
    "Say hello politely.",
    "What is 2 + 2?",
    "Give me a fruit.",
    "What colour is the sky?",
    "Name a planet.",
    "What do bees make?",
    "Name a large animal.",
    "What is ice made of?",
    "Name a musical instrument.",
]


def pair_rows(n: int, chosen: str = "long") -> list[dict]:
    """``n`` preference rows; by default the chosen answer is long and friendly, the rejected one terse."""
    rows = []
    for i in range(n):
        q = PROMPTS[i % len(PROMPTS)] + ("" if i < len(PROMPTS) else f" ({i})")
        long = f"Great question! Here is a detailed and friendly answer to '{q}', with some extra context."
        rows.append(
            {
                "prompt": [{"role": "user", "content": q}],
                "chosen": [{"role": "assistant", "content": long if chosen == "long" else "Yes."}],
                "rejected": [{"role": "assistant", "content": "No." if chosen == "long" else long}],
                "provenance": {"source": "test", "i": i},
            }
        )
    return rows


@pytest.fixture
def make_snapshot(db):
    def make(n: int = 8, rows: list[dict] | None = None) -> str:
        with db.session() as s:
            return write_snapshot(s, rows if rows is not None else pair_rows(n), {"source": "test"}).hash

    return make


@pytest.fixture
def tiny_parent(db, tiny_model_dir: Path) -> int:
    with db.session() as s:
        return register(
            s,
            ContestantSpec(
                "tiny-parent",
                engine="transformers",
                model_ref=str(tiny_model_dir),
                sampling={"temperature": 0.7, "top_p": 0.95, "max_tokens": 12},
                aliases=["TinyLlama"],
            ),
        )


FAST = {"max_steps": 4, "kl_prompts": 2, "kl_max_new_tokens": 8, "learning_rate": 5e-3, "drift_prompts": 0}
