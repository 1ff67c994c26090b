"""Objectives side by side on a planted axis (#50): a winner only when the paired difference between the
children's changes has an interval apart from 0; otherwise "can't tell" with the prompts a run would need
(80% power at 5%), and the sentence carries the object's own numbers. Answers are real text, measured by the
studio's own features, as a report stores them."""

from __future__ import annotations

import statistics
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.postgres import ONE_KIND
from tests.helpers.rules import rules_without_evals
from vibestudio.training.compare_taste import axis_error, decide, taste_call
from vibestudio.training.jobs.errors import JobError
from vibestudio.training.report.fair import detectable_shift, prompts_for

PROMPTS = [f"Question number {i}: what is a good habit?" for i in range(40)]
PLAIN = "Drink water every morning."


def _report(rockets: list[bool]) -> dict:
    """A saved report's shape: stored answers per prompt and the report's own change on ``emoji``."""
    samples = [
        {"prompt": p, "parent": PLAIN, "child": f"{PLAIN} 🚀" if r else PLAIN}
        for p, r in zip(PROMPTS, rockets, strict=False)
    ]
    n = len(samples)
    share = sum(rockets) / n
    return {
        "samples": samples,
        "features": {"emoji": {"delta": share, "low": max(0.0, share - 0.2), "high": share + 0.2, "n": n}},
    }


def test_a_child_that_took_the_taste_on_every_prompt_wins():
    call = taste_call(
        "emoji", "higher", {"dpo": _report([True] * 20), "kto": _report([i < 6 for i in range(20)])}
    )
    assert call.winner == "dpo" and call.rival == "kto" and call.prompts_needed is None
    assert call.difference is not None and call.difference.n == 20
    assert call.difference.value == pytest.approx(0.7) and call.difference.low > 0
    assert call.text.startswith("DPO moved emoji further higher than KTO")
    assert (
        f"{call.difference.value:+.2f} [{call.difference.low:+.2f}, {call.difference.high:+.2f}]" in call.text
    )
    assert call.effects["dpo"].value == 1.0 and call.effects["kto"].value == pytest.approx(0.3)


def test_too_few_prompts_read_cant_tell_with_the_prompts_a_run_would_need():
    call = taste_call(
        "emoji",
        "higher",
        {"dpo": _report([True, True, False, True, False]), "kto": _report([False, True, False, False, True])},
    )
    assert call.winner is None and call.leader == "dpo"
    assert call.difference is not None and call.difference.low <= 0 <= call.difference.high
    per = [1, 0, 0, 1, -1]
    d_z = statistics.fmean(per) / statistics.stdev(per)
    assert call.d_z == pytest.approx(d_z)
    assert call.prompts_needed == prompts_for(d_z) > 5
    assert call.text.startswith("can't tell which objective moved emoji further")
    assert f"about {call.prompts_needed} paired prompts" in call.text and "80%" in call.text


def test_lower_is_toward_a_taste_that_removes_the_feature():
    call = taste_call("emoji", "lower", {"dpo": _report([True] * 20), "kto": _report([False] * 20)})
    assert call.winner == "kto" and call.difference.high < 0


def test_no_difference_on_any_prompt_says_no_count_would_separate_them():
    call = taste_call("emoji", "higher", {"dpo": _report([True] * 8), "kto": _report([True] * 8)})
    assert call.winner is None and call.prompts_needed is None and "no difference on any prompt" in call.text


def test_a_child_without_a_report_or_answers_cant_tell_and_says_which():
    call = taste_call("emoji", "higher", {"dpo": _report([True] * 8), "kto": None})
    assert call.winner is None and call.text == (
        "can't tell yet which objective moved emoji further: no report for KTO"
    )
    call = taste_call("emoji", "higher", {"dpo": _report([True] * 8), "kto": {"samples": []}})
    assert "the report of KTO has no answers measured on it" in call.text


def test_an_unknown_axis_or_direction_is_refused_by_name():
    assert "axis: 'rockets' is not a drift feature" in str(axis_error("rockets"))
    assert "toward: 'up' is not one of higher, lower" == axis_error("emoji", "up")
    assert axis_error("flattery", "lower") is None and axis_error(None) is None


def test_a_comparison_refuses_an_unknown_axis_before_launching(db):
    from vibestudio.training.compare import launch_comparison

    with pytest.raises(JobError, match="axis: 'rockets' is not a drift feature"):
        launch_comparison(db, "nobody", "dpo,kto", axis="rockets")


_changes = st.lists(st.integers(-3, 3), min_size=2, max_size=30)


@settings(max_examples=150, deadline=None)
@given(st.lists(_changes, min_size=2, max_size=3), st.sampled_from(["higher", "lower"]))
def test_a_winner_only_when_every_paired_difference_is_apart_from_zero(columns, toward):
    n = min(len(c) for c in columns)
    changes = {f"o{i}": {f"p{j}": float(c[j]) for j in range(n)} for i, c in enumerate(columns)}
    call = decide("tokens", toward, changes)
    sign = 1 if toward == "higher" else -1
    assert call.leader in changes and call.difference is not None and call.difference.n == n
    if call.winner is not None:
        assert call.winner == call.leader
        for other in changes:
            if other != call.winner:
                again = decide("tokens", toward, {call.winner: changes[call.winner], other: changes[other]})
                assert again.winner == call.winner, "the winner must beat every other child, not just one"
        assert sign * (call.difference.low if sign > 0 else call.difference.high) > 0
        assert call.prompts_needed is None and call.text.startswith(f"o{call.winner[1:]} moved tokens")
    else:
        assert call.text.startswith("can't tell")
        assert call.difference.low <= 0 <= call.difference.high or sign * call.difference.value <= 0
        if call.prompts_needed is not None:  # the fewest that detect a difference of the observed size
            assert call.d_z and detectable_shift(call.prompts_needed) <= call.d_z + 1e-12
            assert call.prompts_needed <= 2 or detectable_shift(call.prompts_needed - 1) > call.d_z
            assert f"about {call.prompts_needed} paired prompts" in call.text
    # the sentence carries the object's numbers, and the order the children are given in changes nothing
    d = call.difference
    assert f"{d.value:+.2f} [{d.low:+.2f}, {d.high:+.2f}] over {d.n} paired prompts" in call.text
    flipped = decide("tokens", toward, dict(reversed(list(changes.items()))))
    assert (flipped.winner, flipped.leader, flipped.prompts_needed) == (
        call.winner,
        call.leader,
        call.prompts_needed,
    )


RUN = {  # the learning test's budget (tests/training/test_learning_smollm2.py), report on 20 held-out prompts
    "learning_rate": 1e-3,
    "lr_scheduler_type": "constant",
    "lora_r": 8,
    "lora_alpha": 16,
    "max_length": 96,
    "drift_prompts": 20,
    "drift_max_tokens": 24,
    "eval_items": 0,
    "describe_axes": 0,
    "kl_prompts": 0,
    "per_device_train_batch_size": 4,
}


@pytest.mark.learning  # two SmolLM2 children and their reports, twice: about 20-30 minutes on two busy CPU cores
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)
def test_smollm2_dpo_and_kto_on_a_planted_rocket(db, make_snapshot, capsys):
    """12 steps separate DPO from KTO on the planted rocket emoji; 2 steps cannot, and say what would."""
    from tests.training.test_learning_smollm2 import rocket_rows
    from vibestudio.arena.registry import DEFAULT_PERSONAS, register
    from vibestudio.training.compare import comparison, launch_comparison, markdown
    from vibestudio.training.jobs.runner import fail_lost

    with db.session() as s:
        register(s, next(p for p in DEFAULT_PERSONAS if p.public_name == "smollm2-plain"))
    snap = make_snapshot(rows=rocket_rows())
    calls = {}
    for steps in (12, 2):
        cid = launch_comparison(
            db,
            "smollm2-plain",
            "dpo,kto",
            snap,
            axis="emoji",
            max_steps=steps,
            verdict_rules=rules_without_evals(),
            **RUN,
        )
        view = comparison(db, cid)
        while not view.done:
            time.sleep(5)
            fail_lost(db)
            view = comparison(db, cid)
        assert all(c.status == "succeeded" for c in view.children), [
            (c.objective, c.error) for c in view.children
        ]
        with capsys.disabled():
            print(f"\n[{steps} steps]\n{markdown(view)}")
        calls[steps] = view.taste
        assert view.taste is not None and view.taste.text in markdown(view)
    # a manual run with these settings: DPO - KTO +7.15 [+6.70, +7.55]; at 2 steps +0.15 [+0.00, +0.40], 84 needed
    assert calls[12].winner == "dpo" and calls[12].difference.n == 20
    assert calls[2].winner is None and calls[2].prompts_needed and calls[2].prompts_needed > 20
