"""Which rating method predicts this arena's votes best: fit on some votes, score the held-out ones.

Splits:
- "time": fit on the earliest votes, score the latest `test_fraction` (by `tstamp`, else file order);
- "random": a seeded random share.
Methods:
- online Elo, Bradley-Terry;
- Bradley-Terry with style control, and with style + vibe control (when the answers or their counts are
  there);
- Rao-Kupper, Davidson;
- the prompt-conditioned board (`bt+kind`: per-kind offsets shrunk to the global board, `_prompt_board`).
  It needs a `category` per vote.

Every method predicts three outcomes per held-out vote: model a wins, model b wins, a tie (any kind). The
tie models predict ties themselves. Elo and Bradley-Terry get the training share of ties as a constant,
the rest split by their win probability. Scores per vote:
- log-loss: -log of the probability given to what happened;
- the multi-class Brier score: the sum of squared differences over the three outcomes.
Intervals come from a paired bootstrap over held-out votes: the same resampled votes score every method.
It also gives each method's difference to the best one.

What cannot be estimated is said, not printed as a number. That is too few votes to hold any out, held-out
votes whose models have no earlier votes, every vote a tie, or answers missing for style control.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from vibestudio.standings.words import counted

from . import _fit, _ties
from ._blas import single_threaded
from ._board import RIDGE_SEPARATED, Prepared, _aggregate, _graph_warnings, prepare
from ._elo import online_elo
from ._features import covariates, side_counts
from ._input import RatingsInputError, as_records

PREDICT_METHODS = ("elo", "bt", "bt+style", "bt+style+vibe", "rao-kupper", "davidson", "bt+kind")
#: Methods that give a board (the leaderboard's automatic choice is the best of these).
BOARD_METHODS = ("bt", "rao-kupper", "davidson")
MIN_TEST = 20
MIN_TRAIN = 20


@dataclass
class MethodScore:
    """One method's held-out scores (None with `note` when it cannot be estimated)."""

    method: str
    log_loss: float | None = None
    log_loss_ci: tuple[float, float] | None = None
    brier: float | None = None
    brier_ci: tuple[float, float] | None = None
    vs_best: float | None = None  # log-loss minus the best method's (0 for the best)
    vs_best_ci: tuple[float, float] | None = None
    n_scored: int = 0
    note: str | None = None


@dataclass
class PredictiveCheck:
    split: str
    n_train: int = 0
    n_test: int = 0
    n_unscorable: int = 0
    scores: list[MethodScore] = field(default_factory=list)
    best: str | None = None
    best_clear: bool = False  # the runner-up's log-loss is above the best's beyond the interval
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def get(self, method: str) -> MethodScore:
        for score in self.scores:
            if score.method == method:
                return score
        raise KeyError(method)


@single_threaded
def predictive_check(
    records: Any,
    *,
    split: str = "time",
    test_fraction: float = 0.2,
    methods: tuple[str, ...] | None = None,
    seed: int = 0,
    rounds: int = 200,
    ci_level: float = 0.95,
    both_good: str = "tie",
    both_bad: str = "tie",
    elo_k: float = 4.0,
) -> PredictiveCheck:
    """Held-out log-loss and Brier score of each method in `methods` (see the module docstring). The default is
    every method, `bt+kind` only when the records have a `category` column."""
    if split not in ("time", "random"):
        raise ValueError(f"split must be 'time' or 'random', got {split!r}")
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    recs = as_records(records)
    if methods is None:
        has_kind = "category" in recs.frame.columns
        methods = tuple(m for m in PREDICT_METHODS if m != "bt+kind" or has_kind)
    unknown = [m for m in methods if m not in PREDICT_METHODS]
    if unknown:
        raise ValueError(f"unknown methods {unknown}; choose from {', '.join(PREDICT_METHODS)}")
    prep = prepare(recs, both_good=both_good, both_bad=both_bad, ipw=True)
    out = PredictiveCheck(split=split)
    n = len(prep.rows)
    if not np.any(prep.winner < 2) and n:
        out.notes.append(
            "every vote is a tie: no method can tell the models apart, so there is nothing to compare"
        )
        out.scores = [MethodScore(m, note="every vote is a tie") for m in methods]
        return out
    order = _order(recs, prep, split, seed, out.notes)
    n_test = int(round(n * test_fraction))
    if n - n_test < MIN_TRAIN or n_test < MIN_TEST:
        out.notes.append(
            f"too few votes ({n}) to fit on some and score the others: need at least {MIN_TRAIN} to fit and "
            f"{MIN_TEST} held out"
        )
        out.scores = [MethodScore(m, note="too few votes") for m in methods]
        return out
    train, test = np.sort(order[: n - n_test]), np.sort(order[n - n_test :])
    if split == "time":
        train = order[: n - n_test]  # chronological for Elo
    m = len(prep.names)
    seen = (np.bincount(prep.a[train], minlength=m) + np.bincount(prep.b[train], minlength=m)) > 0
    scorable = seen[prep.a[test]] & seen[prep.b[test]]
    if not scorable.all():
        new = sorted({prep.names[k] for k in np.concatenate([prep.a[test], prep.b[test]]) if not seen[k]})
        out.notes.append(
            f"{int((~scorable).sum())} held-out votes involve models with no votes in the fitting part "
            f"({', '.join(new[:6])}{' ...' if len(new) > 6 else ''}): no method can predict them, they are not scored"
        )
    test = test[scorable]
    out.n_train, out.n_test, out.n_unscorable = len(train), len(test), int((~scorable).sum())
    if len(test) < MIN_TEST:
        out.notes.append(
            f"only {len(test)} held-out votes can be scored (need {MIN_TEST}): nothing is estimated"
        )
        out.scores = [MethodScore(m, note="too few scorable held-out votes") for m in methods]
        return out
    outcome = np.where(prep.winner[test] == 0, 0, np.where(prep.winner[test] == 1, 1, 2))
    tie_rate = float(np.mean(prep.winner[train] >= 2))
    losses: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for method in methods:
        try:
            probs = _predict(method, recs, prep, train, test, tie_rate, elo_k)
        except _CannotEstimate as exc:
            out.scores.append(MethodScore(method, note=str(exc)))
            continue
        probs = np.clip(probs, 1e-12, 1.0)
        probs /= probs.sum(axis=1, keepdims=True)
        onehot = np.eye(3)[outcome]
        losses[method] = (-np.log(probs[np.arange(len(test)), outcome]), ((probs - onehot) ** 2).sum(axis=1))
        out.scores.append(MethodScore(method, n_scored=len(test)))
    _intervals(out, losses, seed, rounds, ci_level)
    return out


class _CannotEstimate(Exception):
    pass


def _order(recs: Any, prep: Prepared, split: str, seed: int, notes: list[str]) -> np.ndarray:
    n = len(prep.rows)
    if split == "random":
        return np.random.default_rng(seed).permutation(n)
    if "tstamp" in recs.frame.columns:
        ts = recs.frame["tstamp"].to_numpy(dtype=np.float64)[prep.rows]
        if not np.isnan(ts).any():
            return np.argsort(ts, kind="stable")
        notes.append("some votes have no tstamp: the time split uses the file order")
    else:
        notes.append("no tstamp: the time split uses the file order")
    return np.arange(n)


def _subset(prep: Prepared, rows: np.ndarray) -> Prepared:
    return Prepared(
        prep.names, prep.a[rows], prep.b[rows], prep.y[rows], prep.w[rows], prep.rows[rows], [],
        prep.winner[rows], prep.weighted,
    )  # fmt: skip


def _bt_theta(sub: Prepared) -> tuple[np.ndarray, float]:
    pairs = _aggregate(sub)
    _, separated = _graph_warnings(sub.names, pairs)
    ridge = RIDGE_SEPARATED if separated else _fit.RIDGE
    return _fit.newton(pairs.design, pairs.s / pairs.n, pairs.n, ridge=ridge).theta, ridge


def _with_ties(p_a: np.ndarray, tie_rate: float) -> np.ndarray:
    return np.column_stack([(1 - tie_rate) * p_a, (1 - tie_rate) * (1 - p_a), np.full(len(p_a), tie_rate)])


def _predict(
    method: str, recs: Any, prep: Prepared, train: np.ndarray, test: np.ndarray, tie_rate: float, elo_k: float
) -> np.ndarray:
    """(len(test), 3) probabilities of (a wins, b wins, tie) from a fit on `train`."""
    m = len(prep.names)
    a, b = prep.a[test], prep.b[test]
    if method == "elo":
        r = online_elo(prep.a[train], prep.b[train], prep.y[train], m, k=elo_k)
        return _with_ties(1.0 / (1.0 + 10.0 ** ((r[b] - r[a]) / 400.0)), tie_rate)
    if method == "bt+kind":
        from ._prompt_board import fit_arrays, kind_codes

        if "category" not in recs.frame.columns:
            raise _CannotEstimate("needs a prompt kind (category) per vote")
        kind, kinds = kind_codes(recs.frame["category"].to_numpy(dtype=object)[prep.rows])
        if not kinds:
            raise _CannotEstimate("no vote has a prompt kind (category)")
        board = fit_arrays(prep.a[train], prep.b[train], prep.y[train], kind[train], prep.names, kinds)
        return _with_ties(board.predict(a, b, kind[test]), tie_rate)
    sub = _subset(prep, train)
    theta, ridge = _bt_theta(sub)
    if method == "bt":
        return _with_ties(_ties._sigmoid(theta[a] - theta[b]), tie_rate)
    if method in ("bt+style", "bt+style+vibe"):
        from vibestudio.textfeatures import vibes

        wanted = vibes.STYLE_FEATURES + (vibes.VIBE_FEATURES if method == "bt+style+vibe" else ())
        try:
            fa, fb = side_counts(recs, prep.rows, wanted)
        except RatingsInputError as exc:
            raise _CannotEstimate("needs the answers (conversations) or style counts") from exc
        X, kept, _ = covariates(fa, fb, wanted)
        if not kept:
            raise _CannotEstimate("no style feature varies between the answers")
        design = _fit.Design(sub.a, sub.b, m, X[train])
        fit = _fit.newton(design, sub.y, sub.w, ridge=ridge, theta0=theta)
        eta = fit.theta[a] - fit.theta[b] + X[test] @ fit.beta
        return _with_ties(_ties._sigmoid(eta), tie_rate)
    data = _ties.aggregate(sub.a, sub.b, sub.winner, sub.w, m)
    if not data.kinds:
        raise _CannotEstimate("no ties among the fitting votes: the tie parameter cannot be estimated")
    if not np.any(sub.winner < 2):
        raise _CannotEstimate("every fitting vote is a tie")
    tf = _ties.fit(method, data, theta0=theta, ridge=ridge)
    return _ties.predict(method, tf.theta, tf.eta, a, b)


def _intervals(
    out: PredictiveCheck,
    losses: dict[str, tuple[np.ndarray, np.ndarray]],
    seed: int,
    rounds: int,
    level: float,
) -> None:
    if not losses:
        return
    names = list(losses)
    ll = np.column_stack([losses[k][0] for k in names])
    br = np.column_stack([losses[k][1] for k in names])
    n = len(ll)
    rng = np.random.default_rng(seed + 1)
    boot_ll, boot_br = [], []
    chunk = max(1, min(rounds, 4_000_000 // max(n, 1)))
    for start in range(0, rounds, chunk):
        size = min(chunk, rounds - start)
        w = rng.poisson(1.0, (size, n)).astype(np.float32)
        total = np.maximum(w.sum(axis=1, keepdims=True), 1.0)
        boot_ll.append((w @ ll.astype(np.float32)) / total)
        boot_br.append((w @ br.astype(np.float32)) / total)
    bl, bb = np.concatenate(boot_ll), np.concatenate(boot_br)
    q = [(1 - level) / 2, 1 - (1 - level) / 2]
    mean_ll, mean_br = ll.mean(axis=0), br.mean(axis=0)
    best = int(np.argmin(mean_ll))
    out.best = names[best]
    for k, name in enumerate(names):
        score = out.get(name)
        score.log_loss, score.brier = float(mean_ll[k]), float(mean_br[k])
        score.log_loss_ci = _pair(np.quantile(bl[:, k], q))
        score.brier_ci = _pair(np.quantile(bb[:, k], q))
        score.vs_best = float(mean_ll[k] - mean_ll[best])
        score.vs_best_ci = _pair(np.quantile(bl[:, k] - bl[:, best], q))
    if len(names) > 1:
        runner = min((k for k in range(len(names)) if k != best), key=lambda k: mean_ll[k])
        out.best_clear = bool(np.quantile(bl[:, runner] - bl[:, best], q[0]) > 0)


def _pair(values: np.ndarray) -> tuple[float, float]:
    return float(values[0]), float(values[1])


def best_board_method(checks: list[PredictiveCheck]) -> str | None:
    """The board method (bt, rao-kupper, davidson) with the lowest held-out log-loss, from the first check that
    scored any of them; None when none could be estimated."""
    for check in checks:
        scored = [s for s in check.scores if s.method in BOARD_METHODS and s.log_loss is not None]
        if scored:
            return min(scored, key=lambda s: s.log_loss or 0.0).method
    return None


def format_predictive(checks: list[PredictiveCheck]) -> str:
    """Plain-text table per split: log-loss and Brier with intervals, difference to the best."""
    lines: list[str] = []
    for check in checks:
        lines.append(
            f"{check.split} split: fitted on {counted(check.n_train, 'vote')}, scored on "
            f"{counted(check.n_test, 'held-out vote')}"
            + (f" ({check.n_unscorable:,} not scorable)" if check.n_unscorable else "")
        )
        header = f"  {'method':<14} {'log-loss':>8} {'95% CI':>17} {'Brier':>7} {'95% CI':>17} {'vs best':>8} {'95% CI':>17}"
        lines += [header, "  " + "-" * (len(header) - 2)]
        for s in sorted(check.scores, key=lambda s: (s.log_loss is None, s.log_loss or 0.0)):
            if s.log_loss is None:
                lines.append(f"  {s.method:<14} cannot estimate: {s.note}")
                continue
            lines.append(
                f"  {s.method:<14} {s.log_loss:8.4f} {_ci(s.log_loss_ci, 4):>17} {s.brier or 0.0:7.4f} "
                f"{_ci(s.brier_ci, 4):>17} {s.vs_best or 0.0:+8.4f} {_ci(s.vs_best_ci, 4):>17}"
            )
        if check.best:
            clear = (
                "clearly (interval of the difference excludes 0)"
                if check.best_clear
                else ("but not clearly: the runner-up's interval of the difference includes 0")
            )
            lines.append(f"  best: {check.best}, {clear}")
        lines += [f"  note: {note}" for note in check.notes]
        lines.append("")
    return "\n".join(lines).rstrip()


def _ci(pair: tuple[float, float] | None, digits: int) -> str:
    return "" if pair is None else f"[{pair[0]:.{digits}f}, {pair[1]:.{digits}f}]"
