"""Agreement on a queue: reliability matrices from its labels and rubric scores, then the metrics.

Outcomes are nominal: 1, 2, tie, both_good, both_bad, optionally with the three ties merged. Each rubric
criterion gets Krippendorff's alpha at the level its scale fits. Binary and categorical scales are
nominal. Numeric ranges are ordinal, or interval when asked. Units are (item, answer) pairs. Criteria that
come with imported data but are not in the queue's rubric are treated as interval.

Which label kinds count is a parameter. The default is people, i.e. ``human`` and ``import``; add
``judge`` to see judges next to them. An annotator with several labels on one item counts with the latest.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from vibestudio.annotation.agreement import (
    cohen_kappa,
    counts_table,
    fleiss_kappa,
    krippendorff_alpha,
    majority_agreement,
    percent_agreement,
)
from vibestudio.annotation.queues import queue_row
from vibestudio.annotation.rubrics import rubric_from_dict
from vibestudio.common.outcomes import ITEM_OUTCOMES, SINGLE_OUTCOMES, merge_ties
from vibestudio.db.models import Judgement, Label, QueueItem, RubricScore


@dataclass
class CriterionAgreement:
    criterion: str
    level: str
    alpha: float
    n_units: int
    n_ratings: int


@dataclass
class PairAgreement:
    a: str
    b: str
    kappa: float
    percent: float
    n: int


@dataclass
class AnnotatorAgreement:
    annotator: str
    n_labels: int
    agree: int
    n: int

    @property
    def rate(self) -> float:
        return self.agree / self.n if self.n else float("nan")


@dataclass
class AgreementReport:
    queue: str
    kinds: tuple[str, ...]
    n_items: int
    n_labels: int
    annotators: list[str]
    outcome_alpha: float
    outcome_alpha_merged: float
    fleiss: float
    fleiss_items: int
    criteria: list[CriterionAgreement] = field(default_factory=list)
    pairs: list[PairAgreement] = field(default_factory=list)
    majority: list[AnnotatorAgreement] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        def f(x: float) -> float | None:
            return None if isinstance(x, float) and math.isnan(x) else x

        return {
            "queue": self.queue,
            "kinds": list(self.kinds),
            "items": self.n_items,
            "labels": self.n_labels,
            "annotators": self.annotators,
            "outcome_alpha": f(self.outcome_alpha),
            "outcome_alpha_ties_merged": f(self.outcome_alpha_merged),
            "fleiss_kappa": f(self.fleiss),
            "fleiss_items": self.fleiss_items,
            "criteria": [
                {
                    "criterion": c.criterion,
                    "level": c.level,
                    "alpha": f(c.alpha),
                    "units": c.n_units,
                    "ratings": c.n_ratings,
                }
                for c in self.criteria
            ],
            "pairs": [
                {"a": p.a, "b": p.b, "kappa": f(p.kappa), "percent": f(p.percent), "n": p.n}
                for p in self.pairs
            ],
            "majority": [
                {
                    "annotator": m.annotator,
                    "labels": m.n_labels,
                    "agree": m.agree,
                    "n": m.n,
                    "rate": f(m.rate),
                }
                for m in self.majority
            ],
        }


def _matrix(cells: dict[tuple[str, Any], Any], coders: list[str], units: list[Any]) -> list[list[Any]]:
    return [[cells.get((c, u)) for u in units] for c in coders]


def agreement_report(
    session: Session, queue: str, kinds: tuple[str, ...] = ("human", "import"), interval: bool = False
) -> AgreementReport:
    q = queue_row(session, queue)
    rubric = rubric_from_dict(q.rubric, q.name) if q.rubric else None
    labels = session.scalars(
        select(Label).where(Label.queue == queue, Label.kind.in_(kinds)).order_by(Label.created_at, Label.id)
    ).all()
    latest: dict[tuple[str, int], Label] = {}
    for lab in labels:
        if lab.outcome in ITEM_OUTCOMES or lab.outcome in SINGLE_OUTCOMES:
            latest[(lab.annotator, lab.item_id)] = lab
    coders = sorted({a for a, _ in latest})
    items = sorted({i for _, i in latest})
    outcome = {k: lab.outcome for k, lab in latest.items()}
    m = _matrix(outcome, coders, items)
    merged = [[merge_ties(v) if v is not None else None for v in row] for row in m]
    table, _ = counts_table(m)
    fleiss_items = int((table.sum(axis=1) >= 2).sum()) if len(table) else 0

    pairs = []
    for a, b in itertools.combinations(range(len(coders)), 2):
        kappa, n = cohen_kappa(m[a], m[b])
        if n:
            pct, _ = percent_agreement(m[a], m[b])
            pairs.append(PairAgreement(coders[a], coders[b], kappa, pct, n))
    n_by = {c: sum(1 for v in row if v is not None) for c, row in zip(coders, m, strict=True)}
    majority = [
        AnnotatorAgreement(coders[x.coder], n_by[coders[x.coder]], x.agree, x.n)
        for x in majority_agreement(m)
    ]

    criteria = _criteria(session, queue, latest, rubric, interval, kinds)
    return AgreementReport(
        queue=queue,
        kinds=tuple(kinds),
        n_items=len(items),
        n_labels=len(latest),
        annotators=coders,
        outcome_alpha=krippendorff_alpha(m, "nominal") if coders else float("nan"),
        outcome_alpha_merged=krippendorff_alpha(merged, "nominal") if coders else float("nan"),
        fleiss=fleiss_kappa(table.tolist()) if len(table) else float("nan"),
        fleiss_items=fleiss_items,
        criteria=criteria,
        pairs=pairs,
        majority=majority,
    )


def _criteria(
    session: Session,
    queue: str,
    latest: dict[tuple[str, int], Label],
    rubric: Any,
    interval: bool,
    kinds: tuple[str, ...],
) -> list[CriterionAgreement]:
    label_ids = {lab.id: a for (a, _), lab in latest.items()}
    scores: dict[str, dict[tuple[str, Any], float]] = {}
    if label_ids:
        for s in session.scalars(select(RubricScore).where(RubricScore.label_id.in_(list(label_ids)))):
            if s.label_id is not None:
                scores.setdefault(s.criterion, {})[(label_ids[s.label_id], (s.item_id, s.side))] = s.value
    if "judge" in kinds:
        rows = session.execute(
            select(RubricScore, Judgement.judge)
            .join(Judgement, RubricScore.judgement_id == Judgement.id)
            .join(QueueItem, QueueItem.id == Judgement.item_id)
            .where(Judgement.kind == "absolute", QueueItem.queue_id == queue)
            .order_by(Judgement.id)
        ).all()
        for s, judge in rows:
            scores.setdefault(s.criterion, {})[(judge, (s.item_id, s.side))] = s.value
    out = []
    for name in sorted(scores):
        cells = scores[name]
        units = sorted({u for _, u in cells}, key=lambda u: (u[0], u[1] or ""))
        who = sorted({c for c, _ in cells})
        level = "interval"
        if rubric is not None:
            try:
                crit = rubric.criterion(name)
                level = crit.measurement
                if interval and level == "ordinal":
                    level = "interval"
            except KeyError:
                pass
        m = _matrix(cells, who, units)
        pairable = sum(1 for j in range(len(units)) if sum(row[j] is not None for row in m) >= 2)
        out.append(CriterionAgreement(name, level, krippendorff_alpha(m, level), pairable, len(cells)))
    return out
