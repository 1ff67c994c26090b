"""The Bradley-Terry fit's core (``standings.ratings._fit``) against answers worked out by hand: the maximum
likelihood of two players is the log-odds of their record, the loss is the weighted negative log-likelihood plus
the ridge, the gauge moves no solution, the sandwich is bread^+ meat bread^+ written out, and a covariate that
copies a player is found unidentified. Written to kill the mutants ``scripts/mutation_check.py`` found surviving
in the ratings fit (``test_ratings.py`` checks the fit through whole leaderboards)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vibestudio.standings.ratings import _fit
from vibestudio.standings.ratings._fit import Design, newton


def _logistic(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def test_sigmoid_and_log_sigmoid_are_the_logistic_function_and_its_log_for_both_signs():
    x = np.array([-30.0, -3.0, -0.5, 0.0, 0.5, 3.0, 30.0])
    assert np.allclose(_fit._sigmoid(x), _logistic(x), rtol=1e-12, atol=1e-15)
    assert _fit._sigmoid(np.array([0.0]))[0] == 0.5
    assert np.allclose(_fit._log_sigmoid(x), np.log(_logistic(x)), rtol=1e-12)
    big = _fit._log_sigmoid(np.array([-800.0, 800.0]))  # no overflow, no log(0)
    assert big[0] == pytest.approx(-800.0) and big[1] == pytest.approx(0.0, abs=1e-300)
    assert np.isfinite(big).all()


def test_two_players_fit_the_log_odds_of_their_record_in_the_sum_zero_gauge():
    # a beat b 7 times out of 10: theta_a - theta_b = log(7/3), theta_a + theta_b = 0
    d = Design(np.array([0, 0]), np.array([1, 1]), 2)
    fit = newton(d, np.array([1.0, 0.0]), np.array([7.0, 3.0]))
    gap = math.log(7 / 3)
    assert fit.converged and 1 < fit.iterations < 20
    assert fit.theta == pytest.approx([gap / 2, -gap / 2], abs=1e-7)
    # the Hessian at the optimum: n p (1 - p) on the pair, plus the ridge on the diagonal
    c = 10 * 0.7 * 0.3
    ridge = _fit.RIDGE
    assert fit.hessian == pytest.approx(np.array([[c + ridge, -c], [-c, c + ridge]]), rel=1e-6)
    # the same record as one fractional row (y = 0.7, w = 10) is the same likelihood
    one = newton(Design(np.array([0]), np.array([1]), 2), np.array([0.7]), np.array([10.0]))
    assert one.theta == pytest.approx(fit.theta, abs=1e-7)


def test_a_warm_start_is_centred_and_reaches_the_same_optimum():
    d = Design(np.array([0, 1, 2]), np.array([1, 2, 0]), 3)
    y, w = np.array([1.0, 0.0, 0.5]), np.array([4.0, 5.0, 6.0])
    cold = newton(d, y, w)
    warm = newton(d, y, w, theta0=cold.theta + 5.0)  # shifted by the free gauge: already optimal
    assert warm.converged and warm.iterations <= 2
    assert warm.theta == pytest.approx(cold.theta, abs=1e-7) and abs(warm.theta.sum()) < 1e-9


def test_newton_stops_at_max_iter_unconverged_and_says_so():
    d = Design(np.array([0, 0]), np.array([1, 1]), 2)
    fit = newton(d, np.array([1.0, 0.0]), np.array([99.0, 1.0]), max_iter=1)
    assert (fit.iterations, fit.converged) == (1, False)
    assert 0 < fit.theta[0] < math.log(99) / 2  # one damped step towards the optimum, not past it


def test_a_covariate_is_fitted_with_the_players_and_the_gradient_vanishes_there():
    rng = np.random.default_rng(3)
    n = 400
    a, b = rng.integers(0, 3, n), rng.integers(0, 3, n)
    keep = a != b
    a, b = a[keep], b[keep]
    x = rng.normal(size=(len(a), 1))
    truth_theta, truth_beta = np.array([0.5, 0.0, -0.5]), np.array([0.8])
    p = _logistic(truth_theta[a] - truth_theta[b] + x @ truth_beta)
    y = (rng.random(len(a)) < p).astype(float)
    w = np.ones(len(a))
    d = Design(a, b, 3, x)
    fit = newton(d, y, w)
    assert fit.converged and fit.beta.shape == (1,)
    eta = fit.theta[a] - fit.theta[b] + x @ fit.beta
    resid = _logistic(eta) - y
    grad_theta = np.bincount(a, resid, 3) - np.bincount(b, resid, 3) + _fit.RIDGE * fit.theta
    assert np.abs(grad_theta).max() < 1e-6 and abs(resid @ x[:, 0] + _fit.RIDGE * fit.beta[0]) < 1e-6
    assert abs(fit.beta[0] - 0.8) < 0.4 and abs(fit.theta.sum()) < 1e-9
    # a covariate design with no covariate columns is the plain model
    plain = Design(a, b, 3, np.zeros((len(a), 0)))
    assert plain.X is None and plain.n_features == 0


def test_the_loss_is_the_weighted_negative_log_likelihood_plus_the_ridge():
    d = Design(np.array([0, 1, 0]), np.array([1, 2, 2]), 3, np.array([[1.0], [0.0], [-2.0]]))
    theta, beta = np.array([0.3, -0.1, -0.2]), np.array([0.5])
    y, w, ridge = np.array([1.0, 0.5, 0.0]), np.array([2.0, 1.0, 3.0]), 0.25
    value, eta, log_p = _fit._evaluate(d, y, w, theta, beta, ridge)
    want_eta = np.array([0.3 + 0.1 + 0.5, -0.1 + 0.2, 0.3 + 0.2 - 1.0])
    p = _logistic(want_eta)
    nll = -np.sum(w * (y * np.log(p) + (1 - y) * np.log(1 - p)))
    assert eta == pytest.approx(want_eta)
    assert log_p == pytest.approx(np.log(p))
    assert value == pytest.approx(nll + 0.5 * ridge * (theta @ theta + beta @ beta), rel=1e-12)


def test_the_gauge_adds_a_constant_to_the_players_block_only():
    h = np.array([[4.0, -4.0, 1.0], [-4.0, 4.0, -1.0], [1.0, -1.0, 2.0]])
    g = _fit._gauged(h, 2)
    want = h.copy()
    want[:2, :2] += 4.0 / 2  # scale = mean |diag| of the players' block = 4
    assert g == pytest.approx(want) and h[0, 0] == 4.0  # the input is not changed
    small = _fit._gauged(np.array([[0.1, -0.1], [-0.1, 0.1]]), 2)
    assert small == pytest.approx(np.array([[0.6, 0.4], [0.4, 0.6]]))  # scale at least 1
    batch = _fit._gauged(np.stack([h, 2 * h]), 2)
    assert batch[0] == pytest.approx(want) and batch[1][:2, :2] == pytest.approx(2 * h[:2, :2] + 4.0)
    # the gauged system is solvable and its solution of a gradient sums to zero over the players
    step = np.linalg.solve(_fit._gauged(h[:2, :2], 2), np.array([1.0, -1.0]))
    assert step.sum() == pytest.approx(0.0, abs=1e-12)


def test_the_ridge_hessian_is_the_assembled_curvature_plus_the_ridge_on_every_parameter():
    d = Design(np.array([0, 1]), np.array([1, 2]), 3, np.array([[1.0], [2.0]]))
    c = np.array([0.25, 0.5])
    h = _fit._ridge_hessian(d, c, 0.1)
    z = np.array([[1.0, -1.0, 0.0, 1.0], [0.0, 1.0, -1.0, 2.0]])
    want = (z.T * c) @ z + 0.1 * np.eye(4)
    assert h == pytest.approx(want)
    both = _fit._ridge_hessian(d, np.stack([c, 2 * c]), 0.1)
    assert both[1] == pytest.approx((z.T * (2 * c)) @ z + 0.1 * np.eye(4))


def test_the_sandwich_is_bread_inverse_meat_bread_inverse():
    d = Design(np.array([0, 0, 1, 2]), np.array([1, 2, 2, 0]), 3)
    y, w = np.array([1.0, 0.0, 1.0, 1.0]), np.array([3.0, 2.0, 4.0, 1.0])
    fit = newton(d, y, w)
    w2 = w**2
    cov = _fit.sandwich(d, fit, y, w2)
    z = np.zeros((4, 3))
    z[np.arange(4), d.a] = 1.0
    z[np.arange(4), d.b] = -1.0
    p = _logistic(z @ fit.theta)
    meat = (z.T * (w2 * (y - p) ** 2)) @ z
    bread = np.linalg.pinv(fit.hessian)
    # compared on contrasts (centred): along the free shift of theta the tiny ridge leaves only rounding noise,
    # which no rating difference sees
    centre = np.eye(3) - 1.0 / 3
    ours = centre @ cov @ centre
    assert ours == pytest.approx(centre @ bread @ meat @ bread @ centre, rel=1e-6, abs=1e-9)
    assert np.allclose(ours, ours.T) and np.all(np.diag(ours) > 0)
    # robust, not model-based: with the meat doubled the covariance doubles
    assert centre @ _fit.sandwich(d, fit, y, 2 * w2) @ centre == pytest.approx(2 * ours, rel=1e-6)


def test_a_covariate_that_copies_a_player_is_unidentified_a_disconnected_graph_is_not():
    rng = np.random.default_rng(1)
    a = np.array([0, 1, 0, 2, 1, 2] * 10)
    b = np.array([1, 2, 2, 0, 0, 1] * 10)
    y = (rng.random(len(a)) < 0.5).astype(float)
    w = np.ones(len(a))
    copy = ((a == 0).astype(float) - (b == 0).astype(float))[:, None]  # player 0's own column again
    assert _fit.near_singular(newton(Design(a, b, 3, copy), y, w))
    assert not _fit.near_singular(newton(Design(a, b, 3, rng.normal(size=(len(a), 1))), y, w))
    # two separate pairs (0-1, 2-3): a flat direction of the players alone, not of a covariate
    a2, b2 = np.array([0, 1, 2, 3] * 5), np.array([1, 0, 3, 2] * 5)
    y2 = np.tile([1.0, 0.0, 1.0, 1.0, 0.0], 4)
    assert not _fit.near_singular(newton(Design(a2, b2, 4), y2, np.ones(20)))
    assert not _fit.near_singular(newton(Design(a2, b2, 4, rng.normal(size=(20, 1))), y2, np.ones(20)))


def test_the_sandwich_of_a_covariate_fit_uses_the_covariates_in_its_residuals():
    rng = np.random.default_rng(5)
    a = np.array([0, 1, 2, 0, 1, 2] * 8)
    b = np.array([1, 2, 0, 2, 0, 1] * 8)
    x = rng.normal(size=(len(a), 1)) + 1.0
    y = (rng.random(len(a)) < _logistic(1.5 * x[:, 0] - 1.0)).astype(float)
    d = Design(a, b, 3, x)
    fit = newton(d, y, np.ones(len(a)))
    assert abs(fit.beta[0]) > 0.3  # the covariate matters, so leaving it out of p would show
    z = np.zeros((len(a), 4))
    z[np.arange(len(a)), a] = 1.0
    z[np.arange(len(a)), b] = -1.0
    z[:, 3] = x[:, 0]
    p = _logistic(z[:, :3] @ fit.theta + x @ fit.beta)
    meat = (z.T * (y - p) ** 2) @ z
    bread = np.linalg.pinv(fit.hessian)
    centre = np.eye(4)
    centre[:3, :3] -= 1.0 / 3
    want = centre @ bread @ meat @ bread @ centre.T
    got = centre @ _fit.sandwich(d, fit, y, np.ones(len(a))) @ centre.T
    assert got == pytest.approx(want, rel=1e-4, abs=1e-7)  # rounding along the free shift, nothing more


def test_a_start_far_from_the_optimum_is_brought_back_by_backtracking():
    # at a 10-point wrong start the curvature is almost 0 and a full Newton step would land thousands of
    # log-odds away; halving the step until the loss falls brings the fit back to the record's log-odds (from
    # much further out the halving gives up at t < 1e-6 first: fits start at 0 or at a converged fit)
    d = Design(np.array([0, 0]), np.array([1, 1]), 2)
    y, w = np.array([1.0, 0.0]), np.array([7.0, 3.0])
    fit = newton(d, y, w, theta0=np.array([5.0, -5.0]))
    assert fit.converged and fit.theta == pytest.approx([math.log(7 / 3) / 2, -math.log(7 / 3) / 2], abs=1e-7)
    start = _fit._evaluate(d, y, w, np.array([5.0, -5.0]), np.zeros(0), _fit.RIDGE)[0]
    one = newton(d, y, w, theta0=np.array([5.0, -5.0]), max_iter=1)
    assert _fit._evaluate(d, y, w, one.theta, one.beta, _fit.RIDGE)[0] < start  # every step lowers the loss
    assert newton(d, y, w, theta0=[1, -1]).theta == pytest.approx(fit.theta, abs=1e-7)  # integers start too


def test_a_warm_start_of_the_covariates_reaches_the_same_optimum():
    rng = np.random.default_rng(8)
    a = np.array([0, 1, 2, 0, 1, 2] * 10)
    b = np.array([1, 2, 0, 2, 0, 1] * 10)
    x = rng.normal(size=(len(a), 1))
    y = (rng.random(len(a)) < _logistic(x[:, 0])).astype(float)
    d = Design(a, b, 3, x)
    cold = newton(d, y, np.ones(len(a)))
    warm = newton(d, y, np.ones(len(a)), theta0=cold.theta, beta0=cold.beta)
    assert warm.iterations <= 2 and warm.beta == pytest.approx(cold.beta, abs=1e-7)
    far = newton(d, y, np.ones(len(a)), beta0=np.array([25.0]))
    assert far.converged and far.beta == pytest.approx(cold.beta, abs=1e-6)
