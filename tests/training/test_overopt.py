"""Gold against sqrt(KL): a scripted gold curve that peaks is caught (observed and fitted), the Gao et al. form is
recovered from exact points, a rising curve raises nothing, and missing / short / constant gold is unmeasurable
with its reason. The alert reaches ``overoptimisation_alerts`` (what the job view and CLI show)."""

from __future__ import annotations

import math

import pytest

from vibestudio.training.objectives.overopt import fit_gao, gold_curve
from vibestudio.training.publishing.lineage import overoptimisation_alerts


def _job(gold_of_d, steps=range(0, 21, 2), kl_per_step=0.5, se=None):
    kl = [(s, kl_per_step * s) for s in steps]
    gold = [(s, gold_of_d(math.sqrt(kl_per_step * s))) for s in steps]
    metrics = {"kl": kl, "gold": gold, "rewards/margins": [(s, 0.1 * s) for s in steps]}
    if se is not None:
        metrics["gold_se"] = [(s, se) for s in steps]
    return metrics


def rl_gold(d: float) -> float:
    return 0.2 + (d * (0.5 - 0.3 * math.log(d)) if d > 0 else 0.0)


def test_a_gold_curve_that_peaks_is_caught_while_reward_rises():
    curve = gold_curve(_job(rl_gold))
    assert curve.state == "falling" and curve.reward_rising
    assert curve.best_step == 8  # d* = exp(0.5/0.3 - 1) = 1.95, KL 3.8: the nearest step is 8 (KL 4)
    assert "while rewards/margins still rises" in curve.reason and "best checkpoint is step 8" in curve.reason
    fit = curve.fit
    assert fit is not None and fit.r2 > 0.999
    assert fit.alpha == pytest.approx(0.5, abs=1e-6) and fit.beta == pytest.approx(0.3, abs=1e-6)
    assert fit.d_peak == pytest.approx(math.exp(0.5 / 0.3 - 1), rel=1e-6)
    alerts = overoptimisation_alerts(_job(rl_gold))
    assert len(alerts) == 1 and alerts[0].startswith("over-optimisation: gold peaked at step 8")


def test_the_fit_alone_warns_before_the_fall_is_sustained():
    # stop two points after the true peak: the observed fall is not sustained yet, the fit already sees the turn
    curve = gold_curve(_job(rl_gold, steps=range(0, 10)))
    assert curve.state == "peaked" and "Gao fit" in curve.reason and curve.alert


def test_best_of_n_form_is_recovered():
    ds = [0.2 * i for i in range(1, 12)]
    fit = fit_gao(ds, [0.1 + d * (0.8 - 0.25 * d) for d in ds], form="bon")
    assert fit is not None and fit.beta == pytest.approx(0.25) and fit.d_peak == pytest.approx(1.6)
    assert fit_gao(ds[:4], [1, 2, 3, 4]) is None  # too few points for three parameters
    with pytest.raises(ValueError, match="form"):
        fit_gao(ds, ds, form="ppo")


def test_rising_gold_raises_nothing():
    curve = gold_curve(_job(lambda d: 0.2 + 0.1 * d))
    assert curve.state == "rising" and curve.alert is None and curve.best_step == 20
    assert overoptimisation_alerts(_job(lambda d: 0.2 + 0.1 * d)) == []


def test_a_fall_within_the_noise_is_not_called():
    wobble = _job(lambda d: 0.5 + (0.01 if 1.9 < d < 2.1 else 0.0) + 0.001 * d, se=0.05)
    assert gold_curve(wobble).state != "falling"


@pytest.mark.parametrize(
    ("metrics", "reason"),
    [
        ({"kl": [(1, 0.1)]}, "no gold signal recorded"),
        ({"gold": [(0, 0.5), (5, 0.6), (10, 0.4)]}, "no KL to the reference"),
        ({"gold": [(4, 0.5), (8, 0.6)], "kl": [(4, 1.0), (8, 2.0)]}, "only 2 gold point(s)"),
        (
            {"gold": [(s, 0.25) for s in range(0, 12, 2)], "kl": [(s, s / 2) for s in range(0, 12, 2)]},
            "constant",
        ),
    ],
)
def test_missing_short_or_constant_gold_is_unmeasurable(metrics, reason):
    curve = gold_curve(metrics)
    assert curve.state == "unmeasurable" and reason in curve.reason and curve.alert is None
    assert overoptimisation_alerts(metrics) == []
