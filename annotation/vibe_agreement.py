"""Human against AI feedback by vibe: on one queue, is the judge more swayed than people by length, markdown,
flattery...?

The vibe features come from ``textfeatures.vibes.features``: tokens, headers, list items, bold, code
blocks, emoji, exclamations, flattery, sycophancy, hedging, refusal. For each, the evidence is the items
whose two answers differ in that feature. On them we count how often the judge picked the answer with
*more* of it. We count how often the people's majority did, too. Ties and undecided verdicts are left out
and counted.

On the items both decided, the paired difference judge minus people gets a seeded percentile bootstrap
interval. The verdict is "judge more swayed" or "people more swayed" only when it excludes 0. Otherwise it
is "can't tell". Every cell carries its evidence count. A cell with no evidence says so instead of showing
0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from sqlalchemy import select

from vibestudio.annotation.agreement import plurality
from vibestudio.annotation.queues import queue_row
from vibestudio.common.outcomes import merge_ties
from vibestudio.db.models import Label, QueueItem
from vibestudio.db.session import Database
from vibestudio.textfeatures.vibes import FEATURE_NAMES, features

HUMAN_KINDS = ("human", "argilla")


class VibeAgreementError(ValueError):
    """No judge verdicts or no human labels on the queue, or an unknown queue."""


@dataclass
class VibeCell:
    feature: str
    items: int  # items whose answers differ in this feature
    judge_more: int  # the judge picked the answer with more of it ...
    judge_n: int  # ... of this many items it decided (1 or 2)
    people_more: int
    people_n: int
    disagree: int  # items where judge and people picked different answers
    paired_n: int  # items both decided
    difference: float | None  # judge rate minus people rate on the paired items
    low: float | None
    high: float | None
    verdict: str

    def rate(self, who: str) -> float | None:
        k, n = (self.judge_more, self.judge_n) if who == "judge" else (self.people_more, self.people_n)
        return k / n if n else None


@dataclass
class VibeAgreement:
    queue: str
    judge: str
    n_items: int
    n_judged: int
    n_people: int
    cells: list[VibeCell]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _bootstrap(diff: np.ndarray, rounds: int, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    boots = diff[rng.integers(0, len(diff), size=(rounds, len(diff)))].mean(axis=1)
    low, high = np.percentile(boots, [2.5, 97.5])
    return float(low), float(high)


def vibe_agreement(
    db: Database,
    queue: str,
    judge: str,
    human_kinds: tuple[str, ...] = HUMAN_KINDS,
    rounds: int = 2000,
    seed: int = 0,
) -> VibeAgreement:
    """Per vibe feature: how often the judge and the people prefer the answer with more of it, paired."""
    name = judge if judge.startswith("judge:") else f"judge:{judge}"
    with db.session() as s:
        queue_row(s, queue)
        items = {
            it.id: (it.answer_1, it.answer_2)
            for it in s.scalars(select(QueueItem).where(QueueItem.queue_id == queue))
        }
        labels = s.scalars(
            select(Label).where(Label.queue == queue).order_by(Label.created_at, Label.id)
        ).all()
    judged: dict[int, str] = {}
    human: dict[int, dict[str, str]] = {}
    for lab in labels:
        if lab.annotator == name:
            judged[lab.item_id] = lab.outcome
        elif lab.kind in human_kinds:
            human.setdefault(lab.item_id, {})[lab.annotator] = merge_ties(lab.outcome)
    if not judged:
        raise VibeAgreementError(f"{name} has no verdicts on queue {queue!r}: run the judge first")
    if not human:
        raise VibeAgreementError(f"queue {queue!r} has no human labels to compare the judge with")
    people = {i: plurality(list(v.values())) for i, v in human.items()}
    feats = {i: (features(a), features(b)) for i, (a, b) in items.items()}
    cells = []
    for f in FEATURE_NAMES:
        differ = {i: (1 if fa[f] > fb[f] else 2) for i, (fa, fb) in feats.items() if fa[f] != fb[f]}
        j = {i: judged[i] == str(m) for i, m in differ.items() if judged.get(i) in ("1", "2")}
        p = {i: people[i] == str(m) for i, m in differ.items() if people.get(i) in ("1", "2")}
        both = sorted(j.keys() & p.keys())
        cell = VibeCell(
            f, len(differ), sum(j.values()), len(j), sum(p.values()), len(p),
            sum(j[i] != p[i] for i in both), len(both), None, None, None, "can't tell (no item decided by both)",
        )  # fmt: skip
        if both:
            diff = np.array([float(j[i]) - float(p[i]) for i in both])
            cell.difference = float(diff.mean())
            cell.low, cell.high = _bootstrap(diff, rounds, seed)
            cell.verdict = (
                "judge more swayed"
                if cell.low > 0
                else "people more swayed"
                if cell.high < 0
                else "can't tell"
            )
        cells.append(cell)
    return VibeAgreement(queue, name, len(items), len(judged), len(people), cells)
