"""The report's item counts chosen for a stated power (#36): ``detect_drift_sd`` and ``detect_eval_change`` give
the fewest prompts and eval items that detect that difference 80% of the time at 5%, the estimate and the report
job read the same counts, and the report says what they were chosen for."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vibestudio.training.jobs.config import ConfigError, make_config
from vibestudio.training.jobs.estimate import report_seconds
from vibestudio.training.report.fair import detectable_rate, detectable_shift, items_for, prompts_for
from vibestudio.training.report.job import ReportOptions
from vibestudio.training.report.text import drift_md


@given(st.floats(0.05, 3.0))
def test_prompts_for_is_the_fewest_that_detect_the_shift(shift):
    n = prompts_for(shift)
    assert detectable_shift(n) <= shift + 1e-12
    if n > 2:
        assert detectable_shift(n - 1) > shift


@given(st.floats(0.01, 0.99))
def test_items_for_is_the_fewest_that_detect_the_change(change):
    n = items_for(change)
    assert detectable_rate(n) <= change + 1e-12
    if n > 2:
        assert detectable_rate(n - 1) > change


def test_the_config_chooses_the_counts_and_the_estimate_and_the_report_job_read_them():
    cfg = make_config("dpo", parent_contestant="p", detect_drift_sd=0.4, detect_eval_change=0.15)
    assert cfg.report_counts() == (50, 70)
    explicit = make_config("dpo", parent_contestant="p", drift_prompts=50, eval_items=70)
    assert report_seconds(cfg, gpu=False) == report_seconds(explicit, gpu=False)
    options = ReportOptions.from_config(cfg.to_dict())
    assert options.counts() == (50, 70)
    off = make_config("dpo", parent_contestant="p", drift_prompts=0, detect_drift_sd=0.4, eval_items=0)
    assert (off.report_counts(), report_seconds(off, gpu=False)) == ((0, 0), 0.0)
    # no child published, no report to wait for, whatever its settings
    unpublished = make_config("dpo", parent_contestant="p", publish=False)
    assert report_seconds(explicit, gpu=False) > 0 and report_seconds(unpublished, gpu=False) == 0.0
    plain = ReportOptions.from_config(make_config("dpo", parent_contestant="p").to_dict())
    assert plain.counts() == (80, 70)  # without a target: the counts as set


@pytest.mark.parametrize(
    ("field", "value"), [("detect_drift_sd", 0.0), ("detect_drift_sd", 9), ("detect_eval_change", 1.0)]
)
def test_a_target_out_of_range_is_refused_by_field(field, value):
    with pytest.raises(ConfigError, match=field):
        make_config("dpo", parent_contestant="p", **{field: value})


def test_the_report_says_what_the_counts_were_chosen_for():
    setup = {
        "power": {
            "line": "With 80% power ...",
            "chosen_for": {"drift_sd": 0.4, "eval_change": 0.15, "prompts": 50, "items": 70},
        }
    }
    text = drift_md({"setup": setup, "n_prompts": 50})
    assert (
        "Counts chosen for that power: 50 prompts for a drift of 0.4 SD; 70 eval items for a change of 15%."
        in text
    )


def test_one_default_eval_count_chosen_for_a_stated_change():
    """The job config, the report job, ``drift_report`` and ``vibestudio drift`` default to the same number of eval
    items, the fewest that detect the default change."""
    import inspect

    from vibestudio.studio.cli.models import drift_cmd as drift
    from vibestudio.training.report.fair import DEFAULT_EVAL_CHANGE, DEFAULT_EVAL_ITEMS
    from vibestudio.training.report.steps import drift_report

    assert items_for(DEFAULT_EVAL_CHANGE) == DEFAULT_EVAL_ITEMS
    assert make_config("dpo", parent_contestant="p").eval_items == DEFAULT_EVAL_ITEMS
    assert ReportOptions().eval_items == DEFAULT_EVAL_ITEMS
    assert inspect.signature(drift_report).parameters["eval_items"].default == DEFAULT_EVAL_ITEMS
    assert inspect.signature(drift).parameters["eval_items"].default.default == DEFAULT_EVAL_ITEMS


def _item(i: int, category: str):
    from vibestudio.standings.evals import EvalItem

    return EvalItem(id=f"i{i}", category=category, prompt=f"p{i}", check={"type": "lowercase"})


@given(st.lists(st.sampled_from("abcd"), max_size=40), st.integers(-1, 45))
def test_part_of_the_eval_set_is_taken_in_turn_from_each_category(categories, n):
    from collections import Counter

    from vibestudio.standings.evals import spread

    items = [_item(i, c) for i, c in enumerate(categories)]
    part = spread(items, n)
    want = len(items) if n < 0 else min(n, len(items))
    assert len(part) == want and len({x.id for x in part}) == want
    assert {x.id for x in part} <= {x.id for x in items}
    have, total = Counter(x.category for x in part), Counter(categories)
    for a in total:
        for b in total:
            # a category with two fewer than another has given all it has
            assert have[a] >= have[b] - 1 or have[a] == total[a]
    for c in total:  # within a category, the set's own order
        mine = [x.id for x in part if x.category == c]
        assert mine == [x.id for x in items if x.category == c][: len(mine)]


def test_the_default_part_of_the_built_in_set_asks_every_category():
    from vibestudio.standings.evals import load_items, spread
    from vibestudio.training.report.fair import DEFAULT_EVAL_ITEMS

    _, items = load_items()
    part = spread(items, DEFAULT_EVAL_ITEMS)
    assert len(part) == DEFAULT_EVAL_ITEMS
    assert {x.category for x in part} == {x.category for x in items}
