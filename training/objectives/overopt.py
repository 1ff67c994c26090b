"""Over-optimisation you can see while it happens: gold against sqrt(KL), the Gao et al. fit, and a peak
detector.

Gao, Schulman & Hilton (2022) studied a policy optimised against a proxy. Its *gold* reward, measured
against d = sqrt(KL(policy || reference)), follows a curve:
- ``gold(d) = g0 + d (alpha - beta log d)`` for RL;
- ``g0 + d (alpha - beta d)`` for best-of-n.
It rises, peaks and falls while the proxy (training) reward keeps rising.

A job records ``kl`` and a gold signal: metric ``gold``, optionally ``gold_se`` for its standard error.
Gold may be verifiable-eval accuracy, a judge's win rate against the parent, or a held-out reward model.
This module pairs each gold point with the KL measured at or before its step. It fits the form once it has
enough points, by linear least squares (the form is linear in g0, alpha, beta; numpy). It says whether
gold has peaked or falls while the training reward still rises.

A gold series that is missing, too short or constant is *unmeasurable*, with the reason: never "fine". A
fall counts when it is sustained: the last two points below the best. When standard errors are recorded,
it must also be larger than twice the standard error of the difference. Knows nothing about processes or
the UI.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

Series = list[tuple[int, float]]
MIN_POINTS = 3  # to see a peak at all
MIN_FIT_POINTS = 5  # three parameters and two degrees of freedom left
REWARD_NAMES = ("reward", "rewards/margins", "rewards/chosen")


@dataclass
class GaoFit:
    form: str  # "rl" or "bon"
    g0: float
    alpha: float
    beta: float
    r2: float
    n: int
    d_peak: float | None  # where the fitted curve peaks (None: it does not turn down)

    def predict(self, d: float) -> float:
        if self.form == "bon":
            return self.g0 + d * (self.alpha - self.beta * d)
        return self.g0 + d * (self.alpha - self.beta * math.log(d)) if d > 0 else self.g0


@dataclass
class GoldCurve:
    """Gold against sqrt(KL) for one job, with its verdict."""

    state: str  # unmeasurable, rising, peaked, falling
    reason: str
    points: list[tuple[int, float, float]] = field(default_factory=list)  # (step, sqrt KL, gold)
    best_step: int | None = None
    best_gold: float | None = None
    fit: GaoFit | None = None
    reward_rising: bool | None = None

    @property
    def alert(self) -> str | None:
        """The line the job list, job view and CLI show, or None when there is nothing to warn about."""
        if self.state == "falling":
            return self.reason
        if self.state == "peaked" and self.reward_rising:
            return self.reason
        return None


def fit_gao(ds: list[float], golds: list[float], form: str = "rl") -> GaoFit | None:
    """Least-squares fit of the Gao et al. form (with an offset g0); None with too few or degenerate points."""
    if form not in ("rl", "bon"):
        raise ValueError(f"form must be 'rl' or 'bon', got {form!r}")
    d = np.asarray(ds, dtype=float)
    g = np.asarray(golds, dtype=float)
    if len(d) < MIN_FIT_POINTS or np.ptp(d) <= 0 or np.ptp(g) <= 0:
        return None
    bend = d * d if form == "bon" else d * np.log(np.where(d > 0, d, 1.0))
    x = np.column_stack([np.ones_like(d), d, -bend])
    coef, *_ = np.linalg.lstsq(x, g, rcond=None)
    g0, alpha, beta = (float(c) for c in coef)
    resid = g - x @ coef
    r2 = 1.0 - float(resid @ resid) / float(((g - g.mean()) ** 2).sum())
    peak: float | None = None
    if beta > 1e-9 * max(1.0, abs(alpha)):
        if form == "bon":
            peak = alpha / (2 * beta)
        elif alpha / beta - 1.0 < 700:  # beyond that the peak is astronomically far: no turn in sight
            peak = math.exp(alpha / beta - 1.0)
    return GaoFit(form, g0, alpha, beta, r2, len(d), peak)


def _at_or_before(series: Series, step: int) -> float | None:
    best = None
    for s, v in series:
        if s <= step:
            best = v
    return best


def gold_curve(metrics: dict[str, Series], form: str = "rl") -> GoldCurve:
    """Read ``gold``, ``gold_se``, ``kl`` and the training reward from a job's metric series."""
    gold = sorted(metrics.get("gold") or [])
    kl = sorted(metrics.get("kl") or [])
    if not gold:
        return GoldCurve(
            "unmeasurable", "no gold signal recorded: set a gold signal and gold_every on the job"
        )
    if not kl:
        return GoldCurve(
            "unmeasurable", "no KL to the reference recorded: gold cannot be placed against sqrt(KL)"
        )
    points = []
    for step, value in gold:
        k = _at_or_before(kl, step)
        if k is None and step == 0:
            k = 0.0  # before training the policy is the reference
        if k is not None:
            points.append((step, math.sqrt(max(k, 0.0)), value))
    values = [p[2] for p in points]
    if len(points) < MIN_POINTS:
        return GoldCurve(
            "unmeasurable", f"only {len(points)} gold point(s) with a KL; need {MIN_POINTS}", points
        )
    if max(values) - min(values) <= 1e-12:
        return GoldCurve(
            "unmeasurable", f"gold is constant ({values[0]:.4g} at all {len(values)} points): it cannot rank steps",
            points,
        )  # fmt: skip
    i_best = int(np.argmax(values))
    best_step, best = points[i_best][0], values[i_best]
    curve = GoldCurve("rising", "", points, best_step, best, fit_gao([p[1] for p in points], values, form))
    reward_name = next((n for n in REWARD_NAMES if metrics.get(n)), None)
    if reward_name:
        after = [v for s, v in sorted(metrics[reward_name]) if s >= best_step]
        curve.reward_rising = len(after) >= 2 and _mean(after[len(after) // 2 :]) > _mean(
            after[: len(after) // 2]
        )
    se = dict(metrics.get("gold_se") or [])
    last_step, last = points[-1][0], values[-1]
    sustained = i_best <= len(points) - 3 and values[-2] < best and last < best
    noise = math.hypot(se.get(best_step, 0.0), se.get(last_step, 0.0))
    beyond_noise = best - last > 2 * noise
    reward_note = f"while {reward_name} still rises" if curve.reward_rising else ""
    if sustained and beyond_noise:
        curve.state = "falling"
        curve.reason = (
            f"gold peaked at step {best_step} ({best:.4g}) and fell to {last:.4g} by step {last_step} "
            f"{reward_note}".strip()
            + ("" if se else " (no gold_se recorded: the fall is not checked against noise)")
            + f"; the best checkpoint is step {best_step}"
        )
    elif (
        curve.fit and curve.fit.d_peak is not None and curve.fit.d_peak < points[-1][1] and curve.fit.r2 > 0.5
    ):
        curve.state = "peaked"
        curve.reason = (
            f"the Gao fit (R² {curve.fit.r2:.2f}, n={curve.fit.n}) puts the gold peak at sqrt(KL) "
            f"{curve.fit.d_peak:.3g}, before the current {points[-1][1]:.3g} {reward_note}".strip()
        )
    else:
        curve.reason = (
            f"gold still at or near its best (best {best:.4g} at step {best_step}, last {last:.4g})"
        )
    return curve


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)
