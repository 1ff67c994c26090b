"""Votes-to-flip: for each adjacent pair of the Bradley-Terry board, the fewest votes whose removal flips its
order.

After Huang, Shen, Wei and Broderick, "Dropping just a handful of preferences can change top LLM rankings"
(ICLR 2026). Finding the smallest set exactly is combinatorial. This module finds a small set fast, then
checks it.

1. **Approximate** with influence functions, i.e. one Newton step of the Bradley-Terry log-likelihood.
   Removing vote i moves the ratings by about H^+ grad l_i = w_i (p_i - y_i) H^+ (e_a - e_b). Take the
   pair u above v. The effect on its gap theta_u - theta_v is w_i (p_i - y_i) (H^+[u] - H^+[v]) . (e_a -
   e_b). Votes with the same pair, outcome and weight have the same effect. So they form one group with a
   count. The most negative effects are taken, greedily, until the predicted gap changes sign. One
   pseudo-inverse of the board's Hessian serves every pair. Only the groups of u's and v's pairs are
   ranked when no other group can reach the prefix; a bound says when.
2. **Check** by refitting without those votes. If the order did not flip, the influences are recomputed at
   the refitted ratings and more votes are taken. So k grows until a refit flips. Then the search finds
   the shortest prefix of the removal sequence that still flips on refit. It refits where the influences
   put the crossing, one vote to either side. The checked count flips on refit; one vote fewer does not.
   It is an upper bound on the true minimum, since the search is greedy. The tests compare it with
   exhaustive search on small arenas.

Refits are chord steps from the board's fit with its Hessian. They take a few passes over the per-pair
sums and stop once the sign of the gap is settled. A pair's check costs about three of them. On a big
board, checking every pair would still cost more than the board's bootstrap. So the top pair and then the
closest pairs (fewest estimated votes) are checked while a budget lasts. The budget is `CHECKED_ROWS`:
every pair of a board up to about 65 models with all pairs played. The others keep their one-step
estimate, marked `checked=False`.

`search="refit"` is the reference, and the former default. It uses Newton refits, a pseudo-inverse per
round and bisection over the whole sequence. It is many times slower. The tests check that both searches
give the same counts.

What it knows: plain Bradley-Terry with ties as half a win, both-good / both-bad as ties or dropped,
inverse-probability weights. It knows nothing about tie models or style control; the pair's order is that
of plain BT. It knows nothing of databases or UI. A pair whose models never met, directly or through
others, cannot be flipped or kept: "can't tell".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vibestudio.standings.words import counted

from . import _fit
from ._blas import single_threaded
from ._board import _OUTCOME_LO, RIDGE_SEPARATED, SCALE, _aggregate, _graph_warnings, prepare, prepared
from ._graph import weak_components
from ._input import as_records

#: Record fields copied into each removed vote (when present): who cast it, when, and where it lives.
VOTE_FIELDS = ("battle_id", "vote_id", "judge", "tstamp", "question_id", "turn")
#: Rounds of "take more votes, refit" before giving up on a pair.
MAX_ROUNDS = 60
#: A refitted gap within this many log-odds of zero is a dead heat, not a flip: far below any rating difference a
#: board shows (4e-7 points), far above where the two refits (Newton, chord steps) disagree.
TIE = 1e-9
#: The checking budget of `votes_to_flip` (checked=None): every pair is checked by refits while pairs x pair-rows
#: stays within this; past it, the top pair and the closest pairs, as many as this pays for (a refit costs a few
#: passes over the pair-rows), and at least `CHECKED_MIN`. On 150 models (11,175 pairs of models) that is the top
#: pair and the 12 closest of 149: checking all of them would cost more than the board's whole bootstrap.
CHECKED_ROWS = 150_000
CHECKED_MIN = 10
#: The searches `votes_to_flip` knows: "fast" (the default) and "refit" (the reference it is checked against).
SEARCHES = ("fast", "refit")


@dataclass
class PairFlip:
    """One adjacent pair of the board: `higher` is rated above `lower`; `votes` is the checked number of votes whose
    removal flips them (None: can't tell, see `note`); `predicted` the first one-step estimate; `removed` the votes
    (record fields `VOTE_FIELDS` plus model_a, model_b, winner and `row`, the record's position)."""

    higher: str
    lower: str
    position: int
    gap: float
    votes: int | None
    predicted: int | None
    refits: int
    n_votes: int
    removed: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""
    #: True: `votes` is checked by refits (those votes flip the pair, one fewer does not). False with a count: the
    #: one-step estimate of a pair outside the checked budget (`votes == predicted`, `removed` the votes it names).
    checked: bool = False

    def to_dict(self, with_votes: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "higher": self.higher,
            "lower": self.lower,
            "votes": self.votes,
            "position": self.position,
            "rating_gap": self.gap,
            "predicted": self.predicted,
            "refits": self.refits,
            "n_votes": self.n_votes,
            "note": self.note,
            "checked": self.checked,
        }
        if with_votes:
            out["removed"] = [dict(v) for v in self.removed]
        return out


@dataclass
class FlipReport:
    """Votes-to-flip for every adjacent pair, top pair first, with the time it took and warnings."""

    pairs: list[PairFlip]
    n_votes: int
    seconds: float
    warnings: list[str] = field(default_factory=list)

    def top(self) -> PairFlip | None:
        return self.pairs[0] if self.pairs else None

    def summary(self) -> list[dict[str, Any]]:
        """The CLI's `votes_to_flip` list: {"higher", "lower", "votes"} per adjacent pair."""
        return [{"higher": p.higher, "lower": p.lower, "votes": p.votes} for p in self.pairs]

    def to_dict(self, with_votes: bool = True) -> dict[str, Any]:
        return {
            "pairs": [p.to_dict(with_votes) for p in self.pairs],
            "n_votes": self.n_votes,
            "seconds": self.seconds,
            "warnings": list(self.warnings),
        }


def headline(report: FlipReport) -> str:
    """ "#1 holds unless 3 votes go" (or what is missing), for a board's summary line."""
    return flip_headline(report.to_dict(with_votes=False))


def dead_heat(pairs: list[dict[str, Any]]) -> list[str]:
    """The models level with #1: the top pair and each next adjacent pair whose gap is zero (0 votes to flip)."""
    by_position = {p["position"]: p for p in pairs}
    top = by_position.get(1)
    if top is None or top["votes"] != 0:
        return []
    level = [top["higher"], top["lower"]]
    position = 2
    while (p := by_position.get(position)) is not None and p["votes"] == 0 and p["higher"] == level[-1]:
        level.append(p["lower"])
        position += 1
    return level


def flip_headline(flip: dict[str, Any], board: dict[str, Any] | None = None) -> str:
    """The votes-to-flip sentence from one flip report (`FlipReport.to_dict`). With the `board` it sits under, it
    speaks of #1 only when that board's order agrees: its #1 and #2 are the flip report's top pair, and a dead
    heat is level on the board too. Over a tie model or a style- or vibe-controlled board it says the count is
    on the plain Bradley-Terry fit of the same votes."""
    pairs = sorted(flip["pairs"], key=lambda p: p["position"])
    top = pairs[0] if pairs and pairs[0]["position"] == 1 else None
    if top is None:
        return (
            "votes-to-flip: can't tell ("
            + ("; ".join(flip["warnings"]) or "fewer than two rated models")
            + ")"
        )
    level = dead_heat(pairs)
    if board is not None and not _same_order(board, top, level):
        return (
            "votes-to-flip: this board's order is not the plain Bradley-Terry order they are counted on "
            f"(there #1 is {top['higher']} over {top['lower']}); see the Votes to flip sub-tab"
        )
    on = (
        ""
        if board is None or _plain(board)
        else " (counted on the plain Bradley-Terry fit of the same votes)"
    )
    if top["votes"] is None:
        return f"#1 ({top['higher']} over {top['lower']}): can't tell how many votes would flip it ({top['note']})"
    if level:
        everyone = board is not None and len(level) == len(board.get("models", []))
        who = f"all {len(level)} rated models ({_and(level)})" if everyone else _and(level)
        return (
            f"#1 is a dead heat: {who} have the same rating, so no vote needs to go to change the order{on}"
        )
    share = 100.0 * top["votes"] / max(flip["n_votes"], 1)
    plural = "vote goes" if top["votes"] == 1 else "votes go"
    return (
        f"#1 {top['higher']} holds over {top['lower']} unless {top['votes']} {plural} "
        f"({share:.2g}% of {counted(flip['n_votes'], 'vote')}; checked by refitting without them){on}"
    )


def _plain(board: dict[str, Any]) -> bool:
    """A plain Bradley-Terry board (the fit votes-to-flip counts on): no tie model, no style or vibe control."""
    options = board.get("options") or {}
    return (
        board.get("method", "bt") == "bt"
        and not options.get("style_control")
        and not options.get("vibe_control")
    )


def _same_order(board: dict[str, Any], top: dict[str, Any], level: list[str]) -> bool:
    """Whether the board's #1 and #2 are the flip report's top pair (models of exactly equal rating may stand in
    any order), and every model of a dead heat is level with #1 on the board too."""
    rows = board.get("models", [])
    rating = {m["name"]: m["rating"] for m in rows}
    if len(rows) < 2 or top["higher"] not in rating or top["lower"] not in rating:
        return False
    first, second = rows[0]["rating"], rows[1]["rating"]
    if level:  # the same models level with #1 on the board (those it can place on its scale)
        told = [m["rating"] for m in rows if not m.get("cant_tell")]
        level_on_board = sum(abs(r - first) < 1e-6 for r in told)
        return all(n in rating and abs(rating[n] - first) < 1e-6 for n in level) and level_on_board == len(
            level
        )
    return (
        abs(rating[top["higher"]] - first) < 1e-6
        and abs(rating[top["lower"]] - second) < 1e-6
        and (first - second > 1e-6)
    )


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


@dataclass
class _Groups:
    """Votes grouped by (pair, outcome seen from the pair's lower index, weight): one influence per group."""

    pair: np.ndarray  # index into the pair design
    yl: np.ndarray  # score of the pair's lower-index model
    w: np.ndarray  # weight of one vote
    count: np.ndarray  # votes in the group
    _of_vote: (
        np.ndarray | Callable[[], np.ndarray]
    )  # group of each prepared vote (computed when first listed)

    @property
    def of_vote(self) -> np.ndarray:
        if callable(self._of_vote):
            self._of_vote = self._of_vote()
        return self._of_vote

    def members(self, wanted: list[int]) -> dict[int, np.ndarray]:
        """Positions (into the prepared votes) of the votes of each `wanted` group, newest first: one pass over the
        votes for all of them (only the groups whose votes are listed are ever asked for)."""
        want = np.unique(np.asarray(wanted, dtype=np.int64))
        if not len(want):
            return {}
        mark = np.zeros(len(self.count), dtype=bool)
        mark[want] = True
        picked = np.flatnonzero(mark[self.of_vote])
        picked = picked[np.argsort(self.of_vote[picked], kind="stable")]
        bounds = np.searchsorted(self.of_vote[picked], want)
        ends = np.r_[bounds[1:], len(picked)]
        return {int(g): picked[s:e][::-1] for g, s, e in zip(want, bounds, ends, strict=True)}


def _groups(prep: Any, agg: Any) -> _Groups:
    """The groups: unweighted votes straight from the board's per-pair cell counts (each vote's group is found only
    when votes are listed); weighted votes by (pair, outcome, weight) in one pass."""
    design = agg.design
    if not prep.weighted:
        cells = agg.cell_counts[
            :, [1, 2, 0]
        ].ravel()  # lost, tie, won (seen from the lower index): the key order
        present = np.flatnonzero(cells)
        return _Groups(
            present // 3,
            (present % 3) * 0.5,
            np.ones(len(present)),
            cells[present].astype(np.int64),
            lambda: _vote_groups(prep, design, 1, np.zeros(1, dtype=np.int64), present)[0],
        )
    weights, w_code = np.unique(prep.w, return_inverse=True)
    of_vote, present, count = _vote_groups(prep, design, len(weights), w_code.ravel(), None)
    n_w = len(weights)
    g_pair, rest = np.divmod(present // n_w, 3)
    return _Groups(g_pair, rest * 0.5, weights[present % n_w], count.astype(np.int64), of_vote)


def _vote_groups(
    prep: Any, design: _fit.Design, n_w: int, w_code: np.ndarray, present: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(group of each vote, group keys, votes per group) with key (pair * 3 + outcome) * n_w + weight code;
    `present`: the keys already known (then only the votes' groups are computed)."""
    m = design.n_models
    small = np.int32 if m <= 40_000 else np.int64
    key = np.minimum(prep.a, prep.b).astype(small)
    key *= small(m)
    key += np.maximum(prep.a, prep.b)
    pairs = design.a * m + design.b
    if m * m <= 4_000_000:
        pair_index = np.full(m * m, -1, dtype=small)
        pair_index[pairs] = np.arange(len(pairs), dtype=small)
        pair = pair_index[key]
    else:
        pair = np.searchsorted(pairs, key).astype(small)
    # outcome from the lower index's side (the board's coding: 0 won, 1 lost, 2 tie), as 0 lost, 1 tie, 2 won
    outcome = np.array([2, 0, 1], dtype=small)[
        _OUTCOME_LO[prep.winner.astype(np.int32) * 2 + (prep.a > prep.b)]
    ]
    if n_w == 1:
        key = pair * small(3)
        key += outcome
    else:
        key = (pair.astype(np.int64) * 3 + outcome) * n_w + w_code
    size = design.n_rows * 3 * n_w
    if size <= 4 * len(key) + 1_000_000:  # a dense count of the keys (no sort)
        counts = np.bincount(key, minlength=size)
        if present is None:
            present = np.flatnonzero(counts)
        index = np.zeros(size, dtype=small)
        index[present] = np.arange(len(present), dtype=small)
        return index[key], present, counts[present]
    found, of_vote, count = np.unique(key, return_inverse=True, return_counts=True)
    return of_vote.ravel(), found, count


class _Problem:
    """The board's data as per-pair sums, with removals applied as counts per group; refits on demand.

    Two kinds of refit reach the same optimum: `fit` (damped Newton, a Hessian per iteration; the reference search)
    and `chord_fit` (steps with the board's Hessian, which barely moves when a few votes in many go; the fast search).
    """

    def __init__(self, design: _fit.Design, s: np.ndarray, n: np.ndarray, groups: _Groups, ridge: float):
        self.design, self.s0, self.n0, self.g, self.ridge = design, s, n, groups, ridge
        self.refits = 0
        self.base: _fit.Fit | None = None

    def sums(self, removed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        g = self.g
        idx = np.flatnonzero(removed)  # a few groups of many: sum only those
        dn = np.bincount(g.pair[idx], removed[idx] * g.w[idx], self.design.n_rows)
        ds = np.bincount(g.pair[idx], removed[idx] * g.w[idx] * g.yl[idx], self.design.n_rows)
        return self.s0 - ds, np.maximum(self.n0 - dn, 0.0)

    def fit(self, removed: np.ndarray, theta0: np.ndarray | None) -> _fit.Fit:
        s, n = self.sums(removed)
        y = np.divide(s, n, out=np.full_like(s, 0.5), where=n > 1e-12)
        y = np.clip(y, 0.0, 1.0)
        self.refits += 1
        return _fit.newton(self.design, y, n, ridge=self.ridge, theta0=theta0, max_iter=100)

    def influence(self, fit: _fit.Fit, u: int, v: int) -> np.ndarray:
        """Predicted change of theta_u - theta_v when one vote of each group is removed (one Newton step)."""
        h_inv = np.linalg.pinv(fit.hessian, hermitian=True)
        return self._effects(h_inv[u] - h_inv[v], fit.theta)

    def _effects(self, row: np.ndarray, theta: np.ndarray) -> np.ndarray:
        d, g = self.design, self.g
        c = row[d.a] - row[d.b]  # per pair: (H^+[u] - H^+[v]) . (e_lo - e_hi)
        p = 1.0 / (1.0 + np.exp(-(theta[d.a] - theta[d.b])))
        return g.w * (p[g.pair] - g.yl) * c[g.pair]

    # ------------------------------------------------------------------ the fast search's pieces

    def start(self) -> _fit.Fit:
        """The board's fit, its Hessian's pseudo-inverse and per-group residuals: computed once for every pair."""
        base = self.fit(np.zeros(len(self.g.count), dtype=np.int64), None)
        self.base = base
        self._h_inv = np.linalg.pinv(base.hessian, hermitian=True)
        d, g = self.design, self.g
        p = 1.0 / (1.0 + np.exp(-(base.theta[d.a] - base.theta[d.b])))
        self._residual = g.w * (p[g.pair] - g.yl)
        self._chord = base.chord_inverse()
        # each model's groups (for `first_take`): groups by their pair's lower and higher model
        m = d.n_models
        self._largest = float(np.max(np.abs(self._residual), initial=0.0))
        ends = np.concatenate([d.a[g.pair], d.b[g.pair]])
        order = np.argsort(ends, kind="stable") % len(g.pair)
        self._groups_of = [
            np.sort(k) for k in np.split(order, np.cumsum(np.bincount(ends, minlength=m))[:-1])
        ]
        return base

    def first_take(self, u: int, v: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Round one of the search at the board's fit (`base_influence` + `_take`) as (groups in the order taken,
        votes taken of each, influence per vote). It works on the groups of u's and v's pairs only when that
        provably gives the same answer: a group of any other pair moves the gap by at most the largest residual
        times the spread of (H^+[u] - H^+[v]) over the other models, and when that is smaller than the effect of
        the last vote taken, no such group could have come before it."""
        assert self.base is not None, "start() first"
        g, d = self.g, self.design
        row = self._h_inv[u] - self._h_inv[v]
        gap = float(self.base.theta[u] - self.base.theta[v])
        cand = np.concatenate([self._groups_of[u], self._groups_of[v]])
        cand.sort()
        cand = cand[np.r_[True, cand[1:] != cand[:-1]]]  # the pair (u, v) itself is in both
        pair = g.pair[cand]
        values = self._residual[cand] * (row[d.a[pair]] - row[d.b[pair]])
        take = _take(values, g.count[cand], gap)
        others = np.delete(row, [u, v])
        reach = self._largest * float(others.max() - others.min()) if len(others) else 0.0
        taken = np.flatnonzero(take)
        if not (len(taken) and gap + float(values[taken] @ take[taken]) < 0 and -reach > values[taken].max()):
            cand, values = (
                np.arange(len(g.count)),
                self.base_influence(u, v),
            )  # other pairs may count: all groups
            take = _take(values, g.count, gap)
            taken = np.flatnonzero(take)
        taken = taken[np.argsort(values[taken], kind="stable")]
        return cand[taken], take[taken], values[taken]

    def base_influence(self, u: int, v: int) -> np.ndarray:
        """`influence` at the board's fit, from the one pseudo-inverse (same numbers, no new factorisation)."""
        row = self._h_inv[u] - self._h_inv[v]
        d, g = self.design, self.g
        return self._residual * (row[d.a] - row[d.b])[g.pair]

    def influence_at(self, theta: np.ndarray, removed: np.ndarray, u: int, v: int) -> np.ndarray:
        """`influence` at a refit: its Hessian assembled from the per-pair sums and one solve for the pair's row."""
        _, n = self.sums(removed)
        d, m = self.design, self.design.n_models
        p = _fit._sigmoid(theta[d.a] - theta[d.b])
        hess = d.assemble(n * p * (1.0 - p))
        hess[np.arange(m), np.arange(m)] += self.ridge
        rhs = np.zeros(m)
        rhs[u], rhs[v] = 1.0, -1.0
        return self._effects(np.linalg.solve(_fit._gauged(hess, m), rhs), theta)

    def chord_fit(
        self, removed: np.ndarray, pair: tuple[int, int] | None = None, tol: float = 1e-10, max_iter: int = 60
    ) -> np.ndarray:
        """Ratings refitted without the removed votes: chord steps from the board's fit with its Hessian (a pass
        over the per-pair sums each), to a step below `tol`; Newton takes over if they contract slowly. With `pair`
        = (u, v) it stops as soon as the sign of theta_u - theta_v is settled: the steps shrink geometrically (by
        r each), so the rest of the way is at most step * r / (1 - r) per rating, and the gap is kept only when it
        is ten times farther from zero than that."""
        assert self.base is not None, "start() first"
        self.refits += 1
        s, n = self.sums(removed)
        d, m = self.design, self.design.n_models
        theta = self.base.theta.copy()
        previous = np.inf
        for _ in range(max_iter):
            r = n * _fit._sigmoid(theta[d.a] - theta[d.b]) - s
            grad = np.bincount(d.a, r, m) - np.bincount(d.b, r, m) + self.ridge * theta
            step = self._chord @ grad
            theta -= step
            size = float(np.max(np.abs(step)))
            if size < tol:
                return theta
            rate = size / previous
            if rate > 0.5:
                break
            settled = 20.0 * size * rate / (1.0 - rate) + TIE  # rate is 0 after the first step: not yet known
            if pair is not None and previous < np.inf and abs(theta[pair[0]] - theta[pair[1]]) > settled:
                return theta
            previous = size
        y = np.clip(np.divide(s, n, out=np.full_like(s, 0.5), where=n > 1e-12), 0.0, 1.0)
        return _fit.newton(self.design, y, n, ridge=self.ridge, theta0=theta, max_iter=100, tol=tol).theta


def _flipped(gap: float) -> bool:
    """A refitted gap (log-odds, higher minus lower) that reverses the order; within `TIE` of 0 is a dead heat."""
    return gap < -TIE


def _take(infl: np.ndarray, left: np.ndarray, gap: float) -> np.ndarray:
    """Counts per group to remove, most negative influence first, until `gap` + their effects < 0 (or all that
    lower the gap are used). Only the most negative groups are sorted (growing the share until the gap is crossed):
    the same prefix as a stable sort of all of them, without sorting tens of thousands of groups per pair."""
    take = np.zeros(len(infl), dtype=np.int64)
    useful = np.flatnonzero((infl < 0) & (left > 0))
    if not len(useful):
        return take
    values = infl[useful]
    size = 64
    while True:
        if size < len(useful):
            cut = np.partition(values, size - 1)[size - 1]
            first = useful[values <= cut]  # every group at or below the cut, in index order
        else:
            first = useful
        order = first[np.argsort(infl[first], kind="stable")]
        per = infl[order]
        cum = gap + np.cumsum(per * left[order])
        cross = np.flatnonzero(cum < 0)
        if len(cross) or len(first) == len(useful):
            break
        size *= 8
    if not len(cross):
        take[order] = left[order]
        return take
    k = int(cross[0])
    take[order[:k]] = left[order[:k]]
    before = gap + (float(np.sum(per[:k] * left[order[:k]])) if k else 0.0)
    need = int(np.floor(before / -per[k])) + 1  # votes of group k that push the gap below 0
    take[order[k]] = min(int(left[order[k]]), max(need, 1))
    return take


def _extend(sequence: list[tuple[int, int]], take: np.ndarray, infl: np.ndarray) -> None:
    """Append this round's removals to the sequence, most negative influence first."""
    order = np.flatnonzero(take)
    order = order[np.argsort(infl[order], kind="stable")]
    sequence.extend((int(k), int(take[k])) for k in order)


def _flip_pair(problem: _Problem, base: _fit.Fit, u: int, v: int) -> tuple[int | None, int | None, list[int]]:
    """The reference search: (checked count, first predicted count, removal sequence as group indices) for u above
    v, with a Newton refit and a fresh pseudo-inverse each round and bisection over the whole sequence."""
    total = problem.g.count
    removed = np.zeros(len(total), dtype=np.int64)
    sequence: list[tuple[int, int]] = []  # (group, how many) in the order taken
    fit, predicted = base, None
    for _ in range(MAX_ROUNDS):
        gap = float(fit.theta[u] - fit.theta[v])
        if _flipped(gap):
            break
        infl = problem.influence(fit, u, v)
        take = _take(infl, total - removed, gap)
        if predicted is None:
            predicted = int(take.sum())
        if not take.any():
            return None, predicted, []
        _extend(sequence, take, infl)
        removed += take
        fit = problem.fit(removed, fit.theta)
    else:
        return None, predicted, []
    if not _flipped(fit.theta[u] - fit.theta[v]):
        return None, predicted, []
    flat = [k for k, c in sequence for _ in range(c)]
    return _shortest(problem, base, flat, u, v), predicted, flat


def _shortest(problem: _Problem, base: _fit.Fit, flat: list[int], u: int, v: int) -> int:
    """The shortest prefix of `flat` (group per removed vote) whose removal flips u and v on refit (bisection)."""
    arr = np.asarray(flat, dtype=np.int64)
    n_groups = len(problem.g.count)

    def flips(k: int) -> bool:
        removed = np.bincount(arr[:k], minlength=n_groups)
        fit = problem.fit(removed, base.theta)
        return _flipped(fit.theta[u] - fit.theta[v])

    lo, hi = 0, len(flat)  # flips(hi) is known; flips(0) is not (the base order)
    return _first_flip(flips, lo, hi)


def _flip_pair_fast(
    problem: _Problem, u: int, v: int, first: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> tuple[int | None, int | None, list[int]]:
    """The fast search, same rounds as `_flip_pair`: influences from the board's one pseudo-inverse (later rounds:
    one solve at the refit), chord refits, then the shortest flipping prefix found from where the influences put
    it (`_shortest_near`)."""
    assert problem.base is not None, "start() first"
    total = problem.g.count
    removed = np.zeros(len(total), dtype=np.int64)
    sequence: list[tuple[int, int]] = []
    effects: list[float] = []  # the predicted change of the gap per removed vote, in sequence order
    theta, predicted = problem.base.theta, None
    for step in range(MAX_ROUNDS):
        gap = float(theta[u] - theta[v])
        if _flipped(gap):
            break
        if step == 0:  # the estimate already made for this pair
            taken, counts, values = first
            take_any = len(taken) > 0
            sequence.extend(zip(taken.tolist(), counts.tolist(), strict=True))
            effects.extend(np.repeat(values, counts).tolist())
            removed[taken] += counts
        else:
            infl = problem.influence_at(theta, removed, u, v)
            take = _take(infl, total - removed, gap)
            take_any = bool(take.any())
            before = len(sequence)
            _extend(sequence, take, infl)
            effects.extend(float(infl[k]) for k, c in sequence[before:] for _ in range(c))
            removed += take
        if predicted is None:
            predicted = int(removed.sum())
        if not take_any:
            return None, predicted, []
        theta = problem.chord_fit(removed, (u, v))
    else:
        return None, predicted, []
    end_gap = float(theta[u] - theta[v])
    if not _flipped(end_gap):
        return None, predicted, []
    flat = [k for k, c in sequence for _ in range(c)]
    start_gap = float(problem.base.theta[u] - problem.base.theta[v])
    return _shortest_near(problem, flat, effects, start_gap, end_gap, u, v), predicted, flat


def _shortest_near(
    problem: _Problem, flat: list[int], effects: list[float], start_gap: float, end_gap: float, u: int, v: int
) -> int:
    """`_shortest`'s answer with two or three refits instead of log2(votes): the votes' predicted effects, scaled so
    that they add up to the change the refit measured over the whole sequence, say where the gap crosses zero
    (k); refits at k and k - 1 confirm it, and where they do not, steps of 1, 2, 4, ... from the known side
    bracket the crossing for a bisection. Removing more of the sequence lowers the gap (each vote in it was
    picked for that), so this finds the same prefix as bisecting the whole sequence; either way the count is
    checked: that prefix flips on refit and one vote fewer does not."""
    arr = np.asarray(flat, dtype=np.int64)
    n_groups = len(problem.g.count)
    hi = len(flat)

    def flips(k: int) -> bool:
        theta = problem.chord_fit(np.bincount(arr[:k], minlength=n_groups), (u, v))
        return _flipped(theta[u] - theta[v])

    # estimated gap after removing the first k votes: end_gap minus the scaled effects of votes k..hi-1
    scale = (end_gap - start_gap) / min(sum(effects), -1e-300)
    tail = np.concatenate([np.cumsum(np.asarray(effects[::-1]) * scale)[::-1], [0.0]])
    estimate = end_gap - tail  # estimate[k] for k = 0..hi
    below = np.flatnonzero(estimate < -TIE)
    guess = int(below[0]) if len(below) else hi
    guess = min(max(guess, 1), hi)
    lo = 0  # flips(hi) is known; flips(0) is not (the base order)
    if guess < hi:
        if flips(guess):
            hi = guess
        else:
            lo = guess
    if lo == 0:  # step down from hi until a prefix does not flip
        stride = 1
        while hi - stride > lo:
            if flips(hi - stride):
                hi -= stride
                stride *= 2
            else:
                lo = hi - stride
                break
    else:  # step up from lo until a prefix flips
        stride = 1
        while lo + stride < hi:
            if flips(lo + stride):
                hi = lo + stride
                break
            lo += stride
            stride *= 2
    return _first_flip(flips, lo, hi)


def _first_flip(flips: Callable[[int], bool], lo: int, hi: int) -> int:
    """The smallest k in (lo, hi] with ``flips(k)``, by bisection: ``flips(hi)`` is known true, ``flips(lo)`` false."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if flips(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _attach_votes(
    records: Any, prep: Any, groups: _Groups, wanted: list[tuple[PairFlip, list[int], int]]
) -> None:
    """Give each pair its first `k` removed votes as plain dicts (newest vote of each group first): one pass over the
    votes for every pair's groups, and each record field read once for all of them."""
    frame = records.frame
    members = groups.members([g for _, flat, k in wanted for g in flat[:k]])
    positions: list[int] = []
    for _, flat, k in wanted:
        used: dict[int, int] = {}
        for group in flat[:k]:
            j = used.get(group, 0)
            used[group] = j + 1
            positions.append(int(members[group][j]))
    rows = prep.rows[np.asarray(positions, dtype=np.int64)]
    columns = {"row": rows.tolist()}
    for c in ("model_a", "model_b", "winner"):
        columns[c] = [str(v) for v in frame[c].take(rows).tolist()]
    for c in VOTE_FIELDS:
        if c in frame.columns:
            columns[c] = [None if _missing(v) else v for v in frame[c].take(rows).tolist()]
    names = list(columns)
    rows_out = [dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)]
    start = 0
    for pf, _, k in wanted:
        pf.removed = rows_out[start : start + k]
        start += k


def _missing(value: Any) -> bool:
    try:
        return bool(value is None or (isinstance(value, float) and np.isnan(value)))
    except TypeError:
        return False


@single_threaded
def votes_to_flip(
    records: Any,
    *,
    both_good: str = "tie",
    both_bad: str = "tie",
    ipw: bool = True,
    pairs: str = "adjacent",
    between: tuple[str, str] | None = None,
    max_votes_listed: int = 200,
    search: str = "fast",
    checked: int | None = None,
) -> FlipReport:
    """Votes-to-flip for the top pair and each adjacent pair of the Bradley-Terry board (`pairs="top"`: only #1
    against #2; `between=(a, b)`: only those two, in their board order). Each count is checked by a refit without
    those votes (`checked`), except where the checking budget runs out; None means "can't tell" (`note` says why).
    `search` "fast" (one pseudo-inverse for all pairs, chord refits, the shortest prefix found near the influences'
    estimate) or "refit" (Newton refits, a pseudo-inverse per round, bisection over the whole sequence: the
    reference, many times slower on big boards). `checked`: how many pairs get refits, the top pair and then the
    closest (fewest estimated votes) first; the rest keep the one-step estimate, marked unchecked. None: every
    pair on a board of up to `CHECKED_ROWS` pair-rows x pairs, else as many as that budget pays for (at least
    `CHECKED_MIN`)."""
    if pairs not in ("adjacent", "top"):
        raise ValueError(f"pairs must be 'adjacent' or 'top', got {pairs!r}")
    if search not in SEARCHES:
        raise ValueError(f"search must be one of {', '.join(SEARCHES)}, got {search!r}")
    start = time.perf_counter()
    recs = as_records(records)
    prep, agg, graph_notes, separated = prepared(recs, both_good=both_good, both_bad=both_bad, ipw=ipw)
    n_votes = len(prep.rows)
    if len(prep.names) < 2 or agg is None:
        why = "no votes" if n_votes == 0 else "fewer than two rated models"
        return FlipReport([], n_votes, time.perf_counter() - start, [f"can't tell: {why}"])
    ridge = RIDGE_SEPARATED if separated else _fit.RIDGE
    design = agg.design
    groups = _groups(prep, agg)
    problem = _Problem(design, agg.s, agg.n, groups, ridge)
    base = problem.start()
    _, component = weak_components(len(prep.names), design.a, design.b)
    order = sorted(range(len(prep.names)), key=lambda k: (-base.theta[k], prep.names[k]))
    warnings = list(graph_notes)
    if separated:
        warnings.append("some ratings rest on a prior (perfect records): their votes-to-flip are rough")
    targets = [(order[k], order[k + 1]) for k in range(len(order) - 1 if pairs == "adjacent" else 1)]
    if between is not None:
        missing = [n for n in between if n not in prep.names]
        if missing:
            why = f"can't tell: {', '.join(missing)} {'has' if len(missing) == 1 else 'have'} no rated votes"
            return FlipReport([], n_votes, time.perf_counter() - start, [why])
        i, j = (prep.names.index(n) for n in between)
        targets = [(i, j) if order.index(i) < order.index(j) else (j, i)]
    out: list[PairFlip] = []
    for u, v in targets:
        gap = float(SCALE * (base.theta[u] - base.theta[v]))
        pf = PairFlip(prep.names[u], prep.names[v], order.index(u) + 1, gap, None, None, 0, n_votes)
        if component[u] != component[v]:
            pf.note = "these models were never compared, directly or through others"
        elif gap <= 1e-9:
            pf.votes, pf.predicted, pf.note, pf.checked = 0, 0, "same rating: already a tie", True
        out.append(pf)
    open_pairs = [k for k, pf in enumerate(out) if pf.votes is None and not pf.note]
    first: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for k in open_pairs:  # one-step estimates for every pair: the closest are checked first
        first[k] = problem.first_take(*targets[k])
        out[k].predicted = int(first[k][1].sum())
    open_pairs.sort(key=lambda k: (k > 0, out[k].predicted or np.inf, k))
    budget = (
        len(open_pairs) if checked is None and len(open_pairs) * design.n_rows <= CHECKED_ROWS else checked
    )
    if budget is None:
        budget = max(CHECKED_MIN, CHECKED_ROWS // max(design.n_rows, 1))
    listed: list[tuple[PairFlip, list[int], int]] = []
    for rank, k in enumerate(open_pairs):
        u, v = targets[k]
        pf = out[k]
        before = problem.refits
        if rank >= budget:  # past the budget: the one-step estimate, unchecked
            taken, counts, _ = first[k]
            count: int | None = pf.predicted if len(taken) else None
            flat = np.repeat(taken, counts).tolist()
            pf.note = "estimated by one Newton step (not checked by a refit: past the checking budget)"
        elif search == "fast":
            count, pf.predicted, flat = _flip_pair_fast(problem, u, v, first[k])
            pf.checked = count is not None
        else:
            count, pf.predicted, flat = _flip_pair(problem, base, u, v)
            pf.checked = count is not None
        if count is None:
            pf.note = "no set of votes found whose removal flips this pair"
        else:
            pf.votes = count
            listed.append((pf, flat, min(count, max_votes_listed)))
            if count > max_votes_listed:
                pf.note = "; ".join(
                    filter(
                        None,
                        [pf.note, f"the first {max_votes_listed} of the {counted(count, 'vote')} are listed"],
                    )
                )
        pf.refits = problem.refits - before
    _attach_votes(recs, prep, groups, listed)
    return FlipReport(out, n_votes, time.perf_counter() - start, warnings)


def refit_without(records: Any, rows: list[int], **options: Any) -> dict[str, float]:
    """Plain Bradley-Terry ratings (Elo scale, mean 1000) without the records at positions `rows`: the check a
    reader can run on a reported set of votes."""
    from ._board import leaderboard

    recs = as_records(records)
    keep = np.ones(len(recs), dtype=bool)
    keep[np.asarray(rows, dtype=np.int64)] = False
    frame = recs.frame[keep].reset_index(drop=True)
    board = leaderboard(frame, ci_method="sandwich", elo_k=None, min_battles=0, **options)
    return board.ratings()


__all__ = ["FlipReport", "PairFlip", "headline", "refit_without", "votes_to_flip"]


def greedy_refit_flip(
    records: Any, higher: str, lower: str, *, max_votes: int = 10_000, **options: Any
) -> int | None:
    """The raw baseline (no approximation): remove one vote at a time, each time the one whose removal lowers the
    refitted gap most, trying every kind of vote with an exact refit; the count when the order flips (None past
    `max_votes`). Costs (votes removed) x (pairs x outcomes) refits: for benchmarks and tests."""
    recs = as_records(records)
    prep = prepare(recs, **options)
    agg = _aggregate(prep)
    _, separated = _graph_warnings(prep.names, agg)
    groups = _groups(prep, agg)
    problem = _Problem(agg.design, agg.s, agg.n, groups, RIDGE_SEPARATED if separated else _fit.RIDGE)
    u, v = prep.names.index(higher), prep.names.index(lower)
    removed = np.zeros(len(groups.count), dtype=np.int64)
    fit = problem.fit(removed, None)
    for k in range(1, max_votes + 1):
        best, best_gap, best_fit = -1, np.inf, fit
        for g in np.flatnonzero(removed < groups.count):
            removed[g] += 1
            trial = problem.fit(removed, fit.theta)
            removed[g] -= 1
            gap = float(trial.theta[u] - trial.theta[v])
            if gap < best_gap:
                best, best_gap, best_fit = int(g), gap, trial
        if best < 0:
            return None
        removed[best] += 1
        fit = best_fit
        if best_gap < 0:
            return k
    return None
