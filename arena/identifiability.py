"""Identifiability: how well a contestant's answers alone give away who wrote them. Is the arena blind in
practice?

A blind vote is only blind when the voter cannot tell the contestants apart by their style. The names are
hidden. But a persona that opens every answer the same way ("What a great question! 😊") is recognisable at
a glance. Its votes then measure loyalty as much as quality. This module measures that per contestant with
a held-out classifier. It learns the way an attentive voter would: from answers whose authors are known.

**Data.** The answers of ended battles, never an open one (it would name its contestants), never
self-play. It takes the latest ``limit`` per contestant, each with the prompt it answered.

**Features.** Character 2- to 4-grams, case kept, so emoji, markdown and openings count. They are hashed
into 2^15 buckets (CRC-32, stable across processes). Term frequency is sublinear, and rows are
L2-normalised.

**Classifier.** A regularised least-squares linear classifier per contestant, one against the rest. It is
ridge regression on +1/-1 targets, solved in the dual with one Cholesky factor per fold for all
contestants. That takes milliseconds for a thousand answers, where an iterative logistic fit took seconds.
For ranking answers, which is all the AUC asks, the two behave alike.

**Evaluation.** ``folds``-fold cross-validation *grouped by prompt*. No prompt is in both the training and
the test part. So a contestant's answers to a repeated prompt cannot vouch for each other. Every answer
gets an out-of-fold score from every contestant's model.

**Per contestant** (n is the number of its answers and of the others'):
- the **AUC**, with the Hanley-McNeil 95% interval. It is the chance that one of its answers scores higher
  than another contestant's answer. That is how often a voter shown one answer of each could say which is
  it.
- the **top-1 rate**, with a Wilson interval. It is the share of its answers whose highest out-of-fold
  score is its own, against chance 1/M.
The verdict is "recognisable" (votes on it are not blind in practice) when the AUC's interval lies above
`RECOGNISABLE_AUC`. It is "not recognisable" when the interval lies below, else "can't tell". Fewer than
``min_answers`` answers, or fewer than two contestants, is "can't tell" with the reason.

**The fixed opening** (a persona's prefill). By default the arena shows answers without it
(`ArenaLimits.strip_prefill`) and stores what it showed.
- ``strip_prefill=False`` measures every answer *with* its opening. An answer stored without it gets it
  back in front; the opening is fixed, so that is what the voter would have seen.
- ``strip_prefill=True`` measures without it, cut from an answer stored with it.
So both measures read the same answers, whatever the arena showed when they were written.
`compare_openings` puts the two side by side per contestant. The difference is what the opening alone
gives away. The board's warning reads the one the arena shows.

**Why not scikit-learn?** It is not a dependency. The pieces (hashing, a convex fit, AUC) are a page of
NumPy and SciPy, which the studio already needs.
"""

from __future__ import annotations

import math
import threading
import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.sparse import csr_matrix
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from vibestudio.arena.battle_end import UNCOUNTED
from vibestudio.arena.self_play import SELF_PLAY
from vibestudio.common.stats import Z95, wilson
from vibestudio.db.models import Battle, Contestant, Turn

#: An AUC whose 95% interval lies above this: a voter can pick the contestant's answer out of a pair most times.
RECOGNISABLE_AUC = 0.75
MIN_ANSWERS = 20
DIM = 1 << 15
NGRAMS = (2, 3, 4)


@dataclass(frozen=True)
class Answer:
    contestant: str
    text: str
    prompt: str  # the user message it answered (the fold groups)


@dataclass
class ContestantIdentifiability:
    name: str
    n_answers: int
    n_others: int
    verdict: str  # "recognisable", "not recognisable" or "can't tell"
    reason: str
    auc: float | None = None
    auc_ci: tuple[float, float] | None = None
    top1: float | None = None  # share of its answers attributed to it
    top1_ci: tuple[float, float] | None = None
    chance: float | None = None  # top-1 rate by chance, 1 / contestants

    @property
    def warning(self) -> str | None:
        """The leaderboard's warning, or None when there is nothing to warn about."""
        if self.verdict != "recognisable" or self.auc_ci is None:
            return None
        return (
            f"{self.name} is recognisable by its answers alone (AUC {self.auc:.2f}, 95% "
            f"{self.auc_ci[0]:.2f}-{self.auc_ci[1]:.2f}, n={self.n_answers}): votes on it are not blind in practice"
        )

    def line(self) -> str:
        if self.auc is None or self.auc_ci is None:
            return f"{self.name}: can't tell ({self.reason})"
        top1 = ""
        if self.top1 is not None and self.top1_ci is not None:
            top1 = (
                f"; top-1 {self.top1:.0%} ({self.top1_ci[0]:.0%}-{self.top1_ci[1]:.0%}) vs chance "
                f"{self.chance:.0%}"
            )
        return (
            f"{self.name}: AUC {self.auc:.2f} (95% {self.auc_ci[0]:.2f}-{self.auc_ci[1]:.2f}; "
            f"{self.n_answers} answers vs {self.n_others}){top1}: {self.verdict}"
        )


@dataclass
class IdentifiabilityReport:
    contestants: list[ContestantIdentifiability]
    n_answers: int
    folds: int
    strip_prefill: bool
    method: str = "char 2-4-gram linear classifier, one vs rest, cross-validated by prompt"
    notes: list[str] = field(default_factory=list)

    def get(self, name: str) -> ContestantIdentifiability | None:
        return next((c for c in self.contestants if c.name == name), None)

    def warnings(self) -> list[str]:
        return [w for c in self.contestants if (w := c.warning)]

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for c, d in zip(self.contestants, out["contestants"], strict=True):
            d["warning"] = c.warning
        return out


# -- data ---------------------------------------------------------------------------------------------------------
def ended_answers(session: Session, limit: int = 300, strip_prefill: bool = False) -> list[Answer]:
    """The latest ``limit`` answers per contestant from ended battles (not self-play), with their prompts;
    ``strip_prefill`` removes each contestant's fixed answer opening where the answer starts with it."""
    people = {
        c.id: (c.public_name, str((c.persona or {}).get("prefill") or ""))
        for c in session.scalars(select(Contestant))
    }
    out: list[Answer] = []
    for cid, (name, prefill) in people.items():
        texts: list[tuple[int, str, str]] = []
        for col, side in ((Battle.a_id, Turn.answer_a), (Battle.b_id, Turn.answer_b)):
            q = (
                select(Turn.id, side, Turn.user_msg)
                .join(Battle, Turn.battle_id == Battle.id)
                .where(col == cid, Battle.status.not_in(UNCOUNTED), Battle.mode != SELF_PLAY)
                .order_by(Turn.id.desc())
                .limit(limit)
            )
            texts.extend((int(i), t, u) for i, t, u in session.execute(q) if t and t.strip())
        for _, text, prompt in sorted(texts, reverse=True)[:limit]:
            out.append(Answer(name, with_opening(text, prefill, not strip_prefill), prompt))
    return out


def with_opening(text: str, prefill: str, keep: bool) -> str:
    """``text`` with its persona's fixed opening (``keep``) or without it, however it was stored: the arena
    stores an answer as it showed it, without the opening by default (`arena.streaming` drops the opening and
    the whitespace after it)."""
    if not prefill:
        return text
    has = text.startswith(prefill)
    if keep:
        return text if has else prefill + ("" if prefill[-1:].isspace() else " ") + text
    return text[len(prefill) :].lstrip() if has else text


def data_version(session: Session) -> tuple[int, int]:
    """(ended battles' turns, newest turn id): changes whenever `ended_answers` could."""
    q = (
        select(func.count(Turn.id), func.max(Turn.id))
        .join(Battle, Turn.battle_id == Battle.id)
        .where(Battle.status.not_in(UNCOUNTED), Battle.mode != SELF_PLAY)
    )
    n, top = session.execute(q).one()
    return int(n or 0), int(top or 0)


# -- features and the classifier --------------------------------------------------------------------------------
def features(texts: Sequence[str]) -> csr_matrix:
    """Hashed character n-grams, sublinear tf, rows L2-normalised."""
    indptr, indices, data = [0], [], []
    for text in texts:
        counts: dict[int, int] = {}
        for n in NGRAMS:
            for i in range(max(0, len(text) - n + 1)):
                h = zlib.crc32(text[i : i + n].encode("utf-8", "surrogatepass")) & (DIM - 1)
                counts[h] = counts.get(h, 0) + 1
        cols = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
        vals = 1.0 + np.log(np.fromiter(counts.values(), dtype=np.float64, count=len(counts)))
        norm = float(np.sqrt((vals**2).sum())) or 1.0
        indices.extend(cols.tolist())
        data.extend((vals / norm).tolist())
        indptr.append(len(indices))
    return csr_matrix((np.asarray(data), np.asarray(indices), np.asarray(indptr)), shape=(len(texts), DIM))


def fit_scores(
    x_train: csr_matrix, labels: np.ndarray, k: int, x_test: csr_matrix, ridge: float = 1.0
) -> np.ndarray:
    """Held-out scores (test rows x ``k`` contestants) of one-vs-rest regularised least-squares classifiers (a
    linear-kernel ridge regression on +1/-1 targets, solved in the dual: one Cholesky for all contestants)."""
    gram = (x_train @ x_train.T).toarray() + 1.0  # + 1: the intercept, as a constant feature
    targets = np.where(labels[:, None] == np.arange(k)[None, :], 1.0, -1.0)
    chol = cho_factor(gram + ridge * np.eye(len(labels)))
    alpha = cho_solve(chol, targets)
    return ((x_test @ x_train.T).toarray() + 1.0) @ alpha


def auc_with_interval(pos: np.ndarray, neg: np.ndarray) -> tuple[float, tuple[float, float]]:
    """Mann-Whitney AUC (ties half) and the Hanley-McNeil (1982) 95% interval."""
    scores = np.concatenate([pos, neg])
    order = scores.argsort(kind="mergesort")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    i = 0
    while i < len(scores):  # average ranks over ties
        j = i
        while j + 1 < len(scores) and sorted_scores[j + 1] == sorted_scores[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    n1, n2 = len(pos), len(neg)
    auc = float((ranks[:n1].sum() - n1 * (n1 + 1) / 2.0) / (n1 * n2))
    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    var = (auc * (1 - auc) + (n1 - 1) * (q1 - auc * auc) + (n2 - 1) * (q2 - auc * auc)) / (n1 * n2)
    half = Z95 * math.sqrt(max(var, 0.0))
    return auc, (max(0.0, auc - half), min(1.0, auc + half))


def _folds(prompts: Sequence[str], folds: int, seed: int) -> np.ndarray:
    """A fold number per answer; all answers to one prompt share a fold."""
    groups = sorted(set(prompts))
    rng = np.random.default_rng(seed)
    rng.shuffle(groups)
    of = {g: k % folds for k, g in enumerate(groups)}
    return np.array([of[p] for p in prompts], dtype=np.int64)


# -- the measure --------------------------------------------------------------------------------------------------
def measure(
    answers: Sequence[Answer],
    folds: int = 5,
    min_answers: int = MIN_ANSWERS,
    seed: int = 0,
    strip_prefill: bool = False,
) -> IdentifiabilityReport:
    """Out-of-fold identifiability of every contestant in ``answers`` (see the module docstring)."""
    names = sorted({a.contestant for a in answers})
    counts = {n: sum(a.contestant == n for a in answers) for n in names}
    measurable = [n for n in names if counts[n] >= min_answers]
    report = IdentifiabilityReport([], len(answers), folds, strip_prefill)
    fold = _folds([a.prompt for a in answers], folds, seed) if answers else np.zeros(0, dtype=np.int64)
    n_folds = len(set(fold.tolist()))
    why = ""
    if len(measurable) < 2:
        why = f"fewer than two contestants with {min_answers} answers from ended battles"
    elif n_folds < 2:
        why = "every answer answers one prompt: nothing to hold out"
    if why:
        report.notes.append(why)
        for n in names:
            short = f"{counts[n]} answers (need {min_answers})" if counts[n] < min_answers else why
            report.contestants.append(
                ContestantIdentifiability(n, counts[n], len(answers) - counts[n], "can't tell", short)
            )
        return report
    keep = [i for i, a in enumerate(answers) if a.contestant in measurable]
    x = features([answers[i].text for i in keep])
    label = np.array([measurable.index(answers[i].contestant) for i in keep])
    fold = fold[keep]
    scores = np.full((len(keep), len(measurable)), np.nan)
    for k in sorted(set(fold.tolist())):
        train, test = fold != k, fold == k
        if len(set(label[train].tolist())) < 2:  # this fold's training part lacks a contestant to tell apart
            continue
        scores[test] = fit_scores(x[train], label[train], len(measurable), x[test])
    scored = ~np.isnan(scores).any(axis=1)
    top = np.where(scored, np.nanargmax(np.where(np.isnan(scores), -np.inf, scores), axis=1), -1)
    chance = 1.0 / len(measurable)
    for n in names:
        if n not in measurable:
            report.contestants.append(
                ContestantIdentifiability(
                    n,
                    counts[n],
                    len(answers) - counts[n],
                    "can't tell",
                    f"{counts[n]} answers (need {min_answers})",
                )
            )
            continue
        j = measurable.index(n)
        own = scored & (label == j)
        rest = scored & (label != j)
        n_own, n_rest = int(own.sum()), int(rest.sum())
        if n_own < min_answers or n_rest < min_answers:
            report.contestants.append(
                ContestantIdentifiability(n, n_own, n_rest, "can't tell", "too few held-out scores")
            )
            continue
        auc, ci = auc_with_interval(scores[own, j], scores[rest, j])
        hits = int((top[own] == j).sum())
        if ci[0] > RECOGNISABLE_AUC:
            verdict, reason = "recognisable", f"AUC interval above {RECOGNISABLE_AUC}"
        elif ci[1] < RECOGNISABLE_AUC:
            verdict, reason = "not recognisable", f"AUC interval below {RECOGNISABLE_AUC}"
        else:
            verdict, reason = "can't tell", f"AUC interval spans {RECOGNISABLE_AUC}"
        report.contestants.append(
            ContestantIdentifiability(
                n, n_own, n_rest, verdict, reason, auc, ci, hits / n_own, wilson(hits, n_own), chance
            )
        )
    return report


_memo: dict[tuple[Any, ...], IdentifiabilityReport] = {}
_memo_lock = threading.Lock()


def contestant_identifiability(
    session: Session,
    limit: int = 300,
    strip_prefill: bool = False,
    folds: int = 5,
    min_answers: int = MIN_ANSWERS,
) -> IdentifiabilityReport:
    """`measure` over `ended_answers`, memoised until an ended battle adds answers (per database)."""
    key = (
        str(session.get_bind().engine.url),
        data_version(session),
        limit,
        strip_prefill,
        folds,
        min_answers,
    )
    with _memo_lock:
        if key in _memo:
            return _memo[key]
    report = measure(
        ended_answers(session, limit, strip_prefill), folds, min_answers, strip_prefill=strip_prefill
    )
    with _memo_lock:
        if len(_memo) > 32:
            _memo.clear()
        _memo[key] = report
    return report


# -- with and without the opening, side by side -------------------------------------------------------------------
@dataclass
class OpeningComparison:
    """One contestant measured with and without its fixed opening; ``shown_stripped`` says which one the arena
    shows (`ArenaLimits.strip_prefill`), and that one decides the warning."""

    name: str
    with_opening: ContestantIdentifiability
    without_opening: ContestantIdentifiability
    has_opening: bool
    shown_stripped: bool

    @property
    def shown(self) -> ContestantIdentifiability:
        return self.without_opening if self.shown_stripped else self.with_opening

    @property
    def gives_away(self) -> float | None:
        """AUC with the opening minus without it: what the opening alone gives away (None: can't tell)."""
        a, b = self.with_opening.auc, self.without_opening.auc
        return None if a is None or b is None else a - b

    @property
    def warning(self) -> str | None:
        """The warning for the answers as the arena shows them, with the other measure beside it."""
        w = self.shown.warning
        if w is None:
            return None
        other, label = (
            (self.with_opening, "with its opening")
            if self.shown_stripped
            else (self.without_opening, "without its opening")
        )
        shown = "as shown (without its opening)" if self.shown_stripped else "as shown (with its opening)"
        if self.has_opening and other.auc is not None:
            return f"{w} {shown}; {label}: AUC {other.auc:.2f}"
        return w

    def line(self) -> str:
        if not self.has_opening:
            return f"{self.shown.line()} (no fixed opening)"
        gap = "" if self.gives_away is None else f"; the opening gives away {self.gives_away:+.2f} AUC"
        return (
            f"{self.name}: with its opening {_short(self.with_opening)} · without it "
            f"{_short(self.without_opening)}{gap}; the arena shows it "
            + ("without" if self.shown_stripped else "with")
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "has_opening": self.has_opening,
            "shown_stripped": self.shown_stripped,
            "with_opening": {**asdict(self.with_opening), "warning": self.with_opening.warning},
            "without_opening": {**asdict(self.without_opening), "warning": self.without_opening.warning},
            "gives_away": self.gives_away,
            "warning": self.warning,
            "line": self.line(),
        }


def _short(c: ContestantIdentifiability) -> str:
    if c.auc is None or c.auc_ci is None:
        return f"can't tell ({c.reason})"
    return f"AUC {c.auc:.2f} (95% {c.auc_ci[0]:.2f}-{c.auc_ci[1]:.2f}): {c.verdict}"


@dataclass
class OpeningsReport:
    """Every contestant with and without its fixed opening (`compare_openings`)."""

    contestants: list[OpeningComparison]
    n_answers: int
    folds: int
    shown_stripped: bool
    method: str
    notes: list[str] = field(default_factory=list)

    def get(self, name: str) -> OpeningComparison | None:
        return next((c for c in self.contestants if c.name == name), None)

    def warnings(self) -> list[str]:
        return [w for c in self.contestants if (w := c.warning)]

    def as_dict(self) -> dict[str, Any]:
        return {
            "n_answers": self.n_answers,
            "folds": self.folds,
            "shown_stripped": self.shown_stripped,
            "method": self.method,
            "notes": self.notes,
            "contestants": [c.as_dict() for c in self.contestants],
        }


def compare_openings(
    session: Session, shown_stripped: bool = True, limit: int = 300, min_answers: int = MIN_ANSWERS
) -> OpeningsReport:
    """`contestant_identifiability` with and without the fixed openings, side by side per contestant;
    ``shown_stripped``: the arena shows answers without them (the default, `ArenaLimits.strip_prefill`)."""
    kept = contestant_identifiability(session, limit, strip_prefill=False, min_answers=min_answers)
    cut = contestant_identifiability(session, limit, strip_prefill=True, min_answers=min_answers)
    openings = {
        c.public_name: bool((c.persona or {}).get("prefill")) for c in session.scalars(select(Contestant))
    }
    rows = []
    for w in kept.contestants:
        wo = cut.get(w.name) or w
        rows.append(OpeningComparison(w.name, w, wo, openings.get(w.name, False), shown_stripped))
    notes = list(dict.fromkeys([*kept.notes, *cut.notes]))
    return OpeningsReport(rows, kept.n_answers, kept.folds, shown_stripped, kept.method, notes)
