"""Battles end: idle for the timeout (the sweeper and the start-up sweep), on a new round, on a reveal; each end is
recorded (``ended_reason``) and exported; an ended battle's votes count on the board; a vote on an ended battle is
refused with how it ended and loses nothing; clock jumps of the database do not end fresh battles.

Engines are ``FakeOpenAI`` (a scripted server at the HTTP edge); the database and the leaderboard are real."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from tests.helpers.fake_openai import FakeOpenAI, register_http
from vibestudio.arena.battle_end import IdleSweeper, db_now, end_idle
from vibestudio.arena.battles import ArenaLimits, ArenaService, BattleError
from vibestudio.db.models import Battle, Vote
from vibestudio.standings.leaderboard import BoardOptions, LeaderboardService
from vibestudio.standings.records import battle_records


@pytest.fixture
def fake():
    f = FakeOpenAI()
    yield f
    f.close()


@pytest.fixture
def svc(db, fake):
    for k in range(3):
        register_http(db, fake, f"idle-{k}", "fixed")
    return ArenaService(db, ArenaLimits(idle_minutes=30.0))


def _age(db, battle_id: int, minutes: float) -> None:
    """Make a battle's last activity ``minutes`` old by the database clock (as if nobody touched it since)."""
    with db.session() as s:
        b = s.get(Battle, battle_id)
        b.active_at = db_now(s) - timedelta(minutes=minutes)


def _voted_battle(svc: ArenaService, turns: int = 1) -> int:
    bid = svc.start_battle().battle_id
    for k in range(turns):
        list(svc.generate_turn(bid, f"q{k}"))
    svc.record_vote(bid, "left", turn_idx=0)
    return bid


def _rated(db) -> int:
    return LeaderboardService(db).board(BoardOptions(ci_method="sandwich", min_battles=0))["n_votes"]


def test_an_abandoned_battle_ends_after_the_idle_timeout_and_its_votes_count(db, svc):
    bid = _voted_battle(svc)
    assert _rated(db) == 0  # open: counts nowhere
    _age(db, bid, 29.5)
    assert svc.end_idle_battles() == []  # not yet idle
    _age(db, bid, 30.5)
    assert svc.end_idle_battles() == [bid]
    with db.session() as s:
        b = s.get(Battle, bid)
        assert (b.status, b.ended_reason, b.revealed_at) == ("voted", "idle", None)
    assert _rated(db) == 1
    (rec,) = [r for r in battle_records_of(db) if r["battle_id"] == bid]
    assert rec["ended_reason"] == "idle" and rec["revealed"] is False
    assert svc.end_idle_battles() == []  # ended once


def battle_records_of(db):
    with db.session() as s:
        return battle_records(s)


def test_activity_keeps_a_battle_open(db, svc):
    bid = svc.start_battle().battle_id
    _age(db, bid, 45)
    list(svc.generate_turn(bid, "hello"))  # a turn is activity
    assert svc.end_idle_battles() == []
    _age(db, bid, 45)
    svc.record_vote(bid, "tie")  # so is a vote
    assert svc.end_idle_battles() == []


def test_an_idle_battle_without_votes_is_abandoned_and_a_zero_timeout_never_ends(db, fake, svc):
    bid = svc.start_battle().battle_id
    _age(db, bid, 600)
    off = ArenaService(db, ArenaLimits(idle_minutes=0))
    assert off.end_idle_battles() == []
    assert svc.end_idle_battles("sweep") == [bid]
    with db.session() as s:
        assert (s.get(Battle, bid).status, s.get(Battle, bid).ended_reason) == ("abandoned", "sweep")
    with pytest.raises(ValueError, match="idle"):
        end_idle(db, 30, "revealed")


def test_a_battle_being_answered_is_not_ended(db, fake):
    register_http(db, fake, "g1", "gate")
    register_http(db, fake, "g2", "gate")
    svc = ArenaService(db, ArenaLimits(idle_minutes=30.0))
    bid = svc.start_battle().battle_id
    stream = svc.generate_turn(bid, "wait")
    next(stream)  # the turn has begun (and touched the battle); both sides wait at the gate
    _age(db, bid, 60)
    assert svc.end_idle_battles() == []  # answering in this process
    fake.gate.set()
    list(stream)
    with db.session() as s:
        assert s.get(Battle, bid).status == "open"


def test_a_vote_on_an_ended_battle_is_refused_with_why_and_nothing_is_lost(db, svc):
    bid = _voted_battle(svc, turns=2)
    _age(db, bid, 31)
    svc.end_idle_battles()
    with pytest.raises(BattleError, match="idle timeout.*votes are closed.*kept and count"):
        svc.record_vote(bid, "right", turn_idx=1)
    with pytest.raises(BattleError, match="idle timeout.*start a new battle"):
        list(svc.generate_turn(bid, "more"))
    with db.session() as s:
        assert s.scalar(select(func.count(Vote.id)).where(Vote.battle_id == bid)) == 1
    r = svc.reveal(bid)  # the voter may still see who was who; how it ended stays recorded
    assert r.left_name and r.right_name
    with db.session() as s:
        b = s.get(Battle, bid)
        assert b.ended_reason == "idle" and b.revealed_at is not None
    assert svc.battle_view(bid).unvoted_turns == []


def test_new_round_reveal_and_error_record_how_the_battle_ended(db, fake, svc):
    a = _voted_battle(svc)
    svc.new_round(a)
    b = _voted_battle(svc)
    svc.reveal(b)
    c = _voted_battle(svc)
    svc.end_battle(c)
    with pytest.raises(BattleError, match="without a reveal"):
        svc.end_battle(c, "revealed")
    register_http(db, fake, "boom-1", "http500")
    register_http(db, fake, "boom-2", "http500")
    bad = ArenaService(db, ArenaLimits(idle_minutes=30.0))
    d = bad.start_battle(include=["boom-1", "boom-2"]).battle_id
    list(bad.generate_turn(d, "q"))
    with db.session() as s:
        got = {i: s.get(Battle, i).ended_reason for i in (a, b, c, d)}
    assert got == {a: "new_round", b: "revealed", c: "ended", d: "error"}
    assert svc.battle_view(a).ended_reason == "new_round"
    with pytest.raises(BattleError, match="new round started"):
        svc.record_vote(a, "tie")
    reasons = {r["battle_id"]: r["ended_reason"] for r in battle_records_of(db)}
    assert reasons == {a: "new_round", b: "revealed", c: "ended"}  # the errored one counts nowhere


def test_the_sweeper_thread_ends_idle_battles_on_its_timer(db, svc):
    bid = _voted_battle(svc)
    sweeper = IdleSweeper(db, lambda: 0.02, svc.answering_ids, interval_s=0.2).start()  # 1.2 s timeout
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            with db.session() as s:
                if s.get(Battle, bid).status != "open":
                    break
            time.sleep(0.1)
    finally:
        sweeper.stop()
    with db.session() as s:
        assert s.get(Battle, bid).ended_reason == "idle"
    assert sweeper.ended >= 1


def test_a_forward_jump_of_the_database_clock_does_not_end_fresh_battles(db, svc, monkeypatch):
    import vibestudio.arena.battle_end as be

    fresh = _voted_battle(svc)
    stale = _voted_battle(svc)
    _age(db, stale, 40)  # idle before the jump: it should end
    real = be.db_now
    shift = {"s": 0.0}
    monkeypatch.setattr(be, "db_now", lambda s: real(s) + timedelta(seconds=shift["s"]))
    sweeper = IdleSweeper(db, lambda: 30.0, svc.answering_ids)
    _age(db, stale, 40)
    sweeper.sweep()  # baseline; the stale one ends
    shift["s"] = 2 * 3600.0  # the database clock jumps two hours ahead
    assert sweeper.sweep() == []  # the fresh battle is not two hours idle
    assert sweeper.jumps and sweeper.jumps[0] > 7000
    with db.session() as s:
        assert s.get(Battle, fresh).status == "open"
        assert s.get(Battle, stale).ended_reason == "idle"


def test_start_up_sweep_runs_when_the_studio_context_is_built(tmp_path, monkeypatch):
    from vibestudio.db.session import Database
    from vibestudio.studio.context import build_context

    url = f"sqlite:///{tmp_path / 'studio.sqlite'}"
    monkeypatch.setenv("VIBESTUDIO_DATABASE_URL", url)
    monkeypatch.setenv("VIBESTUDIO_BATTLE_IDLE_MINUTES", "0.5")
    ctx = build_context()
    fake = FakeOpenAI()
    try:
        register_http(ctx.db, fake, "s1", "fixed")
        register_http(ctx.db, fake, "s2", "fixed")
        bid = ctx.arena.start_battle(include=["s1", "s2"]).battle_id
        list(ctx.arena.generate_turn(bid, "q"))
        ctx.arena.record_vote(bid, "left")
        _age(ctx.db, bid, 1)
        assert ctx.arena.limits.idle_minutes == 0.5
        build_context()  # a restart
        db = Database(url)
        with db.session() as s:
            assert s.get(Battle, bid).ended_reason == "sweep"
        db.dispose()
    finally:
        fake.close()
