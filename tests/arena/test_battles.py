"""Battle lifecycle on the real llama.cpp engine (short answers): stream, store, vote, reveal, bad input."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import func, select

from arena.battles import ArenaLimits, ArenaService, BattleError
from arena.registry import ContestantSpec, RegistryError, ensure_defaults, list_contestants, register
from db.models import Battle, Turn, Vote


def _short_pair(db, n=2):
    with db.session() as s:
        ids = [
            register(
                s,
                ContestantSpec(
                    f"tiny-{i}",
                    sampling={"max_tokens": 12, "temperature": 0.5, "seed": i},
                    system_prompt="Answer briefly.",
                ),
            )
            for i in range(n)
        ]
    return ids


def test_defaults_register_plain_model_and_personas(db):
    with db.session() as s:
        new = ensure_defaults(s)
        again = ensure_defaults(s)
        items = list_contestants(s)
    assert len(new) >= 4 and again == []
    assert {c.public_name for c in items} >= {
        "smollm2-plain",
        "smollm2-concise",
        "smollm2-warm",
        "smollm2-playful",
    }
    assert len({(c.system_prompt, c.prefill, str(c.sampling)) for c in items}) == len(items)
    assert all("SmolLM2" in c.aliases for c in items)


def test_register_rejects_duplicates_and_unknown_fields(db):
    with db.session() as s:
        register(s, ContestantSpec("x"))
    with pytest.raises(RegistryError, match="already exists"), db.session() as s:
        register(s, ContestantSpec("x"))
    with pytest.raises(RegistryError, match="unknown sampling field"), db.session() as s:
        register(s, ContestantSpec("y", sampling={"temprature": 0.3}))
    with pytest.raises(RegistryError, match="engine"), db.session() as s:
        register(s, ContestantSpec("z", engine="nope"))


def test_battle_streams_both_sides_stores_turn_and_reveals_after_vote(db):
    a, b = _short_pair(db)
    svc = ArenaService(db, rng=random.Random(1))
    view = svc.start_battle()
    updates = list(svc.generate_turn(view.battle_id, "Name a colour."))
    assert len(updates) > 2 and updates[-1].done and updates[-1].error is None
    final = updates[-1]
    assert final.left.strip() and final.right.strip()
    with db.session() as s:
        battle = s.get(Battle, view.battle_id)
        turn = s.scalar(select(Turn).where(Turn.battle_id == view.battle_id))
        assert {battle.a_id, battle.b_id} == {a, b}
        assert battle.sampling_prob == pytest.approx(1.0)
        left_is_a = battle.left_is_a
        assert (turn.answer_a, turn.answer_b) == (
            (final.left, final.right) if left_is_a else (final.right, final.left)
        )
        assert turn.tokens_a > 0 and turn.latency_a is not None and turn.tps_a and turn.tps_a > 0
    reveal = svc.vote(view.battle_id, "left")
    assert reveal.outcome == ("a" if left_is_a else "b")
    assert {reveal.left_name, reveal.right_name} == {"tiny-0", "tiny-1"}
    with pytest.raises(BattleError, match="already has a vote"):
        svc.vote(view.battle_id, "right")
    with db.session() as s:
        assert s.scalar(select(func.count(Vote.id))) == 1


def test_multi_turn_keeps_each_side_in_its_own_context(db):
    _short_pair(db)
    svc = ArenaService(db)
    bid = svc.start_battle().battle_id
    list(svc.generate_turn(bid, "Say hello."))
    list(svc.generate_turn(bid, "Now say goodbye."))
    with db.session() as s:
        turns = list(s.scalars(select(Turn).where(Turn.battle_id == bid).order_by(Turn.idx)))
    assert [t.idx for t in turns] == [0, 1]
    r = svc.vote(bid, "tie", turn_idx=1)
    assert r.turn_idx == 1 and r.outcome == "tie"


def test_bad_input_is_refused_and_writes_nothing(db):
    _short_pair(db)
    svc = ArenaService(db, limits=ArenaLimits(max_prompt_chars=50, max_turns=1))
    bid = svc.start_battle().battle_id
    with pytest.raises(BattleError, match="empty"):
        list(svc.generate_turn(bid, "   "))
    with pytest.raises(BattleError, match="limit is 50"):
        list(svc.generate_turn(bid, "x" * 51))
    with pytest.raises(BattleError, match="nothing to vote on"):
        svc.vote(bid, "left")
    with pytest.raises(BattleError, match="unknown vote"):
        svc.vote(bid, "left-ish")
    list(svc.generate_turn(bid, "Hi"))
    with pytest.raises(BattleError, match="limit of 1 turns"):
        list(svc.generate_turn(bid, "Again"))
    with db.session() as s:
        assert s.scalar(select(func.count(Turn.id))) == 1
        assert s.scalar(select(func.count(Vote.id))) == 0


def test_engine_down_marks_battle_errored_and_unvotable(db, tmp_path):
    with db.session() as s:
        register(s, ContestantSpec("ok", sampling={"max_tokens": 8}))
        register(s, ContestantSpec("down", model_ref=str(tmp_path / "missing.gguf")))
    svc = ArenaService(db)
    bid = svc.start_battle().battle_id
    last = list(svc.generate_turn(bid, "Hello"))[-1]
    assert last.done and "not be rated" in last.error and "not found" in last.error
    with db.session() as s:
        assert s.get(Battle, bid).status == "errored"
        assert s.scalar(select(func.count(Turn.id))) == 0
    with pytest.raises(BattleError, match="errored"):
        svc.vote(bid, "left")


def test_answer_naming_its_model_is_flagged_and_left_out(db):
    from arena.records import battle_records

    with db.session() as s:
        register(s, ContestantSpec("leaky", prefill="I am SmolLM2, and", sampling={"max_tokens": 6}))
        register(s, ContestantSpec("quiet", prefill="Hello there", sampling={"max_tokens": 6}))
    svc = ArenaService(db)
    bid = svc.start_battle().battle_id
    list(svc.generate_turn(bid, "Who are you? My friend uses SmolLM2."))
    r = svc.vote(bid, "left")
    assert r.revealed_before_vote
    with db.session() as s:
        assert battle_records(s) == []
        assert len(battle_records(s, include_revealed=True)) == 1
