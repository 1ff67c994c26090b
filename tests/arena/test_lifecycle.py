"""The contestant lifecycle: one state, every change logged; anonymous draws take released contestants only;
researchers (not annotators) may play pending and held ones in named mode and self-play; a restore never lets a
held checkpoint play; verdicts recorded while hidden and clock jumps do not confuse a restore."""

from __future__ import annotations

import random
from datetime import datetime

import pytest
from sqlalchemy import update

from vibestudio.accounts import add_user
from vibestudio.arena import lifecycle
from vibestudio.arena.battles import ArenaService, BattleError
from vibestudio.arena.registry import (
    ContestantSpec,
    RegistryError,
    get_contestant,
    list_contestants,
    register,
)
from vibestudio.db.models import Battle, Contestant, ContestantEvent
from vibestudio.standings.families import hide
from vibestudio.training.report import verdict


def _arena(db, n=3):
    with db.session() as s:
        ids = [register(s, ContestantSpec(f"p{i}")) for i in range(n)]
        child = register(s, ContestantSpec("child", parent_id=ids[0]), state="pending")
    return ids, child


def _state(db, cid):
    with db.session() as s:
        return s.get_one(Contestant, cid).state


def test_active_is_read_only_and_derived_from_the_state(db):
    ids, child = _arena(db)
    with db.session() as s:
        row = s.get_one(Contestant, child)
        assert row.state == "pending" and row.active is False
        with pytest.raises(AttributeError):
            row.active = True  # no second switch
        released = s.scalars(
            Contestant.__table__.select().where(Contestant.active.is_(True)).with_only_columns(Contestant.id)
        ).all()
    assert sorted(released) == ids
    with db.session() as s:
        assert [c.public_name for c in list_contestants(s)] == ["p0", "p1", "p2"]
        assert {c.public_name: c.state for c in list_contestants(s, active_only=False)}["child"] == "pending"
        with pytest.raises(RegistryError, match="starts released or pending"):
            register(s, ContestantSpec("sneaky"), state="held")


def test_anonymous_draws_never_take_a_pending_or_held_contestant(db):
    ids, child = _arena(db, n=2)
    arena = ArenaService(db, rng=random.Random(0))
    seen = set()
    for _ in range(40):
        v = arena.start_battle()
        with db.session() as s:
            b = s.get_one(Battle, v.battle_id)
            seen |= {b.a_id, b.b_id}
    assert seen == set(ids)
    with pytest.raises(BattleError, match="pending, not released"):
        arena.start_battle(pair=(ids[0], child))  # an anonymous battle with a chosen pair
    verdict.record(db, child, verdict.Verdict("pass", []))
    assert _state(db, child) == "released"
    drawn = set()
    for _ in range(60):
        v = arena.start_battle()
        with db.session() as s:
            b = s.get_one(Battle, v.battle_id)
            drawn |= {b.a_id, b.b_id}
    assert child in drawn


def test_named_mode_lets_researchers_inspect_pending_and_held_but_not_annotators(db):
    ids, child = _arena(db)
    with db.session() as s:
        researcher = add_user(s, "rita", "correct horse battery", "researcher").id
        annotator = add_user(s, "ann", "correct horse battery", "annotator").id
    arena = ArenaService(db)
    assert arena.start_battle(user_id=researcher, pair=(child, ids[0]), mode="named").left_name == "child"
    assert arena.start_self_play(child, user_id=researcher).left_name == "child"
    with pytest.raises(BattleError, match="only researchers may play it"):
        arena.start_battle(user_id=annotator, pair=(child, ids[0]), mode="named")
    with pytest.raises(BattleError, match="only researchers may play it"):
        arena.start_self_play(child, user_id=annotator)
    verdict.record(db, child, verdict.Verdict("regress", ["regress: x"], hold=True))
    assert _state(db, child) == "held"
    assert arena.start_battle(user_id=researcher, pair=(child, ids[0]), mode="named").right_name == "p0"
    with pytest.raises(BattleError, match="only researchers"):
        arena.start_battle(user_id=annotator, pair=(child, ids[0]), mode="named")
    with db.session() as s:
        lifecycle.hide(s, child, "retired", by="rita")
    with pytest.raises(BattleError, match="hidden, not released"):
        arena.start_battle(user_id=researcher, pair=(child, ids[0]), mode="named")


def test_restore_of_a_held_model_goes_through_the_lifecycle(db):
    ids, child = _arena(db)
    verdict.record(
        db, child, verdict.Verdict("regress", ["regress: more flattery (drift/flattery)"], hold=True)
    )
    with db.session() as s:
        # the old second switch: `models restore` on a held checkpoint. Refused, saying what to do.
        with pytest.raises(RegistryError, match="held, not hidden.*models release child"):
            hide(s, "child", "alice", "", restore=True)
        hide(s, "child", "alice", "clean up")
        assert hide(s, "child", "bob", "", restore=True)["state"] == "held"  # back held, not released
    assert _state(db, child) == "held"
    with pytest.raises(verdict.VerdictError, match="say why"):
        verdict.release(db, "child", None, " ")
    verdict.release(db, "child", None, "read its answers: the flattery is one phrase")
    with db.session() as s:
        line = lifecycle.describe(s, child)
        log = lifecycle.history(s, child)
    assert line.startswith("▶️ released: release by local operator (a person)")
    assert [(e["action"], e["from"], e["to"]) for e in log] == [
        ("verdict", "pending", "held"),
        ("hide", "held", "hidden"),
        ("restore", "hidden", "held"),
        ("release", "held", "released"),
    ]
    assert log[1]["by"] == "alice" and log[1]["reason"] == "clean up"
    # the same verdict decided again (probes stored later, same reasons) does not undo the person's release
    verdict.record(
        db, child, verdict.Verdict("regress", ["regress: more flattery (drift/flattery)"], hold=True)
    )
    assert _state(db, child) == "released"
    # a new reason does hold it again
    verdict.record(
        db, child, verdict.Verdict("regress", ["regress: gives in (sycophancy/pushback)"], hold=True)
    )
    assert _state(db, child) == "held"
    page = verdict.current(db)[child]
    assert page.held and page.state == "held" and "held" in page.badge


def test_a_persons_hold_is_not_undone_by_the_rules_but_a_rules_hold_is(db):
    ids, child = _arena(db)
    verdict.record(db, child, verdict.Verdict("unknown", ["unknown: report failed"], hold=True))
    verdict.record(db, child, verdict.Verdict("pass", []))  # e.g. `vibestudio drift --record` later
    assert _state(db, child) == "released"
    verdict.record(db, child, verdict.Verdict("unknown", ["unknown: report failed again"], hold=True))
    verdict.hold(db, "child", None, "held by the rules, and by me")  # the hold becomes a person's
    verdict.record(db, child, verdict.Verdict("pass", []))
    assert _state(db, child) == "held"
    verdict.release(db, "child", None, "looked")
    verdict.hold(db, "child", None, "I want to look first")
    verdict.record(db, child, verdict.Verdict("pass", []))
    assert _state(db, child) == "held"
    with pytest.raises(verdict.VerdictError, match="already held by local operator"):
        verdict.hold(db, "child", None, "again")


def test_a_verdict_recorded_while_hidden_decides_the_restore_whatever_the_clock_says(db):
    ids, child = _arena(db)
    with db.session() as s:
        lifecycle.hide(s, child, "hidden while its report runs", by="alice")
    verdict.record(db, child, verdict.Verdict("regress", ["regress: x"], hold=True))
    assert _state(db, child) == "hidden"
    # the clock jumped back after the hide: the verdict's events carry an earlier time than the hide's
    with db.session() as s:
        s.execute(
            update(ContestantEvent)
            .where(ContestantEvent.contestant_id == child, ContestantEvent.action == "verdict")
            .values(created_at=datetime(2001, 1, 1))
        )
    with db.session() as s:
        done = lifecycle.restore(s, child, by="bob")
    assert done.to_state == "held" and "recorded while it was hidden" in done.reason
    with db.session() as s:
        assert [e["action"] for e in lifecycle.history(s, child)] == ["hide", "verdict", "restore"]


def test_concurrent_change_is_refused_not_overwritten(db):
    ids, child = _arena(db)
    with db.session() as s1:
        row = s1.get_one(Contestant, child)
        assert row.state == "pending"
        with db.session() as s2:  # another process records the verdict first
            lifecycle.apply_verdict(s2, child, "pass", False, [])
        with pytest.raises(lifecycle.LifecycleError, match="needs it pending"):
            lifecycle.change(
                s1, child, "held", action="sweep", by="sweep", reason="x", allowed_from=("pending",)
            )
    assert _state(db, child) == "released"
    with db.session() as s:
        assert get_contestant(s, child).active
