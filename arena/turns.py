"""The writes that end a streamed turn: store both answers in one transaction, or mark the battle errored.

`store_turn` adds a new turn. When regenerating, it replaces the answers of the last, unvoted turn and
keeps the replaced ones on it. Either way it flags a turn whose answer names a contestant (`arena.leaks`).
It writes nothing when the battle ended meanwhile or another turn got there first, and says why.
`mark_errored` records every failed side's full error on the battle (never rated). It returns the
identity-free message the user sees.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from vibestudio.arena.battle_end import touch
from vibestudio.arena.engines.base import GenerationStats
from vibestudio.arena.leaks import find_leak
from vibestudio.arena.streaming import SideState
from vibestudio.db.models import Battle, Turn, Vote, utcnow
from vibestudio.db.session import Database

CONCURRENT = "another turn was stored in this battle at the same time; nothing saved"


class _NotSaved(Exception):
    """The turn cannot be stored; the message says why (identity-free)."""


def store_turn(
    db: Database,
    battle_id: int,
    a: SideState,
    b: SideState,
    user_msg: str,
    idx: int,
    replacing: Turn | None = None,
) -> str | None:
    """Store turn ``idx`` with both complete answers (over ``replacing`` when regenerating); returns None when
    stored, else why nothing was saved."""
    names = [*a.info.identity_strings(), *b.info.identity_strings()]
    leak_a = find_leak(a.text, names) is not None
    leak_b = find_leak(b.text, names) is not None
    st_a, st_b = a.stats or GenerationStats(), b.stats or GenerationStats()
    values = {
        "answer_a": a.text,
        "answer_b": b.text,
        "tokens_a": st_a.tokens,
        "tokens_b": st_b.tokens,
        "latency_a": st_a.ttft,
        "latency_b": st_b.ttft,
        "tps_a": st_a.tokens_per_s,
        "tps_b": st_b.tokens_per_s,
        "wait_a": a.wait_s,
        "wait_b": b.wait_s,
    }
    try:
        with db.session() as s:
            battle = s.get_one(Battle, battle_id)
            if battle.status != "open":
                raise _NotSaved(
                    f"battle {battle_id} ended while the models were answering; nothing was saved"
                )
            touch(s, battle)  # a stored turn is activity: the idle end counts from here
            if replacing is None:
                n = s.scalar(select(func.count(Turn.id)).where(Turn.battle_id == battle_id)) or 0
                if n != idx:
                    raise _NotSaved(CONCURRENT)
                s.add(
                    Turn(
                        battle_id=battle_id,
                        idx=idx,
                        user_msg=user_msg,
                        leak_a=leak_a,
                        leak_b=leak_b,
                        **values,
                    )
                )
                return None
            turn = s.scalar(select(Turn).where(Turn.battle_id == battle_id, Turn.idx == idx))
            if turn is None or s.scalar(
                select(Vote.id).where(Vote.battle_id == battle_id, Vote.turn_idx == idx)
            ):
                raise _NotSaved(f"turn {idx + 1} changed while regenerating; nothing was saved")
            old = {k: getattr(turn, k) for k in values}
            old.update(leak_a=turn.leak_a, leak_b=turn.leak_b, created_at=turn.created_at.isoformat())
            turn.replaced = [*(turn.replaced or []), old]
            for k, v in values.items():
                setattr(turn, k, v)
            # the user saw the replaced answers too: a leak there still counts
            turn.leak_a, turn.leak_b = turn.leak_a or leak_a, turn.leak_b or leak_b
            turn.created_at = utcnow()
            return None
    except _NotSaved as exc:
        return str(exc)
    except IntegrityError:
        return CONCURRENT


def mark_errored(db: Database, battle_id: int, left_is_a: bool, sides: Mapping[str, SideState]) -> str:
    """End an open battle as ``errored`` with every failed side's full error; returns the message for the user,
    which names the sides only as Model A / Model B (left / right on the screen) and says only the error's kind."""
    public, detail = [], []
    for key in ("a", "b"):
        sd = sides[key]
        if sd.error is None:
            continue
        label = "Model A" if (key == "a") == left_is_a else "Model B"
        public.append(f"{label}: {sd.error.public_message}")
        detail.append(
            f"{key} (contestant {sd.info.id} {sd.info.public_name!r}, {sd.info.engine}) "
            f"[{sd.error.kind}] {sd.error}"
        )
    with db.session() as s:
        row = s.get_one(Battle, battle_id)
        if row.status == "open":
            row.status = "errored"
            row.ended_at = utcnow()
            row.ended_reason = "error"
        row.error = "; ".join(detail)
    return "The battle stopped and will not be rated. " + "; ".join(public) + "."
