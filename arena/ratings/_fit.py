"""Paired-comparison logistic fits: Bradley-Terry with optional covariates, in natural-log-odds units.

Model: P(a beats b) = sigmoid(theta[a] - theta[b] + x . beta), fitted by weighted maximum likelihood with fractional
outcomes (a tie is y = 0.5, i.e. half a win each). Rows can be single battles or battles aggregated per pair
(y = score / count, w = count), which gives the same likelihood. The solver is Newton's method on the exact Hessian
(models x models is small), with the rating gauge fixed by keeping sum(theta) = 0, a tiny ridge on theta for
numerical safety, and backtracking when a step does not lower the loss.

Also here: the sandwich covariance (bread^-1 meat bread^-1) and batched refits for bootstrap rounds (many weight
vectors at once, warm-started at the full-data fit, using chord steps with the full-data Hessian and falling back to
full Newton steps when those contract slowly). This module knows nothing about battles, files or the rating scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, log_expit

#: Ridge on theta (natural-log units). Negligible next to the curvature of any real data set; it keeps the Newton
#: system well posed for disconnected comparison graphs.
RIDGE = 1e-6
_MAX_DENSE_PAIRS = 40_000_000


class Design:
    """Who played whom in each row (model indices `a`, `b`) plus optional covariates `X` (rows x F)."""

    def __init__(self, a: np.ndarray, b: np.ndarray, n_models: int, X: np.ndarray | None = None) -> None:
        self.a = np.ascontiguousarray(a, dtype=np.int64)
        self.b = np.ascontiguousarray(b, dtype=np.int64)
        self.n_models = int(n_models)
        self.X = None if X is None or X.shape[1] == 0 else np.ascontiguousarray(X, dtype=np.float64)
        self.n_features = 0 if self.X is None else self.X.shape[1]
        self.n_rows = len(self.a)
        m = self.n_models
        lo = np.minimum(self.a, self.b)
        hi = np.maximum(self.a, self.b)
        key = lo * m + hi
        if m * m <= _MAX_DENSE_PAIRS:
            present = np.bincount(key, minlength=m * m) > 0
            uniq = np.flatnonzero(present)
            index = np.cumsum(present) - 1
            self.pair = index[key]
        else:
            uniq, self.pair = np.unique(key, return_inverse=True)
        self.pi = uniq // m
        self.pj = uniq % m
        self.n_pairs = len(uniq)

    @property
    def size(self) -> int:
        """Number of parameters: models plus covariates."""
        return self.n_models + self.n_features

    def eta(self, theta: np.ndarray, beta: np.ndarray | None) -> np.ndarray:
        """Logits per row; theta is (M,) or (R, M), beta (F,) or (R, F)."""
        out = theta[..., self.a] - theta[..., self.b]
        if self.X is not None and beta is not None:
            out = out + beta @ self.X.T
        return out

    def scatter(self, v: np.ndarray) -> np.ndarray:
        """Gradient-style reduction: sum_r v_r (e_a - e_b, x_r) for each leading index; v is (rows,) or (R, rows)."""
        m = self.n_models
        v2 = np.atleast_2d(v)
        out = np.empty((v2.shape[0], self.size))
        for r, row in enumerate(v2):
            out[r, :m] = np.bincount(self.a, row, m) - np.bincount(self.b, row, m)
        if self.X is not None:
            out[:, m:] = v2 @ self.X
        return out if v.ndim == 2 else out[0]

    def assemble(self, c: np.ndarray) -> np.ndarray:
        """sum_r c_r z_r z_r^T with z_r = (e_a - e_b, x_r); c is (rows,) or (R, rows); gives (K, K) or (R, K, K)."""
        m, k = self.n_models, self.size
        c2 = np.atleast_2d(c)
        n_batch = c2.shape[0]
        out = np.zeros((n_batch, k, k))
        diag = np.arange(m)
        for r, row in enumerate(c2):
            per_pair = row if self.n_pairs == self.n_rows and _identity_pairs(self) else None
            if per_pair is None:
                per_pair = np.bincount(self.pair, row, self.n_pairs)
            out[r, self.pi, self.pj] = -per_pair
            out[r, self.pj, self.pi] = -per_pair
            out[r, diag, diag] = np.bincount(self.pi, per_pair, m) + np.bincount(self.pj, per_pair, m)
            if self.X is not None:
                cx = row[:, None] * self.X
                cross = np.stack(
                    [
                        np.bincount(self.a, cx[:, f], m) - np.bincount(self.b, cx[:, f], m)
                        for f in range(k - m)
                    ],
                    axis=1,
                )
                out[r, :m, m:] = cross
                out[r, m:, :m] = cross.T
                out[r, m:, m:] = self.X.T @ cx
        return out if c.ndim == 2 else out[0]


def _identity_pairs(design: Design) -> bool:
    cached = getattr(design, "_identity", None)
    if cached is None:
        cached = bool(np.array_equal(design.pair, np.arange(design.n_rows)))
        design._identity = cached  # type: ignore[attr-defined]
    return cached


@dataclass
class Fit:
    """A converged fit: parameters, the Hessian of the loss at the optimum (ridge included, no gauge term)."""

    theta: np.ndarray
    beta: np.ndarray
    hessian: np.ndarray
    iterations: int
    converged: bool


def loss(
    design: Design, y: np.ndarray, w: np.ndarray, theta: np.ndarray, beta: np.ndarray | None, ridge: float
):
    """Weighted negative log-likelihood plus ridge/2 * |theta|^2 (and the same on beta)."""
    eta = design.eta(theta, beta)
    value = -(w * (y * log_expit(eta) + (1.0 - y) * log_expit(-eta))).sum(axis=-1)
    value = value + 0.5 * ridge * (theta**2).sum(axis=-1)
    if beta is not None and beta.shape[-1]:
        value = value + 0.5 * ridge * (beta**2).sum(axis=-1)
    return value


def _gauged(h: np.ndarray, m: int) -> np.ndarray:
    """Add a multiple of 11^T to the theta block: fixes the free shift of theta without moving the solution."""
    g = h.copy()
    scale = np.maximum(np.abs(np.diagonal(h, axis1=-2, axis2=-1)[..., :m]).mean(axis=-1), 1.0)
    g[..., :m, :m] += (scale / m)[..., None, None]
    return g


def _ridge_hessian(design: Design, c: np.ndarray, ridge: float) -> np.ndarray:
    h = design.assemble(c)
    k = design.size
    h[..., np.arange(k), np.arange(k)] += ridge
    return h


def newton(
    design: Design,
    y: np.ndarray,
    w: np.ndarray,
    *,
    ridge: float = RIDGE,
    theta0: np.ndarray | None = None,
    beta0: np.ndarray | None = None,
    tol: float = 1e-10,
    max_iter: int = 200,
) -> Fit:
    """Weighted ML fit of one data set by damped Newton; converged when the largest step is below `tol`."""
    m, f = design.n_models, design.n_features
    theta = np.zeros(m) if theta0 is None else np.array(theta0, dtype=np.float64)
    theta -= theta.mean()
    beta = np.zeros(f) if beta0 is None else np.array(beta0, dtype=np.float64)
    current = loss(design, y, w, theta, beta, ridge)
    converged = False
    it = 0
    for it in range(1, max_iter + 1):
        p = expit(design.eta(theta, beta))
        grad = design.scatter(w * (p - y))
        grad[:m] += ridge * theta
        grad[m:] += ridge * beta
        hess = _ridge_hessian(design, w * p * (1.0 - p), ridge)
        step = np.linalg.solve(_gauged(hess, m), grad)
        t = 1.0
        while True:
            new_theta, new_beta = theta - t * step[:m], beta - t * step[m:]
            new = loss(design, y, w, new_theta, new_beta, ridge)
            if new <= current + 1e-12 * abs(current) or t < 1e-6:
                break
            t *= 0.5
        theta, beta, current = new_theta, new_beta, new
        if np.max(np.abs(t * step)) < tol:
            converged = True
            break
    p = expit(design.eta(theta, beta))
    hess = _ridge_hessian(design, w * p * (1.0 - p), ridge)
    return Fit(theta=theta, beta=beta, hessian=hess, iterations=it, converged=converged)


def sandwich(design: Design, fit: Fit, y: np.ndarray, w2: np.ndarray) -> np.ndarray:
    """Robust covariance bread^+ meat bread^+ of (theta, beta), with meat = sum_r w2_r (y_r - p_r)^2 z_r z_r^T.

    `design`, `y`, `w2` describe the rows at the level where outcomes are independent (single battles, or
    pair x outcome cells with w2 the sum of squared weights). The pseudo-inverse puts theta in the sum-zero gauge.
    """
    p = expit(design.eta(fit.theta, fit.beta))
    meat = design.assemble(w2 * (y - p) ** 2)
    bread_inv = np.linalg.pinv(fit.hessian, hermitian=True)
    return bread_inv @ meat @ bread_inv


def refit_batch(
    design: Design,
    y: np.ndarray,
    weights: np.ndarray,
    fit: Fit,
    *,
    ridge: float = RIDGE,
    tol: float = 1e-7,
    max_iter: int = 100,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact refits for each row of `weights` (R x rows; `y` is (rows,) or (R, rows)), warm-started at `fit`.

    Returns theta (R, M) and beta (R, F). Chord steps reuse the full-data Hessian (one small inverse for all
    rounds); a round whose chord steps contract slowly switches to its own Hessian (Newton). Either way a round
    stops at its own optimum (largest step below `tol`); converged rounds drop out of the batch.
    """
    m = design.n_models
    n_rounds = weights.shape[0]
    targets = np.broadcast_to(y, weights.shape)
    params = np.tile(np.concatenate([fit.theta, fit.beta]), (n_rounds, 1))
    chord_inv = np.linalg.inv(_gauged(fit.hessian, m))
    previous = np.full(n_rounds, np.inf)
    newton_mode = np.zeros(n_rounds, dtype=bool)
    active = np.arange(n_rounds)
    for _ in range(max_iter):
        if active.size == 0:
            break
        current, w, t = params[active], weights[active], targets[active]
        p = expit(design.eta(current[:, :m], current[:, m:] if design.n_features else None))
        grad = design.scatter(w * (p - t)) + ridge * current
        step = grad @ chord_inv
        in_newton = newton_mode[active]
        if in_newton.any():
            idx = np.flatnonzero(in_newton)
            hess = _ridge_hessian(design, w[idx] * p[idx] * (1.0 - p[idx]), ridge)
            step[idx] = _cap(np.linalg.solve(_gauged(hess, m), grad[idx][..., None])[..., 0])
        params[active] = current - step
        size = np.max(np.abs(step), axis=1)
        slow = ~in_newton & (size > 0.25 * previous[active])
        newton_mode[active[slow]] = True
        previous[active] = size
        active = active[size >= tol]
    return params[:, :m], params[:, m:]


def _cap(step: np.ndarray, limit: float = 2.0) -> np.ndarray:
    biggest = np.max(np.abs(step), axis=-1, keepdims=True)
    return step * np.minimum(1.0, limit / np.maximum(biggest, 1e-300))


def one_step_batch(
    design: Design, y: np.ndarray, w: np.ndarray, counts: np.ndarray, fit: Fit, *, ridge: float = RIDGE
) -> tuple[np.ndarray, np.ndarray]:
    """Linearised refits: one Newton step from the full-data fit per row of `counts` (R x rows), full-data Hessian.

    Differs from an exact refit by O(1/n) (second order), so for large data it is the bootstrap at a fraction of the
    cost: only one gradient pass per round.
    """
    m = design.n_models
    p = expit(design.eta(fit.theta, fit.beta if design.n_features else None))
    residual = w * (p - y)
    grad = design.scatter(counts * residual)
    grad += ridge * np.concatenate([fit.theta, fit.beta])
    step = grad @ np.linalg.inv(_gauged(fit.hessian, m))
    params = np.concatenate([fit.theta, fit.beta]) - step
    return params[:, :m], params[:, m:]


def multinomial_counts(rng: np.random.Generator, counts: np.ndarray, rounds: int) -> np.ndarray:
    """Exact multinomial resampling of aggregated counts: (rounds, C) draws of Multinomial(sum(counts), counts/sum).

    Drawn as independent Poisson(counts) cells (given their total t this is Multinomial(t, p)), then made exact by
    adding Multinomial(n - t, p) items when t < n or removing t - n items uniformly at random when t > n. Faster than
    sequential binomials when there are many cells.
    """
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    draws = rng.poisson(counts.astype(np.float64), size=(rounds, len(counts)))
    cum_p = np.cumsum(counts)
    for r in range(rounds):
        got = int(draws[r].sum())
        if got < total:
            extra = np.searchsorted(cum_p, rng.random(total - got) * total, side="right")
            draws[r] += np.bincount(extra, minlength=len(counts))
        elif got > total:
            drop = rng.choice(got, size=got - total, replace=False)
            cells = np.searchsorted(np.cumsum(draws[r]), drop, side="right")
            draws[r] -= np.bincount(cells, minlength=len(counts))
    return draws


def battle_counts(rng: np.random.Generator, n: int, rounds: int) -> np.ndarray:
    """Multinomial resampling of n single battles: how often each battle is drawn, (rounds, n)."""
    return np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(rounds)]).astype(
        np.float64
    )
