"""What a judge vote is worth, vibe by vibe: the exchange rate on the votes where the answers differ in one
vibe.

The features are the style and vibe features of `textfeatures.vibes`: length, headers, lists, bold, emoji,
flattery, hedging, ... A vibe's slice is the votes whose two answers differ in it:
|(a - b) / (a + b + 1)| >= `threshold`. That is, one answer has the feature and the other none, or one has
about twice as much. On each slice:
- `judge_worth` (`_composite`): one human vote is worth about k of this judge's votes, with its bootstrap
  interval. The weight is chosen by held-out human votes of the slice.
- which side each kind of voter picks: the share of decisive votes won by the answer with *more* of the
  feature. It is given for people and for the judge, with Wilson 95% intervals, and the gap (judge minus
  people).

The vibe where judge and people disagree most is the slice with the largest gap whose two intervals do not
overlap. For example, the judge likes longer answers and people do not. When no gap clears its intervals,
it is "can't tell". A slice with too few votes of either kind is a stated "can't tell" too, never a
number.

`simulate_vibe_judge` builds an arena where the truth is known. Its judge agrees with people except on
answers that differ in length. There it picks the longer one with probability `bias`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vibestudio.common.stats import wilson
from vibestudio.textfeatures import vibes

from ._composite import JudgeWorth, draw_votes, judge_worth
from ._features import side_counts
from ._input import RatingsInputError, as_records

#: |(a - b) / (a + b + 1)| at or above this: the answers differ in the feature.
THRESHOLD = 1.0 / 3.0
#: Fewer votes of either kind in a slice than this: no exchange rate for it.
MIN_SLICE_VOTES = 30


def _share(k: int, n: int) -> tuple[float | None, float | None, float | None]:
    """k of n as (share, low, high) with the Wilson 95% interval; all None when n is 0."""
    ci = wilson(k, n)
    return (None, None, None) if ci is None else (k / n, *ci)


@dataclass
class VibeWorth:
    """One judge on one vibe's slice: the exchange rate and which side each kind of voter picks."""

    judge: str
    vibe: str
    n_human: int
    n_judge: int
    worth: JudgeWorth | None
    people_more: tuple[float | None, float | None, float | None]  # share, low, high
    judge_more: tuple[float | None, float | None, float | None]
    note: str = ""

    @property
    def gap(self) -> float | None:
        if self.people_more[0] is None or self.judge_more[0] is None:
            return None
        return self.judge_more[0] - self.people_more[0]

    @property
    def clear(self) -> bool:
        """The judge's and people's intervals do not overlap."""
        pl, ph = self.people_more[1], self.people_more[2]
        jl, jh = self.judge_more[1], self.judge_more[2]
        if None in (pl, ph, jl, jh):
            return False
        return bool(jl > ph or jh < pl)  # type: ignore[operator]

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "vibe": self.vibe,
            "n_human": self.n_human,
            "n_judge": self.n_judge,
            "worth": None if self.worth is None else self.worth.to_dict(),
            "people_prefer_more": list(self.people_more),
            "judge_prefers_more": list(self.judge_more),
            "gap": self.gap,
            "clear": self.clear,
            "note": self.note,
        }


@dataclass
class VibeReport:
    """Per judge: its exchange rate on every vibe's slice and the vibe where it and people disagree most."""

    rows: list[VibeWorth] = field(default_factory=list)
    most: dict[str, str | None] = field(default_factory=dict)  # judge -> vibe (None: can't tell)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": [r.to_dict() for r in self.rows],
            "disagree_most": dict(self.most),
            "notes": self.notes,
        }

    def sentences(self) -> list[str]:
        out = []
        for judge, vibe in self.most.items():
            if vibe is None:
                out.append(
                    f"{judge}: can't tell where it disagrees with people most (no gap clears its intervals)"
                )
                continue
            r = next(x for x in self.rows if x.judge == judge and x.vibe == vibe)
            side = "more" if (r.gap or 0) > 0 else "less"
            out.append(
                f"{judge} disagrees with people most on {vibe}: it picks the answer with {side} {vibe} "
                f"{100 * (r.judge_more[0] or 0):.0f}% of the time, people {100 * (r.people_more[0] or 0):.0f}%"
            )
        return out


def judge_worth_by_vibe(
    records: Any,
    judges: list[str] | tuple[str, ...],
    *,
    features: tuple[str, ...] | None = None,
    threshold: float = THRESHOLD,
    rounds: int = 20,
    folds: int = 5,
    seed: int = 0,
    min_votes: int = MIN_SLICE_VOTES,
) -> VibeReport:
    """The exchange rate and the side each voter picks, per judge and per vibe slice (see the module docstring).
    Needs the answers (conversations) or flat `style_<feature>_a/_b` counts."""
    if not judges:
        raise ValueError("name at least one judge (the `judge` value of its votes)")
    recs = as_records(records)
    frame = recs.frame
    wanted = features or (*vibes.STYLE_FEATURES, *vibes.VIBE_FEATURES)
    rows = np.arange(len(frame))
    try:
        fa, fb = side_counts(recs, rows, tuple(wanted))
    except RatingsInputError as exc:
        raise ValueError(
            "the exchange rate per vibe needs the answers (conversations) or style counts of each vote"
        ) from exc
    diff = (fa - fb) / (fa + fb + 1.0)
    who = frame["judge"].astype(object).to_numpy() if "judge" in frame.columns else np.full(len(frame), None)
    is_judge = np.isin(who, list(judges))
    winner = frame["winner"].astype(str).to_numpy()
    a_won, b_won = winner == "model_a", winner == "model_b"
    report = VibeReport()
    for j, vibe in enumerate(wanted):
        d = diff[:, j]
        sl = np.abs(np.nan_to_num(d)) >= threshold
        more_won = (a_won & (d > 0)) | (b_won & (d < 0))
        decisive = sl & (a_won | b_won)
        people = _share(int((more_won & decisive & ~is_judge).sum()), int((decisive & ~is_judge).sum()))
        n_h = int((sl & ~is_judge).sum())
        for judge in judges:
            mine = who == judge
            n_j = int((sl & mine).sum())
            judged = _share(int((more_won & decisive & mine).sum()), int((decisive & mine).sum()))
            row = VibeWorth(judge, vibe, n_h, n_j, None, people, judged)
            if n_h < min_votes or n_j < min_votes:
                row.note = f"{n_h} human and {n_j} judge votes differ in {vibe} (need {min_votes} of each)"
            else:
                keep = sl & (mine | ~is_judge)
                sub = frame[keep].reset_index(drop=True)
                (row.worth,) = judge_worth(sub, [judge], rounds=rounds, folds=folds, seed=seed, pooled=False)
                row.note = row.worth.note
            report.rows.append(row)
    for judge in judges:
        clear = [r for r in report.rows if r.judge == judge and r.clear and r.gap is not None]
        report.most[judge] = max(clear, key=lambda r: abs(r.gap or 0.0)).vibe if clear else None
    return report


def simulate_vibe_judge(
    *,
    n_models: int = 6,
    human_votes: int = 1500,
    judge_votes: int = 3000,
    bias: float | None = 0.85,
    long_share: float = 0.4,
    seed: int = 0,
) -> tuple[Any, dict[str, Any]]:
    """Human votes by Bradley-Terry on true skills; a judge `judge` that votes like people, except on the votes
    whose answers differ in length (`long_share` of them: one answer about 3x the other, the side drawn at random
    and unrelated to skill), where it picks the longer answer with probability `bias` (None: it votes like people there too). Flat `style_*` counts carry
    the features (every other feature equal on both sides). The truth: on the length slice the judge's votes carry
    little information about people's preferences (k large); elsewhere it is as good as a person (k near 1)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    draw = draw_votes(rng, n_models, human_votes, judge_votes)
    skill, names, n, a, b, wins, is_judge = draw
    differs = rng.random(n) < long_share
    a_longer = rng.random(n) < 0.5
    base = rng.integers(80, 120, n).astype(float)
    tok_a = np.where(differs & a_longer, 3 * base, base)
    tok_b = np.where(differs & ~a_longer, 3 * base, base)
    if bias is not None:  # None: a judge that votes like people everywhere (the control)
        biased = is_judge & differs & (rng.random(n) < bias)
        wins = np.where(biased, a_longer, np.where(is_judge & differs, ~a_longer, wins))
    frame = pd.DataFrame(
        {
            "model_a": names[a],
            "model_b": names[b],
            "winner": np.where(wins, "model_a", "model_b"),
            "judge": draw.voters(),
            "style_tokens_a": tok_a,
            "style_tokens_b": tok_b,
        }
    )
    for f in (*vibes.STYLE_FEATURES[1:], *vibes.VIBE_FEATURES):
        frame[f"style_{f}_a"] = 0.0
        frame[f"style_{f}_b"] = 0.0
    truth = {"skills": dict(zip(names.tolist(), skill.tolist(), strict=True)), "biased_vibe": "tokens"}
    return frame, truth
