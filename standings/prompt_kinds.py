"""Prompts by kind from the studio database: the category classifier, its held-out accuracy, and a category
for typed prompts.

The classifier (`standings.ratings._kinds`) is trained on the labelled prompt sets the studio holds.
MT-Bench's 8 categories ship with it; imported Arena-Hard sets add theirs. Typed prompts are battles whose
prompt came from no set.

The classifier is trained on each prompt's first turn: what a person types to open a battle. A battle's
typed prompt gets the most probable category and its posterior probability. Nothing is written to the
database; the prompt keeps no category until a person labels it. The vote cache (`standings.vote_cache`)
and `standings.records.annotated_records` use these predictions for typed prompts, marked ``predicted``.
Plain dicts out.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from vibestudio.db.models import Battle, Prompt, Turn
from vibestudio.standings.ratings._kinds import KindsReport, PromptClassifier, cross_validate, usable


def labelled_prompts(session: Session) -> tuple[list[str], list[str | None]]:
    """First turns and categories of every prompt in the studio's prompt sets."""
    texts: list[str] = []
    labels: list[str | None] = []
    for turns, category in session.execute(select(Prompt.turns, Prompt.category).order_by(Prompt.id)):
        first = turns[0] if isinstance(turns, list) and turns else None
        if isinstance(first, dict):
            first = first.get("content")
        texts.append(first if isinstance(first, str) else "")
        labels.append(category)
    return texts, labels


def kinds_report(session: Session, folds: int = 5, seed: int = 0) -> KindsReport:
    """Held-out accuracy of the classifier on the studio's labelled prompts (stratified k-fold)."""
    texts, labels = labelled_prompts(session)
    return cross_validate(texts, labels, folds=folds, seed=seed)


def classifier(session: Session) -> PromptClassifier | None:
    """The classifier trained on all labelled prompts; None when fewer than two categories have prompts."""
    xs, ys, _ = usable(*labelled_prompts(session))
    if len(set(ys)) < 2:
        return None
    return PromptClassifier.fit(xs, ys)


def classify(session: Session, texts: list[str]) -> list[dict[str, Any]]:
    """Per text: {"text", "category", "p"} (category None: can't tell, no labelled prompts to train on)."""
    model = classifier(session)
    out: list[dict[str, Any]] = []
    for text in texts:
        if model is None:
            out.append({"text": text, "category": None, "p": None})
        else:
            category, p = model.predict(text)
            out.append({"text": text, "category": category, "p": p})
    return out


def typed_prompt_kinds(session: Session, limit: int = 10_000) -> dict[int, dict[str, Any]]:
    """For ended battles with no prompt from a set and no category: battle id -> {"category", "p"} of its first
    typed turn (the most recent `limit` battles)."""
    model = classifier(session)
    if model is None:
        return {}
    q = (
        select(Battle.id, Turn.user_msg)
        .join(Turn, (Turn.battle_id == Battle.id) & (Turn.idx == 0))
        .where(
            Battle.prompt_id.is_(None), Battle.category.is_(None), Battle.status.not_in(("open", "errored"))
        )
        .order_by(Battle.id.desc())
        .limit(limit)
    )
    out = {}
    for battle_id, text in session.execute(q):
        category, p = model.predict(text or "")
        out[int(battle_id)] = {"category": category, "p": p}
    return out
