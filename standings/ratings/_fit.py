"""Paired-comparison logistic fits: Bradley-Terry with optional covariates, in natural-log-odds units.

Model: P(a beats b) = sigmoid(theta[a] - theta[b] + x . beta). It is fitted by weighted maximum likelihood
with fractional outcomes: a tie is y = 0.5, i.e. half a win each. Rows can be single battles, or battles
aggregated per pair (y = score / count, w = count); the likelihood is the same.

The solver is Newton's method on the exact Hessian; models x models is small.
- The rating gauge is fixed by keeping sum(theta) = 0.
- A tiny ridge on theta keeps it numerically safe.
- It backtracks when a step does not lower the loss.

Also here: the sandwich covariance (bread^-1 meat bread^-1), and batched refits for bootstrap rounds.
These fit many weight vectors at once, warm-started at the full-data fit. They use chord steps with the
full-data Hessian. They fall back to full Newton steps when those contract slowly. This module knows
nothing about battles, files or the rating scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix

#: Ridge on theta (natural-log units). Negligible next to the curvature of any real data set; it keeps the Newton
#: system well posed for disconnected comparison graphs.
RIDGE = 1e-9
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

    def incidence(self, dtype: type = np.float64) -> csr_matrix:
        """Sparse rows x models matrix with +1 at a and -1 at b (built once per dtype)."""
        cache: dict[type, csr_matrix] = self.__dict__.setdefault("_incidence", {})
        if dtype not in cache:
            n = self.n_rows
            data: np.ndarray = np.tile(np.array([1.0, -1.0], dtype=dtype), n)
            indices = np.column_stack([self.a, self.b]).ravel()
            cache[dtype] = csr_matrix((data, indices, np.arange(0, 2 * n + 1, 2)), shape=(n, self.n_models))
        return cache[dtype]

    @property
    def size(self) -> int:
        """Number of parameters: models plus covariates."""
        return self.n_models + self.n_features

    def eta(self, theta: np.ndarray, beta: np.ndarray | None) -> np.ndarray:
        """Logits per row for one parameter vector: theta (M,), beta (F,) or None."""
        out = self.incidence() @ theta
        if self.X is not None and beta is not None:
            out += self.X @ beta
        return out

    def scatter(self, v: np.ndarray) -> np.ndarray:
        """Gradient-style reduction sum_r v_r (e_a - e_b, x_r); v is (rows,) or (rows, R), giving (K,) or (K, R)."""
        top = self.incidence().T @ v
        if self.X is None:
            return np.asarray(top)
        return np.concatenate([top, self.X.T @ v], axis=0)

    def assemble(self, c: np.ndarray) -> np.ndarray:
        """sum_r c_r z_r z_r^T with z_r = (e_a - e_b, x_r); c is (rows,) or (R, rows); gives (K, K) or (R, K, K)."""
        m, k = self.n_models, self.size
        c2 = np.atleast_2d(c)
        n_batch = c2.shape[0]
        out = np.zeros((n_batch, k, k))
        diag = np.arange(m)
        for r, row in enumerate(c2):
            per_pair = row if _identity_pairs(self) else np.bincount(self.pair, row, self.n_pairs)
            out[r, self.pi, self.pj] = -per_pair
            out[r, self.pj, self.pi] = -per_pair
            out[r, diag, diag] = np.bincount(self.pi, per_pair, m) + np.bincount(self.pj, per_pair, m)
            if self.X is not None:
                cx = row[:, None] * self.X
                cross = self.incidence().T @ cx
                out[r, :m, m:] = cross
                out[r, m:, :m] = cross.T
                out[r, m:, m:] = self.X.T @ cx
        return out if c.ndim == 2 else out[0]


def _identity_pairs(design: Design) -> bool:
    cached = getattr(design, "_identity", None)
    if cached is None:
        cached = design.n_pairs == design.n_rows and bool(
            np.array_equal(design.pair, np.arange(design.n_rows))
        )
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
    _chord: np.ndarray | None = None

    def chord_inverse(self) -> np.ndarray:
        """Inverse of the gauged Hessian (computed once): the fixed matrix of chord steps and one-step refits."""
        if self._chord is None:
            self._chord = np.linalg.inv(_gauged(self.hessian, len(self.theta)))
        return self._chord


def _evaluate(
    design: Design, y: np.ndarray, w: np.ndarray, theta: np.ndarray, beta: np.ndarray, ridge: float
) -> tuple[float, np.ndarray, np.ndarray]:
    """Loss (weighted negative log-likelihood + ridge/2 |params|^2), logits and log sigmoid(logits) at one point.

    Uses log sigmoid(-eta) = log sigmoid(eta) - eta, so one transcendental pass serves loss and probabilities.
    """
    eta = design.eta(theta, beta if design.n_features else None)
    log_p = _log_sigmoid(eta)
    value = -float(np.dot(w, log_p - (1.0 - y) * eta))
    value += 0.5 * ridge * (float(theta @ theta) + float(beta @ beta))
    return value, eta, log_p


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
    tol: float = 1e-7,
    max_iter: int = 200,
) -> Fit:
    """Weighted ML fit of one data set by damped Newton; converged when the largest step is below `tol`."""
    m, f = design.n_models, design.n_features
    theta = np.zeros(m) if theta0 is None else np.array(theta0, dtype=np.float64)
    theta -= theta.mean()
    beta = np.zeros(f) if beta0 is None else np.array(beta0, dtype=np.float64)
    current, _, log_p = _evaluate(design, y, w, theta, beta, ridge)
    converged = False
    iterations = 0
    hess = np.zeros((design.size, design.size))
    while iterations < max_iter:
        iterations += 1
        p = np.exp(log_p)
        grad = design.scatter(w * (p - y))
        grad[:m] += ridge * theta
        grad[m:] += ridge * beta
        hess = _ridge_hessian(design, w * p * (1.0 - p), ridge)
        step = np.linalg.solve(_gauged(hess, m), grad)
        t = 1.0
        while True:
            new_theta, new_beta = theta - t * step[:m], beta - t * step[m:]
            new, _, new_log_p = _evaluate(design, y, w, new_theta, new_beta, ridge)
            if new <= current + 1e-12 * abs(current) or t < 1e-6:
                break
            t *= 0.5
        theta, beta, current, log_p = new_theta, new_beta, new, new_log_p
        if np.max(np.abs(t * step)) < tol:
            converged = True
            break
    # The Hessian of the last iteration is taken at a point within `tol` of the optimum.
    return Fit(theta=theta, beta=beta, hessian=hess, iterations=iterations, converged=converged)


def near_singular(fit: Fit, threshold: float = 1e-9) -> bool:
    """True when the covariates add a direction of (almost) no curvature to the Hessian: unidentified parameters.

    Flat directions already present in the models-only block (disconnected comparison graph) do not count.
    """
    m = len(fit.theta)
    gauged = _gauged(fit.hessian, m)
    full = np.linalg.eigvalsh(gauged)
    models = np.linalg.eigvalsh(gauged[:m, :m])
    return bool((full <= threshold * full[-1]).sum() > (models <= threshold * full[-1]).sum())


def sandwich(design: Design, fit: Fit, y: np.ndarray, w2: np.ndarray) -> np.ndarray:
    """Robust covariance bread^+ meat bread^+ of (theta, beta), with meat = sum_r w2_r (y_r - p_r)^2 z_r z_r^T.

    `design`, `y`, `w2` describe the rows at the level where outcomes are independent (single battles, or
    pair x outcome cells with w2 the sum of squared weights). The pseudo-inverse puts theta in the sum-zero gauge.
    """
    p = _sigmoid(design.eta(fit.theta, fit.beta))
    meat = design.assemble(w2 * (y - p) ** 2)
    bread_inv = np.linalg.pinv(fit.hessian, hermitian=True)
    return bread_inv @ meat @ bread_inv


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    """log sigmoid(x) = -log(1 + e^-x), stable for both signs (numpy only: scipy.special is slow to import)."""
    return -np.logaddexp(0.0, -x)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """Logistic function through tanh (faster than scipy's expit on big arrays, same values to rounding)."""
    out = np.tanh(0.5 * x)
    out *= 0.5
    out += 0.5
    return out


def refit_batch(
    design: Design,
    y: np.ndarray,
    weights: np.ndarray,
    fit: Fit,
    *,
    ridge: float = RIDGE,
    tol: float = 1e-6,
    max_iter: int = 100,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact refits for each row of `weights` (R x rows; `y` is (rows,) or (R, rows)), warm-started at `fit`.

    Returns theta (R, M) and beta (R, F). Chord steps reuse the full-data Hessian (one small inverse for all
    rounds); a round whose chord steps contract slowly switches to its own Hessian (Newton). Either way a round
    stops at its own optimum (largest step below `tol` log-odds); converged rounds drop out of the batch. Works
    column-wise (rows x rounds) with a sparse incidence matrix, so each iteration is a few passes over the data.
    """
    m = design.n_models
    n_rounds = weights.shape[0]
    # The passes over the data run in float32 (half the memory traffic); parameters, steps and the convergence
    # test stay in float64. The gradient's rounding error is far below `tol` (about 1e-7 of a count per pair).
    w_all = np.ascontiguousarray(weights.T, dtype=np.float32)
    score_all = w_all * (y.T if y.ndim == 2 else y[:, None]).astype(np.float32)
    incidence = design.incidence(np.float32)
    X = None if design.X is None else design.X.astype(np.float32)
    params = np.tile(np.concatenate([fit.theta, fit.beta])[:, None], (1, n_rounds))
    chord_inv = fit.chord_inverse()
    previous = np.full(n_rounds, np.inf)
    newton_mode = np.zeros(n_rounds, dtype=bool)
    active = np.arange(n_rounds)
    w, score = w_all, score_all
    for _ in range(max_iter):
        current = params[:, active]
        current32 = current.astype(np.float32)
        eta = incidence @ current32[:m]
        if X is not None:
            eta += X @ current32[m:]
        p = _sigmoid(eta)
        resid = w * p
        resid -= score
        grad = np.empty_like(current)
        grad[:m] = incidence.T @ resid
        if X is not None:
            grad[m:] = X.T @ resid
        grad += ridge * current
        step = chord_inv @ grad
        in_newton = newton_mode[active]
        if in_newton.any():
            idx = np.flatnonzero(in_newton)
            curvature = (w[:, idx] * p[:, idx] * (1.0 - p[:, idx])).T.astype(np.float64)
            hess = _ridge_hessian(design, curvature, ridge)
            step[:, idx] = _cap(np.linalg.solve(_gauged(hess, m), grad[:, idx].T[..., None])[..., 0]).T
        params[:, active] = current - step
        size = np.max(np.abs(step), axis=0)
        slow = ~in_newton & (size > 0.25 * previous[active])
        newton_mode[active[slow]] = True
        previous[active] = size
        keep = size >= tol
        if not keep.any():
            break
        if not keep.all():
            active = active[keep]
            w, score = w_all[:, active], score_all[:, active]
    return params[:m].T.copy(), params[m:].T.copy()


def _cap(step: np.ndarray, limit: float = 2.0) -> np.ndarray:
    biggest = np.max(np.abs(step), axis=-1, keepdims=True)
    return step * np.minimum(1.0, limit / np.maximum(biggest, 1e-300))


def one_step_bootstrap(
    design: Design,
    y: np.ndarray,
    w: np.ndarray,
    fit: Fit,
    rng: np.random.Generator,
    rounds: int,
    *,
    ridge: float = RIDGE,
    resample: str = "multinomial",
) -> tuple[np.ndarray, np.ndarray]:
    """Linearised bootstrap over single rows: per round, resampling weights of the rows (`battle_weights`) and one
    Newton step from the full-data fit with the full-data Hessian. Returns theta (R, M) and beta (R, F).

    The step differs from an exact refit by O(1/n) (second order), so for large data this is the bootstrap at the
    cost of one gradient pass per round.
    """
    m, n = design.n_models, design.n_rows
    p = _sigmoid(design.eta(fit.theta, fit.beta if design.n_features else None))
    residual = w * (p - y)
    params = np.concatenate([fit.theta, fit.beta])
    chord_inv = fit.chord_inverse()
    grads = np.empty((rounds, design.size))
    for r in range(rounds):
        v = battle_weights(rng, n, 1, resample)[0] * residual
        grads[r, :m] = np.bincount(design.a, v, m) - np.bincount(design.b, v, m)
        if design.X is not None:
            grads[r, m:] = v @ design.X
    grads += ridge * params
    out = params - grads @ chord_inv
    return out[:, :m].copy(), out[:, m:].copy()


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


def dirichlet_counts(rng: np.random.Generator, counts: np.ndarray, rounds: int) -> np.ndarray:
    """Bayesian bootstrap of aggregated counts: Dirichlet(1, ..., 1) weights on the single battles, summed per cell.

    A cell of n battles gets Gamma(n, 1) (the sum of n Exp(1) weights), exactly; rows are scaled to the data's total.
    """
    counts = np.asarray(counts, dtype=np.float64)
    draws = rng.standard_gamma(np.maximum(counts, 1e-300), size=(rounds, len(counts)))
    draws[:, counts == 0] = 0.0
    draws *= counts.sum() / draws.sum(axis=1, keepdims=True)
    return draws


def resample_counts(rng: np.random.Generator, counts: np.ndarray, rounds: int, resample: str) -> np.ndarray:
    """(rounds, C) resampled cell counts: "multinomial" (the classic bootstrap) or "bayesian" (Dirichlet weights)."""
    if resample == "multinomial":
        return multinomial_counts(rng, counts, rounds)
    if resample == "bayesian":
        return dirichlet_counts(rng, counts, rounds)
    raise ValueError(f"resample must be 'multinomial' or 'bayesian', got {resample!r}")


def battle_weights(
    rng: np.random.Generator, n: int, rounds: int, resample: str = "multinomial"
) -> np.ndarray:
    """(rounds, n) weights of single battles: multinomial draw counts, or Dirichlet weights scaled to n."""
    out = np.empty((rounds, n))
    for r in range(rounds):
        if resample == "multinomial":
            out[r] = np.bincount(rng.integers(0, n, n), minlength=n)
        elif resample == "bayesian":
            weights = rng.standard_exponential(n)
            out[r] = weights * (n / weights.sum())
        else:
            raise ValueError(f"resample must be 'multinomial' or 'bayesian', got {resample!r}")
    return out
