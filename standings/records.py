"""Read votes out of the database as battle records in FastChat's layout (the ratings' input format).

There is one record per vote; a battle can have a vote on every turn. ``turn`` counts from 1, and the
conversations hold the turns up to the voted one. What is left out:
- by default, votes in named mode and votes flagged ``revealed_before_vote``;
- always, battles that stopped on an engine error;
- always, battles still open. A count that moves during a battle would tell another tab who plays.
``sampling_prob`` is the exact probability of the drawn pair, so ratings can reweight. It is None when the
pair was chosen.

Each record says how its battle ended (``ended_reason``: revealed, new_round, idle, sweep, ended). It also
says whether it was revealed (``revealed``). Votes of a battle that ended without a reveal count like any
other.

Self-play battles (one contestant on both sides, `arena.self_play`) are left out unless
``include_self_play=True``. Preference snapshots ask for them; no board does. Their records add ``mode``
and each side's sampling as it answered the voted turn (``sampling_a`` / ``sampling_b``). That is the
contestant's own sampling, with the battle's override on top.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, aliased

from vibestudio.arena.battle_end import UNCOUNTED
from vibestudio.arena.self_play import SELF_PLAY, effective_sampling
from vibestudio.common.outcomes import fastchat_winner
from vibestudio.db.models import Battle, Contestant, Prompt, Turn, Vote

__all__ = ["UNCOUNTED", "annotated_records", "battle_records"]


def battle_records(
    session: Session,
    include_named: bool = False,
    include_revealed: bool = False,
    with_text: bool = True,
    include_self_play: bool = False,
) -> list[dict[str, Any]]:
    ca, cb = aliased(Contestant), aliased(Contestant)
    q = (
        select(Vote, Battle, ca.public_name, cb.public_name, Prompt.question_id)
        .join(Battle, Vote.battle_id == Battle.id)
        .join(ca, Battle.a_id == ca.id)
        .join(cb, Battle.b_id == cb.id)
        .outerjoin(Prompt, Battle.prompt_id == Prompt.id)
        .order_by(Vote.created_at, Vote.id)
    )
    q = q.where(Battle.status.not_in(UNCOUNTED))  # an open battle counts nowhere until it ends
    modes = ["anonymous", *(["named"] if include_named else []), *([SELF_PLAY] if include_self_play else [])]
    q = q.where(Battle.mode.in_(modes))
    if not include_revealed:
        q = q.where(Vote.revealed_before_vote.is_(False))
    rows = session.execute(q).all()
    turns: dict[int, list[Turn]] = {}
    ids = {v.battle_id for v, b, *_ in rows if with_text or b.mode == SELF_PLAY}
    if ids:
        for t in session.scalars(select(Turn).where(Turn.battle_id.in_(ids)).order_by(Turn.idx)):
            turns.setdefault(t.battle_id, []).append(t)
    own = _own_sampling(session, {b.a_id for _, b, *_ in rows if b.mode == SELF_PLAY})
    out = []
    for vote, battle, name_a, name_b, qid in rows:
        rec: dict[str, Any] = {
            "model_a": name_a,
            "model_b": name_b,
            "winner": fastchat_winner(vote.outcome),
            "tstamp": vote.created_at.timestamp(),
            "category": battle.category,
            "question_id": qid,
            "sampling_prob": battle.sampling_prob,
            "turn": vote.turn_idx + 1,  # FastChat counts turns from 1
            "battle_id": battle.id,
            "vote_id": vote.id,
            "anony": battle.mode == "anonymous",
            # how the battle ended (`arena.battle_end.END_REASONS`) and whether the voter saw who was who
            "ended_reason": battle.ended_reason,
            "revealed": battle.revealed_at is not None,
        }
        if battle.mode == SELF_PLAY:
            voted = [t for t in turns.get(battle.id, []) if t.idx == vote.turn_idx]
            regens = len(voted[0].replaced or []) if voted else 0
            rec["mode"] = SELF_PLAY
            rec["sampling_a"] = effective_sampling(own[battle.a_id], battle.sampling_a, regens)
            rec["sampling_b"] = effective_sampling(own[battle.b_id], battle.sampling_b, regens)
        if with_text:
            ts = [t for t in turns.get(battle.id, []) if t.idx <= vote.turn_idx]
            rec["conversation_a"] = [
                m
                for t in ts
                for m in (
                    {"role": "user", "content": t.user_msg},
                    {"role": "assistant", "content": t.answer_a},
                )
            ]
            rec["conversation_b"] = [
                m
                for t in ts
                for m in (
                    {"role": "user", "content": t.user_msg},
                    {"role": "assistant", "content": t.answer_b},
                )
            ]
        out.append(rec)
    return out


def _own_sampling(session: Session, ids: set[int]) -> dict[int, dict[str, Any]]:
    """Each contestant's own sampling, for the self-play records' sides."""
    if not ids:
        return {}
    q = select(Contestant.id, Contestant.sampling).where(Contestant.id.in_(ids))
    return {cid: dict(sampling or {}) for cid, sampling in session.execute(q)}


def annotated_records(session: Session, **options: Any) -> list[dict[str, Any]]:
    """`battle_records` plus where each category came from (``category_source``: set, labelled, predicted, none; a
    typed prompt gets the prompt classifier's kind), who voted and how fast: ``judge`` (the voter's user name, None for anonymous votes)
    and ``vote_seconds`` (time from the voted turn's answers being complete to the vote: the turn's start plus
    its slower side's queue wait, first-token latency and tokens / tokens-per-second; None when unknown)."""
    from vibestudio.db.models import User

    records = battle_records(session, **options)
    _add_category_sources(session, records)
    ids = [r["vote_id"] for r in records]
    info: dict[int, tuple[str | None, float | None]] = {}
    for start in range(0, len(ids), 5000):
        q = (
            select(Vote.id, Vote.created_at, User.name, Turn)
            .outerjoin(User, Vote.user_id == User.id)
            .outerjoin(Turn, (Turn.battle_id == Vote.battle_id) & (Turn.idx == Vote.turn_idx))
            .where(Vote.id.in_(ids[start : start + 5000]))
        )
        for vote_id, voted_at, name, turn in session.execute(q):
            info[vote_id] = (name, _vote_seconds(voted_at, turn))
    for r in records:
        r["judge"], r["vote_seconds"] = info.get(r["vote_id"], (None, None))
    return records


def _add_category_sources(session: Session, records: list[dict[str, Any]]) -> None:
    """``category_source`` per record (as the vote cache's: set, labelled, predicted, none); a typed prompt with no
    category gets the prompt classifier's prediction (`standings.prompt_kinds`), as the Leaderboard's boards do."""
    from vibestudio.standings.prompt_kinds import typed_prompt_kinds

    ids = sorted({r["battle_id"] for r in records})
    from_set: set[int] = set()
    for start in range(0, len(ids), 900):
        q = select(Battle.id).where(Battle.id.in_(ids[start : start + 900]), Battle.prompt_id.is_not(None))
        from_set.update(int(i) for i in session.scalars(q))
    typed = [r for r in records if r["category"] is None and r["battle_id"] not in from_set]
    kinds = typed_prompt_kinds(session, limit=len(ids)) if typed else {}
    for r in records:
        if r["category"] is not None:
            r["category_source"] = "set" if r["battle_id"] in from_set else "labelled"
        elif r["battle_id"] in kinds:
            r["category"], r["category_source"] = kinds[r["battle_id"]]["category"], "predicted"
        else:
            r["category_source"] = "none"


def _vote_seconds(voted_at: Any, turn: Turn | None) -> float | None:
    if turn is None or voted_at is None or turn.created_at is None:
        return None
    sides = []
    for wait, latency, tokens, tps in (
        (turn.wait_a, turn.latency_a, turn.tokens_a, turn.tps_a),
        (turn.wait_b, turn.latency_b, turn.tokens_b, turn.tps_b),
    ):
        sides.append((wait or 0.0) + (latency or 0.0) + ((tokens or 0) / tps if tps else 0.0))
    seconds = (voted_at - turn.created_at).total_seconds() - max(sides)
    return seconds if seconds >= 0 else None
