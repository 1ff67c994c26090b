"""One rule, one place (#48): a minimum the checkpoint report needs is the minimum the pre-launch check enforces,
read from the same constant, so "Config valid" means the job can produce every part of its report."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers.training import pair_rows
from vibestudio.arena.prompts import mt_bench_first_turns
from vibestudio.training.jobs.config import CONFIG_KINDS, JOB_KINDS, config_errors
from vibestudio.training.jobs.service import check_config
from vibestudio.training.report import minimums, steps, vibecheck


def _meta(kind: str, name: str) -> dict:
    return dict(next(f.metadata for f in dataclasses.fields(CONFIG_KINDS[kind]) if f.name == name))


def test_the_check_and_the_report_read_the_same_constants():
    assert steps.MIN_PROMPTS is minimums.MIN_PROMPTS and vibecheck.MIN_VALIDATE is minimums.MIN_VALIDATE
    for kind in CONFIG_KINDS:
        assert _meta(kind, "drift_prompts")["zero_or_at_least"] == minimums.MIN_PROMPTS
        assert _meta(kind, "describe_prompts")["ge"] == minimums.MIN_VALIDATE
        assert f"at least {minimums.MIN_PROMPTS}" in _meta(kind, "drift_prompts")["help"]


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(sorted(k for k, v in JOB_KINDS.items() if v.publishes)), n=st.integers(-5, 120))
def test_drift_prompts_pass_the_check_only_when_the_report_can_measure_drift(kind, n):
    cfg, errors = config_errors({"kind": kind, "drift_prompts": n})
    makes_report = n == 0 or n >= steps.MIN_PROMPTS
    assert (cfg is not None) == makes_report, errors
    if not makes_report:
        assert [e.field for e in errors] == ["drift_prompts"]
        assert f"0 or at least {steps.MIN_PROMPTS}" in errors[0].message


def test_twelve_drift_prompts_is_not_config_valid():
    """The case from #48: 12 passed as "Config valid", then the report needed 20 and held the child."""
    cfg, errors = config_errors({"kind": "kto", "drift_prompts": 12})
    assert cfg is None and errors[0].field == "drift_prompts" and "(got 12)" in errors[0].message


def test_a_power_target_that_chooses_too_few_prompts_is_refused():
    _, errors = config_errors({"kind": "dpo", "detect_drift_sd": 3.0})
    assert [e.field for e in errors] == ["detect_drift_sd"] and str(steps.MIN_PROMPTS) in errors[0].message


def test_training_on_the_report_prompts_leaves_too_few_held_out(db, tiny_parent, make_snapshot):
    """A snapshot of MT-Bench's own first turns leaves the report fewer than 20 held-out prompts: refused before
    launch, by the report's own constant; a snapshot of other prompts is fine."""
    prompts = mt_bench_first_turns()
    taken = len(prompts) - steps.MIN_PROMPTS + 1
    rows = pair_rows(taken)
    for row, prompt in zip(rows, prompts[:taken], strict=True):
        row["prompt"] = [{"role": "user", "content": prompt}]
    snap = make_snapshot(rows=rows)
    check = check_config(db, {"kind": "dpo", "parent_contestant": "tiny-parent", "snapshot_hash": snap})
    assert [e.field for e in check.errors] == ["drift_prompts"], check.errors
    assert f"only {steps.MIN_PROMPTS - 1} held-out prompts" in check.errors[0].message
    fine = check_config(
        db, {"kind": "dpo", "parent_contestant": "tiny-parent", "snapshot_hash": make_snapshot(8)}
    )
    assert fine.ok, fine.errors
    skipped = check_config(
        db, {"kind": "dpo", "parent_contestant": "tiny-parent", "snapshot_hash": snap, "drift_prompts": 0}
    )
    assert skipped.ok, skipped.errors
