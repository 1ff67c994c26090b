"""Per-annotator diagnostics and a rigging-resistant board: can one colleague who wants their model to win
move it?

Each annotator with enough decisive votes is checked. The annotator is the `judge` field; `annotator` or
`user_id` are also read.
- **Agreement with the leave-one-out consensus.** Bradley-Terry is refitted on everyone else's votes. The
  annotator's decisive votes are scored under it. `fit_z` is their log-likelihood, standardised by its
  mean and variance under that consensus. An honest annotator is about N(0, 1). A strongly negative value
  disagrees more than chance allows. `agreement` is the share of votes that picked the consensus
  favourite, next to `expected_agreement`.
- **Identity-following.** Per model: the annotator's votes for it minus what the consensus predicts,
  standardised. `identity_z` is the largest over models, and `favoured` names that model. Votes that
  follow one contestant's identity rather than its answers pile up here. Others may have judged the very
  same answers (same conversations, else the same prompt and pair). There, `same_answer_disagreement` is
  the share of the annotator's verdicts that differ from the others' majority.
- **Speed.** With `vote_seconds` (time from the answers shown to the vote), `fast_share` is the share of
  votes cast faster than reading both answers at `READ_TOKENS_PER_S` allows.

An annotator is flagged when any of these holds:
- `identity_z` exceeds the Bonferroni bound for the number of models (family-wise 0.1%);
- `fit_z` is below -`FIT_Z`;
- most votes are faster than reading;
- verdicts on shared answers disagree with others far beyond the arena's usual rate.
The robust board refits with each annotator's votes weighted by min(1, (bound / z)^4). Here z is the
larger of the two standardised scores. Two passes run, so colluding accounts do not shield each other.
Nothing is deleted: flags and weights are reported, and the plain board stays as it was.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

from vibestudio.standings.words import counted

from . import _fit
from ._blas import single_threaded
from ._board import Leaderboard, leaderboard, prepare
from ._input import BattleRecords, as_records

ANNOTATOR_FIELDS = ("judge", "annotator", "user_id")
MIN_VOTES = 10
FIT_Z = 4.0
FAMILY_ALPHA = 0.001
FAST_SHARE = 0.5
READ_TOKENS_PER_S = 25.0
MIN_SHARED = 10


@dataclass
class AnnotatorStats:
    annotator: str
    n_votes: int
    n_decisive: int = 0
    agreement: float | None = None
    expected_agreement: float | None = None
    fit_z: float | None = None
    favoured: str | None = None
    identity_z: float | None = None
    same_answer_disagreement: float | None = None
    n_shared: int = 0
    fast_share: float | None = None
    weight: float = 1.0
    flags: list[str] = field(default_factory=list)
    note: str | None = None


@dataclass
class AnnotatorReport:
    annotators: list[AnnotatorStats]
    flagged: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    thresholds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def get(self, annotator: str) -> AnnotatorStats:
        for a in self.annotators:
            if a.annotator == annotator:
                return a
        raise KeyError(annotator)

    def weights(self) -> dict[str, float]:
        return {a.annotator: a.weight for a in self.annotators}


def annotator_column(recs: BattleRecords) -> str | None:
    for name in ANNOTATOR_FIELDS:
        if name in recs.frame.columns:
            return name
    return None


def _labels(recs: BattleRecords, rows: np.ndarray) -> tuple[np.ndarray, int]:
    """Annotator label per prepared row ("" = missing) and the number of missing ones."""
    column = annotator_column(recs)
    if column is None:
        return np.full(len(rows), "", dtype=object), len(rows)
    raw = recs.frame[column].to_numpy(dtype=object)[rows]
    labels = np.array(["" if _blank(v) else str(v) for v in raw], dtype=object)
    return labels, int((labels == "").sum())


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value)) or str(value).strip() == ""


@single_threaded
def annotator_diagnostics(
    records: Any, *, both_good: str = "tie", both_bad: str = "tie", min_votes: int = MIN_VOTES
) -> AnnotatorReport:
    """Diagnostics for every annotator (see the module docstring), with robust-fit weights."""
    recs = as_records(records)
    prep = prepare(recs, both_good=both_good, both_bad=both_bad, ipw=False)
    labels, missing = _labels(recs, prep.rows)
    m = len(prep.names)
    bound = NormalDist().inv_cdf(1.0 - FAMILY_ALPHA / max(m, 1))
    report = AnnotatorReport([], thresholds={"identity_z": bound, "fit_z": -FIT_Z, "fast_share": FAST_SHARE})
    if annotator_column(recs) is None:
        report.notes.append(
            "no annotator ids in these votes (field 'judge', 'annotator' or 'user_id'): per-annotator diagnostics "
            "cannot be estimated"
        )
        return report
    if missing:
        report.notes.append(
            f"{counted(missing, 'vote')} {'has' if missing == 1 else 'have'} no annotator id: "
            f"{'it counts' if missing == 1 else 'they count'} in the boards but nobody is diagnosed for "
            f"{'it' if missing == 1 else 'them'}"
        )
    names = sorted({x for x in labels.tolist() if x})
    if not names:  # e.g. the open single-user mode: every vote is the local operator's, with no name
        report.notes.append(
            "no vote carries a voter's name (in the open single-user mode every vote is the local operator's): "
            "there is nobody to compare with anybody; add users with passwords to check annotators"
        )
        return report
    index = {name: k for k, name in enumerate(names)}
    who = np.array([index.get(x, -1) for x in labels.tolist()], dtype=np.int64)
    weights = np.ones(len(names))
    if not np.any(prep.winner < 2):
        report.notes.append("every vote is a tie: agreement and identity-following cannot be estimated")
        stats = [
            AnnotatorStats(name, int((who == k).sum()), note="every vote is a tie")
            for k, name in enumerate(names)
        ]
    else:
        for _ in range(2):  # second pass: consensus built with the first pass's weights
            stats = _pass(prep, who, names, weights, bound, min_votes)
            weights = np.array([s.weight for s in stats])
    _shared(recs, prep, who, stats)
    _speed(recs, prep, who, stats)
    for s in stats:
        if s.fast_share is not None and s.fast_share > FAST_SHARE:
            s.flags.append(f"{100 * s.fast_share:.0f}% of votes faster than reading the answers")
    report.annotators = sorted(stats, key=lambda s: (not s.flags, s.weight, s.annotator))
    report.flagged = [s.annotator for s in report.annotators if s.flags]
    return report


def _pass(
    prep: Any, who: np.ndarray, names: list[str], weights: np.ndarray, bound: float, min_votes: int
) -> list[AnnotatorStats]:
    """One round of diagnostics: per annotator, Bradley-Terry on everyone else's decisive votes (their per-pair
    counts are the weighted totals minus the annotator's own) and the annotator's votes scored under it."""
    m = len(prep.names)
    dec = np.flatnonzero(prep.winner < 2)
    a, b, who_d = prep.a[dec], prep.b[dec], who[dec]
    won_a = prep.winner[dec] == 0
    w = np.ones(len(who_d))
    own = who_d >= 0
    w[own] = weights[who_d[own]]  # votes without an annotator id keep weight 1
    lo_won = np.where(a < b, won_a, ~won_a).astype(np.float64)
    present, pair = np.unique(np.minimum(a, b).astype(np.int64) * m + np.maximum(a, b), return_inverse=True)
    n_pairs = len(present)
    design = _fit.Design(present // m, present % m, m)
    s_all = np.bincount(pair, w * lo_won, n_pairs)
    n_all = np.bincount(pair, w, n_pairs)
    ridge = 1e-3  # a little shrinkage: a model only this annotator rated stays near the middle
    theta_all = _fit.newton(design, _ratio(s_all, n_all), n_all, ridge=ridge).theta
    out = []
    for k, name in enumerate(names):
        s = AnnotatorStats(name, int((who == k).sum()))
        out.append(s)
        mine = np.flatnonzero(who_d == k)
        s.n_decisive = len(mine)
        if len(mine) < min_votes:
            s.note = f"too few decisive votes ({len(mine)} < {min_votes}) to diagnose"
            continue
        n_loo = np.maximum(n_all - np.bincount(pair[mine], w[mine], n_pairs), 0.0)
        s_loo = np.maximum(s_all - np.bincount(pair[mine], (w * lo_won)[mine], n_pairs), 0.0)
        theta = _fit.newton(
            design, _ratio(s_loo, n_loo), n_loo, ridge=ridge, theta0=theta_all, max_iter=50
        ).theta
        _score(s, prep.names, a[mine], b[mine], won_a[mine], theta, bound)
    return out


def _ratio(s: np.ndarray, n: np.ndarray) -> np.ndarray:
    return np.clip(np.divide(s, n, out=np.full_like(s, 0.5), where=n > 0), 0.0, 1.0)


def _score(
    s: AnnotatorStats,
    names: list[str],
    a: np.ndarray,
    b: np.ndarray,
    won_a: np.ndarray,
    theta: np.ndarray,
    bound: float,
) -> None:
    """Agreement, standardised fit and identity-following of one annotator's decisive votes under `theta`."""
    m = len(names)
    p = 1.0 / (1.0 + np.exp(-(theta[a] - theta[b])))  # P(a wins | decisive) under the consensus
    p_obs = np.where(won_a, p, 1.0 - p)
    s.agreement = float(np.mean(p_obs > 0.5))
    s.expected_agreement = float(np.mean(np.maximum(p, 1.0 - p)))
    logit = np.log(p) - np.log1p(-p)
    mean = p * np.log(p) + (1 - p) * np.log1p(-p)
    var = p * (1 - p) * logit**2
    s.fit_z = float((np.log(p_obs).sum() - mean.sum()) / np.sqrt(max(var.sum(), 1e-9)))
    resid = np.where(won_a, 1.0, 0.0) - p
    v = p * (1 - p)
    toward = np.bincount(a, resid, m) - np.bincount(b, resid, m)
    spread = np.bincount(a, v, m) + np.bincount(b, v, m)
    z = np.divide(toward, np.sqrt(spread), out=np.zeros(m), where=spread > 0)
    top = int(np.argmax(z))
    s.favoured, s.identity_z = names[top], float(z[top])
    if s.identity_z > bound:
        s.flags.append(f"votes follow {s.favoured}'s identity (z = {s.identity_z:.1f}, bound {bound:.1f})")
    if s.fit_z < -FIT_Z:
        s.flags.append(f"disagrees with the consensus beyond chance (z = {s.fit_z:.1f})")
    worst = max(s.identity_z / bound, -s.fit_z / FIT_Z)
    s.weight = 1.0 if worst <= 1.0 else float(1.0 / worst**4)


def _answers_key(recs: BattleRecords, prep: Any) -> tuple[np.ndarray | None, bool]:
    """Key of the answers each vote judged, the same whichever side they were shown on; (None, _) if unknown."""
    frame = recs.frame
    a_names = np.asarray(prep.names, dtype=object)[prep.a]
    b_names = np.asarray(prep.names, dtype=object)[prep.b]
    if "conversation_a" in frame.columns and "conversation_b" in frame.columns:
        ca = frame["conversation_a"].to_numpy(dtype=object)[prep.rows]
        cb = frame["conversation_b"].to_numpy(dtype=object)[prep.rows]
        keys = []
        for x, y, na, nb in zip(ca, cb, a_names, b_names, strict=True):
            ha, hb = _digest(na, x), _digest(nb, y)
            keys.append("|".join(sorted((ha, hb))))
        return np.array(keys, dtype=object), True
    if "question_id" in frame.columns:
        q = frame["question_id"].to_numpy(dtype=object)[prep.rows]
        keys = [
            f"{qq}|{'|'.join(sorted((str(na), str(nb))))}"
            for qq, na, nb in zip(q, a_names, b_names, strict=True)
        ]
        return np.array(keys, dtype=object), False
    return None, False


def _digest(model: Any, conversation: Any) -> str:
    text = json.dumps(conversation, sort_keys=True, default=str)
    return hashlib.sha1(f"{model}\x00{text}".encode()).hexdigest()[:16]


def _shared(recs: BattleRecords, prep: Any, who: np.ndarray, stats: list[AnnotatorStats]) -> None:
    """Disagreement with other annotators' majority verdict on the very same answers."""
    keys, _exact = _answers_key(recs, prep)
    if keys is None:
        return
    names = np.asarray(prep.names, dtype=object)
    verdict = np.where(
        prep.winner == 0, names[prep.a], np.where(prep.winner == 1, names[prep.b], "tie")
    ).astype(object)
    groups: dict[str, list[int]] = {}
    for i, key in enumerate(keys.tolist()):
        if who[i] >= 0:
            groups.setdefault(key, []).append(i)
    per_annotator: dict[int, list[bool]] = {}
    for rows in groups.values():
        if len(rows) < 2:
            continue
        for i in rows:
            others = [verdict[j] for j in rows if who[j] != who[i]]
            if not others:
                continue
            values, counts = np.unique(np.asarray(others, dtype=str), return_counts=True)
            if (counts == counts.max()).sum() > 1:
                continue  # no majority among the others
            per_annotator.setdefault(int(who[i]), []).append(verdict[i] != values[np.argmax(counts)])
    pooled = [x for v in per_annotator.values() for x in v]
    if not pooled:
        return
    rate = float(np.mean(pooled))
    for k, s in enumerate(stats):
        seen = per_annotator.get(k, [])
        s.n_shared = len(seen)
        if len(seen) < MIN_SHARED:
            continue
        s.same_answer_disagreement = float(np.mean(seen))
        sd = np.sqrt(max(rate * (1 - rate), 1e-9) / len(seen))
        if (s.same_answer_disagreement - rate) / sd > FIT_Z and s.same_answer_disagreement > 0.5:
            s.flags.append(
                f"on the same answers, disagrees with the others' majority {100 * s.same_answer_disagreement:.0f}% "
                f"of the time (arena {100 * rate:.0f}%)"
            )


def _speed(recs: BattleRecords, prep: Any, who: np.ndarray, stats: list[AnnotatorStats]) -> None:
    frame = recs.frame
    if "vote_seconds" not in frame.columns:
        return
    seconds = frame["vote_seconds"].to_numpy(dtype=np.float64, na_value=np.nan)[prep.rows]
    tokens = np.full(len(prep.rows), np.nan)
    if "style_tokens_a" in frame.columns and "style_tokens_b" in frame.columns:
        tokens = (
            frame["style_tokens_a"].to_numpy(dtype=np.float64, na_value=np.nan)
            + frame["style_tokens_b"].to_numpy(dtype=np.float64, na_value=np.nan)
        )[prep.rows]
    elif "conversation_a" in frame.columns:
        from vibestudio.textfeatures import vibes

        from ._features import assistant_text

        ca = frame["conversation_a"].to_numpy(dtype=object)[prep.rows]
        cb = frame["conversation_b"].to_numpy(dtype=object)[prep.rows]
        tokens = np.array(
            [vibes.token_count(assistant_text(x) or "") + vibes.token_count(assistant_text(y) or "")
             for x, y in zip(ca, cb, strict=True)]
        )  # fmt: skip
    reading = np.maximum(tokens / READ_TOKENS_PER_S, 1.0)
    known = ~np.isnan(seconds) & ~np.isnan(reading)
    for k, s in enumerate(stats):
        mine = (who == k) & known
        if mine.sum() >= MIN_VOTES:
            s.fast_share = float(np.mean(seconds[mine] < reading[mine]))


def robust_leaderboard(
    records: Any, *, report: AnnotatorReport | None = None, **options: Any
) -> tuple[Leaderboard, AnnotatorReport]:
    """The board refitted with each annotator's votes weighted by their robust weight (see the module docstring).
    Votes without an annotator id keep weight 1. Returns the board and the diagnostics it used."""
    recs = as_records(records)
    report = report or annotator_diagnostics(
        recs, both_good=options.get("both_good", "tie"), both_bad=options.get("both_bad", "tie")
    )
    column = annotator_column(recs)
    weights = np.ones(len(recs))
    if column is not None:
        table = report.weights()
        raw = recs.frame[column].to_numpy(dtype=object)
        weights = np.array([1.0 if _blank(v) else table.get(str(v), 1.0) for v in raw])
    board = leaderboard(recs, vote_weights=weights, **options)
    down = [a for a in report.annotators if a.weight < 1.0]
    if down:
        board.warnings.append(
            "robust fit: down-weighted "
            + ", ".join(f"{a.annotator} (weight {a.weight:.2f})" for a in down[:8])
            + (f" and {len(down) - 8} more" if len(down) > 8 else "")
        )
    return board, report


def format_annotators(report: AnnotatorReport) -> str:
    """Plain-text table: flagged annotators first."""
    lines = []
    header = (
        f"{'annotator':<16} {'votes':>6} {'agree':>6} {'expect':>6} {'fit z':>6} {'favoured':<16} "
        f"{'ident z':>7} {'same-ans':>8} {'fast':>5} {'weight':>6}  flags"
    )
    lines += [header, "-" * len(header)]
    for s in report.annotators:
        if s.note:
            lines.append(f"{s.annotator:<16} {s.n_votes:>6}  cannot estimate: {s.note}")
            continue
        lines.append(
            f"{s.annotator:<16} {s.n_votes:>6} {_f(s.agreement, 2):>6} {_f(s.expected_agreement, 2):>6} "
            f"{_f(s.fit_z, 1):>6} {str(s.favoured or '-'):<16} {_f(s.identity_z, 1):>7} "
            f"{_f(s.same_answer_disagreement, 2):>8} {_f(s.fast_share, 2):>5} {s.weight:6.2f}  "
            + ("; ".join(s.flags) or "-")
        )
    lines.append("")
    lines.append(
        f"flagged: {', '.join(report.flagged) or 'none'} (nothing is deleted; the robust board down-weights them)"
    )
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines)


def _f(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"
