"""Win rate and length-controlled win rate against a baseline, the AlpacaEval 2 way (Dubois et al. 2024).

Take the battles of model m against the baseline on instruction x. Let y be the score of m (tie = 0.5).
Let t = tanh((len_m - len_baseline) / sd_m). Here sd_m is the standard deviation of that length difference
over m's battles. The model is

    logit P(m wins) = theta_m + phi_m * t + psi_m * gamma_x

gamma_x is the instruction difficulty, fitted across models without the model's own battles. That fit is
logit = theta_m + phi_m t + gamma_x, with a N(0, 1) prior on gamma. Battles are grouped by `question_id`,
else by prompt text. AlpacaEval estimates it from many other models. Fitting it on the model's own
outcomes would leak them into the difficulty and undo the length control. Then each model gets its own
(theta, phi, psi).

The length-controlled win rate is the model's prediction at zero length difference, averaged over its
instructions: 100 * mean_x sigmoid(theta_m + psi_m * gamma_x). A model that wins only by writing more gets
pulled towards 50. Lengths are token counts (`textfeatures.vibes`), FastChat `conv_metadata` or
`style_tokens_a/_b`.
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from ._blas import single_threaded
from ._board import prepare
from ._features import prompt_text, side_counts
from ._input import RatingsInputError, as_records

_GAMMA_PRIOR = 1.0
_RIDGE = 1e-4
#: Up to this many models each gets instruction difficulties fitted without its own battles (no leakage of its
#: outcomes into the difficulty term); with more models one shared fit is used (the leak shrinks like 1 / models).
LEAVE_OUT_MAX_MODELS = 20


@single_threaded
class WinRate(TypedDict):
    """Against the baseline: win rate and length-controlled win rate in percent, and the number of battles."""

    win_rate: float
    lc_win_rate: float | None
    n_battles: int


def win_rates(
    records: Any, baseline: str, *, both_good: str = "tie", both_bad: str = "tie"
) -> dict[str, WinRate]:
    """Per model that met `baseline`: `win_rate` and `lc_win_rate` in percent (ties count half) and `n_battles`.

    `lc_win_rate` is None when the answers' lengths are unknown (no conversations, no precomputed counts).
    """
    names, model, y, lc_inputs = _against(records, baseline, both_good=both_good, both_bad=both_bad)
    if not len(model):
        return {}
    raw = {int(m): float(100.0 * y[model == m].mean()) for m in np.unique(model)}
    counts = {int(m): int((model == m).sum()) for m in np.unique(model)}
    lc = None if lc_inputs is None else {m: _lc_value(*inputs) for m, inputs in lc_inputs.items()}
    return {
        names[m]: {
            "win_rate": raw[m],
            "lc_win_rate": None if lc is None else lc[m],
            "n_battles": counts[m],
        }
        for m in sorted(raw, key=lambda k: names[k])
    }


def _against(
    records: Any, baseline: str, *, both_good: str = "tie", both_bad: str = "tie"
) -> tuple[list[str], np.ndarray, np.ndarray, dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] | None]:
    """The battles against `baseline`: model names, each battle's other model and its score, and per model the
    length-controlled fit's inputs (features [1, t, gamma], scores, gamma) or None without answer lengths."""
    recs = as_records(records)
    prep = prepare(recs, both_good=both_good, both_bad=both_bad, ipw=False)
    if baseline not in prep.names:
        raise ValueError(f"baseline model {baseline!r} has no battles")
    base = prep.names.index(baseline)
    involved = (prep.a == base) | (prep.b == base)
    if not involved.any():
        return prep.names, np.zeros(0, dtype=np.int64), np.zeros(0), None
    base_is_a = prep.a[involved] == base
    model = np.where(base_is_a, prep.b[involved], prep.a[involved])
    y = np.where(base_is_a, 1.0 - prep.y[involved], prep.y[involved])
    rows = prep.rows[involved]
    try:
        fa, fb = side_counts(recs, rows, ("tokens",))
    except RatingsInputError:
        return prep.names, model, y, None
    len_a, len_b = fa[:, 0], fb[:, 0]
    delta = np.where(base_is_a, len_b - len_a, len_a - len_b)
    return prep.names, model, y, _lc_inputs(model, y, delta, _groups(recs, rows))


def _groups(recs: Any, rows: np.ndarray) -> np.ndarray | None:
    """Instruction id per battle: question_id when present, else the prompt text; None when neither exists."""
    frame = recs.frame
    keys: list[Any] = [None] * len(rows)
    if "question_id" in frame.columns:
        qids = frame["question_id"].to_numpy(dtype=object)
        keys = [None if _blank(qids[r]) else f"q:{qids[r]}" for r in rows]
    if "conversation_a" in frame.columns and any(k is None for k in keys):
        convs = frame["conversation_a"].to_numpy(dtype=object)
        keys = [k if k is not None else _prompt_key(convs[r]) for k, r in zip(keys, rows, strict=True)]
    if all(k is None for k in keys):
        return None
    labels: dict[Any, int] = {}
    return np.asarray(
        [labels.setdefault(k if k is not None else ("row", i), len(labels)) for i, k in enumerate(keys)]
    )


def _blank(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))


def _prompt_key(conversation: Any) -> str | None:
    text = prompt_text(conversation)
    return None if text is None else "p:" + text.strip()


def _lc_inputs(
    model: np.ndarray, y: np.ndarray, delta: np.ndarray, groups: np.ndarray | None
) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per model: the features [1, t, gamma] of its battles, its scores and the difficulties gamma."""
    ids, local = np.unique(model, return_inverse=True)
    k = len(ids)
    sd = np.array([delta[local == i].std() for i in range(k)])
    t = np.tanh(delta / np.where(sd[local] > 0, sd[local], 1.0))
    t[sd[local] == 0] = 0.0
    shared = None
    if groups is not None and k > LEAVE_OUT_MAX_MODELS:
        shared = _difficulty(local, k, y, t, groups, np.ones(len(y)))
    out = {}
    for i in range(k):
        sel = local == i
        if groups is None:
            gamma = np.zeros(int(sel.sum()))
        else:
            per_group = (
                shared if shared is not None else _difficulty(local, k, y, t, groups, (~sel).astype(float))
            )
            gamma = per_group[groups[sel]]
        out[int(ids[i])] = (np.column_stack([np.ones(sel.sum()), t[sel], gamma]), y[sel], gamma)
    return out


def _lc_value(features: np.ndarray, y: np.ndarray, gamma: np.ndarray) -> float:
    """The length-controlled win rate: the per-model fit's prediction at zero length difference, in percent."""
    coef = _logistic(features, y)
    return float(100.0 * expit(coef[0] + coef[2] * gamma).mean())


def _length_controlled(
    model: np.ndarray, y: np.ndarray, delta: np.ndarray, groups: np.ndarray | None
) -> dict[int, float]:
    return {m: _lc_value(*inputs) for m, inputs in _lc_inputs(model, y, delta, groups).items()}


def _difficulty(
    local: np.ndarray, k: int, y: np.ndarray, t: np.ndarray, groups: np.ndarray, keep: np.ndarray
) -> np.ndarray:
    """Instruction difficulty gamma per group from logit = theta_m + phi_m t + gamma_x with gamma ~ N(0, 1), fitted
    on the rows where `keep` is 1 (the other models' battles, so a model's own outcomes do not leak into it)."""
    n_groups = int(groups.max()) + 1

    def objective(params: np.ndarray) -> tuple[float, np.ndarray]:
        theta, phi, gamma = params[:k], params[k : 2 * k], params[2 * k :]
        eta = theta[local] + phi[local] * t + gamma[groups]
        value = -(keep * (y * log_expit(eta) + (1.0 - y) * log_expit(-eta))).sum()
        value += 0.5 * _GAMMA_PRIOR * (gamma**2).sum() + 0.5 * _RIDGE * (theta**2 + phi**2).sum()
        r = keep * (expit(eta) - y)
        grad = np.concatenate(
            [
                np.bincount(local, r, k) + _RIDGE * theta,
                np.bincount(local, r * t, k) + _RIDGE * phi,
                np.bincount(groups, r, n_groups) + _GAMMA_PRIOR * gamma,
            ]
        )
        return float(value), grad

    result = minimize(
        objective, np.zeros(2 * k + n_groups), jac=True, method="L-BFGS-B", options={"maxiter": 500}
    )
    gamma = result.x[2 * k :]
    return gamma - gamma.mean()


def _logistic(features: np.ndarray, y: np.ndarray, iterations: int = 50) -> np.ndarray:
    """Ridge-stabilised logistic regression with fractional outcomes, by Newton's method."""
    coef = np.zeros(features.shape[1])
    for _ in range(iterations):
        p = expit(features @ coef)
        grad = features.T @ (p - y) + _RIDGE * coef
        hess = (features * (p * (1.0 - p))[:, None]).T @ features + _RIDGE * np.eye(len(coef))
        step = np.linalg.solve(hess, grad)
        step *= min(1.0, 2.0 / max(np.abs(step).max(), 1e-300))
        coef -= step
        if np.abs(step).max() < 1e-10:
            break
    return coef
