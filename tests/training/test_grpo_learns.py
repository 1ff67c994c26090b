"""GRPO learns (slow lane): a real GRPO job on a generated task set raises held-out accuracy, measured on the
same held-out tasks before the first step (the parent's weights) and after the last, with the job's own paired
interval (child correct − parent correct per task, bootstrap over tasks) above zero.

The parent is the tiny random model taught only the answer format (``Answer: <digit>``, random digits): a random
model never writes a digit, so no reward would reach it. The family is ``strings`` at difficulty 3 (how many times
a letter appears in a word); what a model this small learns in a few dozen steps is the answer the family's tasks
mostly have, not counting, and that is enough to show that the task reward reaches the policy and carries over to
tasks it never trained on. With a learning rate of 1e-12 (a job refuses 0) the same job's change is 0 and the
test fails.
"""

from __future__ import annotations

import time

import pytest

from tests.helpers.postgres import ONE_KIND
from tests.helpers.training import answer_format_parent
from training.runner import wait
from training.service import launch
from training.tasks import generate_task_set
from training.tasks.store import load_tasks

STEPS = 24


def grpo_on_letter_counts(db, learning_rate: float = 1e-3, steps: int = STEPS):  # type: ignore[no-untyped-def]
    """Run the GRPO job; returns its view."""
    return launch(
        db,
        "grpo",
        "tiny-format",
        tasks="letters",
        rewards=[{"type": "task"}],
        lora=False,
        learning_rate=learning_rate,
        lr_scheduler_type="constant",
        max_steps=steps,
        per_device_train_batch_size=16,
        num_generations=8,
        max_completion_length=6,
        temperature=1.0,
        beta=0.0,
        heldout_every=steps,
        heldout_tasks=-1,
        heldout_max_tokens=6,
        kl_prompts=0,
        publish=False,
        seed=7,
    )


@pytest.mark.slow
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)
def test_grpo_raises_heldout_accuracy_with_a_paired_interval_above_zero(db, tiny_model_dir, tmp_path):
    t0 = time.monotonic()
    info = generate_task_set(db, "strings", 250, "letters", difficulty=3, seed=0).set
    train = {t.prompt for t in load_tasks(db, "letters", "train")}
    heldout = load_tasks(db, "letters", "heldout")
    assert info.n_heldout == len(heldout) >= 40 and not train & {t.prompt for t in heldout}
    answer_format_parent(db, tiny_model_dir, tmp_path / "tiny-format", sorted(train))
    view = wait(db, grpo_on_letter_counts(db), timeout=600)
    assert view.status == "succeeded", view.error or view.log_tail
    acc = dict(view.metrics["heldout/accuracy"])
    assert sorted(acc) == [0, STEPS]
    delta = view.last("heldout/delta")
    low, high = view.last("heldout/delta_low"), view.last("heldout/delta_high")
    print(
        f"\nheld-out accuracy {acc[0]:.3f} -> {acc[STEPS]:.3f} on {len(heldout)} tasks; paired change "
        f"{delta:+.3f} [{low:+.3f}, {high:+.3f}], McNemar p={view.last('heldout/p'):.2g}; "
        f"{time.monotonic() - t0:.0f} s"
    )
    assert acc[0] < 0.5  # the parent writes digits but does not know the answers
    assert delta == pytest.approx(acc[STEPS] - acc[0])
    assert low > 0 and view.last("heldout/p") < 0.05
