"""Drift reports: feature comparison and flags, and a planted change caught through real engines."""

from __future__ import annotations

import pytest

from arena.registry import ContestantSpec, register
from tests.training.conftest import pair_rows
from training.drift import compare, drift_flags, drift_report
from training.runner import wait
from training.service import launch_dpo


def test_compare_flags_only_changes_past_thresholds():
    parent = ["A short answer.", "Another short one.", "Fine, thanks."]
    child = [
        a + " " + "More words here to make the answer much longer than before. " * 4 + "🎉🎉" for a in parent
    ]
    features, flagged = compare(parent, child)
    assert "tokens" in flagged and "emoji" in flagged
    assert features["tokens"].child > features["tokens"].parent + 40
    assert "headers" not in flagged and "refusal" not in flagged
    _, none = compare(parent, parent)
    assert none == []
    _, relaxed = compare(parent, child, {"tokens": {"abs": 1000}})
    assert "tokens" not in relaxed and "emoji" in relaxed


def test_planted_style_change_is_flagged_through_the_engines(db, tiny_parent, tiny_model_dir):
    """A child that opens every answer with a markdown heading and emoji (planted via its answer opening)."""
    with db.session() as s:
        child = register(
            s,
            ContestantSpec(
                "tiny-child",
                engine="transformers",
                model_ref=str(tiny_model_dir),
                parent_id=tiny_parent,
                prefill="## Great question! 😊🎉\n\n- ",
                sampling={"temperature": 0.7, "max_tokens": 12},
            ),
        )
    report = drift_report(db, child, n_prompts=3, max_tokens=6)
    assert report.n_prompts == 3 and len(report.samples) == 3
    assert {"headers", "emoji", "list_items"} <= set(report.flagged), report.summary()
    assert report.features["headers"].parent == 0 and report.features["headers"].child == 1
    assert drift_flags(db, child) == []  # nothing saved for a contestant that no job made


@pytest.mark.slow
def test_checkpoint_trained_to_answer_much_shorter_is_flagged(db, tiny_parent, make_snapshot):
    """A real planted change: the tiny model is fine-tuned (SFT loss on the chosen answers) to say 'Yes.'."""
    snap = make_snapshot(rows=pair_rows(8, chosen="short"))
    job = launch_dpo(
        db,
        "tiny-parent",
        snap,
        loss_type="sft",
        lora=False,
        learning_rate=1e-2,
        max_steps=10,
        kl_prompts=0,
        drift_prompts=4,
        drift_max_tokens=32,
        drift_thresholds={"tokens": {"abs": 4}},  # the parent plays with max_tokens 12
    )
    view = wait(db, job, timeout=600)
    assert view.status == "succeeded", view.error or view.log_tail
    assert "tokens" in drift_flags(db, view.contestant_id)
    assert view.last("drift/tokens") < -5
