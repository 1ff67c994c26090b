"""GRPO learns (slow lane): a real GRPO job on a generated task set raises held-out accuracy, measured on the
same held-out tasks before the first step (the parent's weights) and after the last, with the job's own paired
interval (child correct − parent correct per task, bootstrap over tasks) above zero; and the gain survives
publication: the parent plays a Q8_0 GGUF on llama.cpp, the child is published in the form ``training.publishing.fidelity``
chooses, and its checkpoint report finds the gain again by asking that contestant, as the arena would.

The parent is the tiny random model taught only the answer format (``Answer: <digit>``, random digits): a random
model never writes a digit, so no reward would reach it. The family is ``strings`` at difficulty 3 (how many times
a letter appears in a word); what a model this small learns in a few dozen steps is the answer the family's tasks
mostly have, not counting, and that is enough to show that the task reward reaches the policy and carries over to
tasks it never trained on. With a learning rate of 1e-12 (a job refuses 0) the same job's change is 0 and the
test fails.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.helpers.postgres import ONE_KIND
from tests.helpers.training import answer_format_parent
from vibestudio.training.jobs.runner import wait
from vibestudio.training.jobs.service import launch
from vibestudio.training.tasks import generate_task_set
from vibestudio.training.tasks.store import load_tasks

STEPS = 24


def grpo_on_letter_counts(  # type: ignore[no-untyped-def]
    db, learning_rate: float = 1e-3, steps: int = STEPS, parent: str = "tiny-format", **more
):
    """Launch the GRPO job; returns its id."""
    return launch(
        db,
        "grpo",
        parent,
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
        seed=7,
        **{"publish": False, **more},
    )


def gguf_parent(db, hf_dir: Path, out: Path) -> Path:  # type: ignore[no-untyped-def]
    """Register ``tiny-format-gguf``: ``hf_dir`` as a Q8_0 GGUF on llama.cpp, as the arena plays the embedded
    model; returns the dequantized HF weights of that file (what a child of it is trained from)."""
    from tests.helpers.models import gguf_parent_weights
    from vibestudio.arena.registry import ContestantSpec, register

    gguf, hf = gguf_parent_weights(hf_dir, out, ftype=7)
    with db.session() as s:
        register(
            s,
            ContestantSpec(
                "tiny-format-gguf",
                engine="llama_cpp",
                model_ref=str(gguf),
                sampling={"temperature": 0.7, "top_p": 0.95, "max_tokens": 6},
            ),
        )
    return hf


@pytest.mark.slow
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)
def test_grpo_raises_heldout_accuracy_and_the_gain_survives_publication(db, tiny_model_dir, tmp_path):
    """The parent plays a Q8_0 GGUF on llama.cpp, as the embedded model plays its Q4_1 (Q8_0 keeps the tiny
    model's answer format, which Q4_1 rounding can lose). The job's own held-out check (the
    trained weights, before the first step and after the last) must rise with a paired interval above zero; then
    the child publishes in the form that keeps its training, and its checkpoint report, answering the held-out
    tasks through that contestant on llama.cpp, must find the gain too."""
    from vibestudio.arena.registry import get_contestant
    from vibestudio.db.models import Checkpoint
    from vibestudio.training.report.steps import load_report

    t0 = time.monotonic()
    info = generate_task_set(db, "strings", 250, "letters", difficulty=3, seed=0).set
    train = {t.prompt for t in load_tasks(db, "letters", "train")}
    heldout = load_tasks(db, "letters", "heldout")
    assert info.n_heldout == len(heldout) >= 40 and not train & {t.prompt for t in heldout}
    answer_format_parent(db, tiny_model_dir, tmp_path / "tiny-format", sorted(train))
    base = gguf_parent(db, tmp_path / "tiny-format", tmp_path / "gguf")
    job = grpo_on_letter_counts(
        db, parent="tiny-format-gguf", base_model=str(base), publish=True, eval_max_tokens=6
    )
    view = wait(db, job, timeout=900)
    assert view.status == "succeeded", view.error or view.log_tail
    with db.session() as s:
        child = get_contestant(s, view.contestant_id)
        record = s.query(Checkpoint.fidelity).filter(Checkpoint.contestant_id == child.id).scalar()
    acc = dict(view.metrics["heldout/accuracy"])
    assert sorted(acc) == [0, STEPS]
    delta = view.last("heldout/delta")
    low, high = view.last("heldout/delta_low"), view.last("heldout/delta_high")
    report = load_report(db, child.id)
    assert report is not None
    played = report.measures["rlvr/accuracy"]
    print(
        f"\nheld-out accuracy {acc[0]:.3f} -> {acc[STEPS]:.3f} on {len(heldout)} tasks; paired change "
        f"{delta:+.3f} [{low:+.3f}, {high:+.3f}], McNemar p={view.last('heldout/p'):.2g}; the child plays as "
        f"{record['chosen']}: change as it plays {played['delta']:+.3f} [{played['low']:+.3f}, "
        f"{played['high']:+.3f}] ({played['n']} tasks); {time.monotonic() - t0:.0f} s"
    )
    assert acc[0] < 0.5  # the parent writes digits but does not know the answers
    assert delta == pytest.approx(acc[STEPS] - acc[0])
    assert low > 0 and view.last("heldout/p") < 0.05
    assert child.engine == "llama_cpp" and record is not None and record["chosen"] != "transformers"
    assert played["low"] > 0, "the accuracy gain did not survive publication"
