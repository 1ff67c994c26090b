"""Unpaired (KTO) rows from the arena's own votes. Every answer a person judged becomes a desirable or an
undesirable row. So *both good*, *both bad* and rubric scores train too, not only A-or-B votes.

A row is ``{"prompt": [...messages], "completion": [assistant msg], "label": bool, "provenance": {...}}``.
That is TRL's conversational unpaired layout. Each answer of a vote is labelled on its own, with its own
history as the prompt. So a later turn whose two sides saw different earlier answers still gives two rows:

  A or B better     the winner desirable, the loser undesirable
  both good         both desirable
  both bad          both undesirable
  tie               nothing from the vote (a plain tie says neither is good nor bad)

A score rule (``ScoreRule``) is a rubric criterion and a threshold. With one, an answer scored on that
criterion is desirable when its score reaches the threshold, whatever the vote said. An answer without
that score keeps the vote's label; a tie's answers without scores are left out. An empty answer is left
out.

Every answer that makes no row is counted under a reason (``annotation.snapshots.SKIP_REASONS`` words
them). ``coverage`` says, for each objective, how many votes it could use and why the others were left
out. A snapshot records that in its filter.

A paired snapshot row (chosen / rejected) gives one row of each class (``from_pairs``). Pure data: no
model, no training. The pairs rule lives in ``annotation.snapshots``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from vibestudio.common.outcomes import DESIRABLE, item_from_fastchat


@dataclass(frozen=True)
class ScoreRule:
    """Scores of ``criterion`` at or above ``threshold`` are desirable; ``scale`` is the criterion's range."""

    criterion: str
    threshold: float
    scale: tuple[float, float]

    def __post_init__(self) -> None:
        lo, hi = self.scale
        if not lo <= self.threshold <= hi:
            raise ValueError(
                f"desirable_threshold {self.threshold:g} is outside {self.criterion!r}'s scale {lo:g}..{hi:g}"
            )


def criterion_scale(criterion: str, rubric: str = "") -> tuple[float, float]:
    """(lowest, highest) score of a numeric rubric criterion (``rubric`` empty = the default rubric); a
    ValueError naming ``score_criterion`` when the rubric lacks it or it is categorical."""
    from vibestudio.annotation.rubrics import RubricError, get_rubric

    try:
        crit = get_rubric(rubric or None).criterion(criterion)
    except (RubricError, KeyError) as exc:
        raise ValueError(f"score_criterion {criterion!r}: {exc}") from exc
    if crit.scale == "categorical":
        raise ValueError(f"score_criterion {criterion!r} is categorical: it has no threshold")
    return float(min(crit.levels)), float(max(crit.levels))


def score_rule(criterion: str, threshold: float | None, rubric: str = "") -> ScoreRule | None:
    """The rule for ``criterion`` (None when empty); ``threshold`` None = the middle of its scale."""
    if not criterion:
        if threshold is not None:
            raise ValueError("desirable_threshold needs score_criterion (which scores it applies to)")
        return None
    lo, hi = criterion_scale(criterion, rubric)
    return ScoreRule(criterion, (lo + hi) / 2 if threshold is None else float(threshold), (lo, hi))


@dataclass
class Unpaired:
    """The rows, how many answers each reason left out, and the votes that gave at least one row."""

    rows: list[dict[str, Any]]
    skipped: dict[str, int]
    vote_ids: list[int]

    @property
    def desirable(self) -> int:
        return sum(1 for r in self.rows if r["label"])

    @property
    def undesirable(self) -> int:
        return len(self.rows) - self.desirable


def vote_labels(winner: str) -> dict[str, bool]:
    """Which of a vote's answers ("a", "b") its outcome calls desirable; a plain tie labels neither."""
    item = item_from_fastchat(winner)  # FastChat's winner as a queue item (common.outcomes)
    sides = DESIRABLE.get(item, {})
    return {"a" if k == "1" else "b": v for k, v in sides.items()}


def unpaired_rows(
    records: list[dict[str, Any]],
    scores: dict[int, dict[str, dict[str, float]]] | None = None,
    rule: ScoreRule | None = None,
) -> Unpaired:
    """KTO rows from FastChat-layout records with conversations (``standings.records.battle_records``).
    ``scores``: vote id -> side ("a" / "b") -> criterion -> value (the votes' rubric scores)."""
    rows: list[dict[str, Any]] = []
    skipped: Counter[str] = Counter()
    used: list[int] = []
    for r in records:
        try:
            labels = vote_labels(r["winner"])
        except ValueError:
            skipped["unknown_outcome"] += 2
            continue
        given = (scores or {}).get(r.get("vote_id") or -1, {})
        made = 0
        for side in ("a", "b"):
            value = (given.get(side) or {}).get(rule.criterion) if rule else None
            if value is not None and rule is not None:
                desirable, source = value >= rule.threshold, "score"
            elif side in labels:
                desirable, source = labels[side], "vote"
            else:
                skipped["tie_without_score"] += 1
                continue
            conv = r[f"conversation_{side}"]
            answer = conv[-1]["content"]
            if not answer.strip():
                skipped["empty_answer"] += 1
                continue
            rows.append(
                {
                    "prompt": conv[:-1],
                    "completion": [{"role": "assistant", "content": answer}],
                    "label": bool(desirable),
                    "provenance": {
                        "source": "arena_vote",
                        "vote_id": r.get("vote_id"),
                        "battle_id": r.get("battle_id"),
                        "turn": r.get("turn"),
                        "side": side,
                        "model": r[f"model_{side}"],
                        "outcome": r["winner"],
                        "labelled_by": source,
                        "score": value,
                        "tstamp": r.get("tstamp"),
                    },
                }
            )
            made += 1
        if made and r.get("vote_id") is not None:
            used.append(int(r["vote_id"]))
    return Unpaired(rows, dict(skipped), used)


def from_pairs(pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Paired snapshot rows as unpaired ones: the chosen answer desirable, the rejected one undesirable."""
    out = []
    for p in pairs:
        prov = p.get("provenance") or {}
        for key, label in (("chosen", True), ("rejected", False)):
            model = prov.get(f"{key}_model")
            out.append(
                {
                    "prompt": p["prompt"],
                    "completion": p[key],
                    "label": label,
                    "provenance": {**prov, "from_pair": key, "model": model},
                }
            )
    return out


def is_unpaired(row: dict[str, Any]) -> bool:
    """A snapshot row in the unpaired layout (completion + label) rather than a pair."""
    return "completion" in row and "label" in row


def coverage(
    records: list[dict[str, Any]], pair_skipped: dict[str, int], n_pairs: int, unpaired: Unpaired
) -> dict[str, Any]:
    """Per objective, the votes it could use and why the rest were left out: pairs (DPO, ORPO, SimPO, reward
    models) take decisive votes only; KTO takes every vote that labels at least one answer."""
    return {
        "pairs": {"votes": n_pairs, "left_out": {k: v for k, v in pair_skipped.items() if v}},
        "kto": {
            "votes": len(unpaired.vote_ids),
            "desirable": unpaired.desirable,
            "undesirable": unpaired.undesirable,
            "left_out_answers": {k: v for k, v in unpaired.skipped.items() if v},
        },
        "votes_read": len(records),
    }


def balance(desirable: int, undesirable: int, w_des: float, w_und: float) -> dict[str, Any]:
    """The class balance and TRL's weights, with the ranges KTO's paper (its Eq. 8, as TRL checks it) asks for:
    ``desirable_weight`` in [1, 1.33] x undesirable x ``undesirable_weight`` / desirable, or the mirror for
    ``undesirable_weight``; ``in_range`` is True when either weight is in its range (or the classes match)."""
    out: dict[str, Any] = {
        "desirable": desirable,
        "undesirable": undesirable,
        "desirable_weight": w_des,
        "undesirable_weight": w_und,
    }
    if not desirable or not undesirable:
        out["in_range"] = False
        return out
    des_lo = round(undesirable * w_und / desirable, 2)
    des_hi = round(undesirable * w_und / desirable * 1.33, 2)
    und_lo = round(desirable * w_des / undesirable / 1.33, 2)
    und_hi = round(desirable * w_des / undesirable, 2)
    out["desirable_weight_range"] = (des_lo, des_hi)
    out["undesirable_weight_range"] = (und_lo, und_hi)
    out["in_range"] = desirable == undesirable or des_lo <= w_des <= des_hi or und_lo <= w_und <= und_hi
    return out


def describe_balance(b: dict[str, Any]) -> str:
    """The balance in one line of words."""
    text = (
        f"{b['desirable']} desirable / {b['undesirable']} undesirable answers; weights desirable "
        f"{b['desirable_weight']:g}, undesirable {b['undesirable_weight']:g}"
    )
    if "desirable_weight_range" in b and not b["in_range"]:
        lo, hi = b["desirable_weight_range"]
        ulo, uhi = b["undesirable_weight_range"]
        text += (
            f" (out of KTO's range: set desirable_weight in [{lo:g}, {hi:g}] or undesirable_weight in "
            f"[{ulo:g}, {uhi:g}])"
        )
    return text


__all__ = [
    "ScoreRule",
    "Unpaired",
    "balance",
    "criterion_scale",
    "score_rule",
    "coverage",
    "describe_balance",
    "from_pairs",
    "is_unpaired",
    "unpaired_rows",
    "vote_labels",
]
