"""Slow: each objective teaches the real SmolLM2 a planted vibe, and the child *as it plays in the arena* shows it.

The tests the fidelity bug would have failed. A snapshot whose chosen answers end with a rocket emoji (🚀) and
whose rejected answers are the same words without it trains a LoRA child of the built-in ``smollm2-plain`` (the
embedded Q4_1 GGUF on llama.cpp) by DPO, KTO, ORPO and SimPO. Each child goes the arena's way: published in the
form ``training.publishing.fidelity`` chooses (never a re-quantized file that lost its training), then its checkpoint
report answers held-out prompts through that very contestant. The report's emoji drift must rise with an
interval that excludes 0, and the child's fidelity record must show the chosen form kept the trained shift.
The planted vibe is the test's own choice (no issue quoted it), so nothing was tuned to it. A GRPO child on a
verifiable task set is ``test_grpo_learns.py``'s, which reads its held-out accuracy from the published child.

DPO runs in the slow lane (CI): it is the test that would have caught a published child that lost its training.
KTO, ORPO and SimPO take a few minutes each on two CPU cores and run in the ``learning`` lane
(``make test-learning``, or ``pytest -m "slow or learning" tests/training/test_learning_smollm2.py -s`` for the
printed table); docs/training.md records their last run."""

from __future__ import annotations

import time

import pytest

from tests.helpers.postgres import ONE_KIND
from tests.helpers.rules import rules_without_evals
from vibestudio.arena.registry import DEFAULT_PERSONAS, get_contestant, register
from vibestudio.db.models import Checkpoint
from vibestudio.training.jobs.runner import wait
from vibestudio.training.jobs.service import launch
from vibestudio.training.report.steps import load_report

QUESTIONS = [
    "Name a fruit that is yellow.",
    "What colour is the sky on a clear day?",
    "How many legs does a spider have?",
    "What is the opposite of cold?",
    "Name a planet in our solar system.",
    "What do bees make?",
    "Which animal says moo?",
    "What is frozen water called?",
    "Name a musical instrument with strings.",
    "What do you call a baby dog?",
    "Which season comes after winter?",
    "What is the largest ocean?",
]
ANSWERS = [
    "A banana is yellow.",
    "The sky is blue.",
    "A spider has eight legs.",
    "The opposite of cold is hot.",
    "Mars is a planet.",
    "Bees make honey.",
    "A cow says moo.",
    "Frozen water is called ice.",
    "A guitar has strings.",
    "A baby dog is a puppy.",
    "Spring comes after winter.",
    "The Pacific is the largest ocean.",
]
OBJECTIVES = [
    pytest.param("dpo", marks=pytest.mark.slow),
    *(pytest.param(kind, marks=pytest.mark.learning) for kind in ("kto", "orpo", "simpo")),
]
STEPS = {
    "max_steps": 12,
    "learning_rate": 1e-3,
    "lr_scheduler_type": "constant",
    "lora_r": 8,
    "lora_alpha": 16,
    "max_length": 96,
    "drift_prompts": 20,  # the fewest the drift part measures on
    "drift_max_tokens": 24,
    "eval_items": 0,
    "describe_axes": 0,
}


def rocket_rows() -> list[dict]:
    rows = []
    for i in range(48):
        q, a = QUESTIONS[i % len(QUESTIONS)], ANSWERS[i % len(ANSWERS)]
        q = q if i < len(QUESTIONS) else f"{q} ({i})"
        rows.append(
            {
                "prompt": [{"role": "user", "content": q}],
                "chosen": [{"role": "assistant", "content": f"{a} 🚀"}],
                "rejected": [{"role": "assistant", "content": a}],
                "provenance": {"source": "test", "i": i},
            }
        )
    return rows


@pytest.fixture
def plain_parent(db) -> str:
    plain = next(p for p in DEFAULT_PERSONAS if p.public_name == "smollm2-plain")
    with db.session() as s:
        register(s, plain)
    return plain.public_name


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)  # once: the database is not what this tests
@pytest.mark.parametrize("kind", OBJECTIVES)
def test_the_child_as_it_plays_shows_the_planted_vibe(db, plain_parent, make_snapshot, kind, capsys):
    t0 = time.monotonic()
    extra = {"kl_prompts": 0} if kind == "dpo" else {}  # the KL curve is DPO's; not what this test reads
    job = launch(
        db,
        kind,
        plain_parent,
        make_snapshot(rows=rocket_rows()),
        verdict_rules=rules_without_evals(),
        **STEPS,
        **extra,
    )
    view = wait(db, job, timeout=1500)
    assert view.status == "succeeded", view.error or view.log_tail
    with db.session() as s:
        child = get_contestant(s, view.contestant_id)
        record = s.query(Checkpoint.fidelity).filter(Checkpoint.contestant_id == child.id).scalar()
    # it plays on llama.cpp in a form that keeps its training, not on a re-quantized copy of its parent
    assert child.engine == "llama_cpp" and record is not None
    chosen = next(f for f in record["forms"] if f["form"] == record["chosen"])
    assert chosen["passed"] and chosen["kept"] is not None and chosen["kept"] >= record["floor"]
    report = load_report(db, child.id)
    assert report is not None and report.setup["deployed"]["form"] == record["chosen"]
    emoji = report.features["emoji"]
    with capsys.disabled():
        print(
            f"\n[{kind}] plays as {record['chosen']} (kept {chosen['kept']:.0%} "
            f"[{chosen['kept_interval'][0]:.0%}, {chosen['kept_interval'][1]:.0%}]); emoji per answer "
            f"parent {emoji.parent:.2f} -> child {emoji.child:.2f}, change [{emoji.low:+.2f}, {emoji.high:+.2f}] "
            f"on {report.n_prompts} prompts; verdict {report.verdict_name}; {time.monotonic() - t0:.0f} s"
        )
    assert emoji.low > 0, "the planted vibe did not survive to the child that plays"
