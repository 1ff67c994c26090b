"""What a judge vote is worth: a composite Bradley-Terry fit of human and AI-judge votes, and the exchange
rate.

One shared rating vector; each source has its own log-likelihood term: loss = L_human(theta) + w *
L_judge(theta). The judge's weight w is chosen by how well the pooled board predicts *held-out human*
votes.
- K-fold cross-validation runs over the human votes; the judge's votes are always in the fit.
- The score is the mean held-out log-likelihood per human vote.
- w runs over a grid on a log scale, w = 0 (judge ignored) included.
"One human vote is worth about k judge votes", with k = 1 / w.

The interval is a bootstrap of the whole selection: human and judge votes resampled, the cross-validation
rerun. It is the percentile interval of the chosen w, turned into k. It is widened to hold the full-data
choice when the bootstrap misses it. With a few hundred human votes, neighbouring weights' held-out scores
differ by less than their noise. w = 0 is k = infinity: "worth nothing".

Which rows are judge votes? The records' `judge` field (who voted) names them (`judges=`). MT-Bench's
human judgements file does the same (`gpt4_pair` next to `author_*` / `expert_*`). Every other row is a
human vote. Fits run on per-pair sums (Newton, `_fit.newton`) with a weak ridge (`CV_RIDGE`). It is about
one draw against an average model. So a fold that leaves a model out still has finite ratings.

What it cannot tell, each with a stated reason and no number:
- too few human votes to cross-validate;
- a judge whose votes share no model with the human votes ("no human overlap");
- a judge with no votes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from . import _fit
from ._blas import single_threaded
from ._board import Leaderboard, leaderboard, prepare
from ._input import as_records

#: The grid of judge weights: 0 and 2^-6 .. 2^1 in half-octave steps.
W_GRID = (0.0, *[2.0 ** (e / 2) for e in range(-12, 3)])
CV_RIDGE = 0.25
#: Fewer human votes than this: no cross-validation ("can't tell").
MIN_HUMAN_VOTES = 50


@dataclass
class JudgeWorth:
    """One judge (or "all judges"): the chosen weight w, k = 1 / w and its interval, the held-out scores."""

    judge: str
    n_judge_votes: int
    n_human_votes: int
    weight: float | None
    worth: float | None  # k: one human vote ~ k judge votes (inf when w = 0)
    worth_low: float | None
    worth_high: float | None
    weight_low: float | None = None
    weight_high: float | None = None
    heldout: dict[str, float] = field(default_factory=dict)  # w -> mean held-out human log-likelihood
    note: str = ""

    def sentence(self) -> str:
        if self.worth is None:
            return f"{self.judge}: can't tell ({self.note})"
        if math.isinf(self.worth):
            return f"{self.judge}: its votes do not help predict people's votes (worth nothing next to a human vote)"
        hi = "inf" if self.worth_high is None or math.isinf(self.worth_high) else f"{self.worth_high:.2g}"
        lo = "?" if self.worth_low is None else f"{self.worth_low:.2g}"
        return f"{self.judge}: one human vote is worth about {self.worth:.2g} judge votes [{lo}, {hi}]"

    def to_dict(self) -> dict[str, Any]:
        def num(x: float | None) -> float | str | None:
            return "inf" if x is not None and math.isinf(x) else x

        return {
            "judge": self.judge,
            "n_judge_votes": self.n_judge_votes,
            "n_human_votes": self.n_human_votes,
            "weight": self.weight,
            "weight_low": self.weight_low,
            "weight_high": self.weight_high,
            "worth": num(self.worth),
            "worth_low": num(self.worth_low),
            "worth_high": num(self.worth_high),
            "heldout": dict(self.heldout),
            "note": self.note,
            "sentence": self.sentence(),
        }


class _Votes:
    """Per-vote arrays on shared per-pair sums: fits with any weight per vote."""

    def __init__(self, records: Any) -> None:
        recs = as_records(records)
        self.prep = prepare(recs, ipw=False)
        p = self.prep
        m = len(p.names)
        lo, hi = np.minimum(p.a, p.b).astype(np.int64), np.maximum(p.a, p.b).astype(np.int64)
        keys, self.pair = np.unique(lo * m + hi, return_inverse=True)
        self.design = _fit.Design(keys // m, keys % m, m)
        self.yl = np.where(p.a == lo, p.y, 1.0 - p.y)
        self.lo, self.hi = lo, hi
        frame = recs.frame
        who = frame["judge"] if "judge" in frame.columns else None
        self.judge = (
            np.array([None] * len(p.rows), dtype=object)
            if who is None
            else who.astype(object).to_numpy()[p.rows]
        )

    def fit(self, w: np.ndarray) -> np.ndarray:
        """Ratings (log-odds) maximising the w-weighted likelihood minus CV_RIDGE / 2 |theta|^2: Newton on the
        per-pair sums (the ridge makes the problem strictly convex, so no gauge and no line search are needed)."""
        d = self.design
        m = d.n_models
        n = np.bincount(self.pair, w, d.n_rows)
        s = np.bincount(self.pair, w * self.yl, d.n_rows)
        theta = np.zeros(m)
        diag = np.arange(m)
        for _ in range(50):
            p = 1.0 / (1.0 + np.exp(-(theta[d.a] - theta[d.b])))
            r = n * p - s
            grad = np.bincount(d.a, r, m) - np.bincount(d.b, r, m) + CV_RIDGE * theta
            c = n * p * (1.0 - p)
            hess = np.zeros((m, m))
            np.add.at(hess, (d.a, d.b), -c)
            np.add.at(hess, (d.b, d.a), -c)
            hess[diag, diag] = np.bincount(d.a, c, m) + np.bincount(d.b, c, m) + CV_RIDGE
            step = np.linalg.solve(hess, grad)
            step *= min(1.0, 2.0 / max(float(np.max(np.abs(step))), 1e-300))  # no wild first steps
            theta -= step
            if np.max(np.abs(step)) < 1e-8:
                break
        return theta

    def loglik(self, theta: np.ndarray, rows: np.ndarray) -> float:
        d = theta[self.lo[rows]] - theta[self.hi[rows]]
        y = self.yl[rows]
        return float(np.mean(-y * np.logaddexp(0.0, -d) - (1.0 - y) * np.logaddexp(0.0, d)))


def _select(
    votes: _Votes, human: np.ndarray, judge: np.ndarray, base: np.ndarray, folds: int, rng: Any
) -> dict[float, float]:
    """Mean held-out human log-likelihood per w on the grid; `base` = per-vote resampling weights."""
    idx = np.flatnonzero(human & (base > 0))
    fold = rng.permutation(len(idx)) % folds
    scores = {w: 0.0 for w in W_GRID}
    total = 0
    for k in range(folds):
        test = idx[fold == k]
        train_h = np.zeros(len(base))
        train_h[idx[fold != k]] = base[idx[fold != k]]
        for w in W_GRID:
            theta = votes.fit(train_h + w * judge * base)
            scores[w] += votes.loglik(theta, test) * len(test)
        total += len(test)
    return {w: v / max(total, 1) for w, v in scores.items()}


def _best(scores: dict[float, float]) -> float:
    return max(scores, key=lambda w: (round(scores[w], 12), -w))


@single_threaded
def judge_worth(
    records: Any,
    judges: list[str] | tuple[str, ...],
    *,
    folds: int = 5,
    rounds: int = 30,
    seed: int = 0,
    ci_level: float = 0.95,
    pooled: bool = True,
) -> list[JudgeWorth]:
    """Per judge (and, with `pooled` and several judges, all judges together with one weight): the judge weight
    chosen by held-out human log-likelihood, k = 1 / w, and a bootstrap interval (`rounds` resamples)."""
    if not judges:
        raise ValueError("name at least one judge (the `judge` value of its votes)")
    votes = _Votes(records)
    human = ~np.isin(votes.judge, list(judges))
    out = []
    groups = [(j, [j]) for j in judges]
    if pooled and len(judges) > 1:
        groups.append(("all judges", list(judges)))
    for label, names in groups:
        mask = np.isin(votes.judge, names)
        out.append(_worth(votes, label, human, mask, folds, rounds, seed, ci_level))
    return out


def _worth(
    votes: _Votes,
    label: str,
    human: np.ndarray,
    judge: np.ndarray,
    folds: int,
    rounds: int,
    seed: int,
    level: float,
) -> JudgeWorth:
    n_h, n_j = int(human.sum()), int(judge.sum())
    res = JudgeWorth(label, n_j, n_h, None, None, None, None)
    if n_j == 0:
        res.note = "no votes from this judge"
        return res
    if n_h < MIN_HUMAN_VOTES:
        res.note = f"{n_h} human votes (cross-validation needs {MIN_HUMAN_VOTES})"
        return res
    seen_h = set(votes.lo[human]) | set(votes.hi[human])
    if not ({*votes.lo[judge], *votes.hi[judge]} & seen_h):
        res.note = "no human overlap: the judge's votes share no model with the human votes"
        return res
    rng = np.random.default_rng(seed)
    jf = judge.astype(float)
    scores = _select(votes, human, jf, np.ones(len(human)), folds, rng)
    w = _best(scores)
    draws = []
    for _ in range(rounds):
        base = rng.poisson(1.0, len(human)).astype(float)
        draws.append(_best(_select(votes, human, jf, base, folds, rng)))
    alpha = (1.0 - level) / 2.0
    # grid values at both ends (no interpolation between grid points)
    w_lo = float(np.quantile(draws, alpha, method="lower"))
    w_hi = float(np.quantile(draws, 1.0 - alpha, method="higher"))
    # the percentile interval of a noisy selection can miss the full-data choice: widen it to hold the choice
    w_lo, w_hi = min(w_lo, w), max(w_hi, w)
    inv = lambda x: math.inf if x <= 0 else 1.0 / x  # noqa: E731
    res.weight, res.weight_low, res.weight_high = w, w_lo, w_hi
    res.worth, res.worth_low, res.worth_high = inv(w), inv(w_hi), inv(w_lo)
    res.heldout = {f"{k:.4g}": v for k, v in scores.items()}
    return res


def composite_board(
    records: Any,
    judges: list[str] | tuple[str, ...],
    *,
    source: str = "pooled",
    weight: float = 1.0,
    **options: Any,
) -> Leaderboard:
    """The board on human votes only (`source="human"`), judge votes only ("judge") or both ("pooled": judge votes
    weighted `weight`, e.g. the `judge_worth` choice). Other options as `leaderboard`."""
    if source not in ("human", "judge", "pooled"):
        raise ValueError(f"source must be 'human', 'judge' or 'pooled', got {source!r}")
    if not weight >= 0 or not math.isfinite(weight):
        raise ValueError(f"weight must be a finite number >= 0, got {weight!r}")
    recs = as_records(records)
    frame = recs.frame
    who = frame["judge"].astype(object).to_numpy() if "judge" in frame.columns else np.full(len(frame), None)
    is_judge = np.isin(who, list(judges))
    w = {"human": (~is_judge).astype(float), "judge": is_judge.astype(float)}.get(source)
    if w is None:
        w = np.where(is_judge, weight, 1.0)
    keep = w > 0
    sub = frame[keep].reset_index(drop=True)
    return leaderboard(sub, vote_weights=w[keep], **options)


class VoteDraw(NamedTuple):
    """Simulated votes: true skills (logits), model names, and per vote the models, whether A won and whether the
    judge cast it (the first ``human_votes`` are people's)."""

    skill: np.ndarray
    names: np.ndarray
    n: int
    a: np.ndarray
    b: np.ndarray
    wins: np.ndarray
    is_judge: np.ndarray

    def voters(self) -> np.ndarray:
        """Who cast each vote: ``judge``, or one of 30 people ``h0`` .. ``h29``."""
        people = np.array([f"h{k % 30}" for k in range(self.n)], dtype=object)
        return np.where(self.is_judge, "judge", people)


def draw_votes(rng: np.random.Generator, n_models: int, human_votes: int, judge_votes: int) -> VoteDraw:
    """Bradley-Terry votes on true skills (sd 120 points), people's first and then the judge's, all cast the way
    people vote; the simulators then change the judge's votes as their judge would."""
    skill = np.sort(rng.normal(0.0, 120.0, n_models))[::-1] / (400.0 / math.log(10.0))
    names = np.array([f"m{k}" for k in range(n_models)], dtype=object)
    n = human_votes + judge_votes
    a = rng.integers(0, n_models, n)
    b = (a + rng.integers(1, n_models, n)) % n_models
    p = 1.0 / (1.0 + np.exp(-(skill[a] - skill[b])))
    wins = rng.random(n) < p
    return VoteDraw(skill, names, n, a, b, wins, np.arange(n) >= human_votes)


def simulate_judged_arena(
    *,
    n_models: int = 8,
    human_votes: int = 1500,
    judge_votes: int = 6000,
    judge_noise: float = 0.0,
    seed: int = 0,
) -> tuple[Any, dict[str, Any]]:
    """Human votes by Bradley-Terry on true skills (sd 120 points); a judge `judge` whose vote is a coin flip with
    probability `judge_noise` and the human model otherwise. A noiseless judge votes exactly like people (the
    exchange rate is 1); a noisy one also flattens the ratings it implies, so pooling it costs bias as well as
    variance: the best weight for predicting people is `oracle_weight` (known skills), below the Fisher information
    ratio (1 - judge_noise)^2 reported as `truth["information_worth"]`."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    draw = draw_votes(rng, n_models, human_votes, judge_votes)
    skill, names, n, a, b, wins, is_judge = draw
    coin = is_judge & (rng.random(n) < judge_noise)
    wins = np.where(coin, rng.random(n) < 0.5, wins)
    frame = pd.DataFrame(
        {
            "model_a": names[a],
            "model_b": names[b],
            "winner": np.where(wins, "model_a", "model_b"),
            "judge": draw.voters(),
        }
    )
    truth = {
        "skills": dict(zip(names.tolist(), skill.tolist(), strict=True)),
        "information_worth": 1.0 / (1.0 - judge_noise) ** 2 if judge_noise < 1 else math.inf,
    }
    return frame, truth


def oracle_weight(
    records: Any, judges: list[str] | tuple[str, ...], skills: dict[str, float]
) -> dict[str, Any]:
    """For simulations: the judge weight whose pooled fit (all human votes + w x judge votes) predicts people best
    by the *true* skills: expected log-likelihood of a human vote on a uniformly drawn pair, exactly. The answer
    `judge_worth` estimates from held-out votes."""
    votes = _Votes(records)
    judge = np.isin(votes.judge, list(judges)).astype(float)
    true = np.array([skills[n] for n in votes.prep.names])
    i, j = np.triu_indices(len(true), 1)
    p = 1.0 / (1.0 + np.exp(-(true[i] - true[j])))
    scores = {}
    for w in W_GRID:
        theta = votes.fit(1.0 - judge + w * judge)
        d = theta[i] - theta[j]
        scores[w] = float(np.mean(-p * np.logaddexp(0.0, -d) - (1.0 - p) * np.logaddexp(0.0, d)))
    best = _best(scores)
    return {"weight": best, "worth": math.inf if best == 0 else 1.0 / best, "scores": scores}
