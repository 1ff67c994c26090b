"""A DPO child takes on a planted preference (slow lane): every pair of the snapshot prefers "Yes." to "No.", a
real DPO job trains the tiny model on it, and the child's checkpoint report, on held-out prompts answered by both
sides through the engine, names "yes" from the snapshot alone and finds that the child took it on. The default
lane's version (``test_checkpoint_report.py``) plants the child's answers; this one trains them. A one-token
opening is what the tiny random model can take on in a few dozen steps (a longer one comes out as its tokens in
any order)."""

from __future__ import annotations

import time

import pytest

from tests.helpers.postgres import ONE_KIND
from tests.helpers.rules import rules_without_evals
from tests.helpers.training import PROMPTS
from vibestudio.training.jobs.runner import wait
from vibestudio.training.jobs.service import launch_dpo
from vibestudio.training.report.steps import load_report


def yes_rows() -> list[dict]:
    rows = []
    for i in range(24):
        q = PROMPTS[i % len(PROMPTS)] + ("" if i < len(PROMPTS) else f" ({i})")
        rows.append(
            {
                "prompt": [{"role": "user", "content": q}],
                "chosen": [{"role": "assistant", "content": "Yes."}],
                "rejected": [{"role": "assistant", "content": "No."}],
                "provenance": {"source": "test", "i": i},
            }
        )
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)
def test_a_dpo_child_takes_on_the_planted_preference(db, tiny_parent, make_snapshot):
    t0 = time.monotonic()
    job = launch_dpo(
        db,
        "tiny-parent",
        make_snapshot(rows=yes_rows()),
        lora=False,
        learning_rate=1e-2,
        lr_scheduler_type="constant",
        beta=0.01,  # a low beta: the loss saturates later, so the preference keeps pushing the opening up
        max_steps=24,
        kl_prompts=0,
        drift_prompts=20,
        drift_max_tokens=8,
        eval_items=0,
        verdict_rules=rules_without_evals(),  # evals off: rules that do not need them
        describe_axes=0,
    )
    view = wait(db, job, timeout=600)
    assert view.status == "succeeded", view.error or view.log_tail
    report = load_report(db, view.contestant_id)
    assert report is not None
    hit = next(c for c in report.rewarded["candidates"] if c["phrase"].startswith("yes"))
    print(
        f"\n'{hit['phrase']}' ({hit['kind']}): parent {hit['parent_rate']:.2f} -> child {hit['child_rate']:.2f} of "
        f"{report.rewarded['n_prompts']} held-out prompts, p={hit['p']:.2g}; {time.monotonic() - t0:.0f} s"
    )
    assert hit["direction"] == "rewarded" and hit["took_on"]
    assert hit["child_only"] >= 6 and hit["parent_only"] == 0
    assert report.measures["rewarded/took_on"] >= 1
