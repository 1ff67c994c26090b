"""Tie models: the Rao-Kupper and Davidson extensions of Bradley-Terry, with the tie parameters fitted.

Plain Bradley-Terry counts a tie as half a win each. The tie models give a tie its own probability. Let d
= theta_i - theta_j.
- Davidson (1970): P(i) = e^(d/2) / D, P(j) = e^(-d/2) / D, P(tie kind k) = nu_k / D, with D = e^(d/2) +
  e^(-d/2) + sum_k nu_k. Given that the battle was not a tie, P(i) = sigmoid(d), as in Bradley-Terry.
- Rao-Kupper (1967): P(i) = sigmoid(d - c), P(j) = sigmoid(-d - c), P(tie) = 1 - P(i) - P(j). Here c is
  the log of their theta >= 1, kept positive as c = e^eta. The tie mass is split between tie kinds by
  fitted shares.

Tie kinds (plain tie, both-bad, both-good) that occur in the data each get their own parameter. So "both
good" and "both bad" stay distinct. A kind that never occurs gets none.

Parameters are fitted together by maximum likelihood, warm-started from Bradley-Terry. The fit is Fisher
scoring on the expected information, over per-pair aggregated counts. The rating gauge is fixed by
sum(theta) = 0. Derivatives of the per-pair log-probabilities with respect to d and the tie parameters are
central differences, one vectorised evaluation per parameter. That keeps each model a few lines. Intervals
are sandwich (information^-1 meat information^-1 from per-cell scores) or bootstrap. The bootstrap
resamples cell counts and refits each round from the full-data fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vibestudio.common.outcomes import FASTCHAT_WINNERS

from . import _fit

#: Board methods: plain Bradley-Terry (ties half a win) and the two tie models.
METHODS = ("bt", "rao-kupper", "davidson")
TIE_METHODS = ("rao-kupper", "davidson")
#: Outcome columns of the per-pair counts, seen from the lower model index i.
OUTCOMES = ("i", "j", *FASTCHAT_WINNERS[2:])
# (winner code * 2 + [a > b]) -> outcome column from the lower index
_OUTCOME5 = np.array([0, 1, 1, 0, 2, 2, 3, 3, 4, 4], dtype=np.int64)
_H = 1e-5


@dataclass
class TieData:
    """Per unordered pair (pi < pj): weighted counts (P x 5), squared-weight sums and raw counts."""

    design: _fit.Design
    counts: np.ndarray
    w2: np.ndarray
    raw: np.ndarray
    kinds: list[int]  # outcome columns (2, 3, 4) that occur

    @property
    def kind_names(self) -> list[str]:
        return [OUTCOMES[k] for k in self.kinds]


def aggregate(a: np.ndarray, b: np.ndarray, winner: np.ndarray, w: np.ndarray, n_models: int) -> TieData:
    """Counts of the five outcomes per unordered pair of models."""
    m = n_models
    outcome = _OUTCOME5[winner.astype(np.int64) * 2 + (a > b)]
    key = np.minimum(a, b).astype(np.int64) * m + np.maximum(a, b)
    present, pair = np.unique(key, return_inverse=True)
    cell = pair * 5 + outcome
    size = len(present) * 5
    raw = np.bincount(cell, minlength=size).reshape(-1, 5).astype(np.float64)
    counts = np.bincount(cell, w, minlength=size).reshape(-1, 5)
    w2 = np.bincount(cell, w * w, minlength=size).reshape(-1, 5)
    kinds = [k for k in (2, 3, 4) if raw[:, k].sum() > 0]
    return TieData(_fit.Design(present // m, present % m, m), counts, w2, raw, kinds)


# -- the two models: log-probabilities of the outcome columns [i, j, kinds...] per pair -----------------------------
def _logp(method: str, d: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """(P, 2 + K) log-probabilities for logit differences `d` (P,) and tie parameters `eta` (K,)."""
    k = len(eta)
    if method == "davidson":
        parts = [d / 2.0, -d / 2.0] + [np.full_like(d, e) for e in eta]
        stacked = np.stack(parts, axis=1)
        top = stacked.max(axis=1, keepdims=True)
        log_den = top + np.log(np.exp(stacked - top).sum(axis=1, keepdims=True))
        return stacked - log_den
    c = np.exp(eta[0]) if k else 0.0
    li = _log_sigmoid(d - c)
    lj = _log_sigmoid(-d - c)
    out = [li, lj]
    if k:
        p_tie = np.maximum(_sigmoid(c - d) - _sigmoid(-c - d), 1e-300)
        shares = np.concatenate([[0.0], eta[1:]])
        log_shares = shares - np.log(np.exp(shares - shares.max()).sum()) - shares.max()
        out += [np.log(p_tie) + s for s in log_shares]
    return np.stack(out, axis=1)


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


def _sigmoid(x: np.ndarray | float) -> np.ndarray:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * np.asarray(x))))


def _scores(method: str, d: np.ndarray, eta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """log p (P, O), d log p / d d (P, O), d log p / d eta (P, O, K) by central differences."""
    logp = _logp(method, d, eta)
    s_d = (_logp(method, d + _H, eta) - _logp(method, d - _H, eta)) / (2 * _H)
    s_e = np.empty(logp.shape + (len(eta),))
    for k in range(len(eta)):
        step = np.zeros(len(eta))
        step[k] = _H
        s_e[:, :, k] = (_logp(method, d, eta + step) - _logp(method, d, eta - step)) / (2 * _H)
    return logp, s_d, s_e


@dataclass
class TieFit:
    method: str
    theta: np.ndarray
    eta: np.ndarray
    kinds: list[str]
    info: np.ndarray  # expected information of (theta, eta) at the optimum, ridge included, no gauge term
    converged: bool
    iterations: int
    notes: list[str] = field(default_factory=list)

    def as_bt_fit(self) -> _fit.Fit:
        m = len(self.theta)
        return _fit.Fit(self.theta, np.zeros(0), self.info[:m, :m], self.iterations, self.converged)


def _columns(data: TieData, counts: np.ndarray) -> np.ndarray:
    """Counts restricted to the outcome columns the model has: i, j and the tie kinds that occur."""
    return counts[..., [0, 1, *data.kinds]]


def _loglik(method: str, data: TieData, c: np.ndarray, theta: np.ndarray, eta: np.ndarray) -> float:
    d = theta[data.design.pi] - theta[data.design.pj]
    return float((c * _logp(method, d, eta)).sum())


def fit(
    method: str,
    data: TieData,
    *,
    counts: np.ndarray | None = None,
    theta0: np.ndarray,
    eta0: np.ndarray | None = None,
    ridge: float = _fit.RIDGE,
    tol: float = 1e-8,
    max_iter: int = 100,
) -> TieFit:
    """Maximum-likelihood fit of a tie model by Fisher scoring with backtracking."""
    if method not in TIE_METHODS:
        raise ValueError(f"method must be one of {', '.join(TIE_METHODS)}, got {method!r}")
    design = data.design
    m = design.n_models
    c = _columns(data, data.counts if counts is None else counts)
    eta = start_eta(method, data) if eta0 is None else np.array(eta0, dtype=np.float64)
    theta = np.array(theta0, dtype=np.float64) - np.mean(theta0)
    inc = design.incidence()
    n = c.sum(axis=1)
    current = _loglik(method, data, c, theta, eta) - 0.5 * ridge * float(theta @ theta)
    converged, it = False, 0
    info = np.zeros((m + len(eta), m + len(eta)))
    for it in range(1, max_iter + 1):  # noqa: B007  (the count is reported)
        d = theta[design.pi] - theta[design.pj]
        logp, s_d, s_e = _scores(method, d, eta)
        p = np.exp(logp)
        grad = np.concatenate([inc.T @ (c * s_d).sum(axis=1), np.einsum("po,pok->k", c, s_e)])
        grad[:m] -= ridge * theta
        info = _information(design, n, p, s_d, s_e, ridge)
        step = np.linalg.solve(_fit._gauged(info, m), grad)
        t = 1.0
        while True:
            new_theta, new_eta = theta + t * step[:m], eta + t * step[m:]
            new = _loglik(method, data, c, new_theta, new_eta) - 0.5 * ridge * float(new_theta @ new_theta)
            if new >= current - 1e-12 * abs(current) or t < 1e-6:
                break
            t *= 0.5
        theta, eta, current = new_theta - new_theta.mean(), new_eta, new
        if np.max(np.abs(t * step)) < tol:
            converged = True
            break
    return TieFit(method, theta, eta, data.kind_names, info, converged, it)


def _information(
    design: _fit.Design, n: np.ndarray, p: np.ndarray, s_d: np.ndarray, s_e: np.ndarray, ridge: float
) -> np.ndarray:
    """Expected information sum_pairs n_p sum_o p_o s_o s_o^T of (theta, eta)."""
    return _outer(design, n[:, None] * p, s_d, s_e, ridge)


def _outer(design: _fit.Design, c: np.ndarray, s_d: np.ndarray, s_e: np.ndarray, ridge: float) -> np.ndarray:
    """sum over pair x outcome cells of c * s s^T with s = (s_d (e_i - e_j), s_e)."""
    m, k = design.n_models, s_e.shape[2]
    out = np.zeros((m + k, m + k))
    out[:m, :m] = design.assemble((c * s_d * s_d).sum(axis=1))
    cross = design.incidence().T @ np.einsum("po,po,pok->pk", c, s_d, s_e)
    out[:m, m:] = cross
    out[m:, :m] = cross.T
    out[m:, m:] = np.einsum("po,pok,pol->kl", c, s_e, s_e)
    out[np.arange(m), np.arange(m)] += ridge
    return out


def start_eta(method: str, data: TieData) -> np.ndarray:
    """Tie parameters that match the observed tie shares for two equal models."""
    total = data.raw.sum()
    shares = np.array([data.raw[:, k].sum() for k in data.kinds]) / max(total, 1.0)
    t = float(min(shares.sum(), 0.99))
    if not data.kinds:
        return np.zeros(0)
    if method == "davidson":
        return np.log(np.maximum(2.0 * shares / (1.0 - t), 1e-6))
    c = 2.0 * np.arctanh(max(t, 1e-6))
    return np.concatenate([[np.log(c)], np.log(np.maximum(shares[1:], 1e-9) / max(shares[0], 1e-9))])


def equal_model_ties(method: str, eta: np.ndarray) -> np.ndarray:
    """P(tie of each kind) for two models of equal rating (d = 0): the readable form of the tie parameters."""
    return np.exp(_logp(method, np.zeros(1), eta)[0, 2:])


def sandwich(fit_: TieFit, data: TieData) -> np.ndarray:
    """Robust covariance information^-1 meat information^-1 of (theta, eta), theta in the sum-zero gauge."""
    m = len(fit_.theta)
    d = fit_.theta[data.design.pi] - fit_.theta[data.design.pj]
    _, s_d, s_e = _scores(fit_.method, d, fit_.eta)
    meat = _outer(data.design, _columns(data, data.w2), s_d, s_e, 0.0)
    inv = np.linalg.inv(_fit._gauged(fit_.info, m))
    return inv @ meat @ inv


def bootstrap(
    fit_: TieFit, data: TieData, rng: np.random.Generator, rounds: int, resample: str, ridge: float
) -> tuple[np.ndarray, np.ndarray]:
    """(rounds, M) theta and (rounds, K) eta: cell counts resampled, each round refitted from the full-data fit."""
    raw = data.raw
    mean_w = np.divide(data.counts, raw, out=np.zeros_like(raw), where=raw > 0)
    drawn = _fit.resample_counts(rng, raw.ravel().astype(np.int64), rounds, resample)
    thetas, etas = [], []
    for r in range(rounds):
        counts = drawn[r].reshape(raw.shape) * mean_w
        refit = fit(fit_.method, data, counts=counts, theta0=fit_.theta, eta0=fit_.eta, ridge=ridge, tol=1e-6)
        thetas.append(refit.theta)
        etas.append(refit.eta)
    return np.asarray(thetas), np.asarray(etas)


def predict(method: str, theta: np.ndarray, eta: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(N, 3) probabilities of (a wins, b wins, any tie) for battles a vs b."""
    logp = _logp(method, theta[a] - theta[b], eta)
    p = np.exp(logp)
    return np.column_stack([p[:, 0], p[:, 1], p[:, 2:].sum(axis=1)])
