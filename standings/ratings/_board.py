"""The leaderboard: Bradley-Terry ratings on the Elo scale with confidence intervals, ranks and warnings.

`leaderboard(records)` turns battles into ratings:
- Outcomes are aggregated per pair of models. Ties are half a win each. Both-good / both-bad votes count
  as ties or are dropped.
- Battles are weighted by 1 / sampling_prob when the pair sampler logged it.
- The fit is Newton's method, put on the Elo scale (400 points = 10x odds). The mean sits at 1000, or an
  anchor model is pinned to a value.
- Intervals come from a seeded bootstrap (multinomial resampling of the battles, exact refits) or the
  sandwich estimator.
- With style or vibe control, the fit runs on single battles with the covariates of `_features`. Each
  covariate's coefficient is reported in rating points per standard deviation.

An interval the data do not identify is never shown as a number. `identify` is the one place that decides.
A row it rejects has `ci_low = ci_high = None` and `cant_tell` = the reason. It rejects:
- a model outside the reference group. That group is the anchor's connected component of the comparison
  graph, or the largest component without an anchor. Ratings in other components share no scale with it.
- a bound that is not finite (a singular information matrix);
- an interval wider than `MAX_HALF_WIDTH` points either side of the rating. It is near-singular, and such
  a span says nothing.
The rating scale's centre is the reference group's mean. So identified groups keep their intervals when a
stray pair of models sits apart from them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from vibestudio.common.outcomes import CODES, SCORE_A
from vibestudio.standings.words import counted
from vibestudio.textfeatures import vibes

from . import _fit, _ties
from ._blas import single_threaded
from ._elo import online_elo
from ._features import covariates, side_counts
from ._graph import strong_components, weak_components
from ._identify import check_covariates
from ._input import WINNERS, BattleRecords, as_records

#: Rating points per natural-log unit of odds (400 points = a factor 10).
SCALE = 400.0 / math.log(10.0)
#: Ridge used when some model has a perfect record (its maximum-likelihood rating would be infinite):
#: about four draws against an average model.
RIDGE_SEPARATED = 1.0
#: The widest interval a board shows, in rating points either side of the rating: 1000 points is odds of
#: 10^2.5 (about 316 to 1) against an equal model, so a wider interval allows every outcome and reads "can't tell".
MAX_HALF_WIDTH = 1000.0
_T = TypeVar("_T")
_SCORE = np.array(SCORE_A)  # the score of A by winner code
# (winner code * 2 + [a > b]) -> outcome seen from the lower model index: 0 = won, 1 = lost, 2 = tie
_OUTCOME_LO = np.array([0, 1, 1, 0, 2, 2, 2, 2, 2, 2], dtype=np.int32)
#: Above this many battle-rounds the style-controlled bootstrap takes one Newton step per round (error O(1/n)).
EXACT_STYLE_BOOTSTRAP_LIMIT = 20_000_000


@dataclass
class ModelRating:
    """One row of a leaderboard. `rank` = 1 + models whose lower bound is above this model's upper bound;
    `rank_low`..`rank_high` is the rank interval (best..worst rank the intervals allow)."""

    name: str
    rating: float
    ci_low: float | None
    ci_high: float | None
    rank: int
    rank_low: int
    rank_high: int
    n_battles: int
    wins: int
    losses: int
    ties: int
    elo: float | None = None
    win_rate: float | None = None
    lc_win_rate: float | None = None
    #: Why the interval cannot be told (then `ci_low` and `ci_high` are None); None when it is shown.
    cant_tell: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "rating": self.rating,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "rank": self.rank,
            "rank_low": self.rank_low,
            "rank_high": self.rank_high,
            "n_battles": self.n_battles,
            "wins": self.wins,
            "losses": self.losses,
            "ties": self.ties,
            "elo": self.elo,
            "cant_tell": self.cant_tell,
        }
        if self.win_rate is not None or self.lc_win_rate is not None:
            out["win_rate"] = self.win_rate
            out["lc_win_rate"] = self.lc_win_rate
        return out


@dataclass
class Leaderboard:
    """Models sorted by rating, style coefficients (rating points per SD of the normalised difference), warnings."""

    models: list[ModelRating]
    style_coefficients: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    style_intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    n_battles: int = 0
    ci_method: str = "bootstrap"
    ci_level: float = 0.95
    bootstrap_rounds: int = 0
    center: str = "mean 1000"
    method: str = "bt"
    #: Tie models only: per tie kind, P(that tie) between two equal models, with its interval.
    tie_parameters: dict[str, dict[str, float]] = field(default_factory=dict)
    #: Style/vibe features whose coefficient the votes cannot identify, with the reason (see `_identify`).
    style_cant_tell: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "models": [m.to_dict() for m in self.models],
            "style_coefficients": dict(self.style_coefficients),
            "warnings": list(self.warnings),
        }
        if self.style_cant_tell:
            out["style_cant_tell"] = dict(self.style_cant_tell)
        if self.method != "bt":
            out["method"] = self.method
            out["tie_parameters"] = {k: dict(v) for k, v in self.tie_parameters.items()}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Leaderboard:
        """A board back from its plain form (`to_dict`, or the leaderboard service's board with its `options`)."""
        known = set(ModelRating.__dataclass_fields__)
        options = data.get("options") or {}
        ci_method = options.get("ci_method", data.get("ci_method", "bootstrap"))
        return cls(
            models=[
                ModelRating(**{k: v for k, v in m.items() if k in known}) for m in data.get("models", [])
            ],
            style_coefficients=dict(data.get("style_coefficients") or {}),
            warnings=list(data.get("warnings") or []),
            style_intervals={k: (v[0], v[1]) for k, v in (data.get("style_intervals") or {}).items()},
            n_battles=int(data.get("n_votes", data.get("n_battles", 0)) or 0),
            ci_method=ci_method,
            bootstrap_rounds=int(options.get("bootstrap", 0)) if ci_method == "bootstrap" else 0,
            method=data.get("method", "bt"),
            tie_parameters={k: dict(v) for k, v in (data.get("tie_parameters") or {}).items()},
            style_cant_tell=dict(data.get("style_cant_tell") or {}),
        )

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([m.to_dict() for m in self.models])

    def get(self, name: str) -> ModelRating:
        for model in self.models:
            if model.name == name:
                return model
        raise KeyError(name)

    def ratings(self) -> dict[str, float]:
        return {m.name: m.rating for m in self.models}


@dataclass
class Prepared:
    """Battles ready for fitting: model indices into `names`, score y of side a, weight w, frame positions."""

    names: list[str]
    a: np.ndarray
    b: np.ndarray
    y: np.ndarray
    w: np.ndarray
    rows: np.ndarray
    notes: list[str]
    winner: np.ndarray  # winner codes (index into WINNERS)
    weighted: bool = False


def prepare(
    records: BattleRecords,
    *,
    both_good: str = "tie",
    both_bad: str = "tie",
    ipw: bool = True,
    vote_weights: np.ndarray | None = None,
) -> Prepared:
    """Apply the both-good / both-bad policy and the sampling weights (times `vote_weights`, one per record, when
    given); keep only models that still have battles."""
    for label, policy in (("both_good", both_good), ("both_bad", both_bad)):
        if policy not in ("tie", "drop"):
            raise ValueError(f"{label} must be 'tie' or 'drop', got {policy!r}")
    frame = records.frame
    win = frame["winner"].cat.codes.to_numpy()
    if both_bad == "drop" or both_good == "drop":
        drop = np.zeros(len(WINNERS), dtype=bool)
        drop[CODES["both_bad"]], drop[CODES["both_good"]] = both_bad == "drop", both_good == "drop"
        rows = np.flatnonzero(~drop[win])
        win = win[rows]
    else:
        rows = np.arange(len(frame))
    ca = frame["model_a"].cat.codes.to_numpy().astype(np.int32)
    cb = frame["model_b"].cat.codes.to_numpy().astype(np.int32)
    if len(rows) < len(frame):
        ca, cb = ca[rows], cb[rows]
    categories = frame["model_a"].cat.categories
    used = np.bincount(ca, minlength=len(categories)) + np.bincount(cb, minlength=len(categories)) > 0
    if not used.all():
        remap = (np.cumsum(used) - 1).astype(np.int32)
        ca, cb = remap[ca], remap[cb]
    names = [str(c) for c in np.asarray(categories)[used]]
    y = _SCORE[win]
    notes: list[str] = []
    w = np.ones(len(rows))
    weighted = False
    if ipw and "sampling_prob" in frame.columns:
        prob = frame["sampling_prob"].to_numpy(dtype=np.float64)[rows]
        known = ~np.isnan(prob)
        if known.any():
            w = np.where(known, 1.0 / np.where(known, prob, 1.0), np.nan)
            if not known.all():
                n_unknown = int((~known).sum())
                notes.append(
                    f"{counted(n_unknown, 'vote')} {'does' if n_unknown == 1 else 'do'} not record how likely "
                    "its pair was to be drawn (named mode, imports, older votes): "
                    f"{'it counts' if n_unknown == 1 else 'they count'} with the average weight"
                )
                w[~known] = np.nanmean(w)
            w = w / w.mean()
            weighted = True
    if vote_weights is not None:
        extra = np.asarray(vote_weights, dtype=np.float64)
        if extra.shape != (len(frame),) or not np.all(np.isfinite(extra)) or np.any(extra < 0):
            raise ValueError("vote_weights must be one finite, non-negative weight per record")
        w = w * extra[rows]
        weighted = True
    return Prepared(names, ca, cb, y, w, rows, notes, win, weighted)


@dataclass
class _Pairs:
    design: _fit.Design
    n: np.ndarray
    s: np.ndarray
    cell_counts: np.ndarray
    cell_w: np.ndarray
    cell_w2: np.ndarray


def _aggregate(prep: Prepared) -> _Pairs:
    """Per unordered pair (i < j): counts, weight sums and squared-weight sums of i-wins, j-wins and ties."""
    m = len(prep.names)
    a, b = prep.a, prep.b
    # outcome seen from the lower index (0 = it won, 1 = it lost, 2 = tie), from the winner code and the order
    outcome = _OUTCOME_LO[prep.winner.astype(np.int32) * 2 + (a > b)]
    key = np.minimum(a, b).astype(np.int64 if m > 40_000 else np.int32)
    key *= m
    key += np.maximum(a, b)
    if m * m * 3 <= 30_000_000:
        flat = np.bincount(outcome * (m * m) + key, minlength=3 * m * m).reshape(3, m * m)
        present = np.flatnonzero(flat.any(axis=0))
        counts: np.ndarray = flat[:, present].T.astype(np.float64)
        if prep.weighted:
            index = np.zeros(m * m, dtype=np.int64)
            index[present] = np.arange(len(present))
            cell = index[key] * 3 + outcome
    else:
        present, pair = np.unique(key, return_inverse=True)
        cell = pair * 3 + outcome
        counts = np.bincount(cell, minlength=len(present) * 3).reshape(-1, 3).astype(np.float64)
    wsum: np.ndarray
    w2sum: np.ndarray
    if not prep.weighted:
        wsum = w2sum = counts
    else:
        size = len(present) * 3
        wsum = np.bincount(cell, prep.w, minlength=size).reshape(-1, 3)
        w2sum = np.bincount(cell, prep.w**2, minlength=size).reshape(-1, 3)
    design = _fit.Design(present // m, present % m, m)
    n = wsum.sum(axis=1)
    s = wsum[:, 0] + 0.5 * wsum[:, 2]
    return _Pairs(design, n, s, counts, wsum, w2sum)


def prepared(
    recs: BattleRecords, *, both_good: str = "tie", both_bad: str = "tie", ipw: bool = True
) -> tuple[Prepared, _Pairs | None, list[str], bool]:
    """`prepare`, `_aggregate` and `_graph_warnings` of these records under one policy, memoised on the records
    object (records are read-only), so the board and votes-to-flip of one `vibestudio ratings` run share one pass
    over a million votes. Pairs are None when no vote is left. Callers must not modify what they get."""
    memo: dict[tuple[Any, ...], Any] = recs.__dict__.setdefault("_prepared", {})
    key = (both_good, both_bad, ipw, id(recs.frame), len(recs.frame))
    if key not in memo:
        prep = prepare(recs, both_good=both_good, both_bad=both_bad, ipw=ipw)
        if len(prep.rows) == 0:
            memo[key] = (prep, None, [], False)
        else:
            pairs = _aggregate(prep)
            memo[key] = (prep, pairs, *_graph_warnings(prep.names, pairs))
    prep, pairs, notes, separated = memo[key]
    return prep, pairs, list(notes), separated


def _graph_warnings(names: list[str], pairs: _Pairs) -> tuple[list[str], bool]:
    """Disconnected comparison graph; perfect records (maximum-likelihood ratings that do not exist)."""
    m = len(names)
    pi, pj = pairs.design.a, pairs.design.b
    n_weak, weak = weak_components(m, pi, pj)
    out: list[str] = []
    if n_weak > 1:
        groups = [[names[k] for k in np.flatnonzero(weak == g)] for g in range(n_weak)]
        groups.sort(key=len, reverse=True)
        shown = "; ".join(_names(g) for g in groups[:6])
        out.append(
            f"the comparison graph is disconnected ({n_weak} groups that never met each other: {shown}); "
            "ratings are only comparable within a group"
        )
    scored_i = pairs.s > 0
    scored_j = pairs.n - pairs.s > 0
    src = np.concatenate([pi[scored_i], pj[scored_j]])
    dst = np.concatenate([pj[scored_i], pi[scored_j]])
    n_strong, strong = strong_components(m, src, dst)
    if n_strong == n_weak:
        return out, False
    cross = strong[src] != strong[dst]
    has_out = np.zeros(n_strong, dtype=bool)
    has_in = np.zeros(n_strong, dtype=bool)
    has_out[strong[src[cross]]] = True
    has_in[strong[dst[cross]]] = True
    top = [names[k] for k in range(m) if not has_in[strong[k]] and has_out[strong[k]]]
    bottom = [names[k] for k in range(m) if not has_out[strong[k]] and has_in[strong[k]]]
    out.append(
        "some ratings are not identified by the data: "
        + (_perfect(top, "lost") if top else "")
        + ("; " if top and bottom else "")
        + (_perfect(bottom, "won") if bottom else "")
        + "; a weak prior (about four draws against an average model) keeps the ratings finite, read them as bounds"
    )
    return out, True


def _perfect(group: list[str], never: str) -> str:
    """ "X never lost or drew against a model it met"; for several, against any model outside the group (what they
    did between themselves is not claimed)."""
    if len(group) == 1:
        return f"{group[0]} never {never} or drew against a model it met"
    return f"{_names(group)} never {never} or drew against any model outside these {len(group)}"


def _names(names: list[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _scale(theta: np.ndarray, ref: np.ndarray, value: float) -> np.ndarray:
    """Ratings on the Elo scale: `value` at the mean of the reference models `ref` (the anchor alone, or a group)."""
    return SCALE * (theta - theta[..., ref].mean(axis=-1, keepdims=True)) + value


def _contrast_sd(cov_theta: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Rating points SD of each model minus the reference models' mean."""
    m = cov_theta.shape[0]
    t = np.eye(m)
    t[:, ref] -= 1.0 / len(ref)
    return SCALE * np.sqrt(np.maximum(np.diag(t @ cov_theta @ t.T), 0.0))


def reference_group(names: list[str], pairs: _Pairs, anchor: int | None) -> np.ndarray:
    """The models the scale is centred on and intervals are identified for: the anchor's connected component of the
    comparison graph, else the largest one (most battles, then first name, on a tie)."""
    m = len(names)
    n_weak, weak = weak_components(m, pairs.design.a, pairs.design.b)
    if n_weak == 1:
        return np.arange(m)
    if anchor is not None:
        return np.flatnonzero(weak == weak[anchor])
    battles = _n_battles(pairs, m)
    best = max(range(n_weak), key=lambda g: ((weak == g).sum(), battles[weak == g].sum(), -g))
    return np.flatnonzero(weak == best)


def identify(
    names: list[str],
    ratings: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    ref: np.ndarray,
    anchor: str | None = None,
) -> list[str | None]:
    """Per model, why its interval cannot be told (None: it can). The one rule every board's intervals pass."""
    inside = np.zeros(len(names), dtype=bool)
    inside[ref] = True
    group = anchor if anchor else _names([names[k] for k in ref], 3)
    out: list[str | None] = []
    for k in range(len(names)):
        if not inside[k]:
            out.append(
                f"never compared, directly or through other models, with {group}: its rating has no common "
                "scale with theirs (the comparison graph is disconnected); one vote between its group and theirs "
                "would put it on their scale"
            )
        elif not (math.isfinite(lo[k]) and math.isfinite(hi[k]) and math.isfinite(ratings[k])):
            out.append("the data do not determine its interval (singular information)")
        elif max(ratings[k] - lo[k], hi[k] - ratings[k]) > MAX_HALF_WIDTH:
            out.append(
                f"the data hold too little information: its interval would be wider than ±{MAX_HALF_WIDTH:.0f} "
                "points (more votes against the models it is compared with, with some wins and some losses, "
                "would narrow it)"
            )
        else:
            out.append(None)
    return out


def rank_intervals(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(best, worst) rank per model: best = 1 + #models whose lower bound is above its upper bound, worst =
    #models minus those whose upper bound is below its lower bound."""
    better = (lo[None, :] > hi[:, None]).sum(axis=1)
    worse = (hi[None, :] < lo[:, None]).sum(axis=1)
    return 1 + better, len(lo) - worse


@single_threaded
def leaderboard(
    records: Any,
    *,
    bootstrap_rounds: int = 100,
    seed: int = 0,
    ci_method: str = "bootstrap",
    ci_level: float = 0.95,
    style_control: bool = False,
    vibe_control: bool = False,
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    ipw: bool = True,
    both_good: str = "tie",
    both_bad: str = "tie",
    elo_k: float | None = 4.0,
    min_battles: int = 10,
    resample: str = "bayesian",
    method: str = "bt",
    vote_weights: Any = None,
    record_noun: str = "battle",
) -> Leaderboard:
    """Bradley-Terry leaderboard on the Elo scale from battle records (list of dicts, DataFrame or BattleRecords).

    `ci_method` "bootstrap" (`bootstrap_rounds` seeded rounds, percentile intervals) or "sandwich" (robust normal
    intervals). `anchor` pins that model at `anchor_rating`; without it the mean rating is `anchor_rating`.
    `style_control` adds token length, markdown headers, list items and bold as covariates; `vibe_control` adds the
    vibe markers of `textfeatures.vibes` (emoji, exclamations, flattery, sycophancy, hedging, refusal). `resample` is the
    bootstrap scheme: "multinomial" (resample battles with replacement, as FastChat) or "bayesian" (Dirichlet weights
    on the battles; same intervals to first order, about twice as fast to draw). `method` "bt" counts a tie as half
    a win; "rao-kupper" and "davidson" fit tie probabilities (one parameter per tie kind that occurs).
    `record_noun` names what one record is in the warnings: "battle" (FastChat's layout) or "vote" (the studio's
    records, one per turn).
    """
    _check_options(method, style_control or vibe_control, ci_method, resample, bootstrap_rounds, ci_level)
    recs = as_records(records)
    if vote_weights is None:
        prep, pairs, graph_notes, separated = prepared(recs, both_good=both_good, both_bad=both_bad, ipw=ipw)
    else:
        prep = prepare(recs, both_good=both_good, both_bad=both_bad, ipw=ipw, vote_weights=vote_weights)
    center = f"{anchor} = {anchor_rating:g}" if anchor else f"mean {anchor_rating:g}"
    board = _empty_board(prep, method, ci_method, ci_level, bootstrap_rounds, center)
    if len(prep.rows) == 0:
        board.warnings.append("no battles to rate")
        return board
    anchor_index = _anchor_index(prep.names, anchor)
    if vote_weights is not None:
        pairs = _aggregate(prep)
        graph_notes, separated = _graph_warnings(prep.names, pairs)
    assert pairs is not None  # votes are left
    board.warnings.extend(graph_notes)
    est = _estimate(
        board,
        recs,
        prep,
        pairs,
        features=_wanted_features(style_control, vibe_control),
        rng=np.random.default_rng(seed),
        rounds=bootstrap_rounds,
        ridge=RIDGE_SEPARATED if separated else _fit.RIDGE,
        resample=resample,
    )
    m = len(prep.names)
    ref = reference_group(prep.names, pairs, anchor_index)
    scale_ref = ref if anchor_index is None else np.array([anchor_index])
    ratings, lo, hi = _rating_intervals(est, scale_ref, anchor_rating, m, ci_level)
    lo, hi = _thin_floor(est, pairs, scale_ref, ratings, lo, hi, ci_level, min_battles)
    _set_coefficients(board, est, m)
    elo = None if elo_k is None else _elo_ratings(recs, prep, elo_k, anchor_rating)
    cant_tell = identify(prep.names, ratings, lo, hi, ref, anchor)
    board.models = _rows(prep.names, pairs, ratings, lo, hi, elo, cant_tell)
    if len(ref) < m:
        board.warnings.append(
            f"ratings are centred on the largest group ({_names([prep.names[k] for k in ref], 3)})"
            if anchor is None
            else f"ratings are on {anchor}'s scale"
        )
        board.warnings[-1] += "; the intervals of models outside it read can't tell"
    board.warnings.extend(_few_battles(board.models, min_battles, record_noun))
    return board


def _empty_board(
    prep: Prepared, method: str, ci_method: str, ci_level: float, bootstrap_rounds: int, center: str
) -> Leaderboard:
    """The board's options and the notes from preparing the data, before any model is rated."""
    return Leaderboard(
        models=[],
        method=method,
        warnings=list(prep.notes),
        n_battles=len(prep.rows),
        ci_method=ci_method,
        ci_level=ci_level,
        bootstrap_rounds=bootstrap_rounds if ci_method == "bootstrap" else 0,
        center=center,
    )


def _few_battles(models: list[ModelRating], min_battles: int, noun: str = "battle") -> list[str]:
    """The warning (if any) about models with fewer than `min_battles` records, named for what one record is
    (`noun`: a battle in FastChat's layout, a vote in the studio's, where a battle of two turns has two)."""
    few = [r.name for r in models if r.n_battles < min_battles]
    if not few:
        return []
    return [
        f"{_names(few)} {'has' if len(few) == 1 else 'have'} fewer than {counted(min_battles, noun)}: their "
        f"places are not settled (their intervals are at least as wide as the model allows for so few {noun}s)"
    ]


def _n_battles(pairs: _Pairs, m: int) -> np.ndarray:
    pi, pj, counts = pairs.design.a, pairs.design.b, pairs.cell_counts
    return np.bincount(pi, counts.sum(axis=1), m) + np.bincount(pj, counts.sum(axis=1), m)


def _thin_floor(
    est: _Estimate,
    pairs: _Pairs,
    ref: np.ndarray,
    ratings: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    ci_level: float,
    min_battles: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Intervals of models with fewer than `min_battles` battles, widened to at least the model-based
    (inverse-Hessian) half-width. The bootstrap and the sandwich measure the spread of the observed outcomes:
    one tied battle has none, and would get [1000, 1000], an interval that looks certain on no evidence. A model
    whose battles all ended the same way (all won, all lost or all tied) has no spread either, however many battles
    it has (ten straight wins resampled are ten straight wins), and is floored the same way."""
    m = len(ratings)
    pi, pj, counts = pairs.design.a, pairs.design.b, pairs.cell_counts
    wins = np.bincount(pi, counts[:, 0], m) + np.bincount(pj, counts[:, 1], m)
    losses = np.bincount(pi, counts[:, 1], m) + np.bincount(pj, counts[:, 0], m)
    n = _n_battles(pairs, m)
    same = (wins == n) | (losses == n) | (wins + losses == 0)
    thin = (n < min_battles) | same
    if not thin.any():
        return lo, hi
    cov = np.linalg.pinv(est.fit.hessian, hermitian=True)[:m, :m]
    half = NormalDist().inv_cdf(0.5 + ci_level / 2.0) * _contrast_sd(cov, ref)
    lo = np.where(thin, np.minimum(lo, ratings - half), lo)
    hi = np.where(thin, np.maximum(hi, ratings + half), hi)
    return lo, hi


def _check_options(
    method: str, covariates: bool, ci_method: str, resample: str, bootstrap_rounds: int, ci_level: float
) -> None:
    """Reject `leaderboard` options it does not know or cannot combine, before any data is read."""
    if method not in _ties.METHODS:
        raise ValueError(f"method must be one of {', '.join(_ties.METHODS)}, got {method!r}")
    if method != "bt" and covariates:
        raise ValueError("style and vibe control are available with method='bt' only")
    if ci_method not in ("bootstrap", "sandwich"):
        raise ValueError(f"ci_method must be 'bootstrap' or 'sandwich', got {ci_method!r}")
    if resample not in ("multinomial", "bayesian"):
        raise ValueError(f"resample must be 'multinomial' or 'bayesian', got {resample!r}")
    if ci_method == "bootstrap" and bootstrap_rounds < 2:
        raise ValueError("bootstrap needs at least 2 rounds; use ci_method='sandwich' for none")
    if not 0.0 < ci_level < 1.0:
        raise ValueError(f"ci_level must be in (0, 1), got {ci_level}")


def _anchor_index(names: list[str], anchor: str | None) -> int | None:
    """The anchor model's index in `names` (None without an anchor); an anchor without battles is an error."""
    if anchor is None:
        return None
    if anchor not in names:
        raise ValueError(f"anchor model {anchor!r} has no battles")
    return names.index(anchor)


def _wanted_features(style_control: bool, vibe_control: bool) -> tuple[str, ...]:
    """The covariates that style and vibe control ask for (none with neither)."""
    return (vibes.STYLE_FEATURES if style_control else ()) + (vibes.VIBE_FEATURES if vibe_control else ())


@dataclass
class _Estimate:
    """A rating fit and what its intervals come from: bootstrap `draws` (theta, beta), else the covariance `cov`."""

    fit: _fit.Fit
    cov: np.ndarray | None
    draws: tuple[np.ndarray, np.ndarray] | None
    feature_names: list[str] = field(default_factory=list)


def _estimate(
    board: Leaderboard,
    recs: BattleRecords,
    prep: Prepared,
    pairs: _Pairs,
    *,
    features: tuple[str, ...],
    rng: np.random.Generator,
    rounds: int,
    ridge: float,
    resample: str,
) -> _Estimate:
    """Fit by the board's method and interval kind (on single battles when `features` are wanted); adds warnings."""
    method, ci_method = board.method, board.ci_method
    decisive = _has_decisive(prep)
    if features:
        est = _covariate_fit(board, recs, prep, pairs, features, rng, rounds, ridge, resample)
    elif method != "bt" and decisive:
        est = _Estimate(*_tie_fit(board, prep, pairs, method, ci_method, rng, rounds, ridge, resample))
    else:
        est = _pair_fit(pairs, len(prep.names), ci_method, rng, rounds, ridge, resample)
    if method != "bt" and not decisive:
        board.warnings.append(
            f"every battle is a tie: the {method} tie parameter cannot be estimated and no model can be told apart"
        )
    if not est.fit.converged:
        board.warnings.append("the rating fit did not fully converge; treat the ratings as approximate")
    return est


def _covariate_fit(
    board: Leaderboard,
    recs: BattleRecords,
    prep: Prepared,
    pairs: _Pairs,
    features: tuple[str, ...],
    rng: np.random.Generator,
    rounds: int,
    ridge: float,
    resample: str,
) -> _Estimate:
    """Style / vibe control: a fit on single battles with the covariates; adds the covariates' warnings."""
    fa, fb = side_counts(recs, prep.rows, features)
    X, feature_names, feature_notes = covariates(fa, fb, features)
    board.warnings.extend(feature_notes)
    for name in features:
        if name not in feature_names:
            board.style_cant_tell[name] = (
                "it never varies between the two answers of a vote: left out of the fit"
            )
    check = check_covariates(prep.a, prep.b, len(prep.names), X, prep.w, feature_names)
    board.style_cant_tell.update(check.cant_tell)
    board.warnings.extend(check.notes)
    X = X[:, check.fit_columns]
    feature_names = [feature_names[j] for j in check.fit_columns]
    design = _fit.Design(prep.a, prep.b, len(prep.names), X)
    start = _fit.newton(pairs.design, pairs.s / pairs.n, pairs.n, ridge=ridge).theta
    fit = _fit.newton(design, prep.y, prep.w, ridge=ridge, theta0=start)
    if _fit.near_singular(fit):
        board.warnings.append(
            "the style/vibe covariates are (nearly) collinear with the models (e.g. a feature only one model "
            "ever shows): their coefficients and those models' ratings are not separately identified"
        )
    if board.ci_method == "sandwich":
        return _Estimate(fit, _fit.sandwich(design, fit, prep.y, prep.w**2), None, feature_names)
    draws = _battle_bootstrap(design, prep, fit, rng, rounds, ridge, resample)
    return _Estimate(fit, None, draws, feature_names)


def _pair_fit(
    pairs: _Pairs, m: int, ci_method: str, rng: np.random.Generator, rounds: int, ridge: float, resample: str
) -> _Estimate:
    """Plain Bradley-Terry on the per-pair aggregates, with the sandwich covariance or the pair bootstrap."""
    if ci_method == "sandwich":
        fit = _fit.newton(pairs.design, pairs.s / pairs.n, pairs.n, ridge=ridge)
        cells = _fit.Design(np.repeat(pairs.design.a, 3), np.repeat(pairs.design.b, 3), m)
        cell_y = np.tile([1.0, 0.0, 0.5], pairs.design.n_rows)
        return _Estimate(fit, _fit.sandwich(cells, fit, cell_y, pairs.cell_w2.ravel()), None)
    with _PairBootstrap(pairs, rng, rounds, resample) as bootstrap:
        fit = _fit.newton(pairs.design, pairs.s / pairs.n, pairs.n, ridge=ridge)
        return _Estimate(fit, None, bootstrap.refit(fit, ridge))


def _rating_intervals(
    est: _Estimate, ref: np.ndarray, anchor_rating: float, m: int, ci_level: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ratings on the Elo scale with their intervals: bootstrap percentiles, else normal from the covariance."""
    alpha = 1.0 - ci_level
    ratings = _scale(est.fit.theta, ref, anchor_rating)
    if est.draws is not None:
        boot = _scale(est.draws[0], ref, anchor_rating)
        lo, hi = np.quantile(boot, [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
        return ratings, lo, hi
    assert est.cov is not None  # a fit without draws always has its covariance
    z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
    sd = _contrast_sd(est.cov[:m, :m], ref)
    return ratings, ratings - z * sd, ratings + z * sd


def _set_coefficients(board: Leaderboard, est: _Estimate, m: int) -> None:
    """The covariates' coefficients (rating points per SD) and their intervals, onto `board`. An interval is never
    narrower than the inverse information allows (a bootstrap of all-tie votes has no spread at all), and a
    coefficient whose interval is not finite or reaches past `MAX_HALF_WIDTH` reads can't tell instead."""
    alpha = 1.0 - board.ci_level
    beta = est.fit.beta
    if est.draws is None:
        assert est.cov is not None  # a fit without draws always has its covariance
        z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
        beta_sd = SCALE * np.sqrt(np.maximum(np.diag(est.cov)[m : m + len(beta)], 0.0))
        beta_lo, beta_hi = SCALE * beta - z * beta_sd, SCALE * beta + z * beta_sd
    elif est.draws[1].shape[1]:
        beta_lo, beta_hi = np.quantile(SCALE * est.draws[1], [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
    else:
        beta_lo = beta_hi = np.zeros(0)
    names = est.feature_names
    if len(beta):
        info_cov = np.linalg.pinv(est.fit.hessian, hermitian=True)
        z = NormalDist().inv_cdf(1.0 - alpha / 2.0)
        half = z * SCALE * np.sqrt(np.maximum(np.diag(info_cov)[m : m + len(beta)], 0.0))
        beta_lo = np.minimum(beta_lo, SCALE * beta - half)
        beta_hi = np.maximum(beta_hi, SCALE * beta + half)
    board.style_coefficients, board.style_intervals = {}, {}
    for n, b, lo_, hi_ in zip(names, beta, beta_lo, beta_hi, strict=True):
        value = float(SCALE * b)
        if not all(math.isfinite(x) for x in (value, lo_, hi_)):
            board.style_cant_tell[n] = "the data do not determine its interval (singular information)"
        elif max(value - lo_, hi_ - value) > MAX_HALF_WIDTH:
            board.style_cant_tell[n] = (
                f"the data hold too little information: its interval would be wider than ±{MAX_HALF_WIDTH:.0f} "
                "points (the votes nearly separate on it)"
            )
        else:
            board.style_coefficients[n] = value
            board.style_intervals[n] = (float(lo_), float(hi_))


def _elo_ratings(recs: BattleRecords, prep: Prepared, k: float, init: float) -> np.ndarray:
    """Online Elo over the battles, in time order when the records have timestamps."""
    order = None
    if "tstamp" in recs.frame.columns:
        order = np.argsort(recs.frame["tstamp"].to_numpy(dtype=np.float64)[prep.rows], kind="stable")
    return online_elo(prep.a, prep.b, prep.y, len(prep.names), order=order, k=k, init=init)


def _has_decisive(prep: Prepared) -> bool:
    return bool(np.any(prep.winner < 2))


def _tie_fit(
    board: Leaderboard,
    prep: Prepared,
    pairs: _Pairs,
    method: str,
    ci_method: str,
    rng: np.random.Generator,
    rounds: int,
    ridge: float,
    resample: str,
) -> tuple[_fit.Fit, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """A tie model's fit as a Bradley-Terry-shaped result (theta; covariance or draws); fills `tie_parameters`."""
    data = _ties.aggregate(prep.a, prep.b, prep.winner, prep.w, len(prep.names))
    start = _fit.newton(pairs.design, pairs.s / pairs.n, pairs.n, ridge=ridge).theta
    tf = _ties.fit(method, data, theta0=start, ridge=ridge)
    m = len(prep.names)
    alpha = 1.0 - board.ci_level
    cov = np.zeros((m, m))
    draws: tuple[np.ndarray, np.ndarray] | None = None
    if ci_method == "sandwich":
        full = _ties.sandwich(tf, data)
        cov = full[:m, :m]
        eta_cov = full[m:, m:]
        eta_draws = (
            np.random.default_rng(0).multivariate_normal(tf.eta, eta_cov, size=400, method="eigh")
            if len(tf.eta)
            else np.zeros((0, 0))
        )
    else:
        theta_draws, eta_draws = _ties.bootstrap(tf, data, rng, rounds, resample, ridge)
        draws = (theta_draws, np.zeros((rounds, 0)))
    point = _ties.equal_model_ties(method, tf.eta)
    spread = np.array([_ties.equal_model_ties(method, e) for e in eta_draws]) if len(tf.eta) else None
    for k, kind in enumerate(tf.kinds):
        lo, hi = (
            np.quantile(spread[:, k], [alpha / 2.0, 1.0 - alpha / 2.0]) if spread is not None else (0.0, 0.0)
        )
        board.tie_parameters[kind] = {"p_equal": float(point[k]), "ci_low": float(lo), "ci_high": float(hi)}
    if not data.kinds:
        board.warnings.append(f"no ties in the data: {method} reduces to Bradley-Terry")
    return tf.as_bt_fit(), cov, draws


def _rows(
    names: list[str],
    pairs: _Pairs,
    ratings: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    elo: np.ndarray | None,
    cant_tell: list[str | None],
) -> list[ModelRating]:
    m = len(names)
    pi, pj, counts = pairs.design.a, pairs.design.b, pairs.cell_counts
    n_battles = np.bincount(pi, counts.sum(axis=1), m) + np.bincount(pj, counts.sum(axis=1), m)
    wins = np.bincount(pi, counts[:, 0], m) + np.bincount(pj, counts[:, 1], m)
    ties = np.bincount(pi, counts[:, 2], m) + np.bincount(pj, counts[:, 2], m)
    unknown = np.array([r is not None for r in cant_tell], dtype=bool)
    best, worst = rank_intervals(np.where(unknown, -np.inf, lo), np.where(unknown, np.inf, hi))
    order = sorted(range(m), key=lambda k: (-ratings[k], names[k]))
    return [
        ModelRating(
            name=names[k],
            rating=float(ratings[k]),
            ci_low=None if unknown[k] else float(lo[k]),
            ci_high=None if unknown[k] else float(hi[k]),
            rank=int(best[k]),
            rank_low=int(best[k]),
            rank_high=int(worst[k]),
            n_battles=int(n_battles[k]),
            wins=int(wins[k]),
            losses=int(n_battles[k] - wins[k] - ties[k]),
            ties=int(ties[k]),
            elo=None if elo is None else float(elo[k]),
            cant_tell=cant_tell[k],
        )
        for k in order
    ]


class _PairBootstrap:
    """Resampling of the battles (drawn per pair x outcome cell) and exact refits of every round.

    Rounds go in chunks, each with its own generator spawned from the seeded one, so results do not depend on
    timing. Two helper threads start drawing counts as soon as the object is created (while the caller fits the
    full data), then refit the chunks; both steps spend most of their time in numpy / scipy code that releases
    the GIL, so the two threads use two cores.
    """

    def __init__(self, pairs: _Pairs, rng: np.random.Generator, rounds: int, resample: str) -> None:
        self.pairs = pairs
        # outcome-major (3 x pairs) so the per-pair sums below are contiguous adds
        counts = pairs.cell_counts.T.ravel().astype(np.int64)
        chunk = max(1, min(25, 4_000_000 // max(1, len(counts))))
        self.sizes = [min(chunk, rounds - start) for start in range(0, rounds, chunk)]
        self.helpers = ThreadPoolExecutor(max_workers=2)
        self.futures = [
            self.helpers.submit(_fit.resample_counts, child, counts, size, resample)
            for child, size in zip(rng.spawn(len(self.sizes)), self.sizes, strict=True)
        ]

    def __enter__(self) -> _PairBootstrap:
        return self

    def __exit__(self, *exc: object) -> None:
        for future in self.futures:
            future.cancel()
        self.helpers.shutdown(wait=True)

    def refit(self, fit: _fit.Fit, ridge: float) -> tuple[np.ndarray, np.ndarray]:
        pairs = self.pairs
        weighted = not np.array_equal(pairs.cell_w, pairs.cell_counts)
        mean_w = np.divide(
            pairs.cell_w, pairs.cell_counts, out=np.zeros_like(pairs.cell_w), where=pairs.cell_counts > 0
        )
        fit.chord_inverse()
        pairs.design.incidence(np.float32)

        def refit_chunk(drawn: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            drawn = drawn.reshape(len(drawn), 3, -1)
            if weighted:
                cells = drawn * mean_w.T[None, :, :]
                n = cells[:, 0] + cells[:, 1] + cells[:, 2]
                s = cells[:, 0] + 0.5 * cells[:, 2]
            else:
                n = (drawn[:, 0] + drawn[:, 1] + drawn[:, 2]).astype(np.float64)
                s = drawn[:, 0] + 0.5 * drawn[:, 2]
            y = np.divide(s, n, out=np.full_like(s, 0.5), where=n > 0)
            return _fit.refit_batch(pairs.design, y, n, fit, ridge=ridge, tol=1e-5)

        # Queued behind every draw job, so a refit job only ever waits for a draw that is already running.
        jobs = [self.helpers.submit(_after, future, refit_chunk) for future in self.futures]
        results = [job.result() for job in jobs]
        return np.concatenate([r[0] for r in results]), np.concatenate([r[1] for r in results])


def _after(future: Future[np.ndarray], then: Callable[[np.ndarray], _T]) -> _T:
    return then(future.result())


def _battle_bootstrap(
    design: _fit.Design,
    prep: Prepared,
    fit: _fit.Fit,
    rng: np.random.Generator,
    rounds: int,
    ridge: float,
    resample: str,
) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap over single battles: exact refits for small data, one Newton step per round for large data."""
    n = design.n_rows
    if n * rounds > EXACT_STYLE_BOOTSTRAP_LIMIT:
        return _fit.one_step_bootstrap(
            design, prep.y, prep.w, fit, rng, rounds, ridge=ridge, resample=resample
        )
    chunk = max(1, min(rounds, 2_000_000 // n))
    thetas, betas = [], []
    for start in range(0, rounds, chunk):
        size = min(chunk, rounds - start)
        weights = _fit.battle_weights(rng, n, size, resample)
        theta, beta = _fit.refit_batch(design, prep.y, weights * prep.w, fit, ridge=ridge)
        thetas.append(theta)
        betas.append(beta)
    return np.concatenate(thetas), np.concatenate(betas)
