"""Which model for this prompt: a Bradley-Terry board with per-kind offsets, shrunk to the global board.

In the spirit of LMArena's Prompt-to-Leaderboard, kept simple and honest. Each model has a global rating
theta_m. For each prompt kind k it has an offset delta_mk. The kind is the vote's `category`: a prompt
set's own, a person's label or the classifier's prediction. A vote of kind k between a and b is won by a
with probability sigmoid((theta_a + delta_ak) - (theta_b + delta_bk)).
- The offsets carry a ridge penalty `shrink` / 2 |delta|^2. So a kind with few votes stays close to the
  global board.
- `shrink` is chosen by K-fold cross-validation of the held-out log-likelihood over `SHRINK_GRID`, unless
  given.
- A prompt's board is theta + sum_k p_k delta_k, with p its kind probabilities. A labelled prompt is
  one-hot; a typed one takes the classifier's posterior. Kinds without votes add nothing. So an unknown
  kind gets the global board.

Intervals are the normal approximation from the penalised fit's inverse Hessian. It is a Laplace interval,
the sandwich's simpler cousin. It covers each model's rating against the mean of the models. Votes are
aggregated per (pair, kind). So a fit costs one dense solve per Newton step in (models x (kinds + 1))
unknowns.

Intervals pass the board's one rule (`_board.identify`). The scale is centred on the largest connected
group of the comparison graph. A model outside it, or with an interval wider than `MAX_HALF_WIDTH`, reads
can't tell.

Can't tell: fewer than two models, or no votes with a kind. With no kinds, every offset would be zero, and
the prompt's board is the global board; `notes` says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

from vibestudio.standings.words import counted

from ._blas import single_threaded
from ._board import SCALE, identify, prepare, rank_intervals
from ._graph import weak_components
from ._identify import VOTES_PER_COEFFICIENT
from ._input import as_records

#: Offset penalties tried by cross-validation (larger: closer to the global board).
SHRINK_GRID = (0.5, 2.0, 8.0, 32.0, 128.0)
#: Penalty on the global ratings (about one draw against an average model), so every fit is strictly convex.
THETA_RIDGE = 0.25
#: Fewer votes with a kind than this: the shrinkage is not cross-validated (the largest grid value is used).
MIN_CV_VOTES = 100
#: More unknowns (models x (kinds + 1)) than this: no cross-validation (25 fits), the middle of the grid is used.
MAX_CV_UNKNOWNS = 600


@dataclass
class PromptBoard:
    """A fitted per-kind board: global ratings, per-kind offsets (log-odds), the penalised inverse Hessian."""

    names: list[str]
    kinds: list[str]
    theta: np.ndarray  # (models,)
    delta: np.ndarray  # (models, kinds)
    cov: np.ndarray  # ((kinds + 1) * models) square: [theta, delta[:, 0], delta[:, 1], ...]
    shrink: float
    n_votes: int
    votes_by_kind: dict[str, int]
    heldout: dict[str, float] = field(default_factory=dict)  # shrink -> mean held-out log-likelihood per vote
    notes: list[str] = field(default_factory=list)
    #: Model indices of the largest connected group of the comparison graph (None: every model).
    reference: np.ndarray | None = None

    def _ref(self) -> np.ndarray:
        return np.arange(len(self.names)) if self.reference is None else self.reference

    def strength(self, probs: dict[str, float] | None) -> tuple[np.ndarray, np.ndarray]:
        """Log-odds ratings for a prompt with kind probabilities `probs` and the contrast vectors behind them."""
        m, k = len(self.names), len(self.kinds)
        weights = np.zeros(k)
        for name, p in (probs or {}).items():
            if name in self.kinds:
                weights[self.kinds.index(name)] = float(p)
        rating = self.theta + self.delta @ weights
        ref = self._ref()
        # contrast per model: rating_m - mean of the reference models, over [theta, delta_0, delta_1, ...]
        centre = np.eye(m)
        centre[:, ref] -= 1.0 / len(ref)
        contrast = np.concatenate([centre] + [centre * w for w in weights], axis=1)  # (m, m * (k + 1))
        return rating - rating[ref].mean(), contrast

    def rank(self, probs: dict[str, float] | None, level: float = 0.95) -> list[dict[str, Any]]:
        """The board for a prompt: per model rating (Elo scale, mean 1000) with its interval and rank interval,
        best first; `probs` maps kind -> probability (None or {}: the global board)."""
        rating, contrast = self.strength(probs)
        sd = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", contrast, self.cov, contrast), 0.0))
        z = NormalDist().inv_cdf(0.5 + level / 2.0)
        lo, hi = rating - z * sd, rating + z * sd
        cant_tell = identify(self.names, SCALE * rating, SCALE * lo, SCALE * hi, self._ref())
        unknown = np.array([c is not None for c in cant_tell], dtype=bool)
        best, worst = rank_intervals(
            np.where(unknown, -np.inf, lo * SCALE), np.where(unknown, np.inf, hi * SCALE)
        )
        order = np.argsort(-rating, kind="stable")
        return [
            {
                "name": self.names[i],
                "rating": float(1000.0 + SCALE * rating[i]),
                "ci_low": None if unknown[i] else float(1000.0 + SCALE * lo[i]),
                "ci_high": None if unknown[i] else float(1000.0 + SCALE * hi[i]),
                "rank_low": int(best[i]),
                "rank_high": int(worst[i]),
                "cant_tell": cant_tell[i],
            }
            for i in order
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "names": list(self.names),
            "kinds": list(self.kinds),
            "shrink": self.shrink,
            "n_votes": self.n_votes,
            "votes_by_kind": dict(self.votes_by_kind),
            "heldout": dict(self.heldout),
            "notes": list(self.notes),
        }

    def predict(self, a: np.ndarray, b: np.ndarray, kind: np.ndarray) -> np.ndarray:
        """P(a beats b) for votes with model indices `a`, `b` and kind index `kind` (-1: no kind)."""
        if self.delta.shape[1] == 0:
            return 1.0 / (1.0 + np.exp(-(self.theta[a] - self.theta[b])))
        da = self.theta[a] + np.where(kind >= 0, self.delta[a, np.maximum(kind, 0)], 0.0)
        db = self.theta[b] + np.where(kind >= 0, self.delta[b, np.maximum(kind, 0)], 0.0)
        return 1.0 / (1.0 + np.exp(-(da - db)))


class _Cells:
    """Votes aggregated per (low model, high model, kind): counts n and scores s of the low model."""

    def __init__(
        self, lo: np.ndarray, hi: np.ndarray, kind: np.ndarray, y: np.ndarray, w: np.ndarray, m: int, k: int
    ):
        key = (lo * m + hi) * (k + 1) + (kind + 1)
        keys, inv = np.unique(key, return_inverse=True)
        self.n = np.bincount(inv, w, len(keys))
        self.s = np.bincount(inv, w * y, len(keys))
        self.kind = (keys % (k + 1)) - 1
        pair = keys // (k + 1)
        self.lo, self.hi = pair // m, pair % m
        self.m, self.k = m, k


def _fit(cells: _Cells, shrink: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Penalised ML by Newton: theta, delta and the inverse Hessian (the posterior covariance). Each cell's design
    row has at most four non-zeros (+1 at lo's theta and kind offset, -1 at hi's), so the gradient and Hessian are
    accumulated from those (memory: cells + unknowns^2, never cells x unknowns)."""
    m, k = cells.m, cells.k
    size = m * (k + 1)
    has = cells.kind >= 0
    # columns and signs per cell: theta_lo, theta_hi, then (when the cell has a kind) delta_lo, delta_hi
    cols = [cells.lo, cells.hi, m * (cells.kind + 1) + cells.lo, m * (cells.kind + 1) + cells.hi]
    signs = [np.ones(len(cells.n)), -np.ones(len(cells.n)), has * 1.0, has * -1.0]
    cols = [np.where(sg != 0, c, 0) for c, sg in zip(cols, signs, strict=True)]
    penalty = np.concatenate([np.full(m, THETA_RIDGE), np.full(m * k, shrink)])
    beta = np.zeros(size)
    hess = np.diag(penalty)
    for _ in range(60):
        eta = sum(sg * beta[c] for c, sg in zip(cols, signs, strict=True))
        p = 1.0 / (1.0 + np.exp(-eta))
        r = cells.n * p - cells.s
        grad = penalty * beta
        for c, sg in zip(cols, signs, strict=True):
            grad += np.bincount(c, sg * r, size)
        w = cells.n * p * (1.0 - p)
        hess = np.diag(penalty)
        for ci, si in zip(cols, signs, strict=True):
            for cj, sj in zip(cols, signs, strict=True):
                np.add.at(hess, (ci, cj), si * sj * w)
        step = np.linalg.solve(hess, grad)
        step *= min(1.0, 2.0 / max(float(np.max(np.abs(step))), 1e-300))
        beta -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return beta[:m], beta[m:].reshape(k, m).T, np.linalg.inv(hess)


def _loglik(
    theta: np.ndarray, delta: np.ndarray, a: np.ndarray, b: np.ndarray, kind: np.ndarray, y: np.ndarray
) -> float:
    board = PromptBoard([], [], theta, delta, np.zeros((0, 0)), 0.0, 0, {})
    p = np.clip(board.predict(a, b, kind), 1e-12, 1 - 1e-12)
    return float(np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p)))


def kind_codes(values: Any, kinds: list[str] | None = None) -> tuple[np.ndarray, list[str]]:
    """Kind index per vote (-1: none) and the kinds, sorted (or the given list: unknown kinds -> -1)."""
    vals = [v if isinstance(v, str) and v else None for v in values]
    names = kinds if kinds is not None else sorted({v for v in vals if v is not None})
    index = {n: i for i, n in enumerate(names)}
    return np.array([index.get(v, -1) if v is not None else -1 for v in vals], dtype=np.int64), names


@single_threaded
def fit_arrays(
    a: np.ndarray,
    b: np.ndarray,
    y: np.ndarray,
    kind: np.ndarray,
    names: list[str],
    kinds: list[str],
    *,
    w: np.ndarray | None = None,
    shrink: float | None = None,
    folds: int = 5,
    seed: int = 0,
) -> PromptBoard:
    """Fit on model indices `a`, `b` into `names`, scores `y` of a, kind indices into `kinds` (-1: none)."""
    m, k = len(names), len(kinds)
    w = np.ones(len(a)) if w is None else np.asarray(w, dtype=np.float64)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    ylo = np.where(a == lo, y, 1.0 - y)
    notes: list[str] = []
    heldout: dict[str, float] = {}
    n_kind = int((kind >= 0).sum())
    if shrink is None:
        if n_kind < MIN_CV_VOTES or k == 0:
            shrink = SHRINK_GRID[-1]
            notes.append(
                f"{counted(n_kind, 'vote')} with a prompt kind (cross-validating the shrinkage needs {MIN_CV_VOTES}): "
                f"the strongest shrinkage toward the global board is used"
            )
        elif m * (k + 1) > MAX_CV_UNKNOWNS:
            shrink = SHRINK_GRID[len(SHRINK_GRID) // 2]
            notes.append(
                f"{m * (k + 1)} unknowns (models x (kinds + 1)): the shrinkage is not cross-validated, {shrink:g} "
                "is used"
            )
        else:
            fold = np.random.default_rng(seed).permutation(len(a)) % folds
            for s in SHRINK_GRID:
                total = 0.0
                for f in range(folds):
                    tr, te = fold != f, fold == f
                    th, de, _ = _fit(_Cells(lo[tr], hi[tr], kind[tr], ylo[tr], w[tr], m, k), s)
                    total += _loglik(th, de, lo[te], hi[te], kind[te], ylo[te]) * int(te.sum())
                heldout[f"{s:g}"] = total / len(a)
            shrink = float(max(SHRINK_GRID, key=lambda s: (round(heldout[f"{s:g}"], 12), s)))
    if k == 0:
        notes.append("no vote has a prompt kind: every prompt gets the global board")
    theta, delta, cov = _fit(_Cells(lo, hi, kind, ylo, w, m, k), float(shrink))
    counts = np.bincount(kind[kind >= 0], minlength=k) if k else np.zeros(0, dtype=np.int64)
    need = VOTES_PER_COEFFICIENT * max(1, m - 1)  # ten votes per offset (one per model after the first)
    thin = [f"{kinds[i]} ({counts[i]})" for i in range(k) if counts[i] < need]
    if thin:
        notes.append(
            f"can't tell how these kinds move the board: {', '.join(thin)} votes, each kind's {m - 1} offsets need "
            f"at least {need} ({VOTES_PER_COEFFICIENT} per offset); their boards stay close to the global board "
            "(shrunk toward it): read them as the global board"
        )
    return PromptBoard(
        names, kinds, theta, delta, cov, float(shrink), len(a),
        {kinds[i]: int(counts[i]) for i in range(k)}, heldout, notes, _largest_group(m, lo, hi),
    )  # fmt: skip


def _largest_group(m: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray | None:
    """The largest connected group of the comparison graph (most votes, then first model, on a tie); None when
    the graph is connected."""
    pairs = np.unique(lo.astype(np.int64) * m + hi)
    n_groups, group = weak_components(m, pairs // m, pairs % m)
    if n_groups <= 1:
        return None
    votes = np.bincount(group[lo], minlength=n_groups)
    best = max(range(n_groups), key=lambda g: ((group == g).sum(), votes[g], -g))
    return np.flatnonzero(group == best)


def prompt_board(
    records: Any,
    *,
    shrink: float | None = None,
    folds: int = 5,
    seed: int = 0,
    kinds_column: str = "category",
) -> PromptBoard:
    """The per-kind board of battle records (ties half a win); kinds from `kinds_column` (a string per vote)."""
    recs = as_records(records)
    prep = prepare(recs, ipw=False)
    if len(prep.names) < 2:
        raise ValueError("a prompt-conditioned board needs votes between at least two models")
    frame = recs.frame
    values = (
        frame[kinds_column].to_numpy(dtype=object)[prep.rows]
        if kinds_column in frame.columns
        else [None] * len(prep.rows)
    )
    kind, kinds = kind_codes(values)
    return fit_arrays(prep.a, prep.b, prep.y, kind, prep.names, kinds, shrink=shrink, folds=folds, seed=seed)


def simulate_kind_arena(
    *,
    n_models: int = 6,
    votes: int = 4000,
    kinds: tuple[str, ...] = ("coding", "writing", "math"),
    swing: float = 150.0,
    seed: int = 0,
) -> tuple[Any, dict[str, Any]]:
    """Votes whose winner depends on the prompt's kind: each model's true rating in kind k is its global skill plus
    a per-kind offset (sd `swing` points; the first model is best at the first kind by construction). Returns the
    records (with `category` and `tstamp`) and {"skills": {kind: {model: log-odds}}}."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    base = rng.normal(0.0, 100.0, n_models) / SCALE
    offset = rng.normal(0.0, swing, (n_models, len(kinds))) / SCALE
    offset[0, 0] = abs(offset[0, 0]) + 3 * swing / SCALE
    names = np.array([f"m{i}" for i in range(n_models)], dtype=object)
    a = rng.integers(0, n_models, votes)
    b = (a + rng.integers(1, n_models, votes)) % n_models
    k = rng.integers(0, len(kinds), votes)
    true = base[:, None] + offset
    p = 1.0 / (1.0 + np.exp(-(true[a, k] - true[b, k])))
    wins = rng.random(votes) < p
    frame = pd.DataFrame(
        {
            "model_a": names[a],
            "model_b": names[b],
            "winner": np.where(wins, "model_a", "model_b"),
            "category": np.array(kinds, dtype=object)[k],
            "tstamp": np.arange(votes, dtype=np.float64),
        }
    )
    skills = {
        kind: dict(zip(names.tolist(), true[:, j].tolist(), strict=True)) for j, kind in enumerate(kinds)
    }
    return frame, {"skills": skills}


@single_threaded
def log_loss_gain(
    records: Any, *, test_fraction: float = 0.2, seed: int = 0, rounds: int = 200
) -> dict[str, Any]:
    """Held-out log-loss (decisive outcome, ties half) of the per-kind board against the plain one (shrink -> inf)
    on a random split, with a paired bootstrap interval of the difference."""
    recs = as_records(records)
    prep = prepare(recs, ipw=False)
    frame = recs.frame
    values = (
        frame["category"].to_numpy(dtype=object)[prep.rows]
        if "category" in frame.columns
        else [None] * len(prep.rows)
    )
    kind, kinds = kind_codes(values)
    n = len(prep.rows)
    order = np.random.default_rng(seed).permutation(n)
    n_test = int(round(n * test_fraction))
    test, train = order[:n_test], order[n_test:]
    fitted = fit_arrays(
        prep.a[train], prep.b[train], prep.y[train], kind[train], prep.names, kinds, seed=seed
    )
    plain = fit_arrays(
        prep.a[train], prep.b[train], prep.y[train], np.full(len(train), -1), prep.names, [], shrink=1.0
    )
    y = prep.y[test]

    def loss(board: PromptBoard, kk: np.ndarray) -> np.ndarray:
        p = np.clip(board.predict(prep.a[test], prep.b[test], kk), 1e-12, 1 - 1e-12)
        return -(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))

    lk, lp = loss(fitted, kind[test]), loss(plain, np.full(len(test), -1))
    rng = np.random.default_rng(seed + 1)
    w = rng.poisson(1.0, (rounds, len(test)))
    diff = (w @ (lk - lp)) / np.maximum(w.sum(axis=1), 1)
    lo, hi = np.quantile(diff, [0.025, 0.975])
    return {
        "n_train": len(train),
        "n_test": len(test),
        "per_kind": float(lk.mean()),
        "plain": float(lp.mean()),
        "difference": float(lk.mean() - lp.mean()),
        "difference_ci": [float(lo), float(hi)],
        "shrink": fitted.shrink,
        "better": bool(hi < 0),
    }


__all__ = ["PromptBoard", "fit_arrays", "kind_codes", "log_loss_gain", "prompt_board", "simulate_kind_arena"]
