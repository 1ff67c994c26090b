"""Training test data: preference rows with a known preferred style, and job settings small enough for a CPU."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vibestudio.db.session import Database

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


#: Job overrides that make a tiny-model run take seconds: few steps, a short KL check, no drift report.
FAST = {"max_steps": 4, "kl_prompts": 2, "kl_max_new_tokens": 8, "learning_rate": 5e-3, "drift_prompts": 0}


def register_tiny_parent(db: Database, model_dir: Path) -> int:
    """Register ``tiny-parent``: the tiny model on the transformers engine, 12-token answers, alias TinyLlama."""
    from vibestudio.arena.registry import ContestantSpec, register

    with db.session() as s:
        return register(
            s,
            ContestantSpec(
                "tiny-parent",
                engine="transformers",
                model_ref=str(model_dir),
                sampling={"temperature": 0.7, "top_p": 0.95, "max_tokens": 12},
                aliases=["TinyLlama"],
            ),
        )


def add_votes(
    db: Database,
    parent: int,
    other: int,
    outcomes: list[str],
    scores: dict[int, float] | None = None,
    start: int = 0,
) -> None:
    """One ended anonymous battle of ``parent`` (side A) against ``other`` per outcome, each with one voted turn
    (prompt ``q<start + k>``); ``scores[k]`` adds a helpfulness score for side A of vote ``k``."""
    from datetime import datetime

    from vibestudio.db.models import Battle, RubricScore, Turn, Vote

    with db.session() as s:
        for k, outcome in enumerate(outcomes):
            i = start + k
            b = Battle(
                a_id=parent,
                b_id=other,
                left_is_a=True,
                mode="anonymous",
                status="voted",
                created_at=datetime(2026, 1, 1),
            )
            b.turns.append(Turn(idx=0, user_msg=f"q{i}", answer_a=f"mine {i}", answer_b=f"theirs {i}"))
            vote = Vote(turn_idx=0, outcome=outcome, revealed_before_vote=False)
            b.votes.append(vote)
            s.add(b)
            s.flush()
            if scores and k in scores:
                s.add(RubricScore(vote_id=vote.id, criterion="helpfulness", side="a", value=scores[k]))


def answer_format_parent(db: Database, model_dir: Path, out: Path, prompts: list[str], seed: int = 0) -> int:
    """Register ``tiny-format``: the tiny model taught only the answer format (``Answer: <digit>``, the digit
    drawn at random for each example, so it knows no task's answer), by a short supervised loop on ``prompts``.
    A random model never writes a digit, so a reward that checks an answer would never reach it."""
    import random

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from vibestudio.arena.registry import ContestantSpec, register

    rng = random.Random(seed)
    torch.manual_seed(seed)
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    side, tok.padding_side = tok.padding_side, "right"
    for _ in range(40):
        heads = [
            tok.apply_chat_template(
                [{"role": "user", "content": p}], add_generation_prompt=True, tokenize=False
            )
            for p in rng.sample(prompts, min(16, len(prompts)))
        ]
        texts = [f"{h}Answer: {rng.randint(0, 9)}<|im_end|>" for h in heads]
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, -100)
        for i, h in enumerate(heads):  # the loss is on the answer only
            labels[i, : len(tok(h, add_special_tokens=False)["input_ids"])] = -100
        model(**enc, labels=labels).loss.backward()
        opt.step()
        opt.zero_grad()
    tok.padding_side = side
    model.save_pretrained(out)
    tok.save_pretrained(out)
    with db.session() as s:
        return register(
            s,
            ContestantSpec(
                "tiny-format",
                engine="transformers",
                model_ref=str(out),
                sampling={"temperature": 0.7, "top_p": 0.95, "max_tokens": 6},
            ),
        )
