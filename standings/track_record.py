"""Was the report right? A prediction made before play, scored on the arena's votes after.

A checkpoint report predicts the child's win rate against its parent, ties as half, with a 95% interval.
This module scores such predictions on plain data: the prediction and the battle records. It imports
nothing of training; the caller hands it the predictions (``training.report.prediction`` does).

- Only head-to-head votes of the child against its parent count, cast after the prediction was made.
- *Enough votes* comes from the prediction's own width. The observed rate's 95% interval must be no
  wider than the predicted one, at worst case p = 0.5: n >= (z * 0.5 / half-width)^2. Before that the
  record reads "can't tell yet" with the votes still needed.
- A *hit* is an observed rate inside the predicted interval (ends included).
- The proper scores compare the predicted probability with each vote: 1 a child win, 0 a loss, 0.5 a tie.
  Brier is the mean squared error; log loss the mean cross-entropy. A forecast of "even" (0.5) is scored
  beside it, so a reader sees whether the report beat a coin.
- Calibration over all scored children: the share of hits, with its Wilson interval, against the nominal
  95%. Families get the same summary over their own children.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from vibestudio.common.stats import Z95, wilson
from vibestudio.standings.words import counted

NOMINAL = 0.95
#: Log loss needs a probability strictly inside (0, 1): predictions are clipped to this much from each end.
CLIP = 0.01


@dataclass
class Predicted:
    """One child's prediction as plain data: its win rate against ``parent`` (ties as half) in [low, high]."""

    child: str
    parent: str
    p: float
    low: float
    high: float
    since: float | None = None  # votes before this record timestamp do not count (the prediction's time)
    basis: str = ""


@dataclass
class Scored:
    """One child's prediction against the votes it got: scored, can't tell yet, or no prediction."""

    child: str
    parent: str | None
    state: str  # "scored", "can't tell yet", "no prediction"
    why: str = ""
    basis: str = ""
    p: float | None = None
    low: float | None = None
    high: float | None = None
    n: int = 0
    wins: int = 0
    losses: int = 0
    ties: int = 0
    observed: float | None = None
    observed_low: float | None = None
    observed_high: float | None = None
    needed: int = 0
    hit: bool | None = None
    brier: float | None = None
    log_loss: float | None = None
    brier_even: float | None = None
    log_loss_even: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "line": self.line()}

    def line(self) -> str:
        """The record in one sentence, from the same fields as the numbers beside it."""
        if self.state == "no prediction":
            return f"{self.child}: no prediction: {self.why}"
        said = f"{self.child} predicted {self.p:.0%} [{self.low:.0%}, {self.high:.0%}] against {self.parent}"
        if self.state != "scored":
            seen = f"{counted(self.n, 'vote')} so far"
            return f"{said}; can't tell yet: {counted(self.needed - self.n, 'more vote')} needed ({seen})"
        assert self.observed is not None and self.observed_low is not None and self.observed_high is not None
        word = "hit" if self.hit else "miss"
        return (
            f"{said}; observed {self.observed:.0%} [{self.observed_low:.0%}, {self.observed_high:.0%}] "
            f"over {counted(self.n, 'vote')} ({self.wins}-{self.losses}-{self.ties}): {word}; "
            f"Brier {self.brier:.3f} (even: {self.brier_even:.3f})"
        )


@dataclass
class Calibration:
    """Hits over the scored predictions, against the nominal 95%, and the mean proper scores."""

    n_scored: int
    hits: int
    share: float | None
    low: float | None
    high: float | None
    nominal: float = NOMINAL
    brier: float | None = None
    log_loss: float | None = None
    brier_even: float | None = None
    log_loss_even: float | None = None
    waiting: int = 0  # predictions that can't tell yet
    unpredicted: int = 0  # children whose report made no prediction
    words: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class TrackRecord:
    """Every child's record, the calibration over them all, and the same per family root."""

    children: list[Scored]
    overall: Calibration
    families: dict[str, Calibration] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "children": [c.as_dict() for c in self.children],
            "overall": self.overall.as_dict(),
            "families": {k: v.as_dict() for k, v in self.families.items()},
        }


def votes_needed(low: float, high: float) -> int:
    """Votes before the observed rate's 95% interval is no wider than [low, high] (worst case p = 0.5)."""
    half = (high - low) / 2
    if half <= 0:
        raise ValueError(f"a predicted interval needs low < high, got [{low}, {high}]")
    return max(1, math.ceil((Z95 * 0.5 / half) ** 2 - 1e-9))


def outcomes(records: Iterable[dict[str, Any]], child: str, parent: str, since: float | None) -> list[float]:
    """The child's result in each head-to-head vote against ``parent`` since ``since``: 1, 0 or 0.5 (a tie)."""
    out = []
    for r in records:
        if {r["model_a"], r["model_b"]} != {child, parent} or child == parent:
            continue
        if since is not None and float(r["tstamp"]) < since:
            continue
        child_side = "model_a" if r["model_a"] == child else "model_b"
        winner = r["winner"]
        out.append(1.0 if winner == child_side else 0.5 if winner.startswith("tie") else 0.0)
    return out


def _brier(p: float, ys: list[float]) -> float:
    return sum((p - y) ** 2 for y in ys) / len(ys)


def _log_loss(p: float, ys: list[float]) -> float:
    q = min(1 - CLIP, max(CLIP, p))
    return -sum(y * math.log(q) + (1 - y) * math.log(1 - q) for y in ys) / len(ys)


def score(pred: Predicted, records: Iterable[dict[str, Any]]) -> Scored:
    """One prediction against the battle records."""
    ys = outcomes(records, pred.child, pred.parent, pred.since)
    n, wins, losses = len(ys), ys.count(1.0), ys.count(0.0)
    out = Scored(pred.child, pred.parent, "can't tell yet", basis=pred.basis, p=pred.p, low=pred.low)
    out.high, out.n, out.wins, out.losses, out.ties = pred.high, n, wins, losses, n - wins - losses
    out.needed = votes_needed(pred.low, pred.high)
    if n:
        out.observed = sum(ys) / n
        out.observed_low, out.observed_high = wilson(sum(ys), n)  # type: ignore[misc]
    if n < out.needed:
        out.why = f"{counted(out.needed - n, 'more vote')} needed"
        return out
    out.state = "scored"
    assert out.observed is not None
    out.hit = pred.low <= out.observed <= pred.high
    out.brier, out.log_loss = _brier(pred.p, ys), _log_loss(pred.p, ys)
    out.brier_even, out.log_loss_even = _brier(0.5, ys), _log_loss(0.5, ys)
    return out


def unpredicted(child: str, parent: str | None, why: str) -> Scored:
    """A child whose report made no prediction, with the reason."""
    return Scored(child, parent, "no prediction", why=why)


def _mean(xs: list[float | None]) -> float | None:
    got = [x for x in xs if x is not None]
    return sum(got) / len(got) if got else None


def calibrate(children: list[Scored]) -> Calibration:
    """The share of hits with its Wilson interval, against the nominal 95%, and the mean scores per child."""
    scored = [c for c in children if c.state == "scored"]
    hits = sum(1 for c in scored if c.hit)
    ci = wilson(hits, len(scored))
    cal = Calibration(
        len(scored),
        hits,
        hits / len(scored) if scored else None,
        ci[0] if ci else None,
        ci[1] if ci else None,
        brier=_mean([c.brier for c in scored]),
        log_loss=_mean([c.log_loss for c in scored]),
        brier_even=_mean([c.brier_even for c in scored]),
        log_loss_even=_mean([c.log_loss_even for c in scored]),
        waiting=sum(1 for c in children if c.state == "can't tell yet"),
        unpredicted=sum(1 for c in children if c.state == "no prediction"),
    )
    cal.words = calibration_words(cal)
    return cal


def calibration_words(cal: Calibration) -> str:
    """What the hits say about the intervals, or "can't tell yet" with why."""
    if not cal.n_scored:
        return f"can't tell yet: no prediction has enough votes ({cal.waiting} waiting, {cal.unpredicted} without one)"
    assert (
        cal.low is not None and cal.high is not None and cal.brier is not None and cal.brier_even is not None
    )
    head = (
        f"{cal.hits} of {counted(cal.n_scored, 'prediction')} hit ({cal.share:.0%}, 95% interval "
        f"[{cal.low:.0%}, {cal.high:.0%}]; nominal {cal.nominal:.0%})"
    )
    if cal.high < cal.nominal:
        sense = "the intervals are too narrow (overconfident)"
    elif cal.low > cal.nominal:
        sense = "the intervals are wider than they need be"
    else:
        sense = "consistent with 95%" + (" (too few to tell much)" if cal.low < 0.5 else "")
    better = "better" if cal.brier < cal.brier_even else "no better"
    return (
        f'{head}: {sense}; mean Brier {cal.brier:.3f} vs {cal.brier_even:.3f} for "even" '
        f"({better} than a coin); mean log loss {cal.log_loss:.3f} vs {cal.log_loss_even:.3f}"
    )


def track_record(children: list[Scored], roots: dict[str, str] | None = None) -> TrackRecord:
    """The overall calibration and, with ``roots`` (child -> family root), one per family."""
    fams: dict[str, list[Scored]] = {}
    for c in children:
        if roots and c.child in roots:
            fams.setdefault(roots[c.child], []).append(c)
    return TrackRecord(children, calibrate(children), {k: calibrate(v) for k, v in sorted(fams.items())})


def table_md(record: TrackRecord, esc: Any = lambda s: s) -> str:
    """The track record as a Markdown table, then the calibration sentence."""
    rows = [
        "| child | basis | predicted | 95% interval | observed [95%] (n) | result | Brier (even) |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in record.children:
        if c.state == "no prediction":
            rows.append(f"| {esc(c.child)} | – | no prediction: {esc(c.why)} | | | | |")
            continue
        observed = (
            "–"
            if c.observed is None
            else f"{c.observed:.0%} [{c.observed_low:.0%}, {c.observed_high:.0%}] ({c.n})"
        )
        result = (
            ("hit" if c.hit else "miss")
            if c.state == "scored"
            else f"can't tell yet: {counted(c.needed - c.n, 'more vote')} needed"
        )
        brier = "–" if c.brier is None else f"{c.brier:.3f} ({c.brier_even:.3f})"
        rows.append(
            f"| {esc(c.child)} | {esc(c.basis)} | {c.p:.0%} | [{c.low:.0%}, {c.high:.0%}] | {observed} "
            f"| {result} | {brier} |"
        )
    return "\n".join(rows) + f"\n\nCalibration: {record.overall.words}."
