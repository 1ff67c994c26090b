"""The Train and Models tabs: a refused action answers in place (no red Error badge, no traceback in the log),
the training chart gives each metric its own axis, and a trained child without a report says why."""

from __future__ import annotations

import logging

import pytest

from vibestudio.arena.battles import ArenaService
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.common.settings import get_settings
from vibestudio.studio.context import StudioContext
from vibestudio.studio.pages import models, train


@pytest.fixture
def ctx(db):
    with db.session() as s:
        register(s, ContestantSpec("p0"))
    return StudioContext(settings=get_settings(), db=db, arena=ArenaService(db))


def _no_traceback(caplog):
    assert not [r for r in caplog.records if r.exc_info], "a user's mistake left a traceback in the log"


def test_launch_with_listed_problems_answers_in_place_and_keeps_the_estimate(ctx, caplog):
    caplog.set_level(logging.INFO)
    on_launch = train._config_handlers(ctx).on_launch
    launched, check, *_ = on_launch("kind: dpo\nparent_contestant: nobody\nmax_steps: 0\n", None)
    assert "Not launched: fix the" in launched and "problem" in launched
    assert "Problems (nothing launched)" in check
    _no_traceback(caplog)


def test_clone_cancel_resume_and_publish_with_nothing_picked_say_what_to_do(ctx, caplog):
    caplog.set_level(logging.INFO)
    handlers = train._job_handlers(ctx)
    yaml_out, check, _ = handlers.on_clone(None, None)
    assert "Pick a job from the table first" in check and yaml_out == {"__type__": "update"}
    for act in (handlers.on_cancel, handlers.on_resume):
        said, _ = act(None, "", None)
        assert "Pick a job from the table first" in said
    assert "Pick a job" in handlers.on_publish(None, None, "", None)
    assert "no job 999" in handlers.on_cancel(999, "", None)[0]
    _no_traceback(caplog)


def test_each_training_metric_has_its_own_axis():
    metrics = {"loss": [(1, 0.69), (2, 0.6)], "rewards/margins": [(1, 0.001), (2, 0.01)], "kl": [(2, 0.02)]}
    fig = train._figure("dpo", metrics)
    axes = {t.yaxis for t in fig.data}
    assert len(fig.data) == 3 and len(axes) == 3  # loss near 0.7 no longer flattens a margin near 0.01
    grpo = train._figure(
        "grpo", {"heldout/accuracy": [(1, 0.5)], "heldout/low": [(1, 0.3)], "heldout/high": [(1, 0.7)]}
    )
    assert len({t.yaxis for t in grpo.data}) == 1  # an interval's bounds share their estimate's panel
    assert train._figure("dpo", {}).data == ()


def test_a_trained_child_without_a_report_says_why(ctx):
    page = {
        "contestant": {"job_id": 3},
        "verdict": {"state": "pending", "state_line": "⏳ pending: published"},
    }
    assert "running" in models.no_report_md(page) and "not a trained child" not in models.no_report_md(page)
    page["verdict"] = {"state": "held", "state_line": "⛔ held: cancelled"}
    assert "cancelled" in models.no_report_md(page) and "saved for this trained child" in models.no_report_md(
        page
    )
    assert "not a trained child" in models.no_report_md({"contestant": {"job_id": None}, "verdict": {}})


def test_the_task_set_minimum_is_stated_in_the_form(ctx):
    import gradio as gr

    from vibestudio.training.tasks.store import MIN_TASKS

    with gr.Blocks():
        box = train._grpo_box(ctx, [], [(train.NONE, train.NONE)])
    assert f"at least {MIN_TASKS} tasks" in box.task_set.info


def test_the_form_offers_every_registered_kind_with_its_beta_and_shows_kto_classes():
    from vibestudio.training.jobs.config import JOB_KINDS
    from vibestudio.training.jobs.service import ConfigCheck

    assert set(train.KINDS.values()) == set(JOB_KINDS)

    def form(label: str, beta: float | None) -> dict:
        return train.form_config(label, "p0", None, "all", 4, None, beta, True, 0, 0, None, [])

    assert form("SimPO", 2.5)["beta"] == 2.5 and form("KTO", 0.2)["kind"] == "kto"
    assert "beta" not in form("KTO", None)
    assert train.on_kind("SimPO")[2]["value"] == 2.0 and train.on_kind("ORPO")[2]["value"] == 0.1
    # KTO's own box shows for KTO alone; its fields reach the config, empty ones keep the kind's defaults
    assert [train.on_kind(k)[3]["visible"] for k in ("KTO", "DPO", "GRPO")] == [True, False, False]
    kto = train.with_kto(form("KTO", None), 3.2, 1.0, " helpfulness ", "4")
    assert kto["desirable_weight"] == 3.2 and kto["undesirable_weight"] == 1.0
    assert kto["score_criterion"] == "helpfulness" and kto["desirable_threshold"] == 4.0
    assert "score_criterion" not in train.with_kto(form("KTO", None), 1.0, 1.0, "", "")
    assert train.with_kto(form("DPO", 0.1), 3.2, 1.0, "x", "4") == form("DPO", 0.1)  # other kinds untouched
    assert (
        train.with_kto(form("KTO", None), 1.0, 1.0, "c", "high")["desirable_threshold"] == "high"
    )  # the check names it
    balance = {
        "desirable": 2,
        "undesirable": 6,
        "desirable_weight": 1.0,
        "undesirable_weight": 1.0,
        "desirable_weight_range": (3.0, 3.99),
        "undesirable_weight_range": (0.25, 0.33),
        "in_range": False,
    }
    text = train.check_markdown(ConfigCheck(None, [], None, None, balance))
    assert "2 desirable / 6 undesirable" in text and "desirable_weight in [3, 3.99]" in text
