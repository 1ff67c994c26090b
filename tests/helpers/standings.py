"""Votes in a database for the leaderboard tests: four contestants of known skill, rated battles spread over three
weeks, judge and annotator labels on queue items between them (`judged_items`), and the plain leaderboard path
(every vote through the ORM, then `standings.ratings`) the service must agree with.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from vibestudio.arena.registry import ContestantSpec, list_contestants, register
from vibestudio.db.models import Battle, Label, QueueItem, Turn, Vote
from vibestudio.standings.records import battle_records

NAMES = ["alpha", "bravo", "charlie", "delta"]
SKILL = {"alpha": 1.0, "bravo": 0.4, "charlie": 0.0, "delta": -0.6}
ANSWERS = [
    "Sure.",
    "## Plan\n\n- one\n- two\n\n**Done**!",
    "What a great question! 😊 Here it is.",
    "I think maybe.",
]
T0 = datetime(2026, 1, 5, 12, 0, 0)


def register_contestants(db) -> dict[str, int]:
    with db.session() as s:
        return {n: register(s, ContestantSpec(n)) for n in NAMES}


def write_battles(db, ids, n, seed=0, start=0, **overrides) -> list[int]:
    """`n` battles with one vote each (a few with two turns and two votes), spread over three weeks."""
    rng = random.Random(seed)
    made = []
    with db.session() as s:
        for k in range(start, start + n):
            a, b = rng.sample(NAMES, 2)
            turns = 2 if rng.random() < 0.2 else 1
            when = T0 + timedelta(hours=3 * k)
            fields = {
                "a_id": ids[a],
                "b_id": ids[b],
                "left_is_a": rng.random() < 0.5,
                "sampling_prob": rng.choice([None, 0.05, 0.1, 0.2]),
                "mode": "named" if rng.random() < 0.05 else "anonymous",
                "status": "voted",
                "category": rng.choice([None, "coding", "writing"]),
                "created_at": when,
            }
            fields.update(overrides)
            battle = Battle(**fields)
            for t in range(turns):
                battle.turns.append(
                    Turn(
                        idx=t,
                        user_msg=f"q{k}.{t}",
                        answer_a=rng.choice(ANSWERS) * (1 + (SKILL[a] > 0)),
                        answer_b=rng.choice(ANSWERS),
                    )
                )
                p_a = 1 / (1 + np.exp(SKILL[b] - SKILL[a]))
                u = rng.random()
                outcome = "tie" if u < 0.1 else ("a" if rng.random() < p_a else "b")
                if rng.random() < 0.05:
                    outcome = rng.choice(["both_good", "both_bad"])
                battle.votes.append(
                    Vote(
                        turn_idx=t,
                        outcome=outcome,
                        revealed_before_vote=rng.random() < 0.03,
                        created_at=when + timedelta(minutes=t + 1),
                    )
                )
            made.append(battle)
        s.add_all(made)
        s.flush()
        return [battle.id for battle in made]


def current_leaderboard(
    session: Session, bootstrap: int = 100, style_control: bool = False, include_named: bool = False
) -> dict[str, Any]:
    """Ratings for every contestant that has votes, plus active contestants without votes listed unrated."""
    from vibestudio.standings.ratings import leaderboard

    records = battle_records(session, include_named=include_named, with_text=style_control)
    out: dict[str, Any] = {"models": [], "style_coefficients": {}, "warnings": [], "n_votes": len(records)}
    if records:
        out.update(leaderboard(records, bootstrap_rounds=bootstrap, style_control=style_control).to_dict())
    rated = {m["name"] for m in out["models"]}
    out["unrated"] = [c.public_name for c in list_contestants(session) if c.public_name not in rated]
    return out


def judged_items(db, n: int, judge: str, models=NAMES, seed: int = 0, humans: int = 0) -> None:
    """`n` two-answer items between `models`, each labelled by `judge` like people would (Bradley-Terry on the
    fixture's skills), and `humans` of them also by a person."""
    rng = random.Random(seed)
    skill = {**SKILL, **{m: 0.0 for m in models if m not in SKILL}}
    with db.session() as s:
        for k in range(n):
            a, b = rng.sample(list(models), 2)
            item = QueueItem(
                queue_id="judged",
                answer_1=f"answer {k} one",
                answer_2=f"answer {k} two",
                meta={"answers": [{"model": a}, {"model": b}], "n_answers": 2},
                prompt_messages=[{"role": "user", "content": f"q{k}"}],
            )
            s.add(item)
            s.flush()
            p = 1 / (1 + np.exp(skill[b] - skill[a]))
            for who, kind in [(judge, "judge")] + ([("ann", "human")] if k < humans else []):
                outcome = "1" if rng.random() < p else "2"
                s.add(Label(item_id=item.id, queue="judged", annotator=who, kind=kind, outcome=outcome))
        # labels that are no vote: a judge that could not decide, an item whose answers name no model
        bare = QueueItem(queue_id="judged", answer_1="x", answer_2="y", meta={})
        s.add(bare)
        s.flush()
        s.add(Label(item_id=bare.id, queue="judged", annotator=judge, kind="judge", outcome="1"))
        s.add(Label(item_id=item.id, queue="judged", annotator=judge, kind="judge", outcome="inconsistent"))
