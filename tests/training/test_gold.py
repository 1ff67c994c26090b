"""The gold signal in training: the callback measures at step 0 and every N steps, stops once a scripted gold curve
has fallen and puts the best-gold weights back; a real tiny DPO job records gold against KL and publishes the
last weights when gold is unmeasurable (constant), saying why."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from tests.helpers.postgres import ONE_KIND
from tests.helpers.training import FAST
from vibestudio.training.jobs.config import ConfigError, make_config
from vibestudio.training.jobs.runner import wait
from vibestudio.training.jobs.service import launch_dpo
from vibestudio.training.objectives.gold import make_gold_callback
from vibestudio.training.objectives.overopt import gold_curve


class ScriptedGoldCheck:
    """Gold read off a script by step; KL grows with the step (what a job's KL check would log)."""

    def __init__(self, gold_by_step: dict[int, float]) -> None:
        self.gold_by_step = gold_by_step
        self.series: dict[str, list[tuple[int, float]]] = {"gold": [], "kl": [], "gold_se": []}
        self.metrics = SimpleNamespace(log=self.log)

    def log(self, step, values):
        for k, v in values.items():
            self.series.setdefault(k, []).append((step, v))

    def measure(self, trainer, step):
        values = {"gold": self.gold_by_step[step], "gold_se": 0.01}
        self.log(step, {**values, **({"kl": 0.5 * step} if step else {})})
        return values


def _run(gold_by_step, every=2, steps=20, stop=True):
    model = torch.nn.Linear(2, 1)
    trainer = SimpleNamespace(model=model, accelerator=SimpleNamespace(unwrap_model=lambda m: m))
    check = ScriptedGoldCheck(gold_by_step)
    cb = make_gold_callback(check, every, stop, lambda: check.series)
    cb.trainer = trainer
    state = SimpleNamespace(is_world_process_zero=True, global_step=0)
    control = SimpleNamespace(should_training_stop=False)
    cb.on_train_begin(None, state, control)
    weights = {0: model.weight.detach().clone()}
    for step in range(1, steps + 1):
        with torch.no_grad():
            model.weight.add_(1.0)  # a training step moves the weights
        weights[step] = model.weight.detach().clone()
        state.global_step = step
        cb.on_step_end(None, state, control)
        if control.should_training_stop:
            break
    return cb, model, weights, state.global_step, check


def test_stops_after_a_sustained_fall_and_restores_the_best_weights():
    gold = {0: 0.2, 2: 0.4, 4: 0.6, 6: 0.7, 8: 0.5, 10: 0.3, 12: 0.2, 14: 0.1}
    cb, model, weights, last, check = _run(gold)
    assert last == 10 and cb.stopped_early  # 8 and 10 both below the best (6), beyond 2 standard errors
    assert gold_curve(check.series).best_step == 6
    assert cb.restore_best() == 6
    assert torch.equal(model.weight, weights[6])


def test_rising_gold_never_stops():
    cb, _, _, last, _ = _run({s: 0.1 + 0.01 * s for s in range(0, 21, 2)})
    assert last == 20 and not cb.stopped_early and cb.restore_best() == 20


def test_without_the_option_nothing_is_kept():
    cb, _, _, last, _ = _run({s: 1.0 - 0.01 * s for s in range(0, 21, 2)}, stop=False)
    assert last == 20 and cb.restore_best() is None


def test_config_checks_the_gold_options():
    with pytest.raises(ConfigError, match="stop_at_best_gold needs a gold signal"):
        make_config("dpo", parent_contestant="p", stop_at_best_gold=True)
    with pytest.raises(ConfigError, match="gold .vibes. unknown; choose one of none, evals"):
        make_config("dpo", parent_contestant="p", gold="vibes")
    assert make_config("dpo", parent_contestant="p").kl_every == 4  # KL during training by default


@pytest.mark.slow
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)
def test_a_real_job_records_gold_against_kl(db, tiny_parent, make_snapshot):
    job_id = launch_dpo(
        db,
        "tiny-parent",
        make_snapshot(8),
        **{**FAST, "gold": "evals", "gold_every": 2, "gold_items": 3, "gold_max_new_tokens": 6},
        stop_at_best_gold=True,
    )
    view = wait(db, job_id, timeout=240)
    assert view.status == "succeeded", view.error or view.log_tail
    assert [s for s, _ in view.metrics["gold"]] == [0, 2, 4]
    assert [s for s, _ in view.metrics["kl"]][:3] == [0, 2, 4] and view.metrics["kl"][0][1] == 0.0
    assert all(0.0 <= v <= 1.0 for _, v in view.metrics["gold"]) and view.last("gold_n") == 3
    curve = gold_curve(view.metrics)
    published = view.last("published_step")
    if curve.state == "unmeasurable":  # a random tiny model passes nothing: constant gold
        assert "constant" in curve.reason and published == 4 and "gold unmeasurable" in view.log_tail
    else:
        assert published in (curve.best_step, 4)
