"""The lifecycle's rules one at a time, through ``arena.lifecycle`` itself: what each change logs (who, why, from,
to, details), the refusals and what they tell the person to do, where a restore sends a hidden contestant, what a
verdict does in each state, and who may play what. Written to kill the mutants ``scripts/mutation_check.py``
found surviving in the lifecycle transitions (``test_lifecycle.py`` checks them through the arena and the
verdict service)."""

from __future__ import annotations

import pytest

from vibestudio.accounts import add_user
from vibestudio.arena import lifecycle
from vibestudio.arena.lifecycle import LifecycleError
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.models import Contestant, ContestantEvent, Job, User, VerdictEvent


def _one(db, state: str = "pending", name: str = "child") -> int:
    with db.session() as s:
        parent = register(s, ContestantSpec(f"{name}-parent"))
        return register(s, ContestantSpec(name, parent_id=parent), state=state)


def _events(db, cid: int) -> list[tuple]:
    with db.session() as s:
        rows = s.query(ContestantEvent).filter_by(contestant_id=cid).order_by(ContestantEvent.id).all()
        return [(e.action, e.from_state, e.to_state, e.by_user, e.reason, e.user_id, e.details) for e in rows]


def _state(db, cid: int) -> str:
    with db.session() as s:
        return s.get_one(Contestant, cid).state


def _user(db, name: str, role: str) -> int:
    with db.session() as s:
        return add_user(s, name, "correct horse battery", role).id


# ---- change ------------------------------------------------------------------------------------------------
def test_a_change_logs_one_event_with_everything_and_returns_it(db):
    cid = _one(db)
    uid = _user(db, "rita", "researcher")
    with db.session() as s:
        done = lifecycle.change(
            s, cid, "held", action="hold", by="rita", reason="look first", user_id=uid, details={"k": 1}
        )
    assert done == lifecycle.Change("child", "hold", "pending", "held", "rita", "look first", {"k": 1})
    assert done.as_dict()["from_state"] == "pending"
    assert _events(db, cid) == [("hold", "pending", "held", "rita", "look first", uid, {"k": 1})]
    assert _state(db, cid) == "held"
    with db.session() as s:  # by name too; no details is an empty mapping
        again = lifecycle.change(s, "child", "released", action="release", by="rita", reason="ok")
    assert again.details == {} and _events(db, cid)[-1][-1] == {}


def test_a_change_to_an_unknown_state_or_from_a_state_not_allowed_is_refused_and_says_why(db):
    cid = _one(db)
    with db.session() as s:
        with pytest.raises(
            LifecycleError, match=r"^unknown state 'gone'; expected one of pending, released, held, hidden$"
        ):
            lifecycle.change(s, cid, "gone", action="hold", by="x", reason="y")
        with pytest.raises(LifecycleError, match=r"^child is pending; restore needs it hidden or held$"):
            lifecycle.change(
                s, cid, "held", action="restore", by="x", reason="y", allowed_from=("hidden", "held")
            )
        with pytest.raises(LifecycleError, match=r"^no contestant 'nobody'$"):
            lifecycle.change(s, "nobody", "held", action="hold", by="x", reason="y")
        with pytest.raises(LifecycleError, match=r"^no contestant 999$"):
            lifecycle.state_of(s, 999)
    assert _events(db, cid) == [] and _state(db, cid) == "pending"


# ---- a person's decisions ----------------------------------------------------------------------------------
def test_who_did_it_is_the_name_given_else_the_users_name_else_the_local_operator(db):
    uid = _user(db, "rita", "researcher")
    a, b, c = _one(db, name="a"), _one(db, name="b"), _one(db, name="c")
    with db.session() as s:
        assert lifecycle.hold(s, a, " why ", user_id=uid, by="  ").by == "rita"
        assert lifecycle.hold(s, b, "why", user_id=uid, by=" bob ").by == "bob"
        assert lifecycle.hold(s, c, "why").by == "local operator"
        assert lifecycle._who(s, 12345, None) == "local operator"  # no such user
    assert _events(db, a)[0][3:6] == ("rita", "why", uid)


def test_every_person_action_needs_a_reason_and_names_itself(db):
    cid = _one(db)
    with db.session() as s:
        for act in (lifecycle.release, lifecycle.hold, lifecycle.hide):
            with pytest.raises(
                LifecycleError, match=rf"^say why \(a reason is logged with the {act.__name__}\)$"
            ):
                act(s, cid, "  ")
    assert _events(db, cid) == []


def test_release_is_refused_for_hidden_and_released_ones_and_keeps_the_reasons_it_overrides(db):
    cid = _one(db)
    with db.session() as s:
        lifecycle.apply_verdict(s, cid, "regress", True, ["ra", "rb"])
    # the verdict a release reads is the one the verdict service logs beside the state change
    with db.session() as s:
        s.add(
            VerdictEvent(contestant_id=cid, action="verdict", verdict="regress", held=True, reason="ra; rb")
        )
    with db.session() as s:
        done = lifecycle.release(s, cid, " read it ", by="rita")
        assert (done.from_state, done.to_state, done.reason, done.by) == (
            "held",
            "released",
            "read it",
            "rita",
        )
        assert done.details == {"overrode": ["ra", "rb"], "verdict": "regress"}
        with pytest.raises(LifecycleError, match=r"^child is already released$"):
            lifecycle.release(s, cid, "again")
        lifecycle.hide(s, cid, "retire")
        with pytest.raises(
            LifecycleError, match=r"^child is hidden: restore it first \(`vibestudio models restore`\)$"
        ):
            lifecycle.release(s, cid, "back")


def test_a_release_with_no_holding_verdict_overrides_nothing(db):
    cid = _one(db)
    with db.session() as s:
        s.add(VerdictEvent(contestant_id=cid, action="verdict", verdict="pass", held=False, reason="fine"))
    with db.session() as s:
        assert lifecycle.release(s, cid, "go").details == {"overrode": [], "verdict": "pass"}
    other = _one(db, name="other")
    with db.session() as s:
        assert lifecycle.release(s, other, "go").details == {"overrode": [], "verdict": None}


def test_hold_refusals_and_a_rules_hold_made_a_persons(db):
    cid = _one(db)
    with db.session() as s:
        lifecycle.apply_verdict(s, cid, "unknown", True, ["report failed"])
        done = lifecycle.hold(s, cid, "mine now", by="rita")  # held by the rules: the hold becomes a person's
        assert (done.action, done.from_state, done.to_state) == ("hold", "held", "held")
        with pytest.raises(LifecycleError, match=r"^child is already held by rita$"):
            lifecycle.hold(s, cid, "again")
        # a person's hold is not undone by a passing verdict
        assert lifecycle.apply_verdict(s, cid, "pass", False, []) is None
        lifecycle.hide(s, cid, "retire")
        with pytest.raises(LifecycleError, match=r"^child is hidden: restore it first$"):
            lifecycle.hold(s, cid, "x")
        with pytest.raises(LifecycleError, match=r"^child is already hidden$"):
            lifecycle.hide(s, cid, "x")
    assert _state(db, cid) == "hidden"


def test_a_held_row_with_no_event_into_the_hold_says_already_held(db):
    cid = _one(db)
    with db.session() as s:
        s.query(Contestant).filter_by(id=cid).update({"state": "held"})  # e.g. set by a migration, no event
    with db.session() as s:
        with pytest.raises(LifecycleError, match=r"^child is already held$"):
            lifecycle.hold(s, cid, "x")


def test_hide_works_from_every_other_state(db):
    for state in ("pending", "released"):
        cid = _one(db, state=state, name=f"c-{state}")
        with db.session() as s:
            done = lifecycle.hide(s, cid, "retire", by="rita")
        assert (done.from_state, done.to_state, done.action, done.reason) == (
            state,
            "hidden",
            "hide",
            "retire",
        )


# ---- restore -----------------------------------------------------------------------------------------------
def _hidden_from(db, state: str, name: str = "child") -> int:
    cid = _one(db, name=name)
    with db.session() as s:
        if state == "released":
            lifecycle.apply_verdict(s, cid, "pass", False, [])
        elif state == "held":
            lifecycle.apply_verdict(s, cid, "regress", True, ["regress: x"])
        lifecycle.hide(s, cid, "retire")
    return cid


def test_restore_brings_back_the_state_it_was_hidden_from(db):
    for state in ("released", "held"):
        cid = _hidden_from(db, state, name=f"c-{state}")
        with db.session() as s:
            done = lifecycle.restore(s, cid, by="bob")
        assert (done.from_state, done.to_state, done.action, done.by) == ("hidden", state, "restore", "bob")
        why = (
            "it was released when it was hidden"
            if state == "released"
            else "it was held when it was hidden: a researcher's release lets it play"
        )
        assert done.reason == why and done.details == {"why": why}


def test_restore_keeps_the_persons_reason_when_given(db):
    cid = _hidden_from(db, "released")
    with db.session() as s:
        done = lifecycle.restore(s, cid, "  back in  ")
    assert done.reason == "back in" and done.details == {"why": "it was released when it was hidden"}


def test_a_verdict_recorded_while_hidden_decides_where_a_restore_goes(db):
    holds = _hidden_from(db, "released", name="holds")
    frees = _hidden_from(db, "held", name="frees")
    with db.session() as s:
        logged = lifecycle.apply_verdict(s, holds, "regress", True, ["regress: y"])
        assert logged is not None and (logged.from_state, logged.to_state) == ("hidden", "hidden")
        assert logged.details == {"verdict": "regress", "hold": True}
        assert (logged.reason, logged.by, logged.action) == (
            "verdict regress: regress: y",
            "rules",
            "verdict",
        )
        lifecycle.apply_verdict(s, frees, "pass", False, [])
    with db.session() as s:
        a = lifecycle.restore(s, holds)
        b = lifecycle.restore(s, frees)
    assert (a.to_state, a.reason) == ("held", "the verdict recorded while it was hidden (regress) holds it")
    assert (b.to_state, b.reason) == (
        "released",
        "the verdict recorded while it was hidden (pass) releases it",
    )


def test_a_persons_hold_stands_through_a_passing_verdict_recorded_while_hidden(db):
    cid = _one(db)
    with db.session() as s:
        lifecycle.hold(s, cid, "I hold it", by="rita")
        lifecycle.hide(s, cid, "retire")
        lifecycle.apply_verdict(s, cid, "pass", False, [])
    with db.session() as s:
        done = lifecycle.restore(s, cid)
    assert done.to_state == "held" and "a researcher's release lets it play" in done.reason


def test_a_rules_hold_with_no_verdict_since_the_hide_comes_back_held(db):
    cid = _hidden_from(db, "held")
    with db.session() as s:
        row = s.get_one(Contestant, cid)
        assert lifecycle.restore_target(s, row)[0] == "held"


def test_a_pending_one_comes_back_pending_only_while_its_report_job_runs(db):
    cid = _one(db)
    with db.session() as s:
        job = Job(kind="report", status="running")
        s.add(job)
        s.flush()
        s.query(Contestant).filter_by(id=cid).update({"job_id": job.id})
        job_id = job.id
        lifecycle.hide(s, cid, "retire")
    with db.session() as s:
        row = s.get_one(Contestant, cid)
        assert lifecycle.restore_target(s, row) == ("pending", "its report has not recorded a verdict yet")
        assert lifecycle.report_job(s, cid) == (job_id, "running", None)
        s.get_one(Job, job_id).status = "queued"
        s.flush()
        assert lifecycle.restore_target(s, row)[0] == "pending"
        s.get_one(Job, job_id).status, s.get_one(Job, job_id).error = "failed", "boom"
        s.flush()
        assert lifecycle.report_job(s, cid) == (job_id, "failed", "boom")
        assert lifecycle.restore_target(s, row) == (
            "held",
            f"its report ended without a verdict while it was hidden (job {job_id} is failed): rerun the report",
        )
    orphan = _one(db, name="orphan")
    with db.session() as s:
        lifecycle.hide(s, orphan, "retire")
    with db.session() as s:
        row = s.get_one(Contestant, orphan)
        assert lifecycle.report_job(s, orphan) == (None, None, None)
        assert lifecycle.restore_target(s, row) == (
            "held",
            "its report ended without a verdict while it was hidden (no job runs its report): rerun the report",
        )


def test_the_report_job_named_by_the_newest_publish_event_wins(db):
    cid = _one(db)
    with db.session() as s:
        train, first, second = (Job(kind="dpo", status="succeeded"), Job(kind="report", status="failed"),
                                Job(kind="report", status="queued"))  # fmt: skip
        s.add_all([train, first, second])
        s.flush()
        s.query(Contestant).filter_by(id=cid).update({"job_id": train.id})
        for j in (first, second):
            s.add(ContestantEvent(contestant_id=cid, action="publish", by_user="publish", reason="r",
                                  from_state="pending", to_state="pending", details={"report_job": j.id}))  # fmt: skip
        s.add(
            ContestantEvent(
                contestant_id=cid, action="hold", by_user="x", reason="r", details={"report_job": 0}
            )
        )
        s.flush()
        assert lifecycle.report_job(s, cid) == (second.id, "queued", None)


def test_a_contestant_never_hidden_restores_to_released(db):
    cid = _one(db, state="released")
    with db.session() as s:
        s.query(Contestant).filter_by(id=cid).update({"state": "hidden"})  # hidden before events were logged
    with db.session() as s:
        row = s.get_one(Contestant, cid)
        assert lifecycle.restore_target(s, row) == ("released", "it was released when it was hidden")


def test_restore_refuses_what_is_not_hidden_and_says_what_to_do(db):
    cid = _one(db)
    with db.session() as s:
        with pytest.raises(LifecycleError, match=r"^child is pending, not hidden: nothing to restore$"):
            lifecycle.restore(s, cid)
        lifecycle.apply_verdict(s, cid, "regress", True, ["x"])
        with pytest.raises(
            LifecycleError,
            match=r"^child is held, not hidden: a researcher lets it play with "
            r"`vibestudio models release child --reason \.\.\.` \(logged\)$",
        ):
            lifecycle.restore(s, cid)


# ---- verdicts ----------------------------------------------------------------------------------------------
def test_a_verdict_on_a_pending_one_releases_or_holds_it_by_the_rules(db):
    a, b = _one(db, name="a"), _one(db, name="b")
    with db.session() as s:
        done = lifecycle.apply_verdict(s, a, "pass", False, [])
        held = lifecycle.apply_verdict(s, b, "regress", True, ["r1", "r2"])
    assert _events(db, a) == [
        ("verdict", "pending", "released", "rules", "verdict pass: no rule matched", None, {})
    ]
    assert _events(db, b)[0][:5] == ("verdict", "pending", "held", "rules", "verdict regress: r1; r2")
    assert (done.to_state, done.by, done.action, done.reason) == (
        "released",
        "rules",
        "verdict",
        "verdict pass: no rule matched",
    )
    assert (held.to_state, held.reason) == ("held", "verdict regress: r1; r2")


def test_a_verdict_holds_a_released_one_unless_a_person_released_it_over_exactly_those_reasons(db):
    cid = _one(db)
    with db.session() as s:
        lifecycle.apply_verdict(s, cid, "regress", True, ["r1", "r2"])
        lifecycle.change(s, cid, "released", action="release", by="rita", reason="ok",
                         details={"overrode": ["r1", "r2"]})  # fmt: skip
        assert lifecycle.apply_verdict(s, cid, "regress", True, ["r1", "r2"]) is None
        assert (
            lifecycle.apply_verdict(s, cid, "regress", True, ["r2"]) is None
        )  # fewer reasons: still overridden
        assert lifecycle.apply_verdict(s, cid, "pass", False, []) is None  # released stays released
        done = lifecycle.apply_verdict(s, cid, "regress", True, ["r1", "r3"])
    assert done is not None and (done.from_state, done.to_state) == ("released", "held")
    assert (done.action, done.by, done.reason) == ("verdict", "rules", "verdict regress: r1; r3")
    assert _events(db, cid)[-1][:5] == ("verdict", "released", "held", "rules", "verdict regress: r1; r3")
    other = _one(db, state="released", name="other")  # released by a person at registration: no release event
    with db.session() as s:
        assert lifecycle.apply_verdict(s, other, "regress", True, ["r"]).to_state == "held"


def test_a_passing_verdict_releases_what_the_rules_the_sweep_or_a_migration_held_never_a_person(db):
    for action in ("verdict", "sweep", "migrate"):
        cid = _one(db, name=f"c-{action}")
        with db.session() as s:
            lifecycle.change(s, cid, "held", action=action, by="rules", reason="x")
            assert lifecycle.apply_verdict(s, cid, "regress", True, ["x"]) is None  # held stays held
            done = lifecycle.apply_verdict(s, cid, "pass", False, ["fine"])
        assert done is not None and done.to_state == "released", action
        assert (done.action, done.by, done.reason) == ("verdict", "rules", "verdict pass: fine"), action
        assert _events(db, cid)[-1][:5] == ("verdict", "held", "released", "rules", "verdict pass: fine")
    cid = _one(db, name="c-person")
    with db.session() as s:
        lifecycle.hold(s, cid, "mine")
        assert lifecycle.apply_verdict(s, cid, "pass", False, []) is None
    assert _state(db, cid) == "held"


def test_without_verdict_is_true_only_for_a_sweep_hold(db):
    a, b = _one(db, name="a"), _one(db, name="b")
    with db.session() as s:
        lifecycle.change(s, a, "held", action="sweep", by="sweep", reason="no verdict")
        lifecycle.change(s, b, "held", action="verdict", by="rules", reason="regress")
        assert lifecycle.without_verdict(s, a) and not lifecycle.without_verdict(s, b)


# ---- who may play ------------------------------------------------------------------------------------------
def test_who_may_play_a_contestant_in_each_mode(db):
    rita = _user(db, "rita", "researcher")
    boss = _user(db, "boss", "admin")
    ann = _user(db, "ann", "annotator")
    gone = _user(db, "gone", "researcher")
    with db.session() as s:
        s.query(User).filter_by(id=gone).update({"disabled": True})
    pending, released = _one(db, name="p"), _one(db, state="released", name="r")
    hidden = _hidden_from(db, "held", name="h")
    with db.session() as s:
        for mode in ("anonymous", "named", "self_play"):
            for user in (None, rita, ann):
                assert lifecycle.may_play(s, released, mode, user) is None
        assert lifecycle.may_play(s, 999, "named", None) == "contestant 999 does not exist"
        refused = f"contestant {pending} is pending, not released: it cannot play in a anonymous battle"
        assert lifecycle.may_play(s, pending, "anonymous", rita) == refused
        for mode in ("named", "self_play"):
            for user in (None, rita, boss):
                assert lifecycle.may_play(s, pending, mode, user) is None, (mode, user)
            for user in (ann, gone, 12345):
                assert lifecycle.may_play(s, pending, mode, user) == (
                    f"contestant {pending} is pending (not released): only researchers may play it, in named mode"
                ), (mode, user)
            assert lifecycle.may_play(s, hidden, mode, None) == (
                f"contestant {hidden} is hidden, not released: it cannot play in a {mode} battle"
            )
        assert lifecycle.playable(s, rita) == ["p-parent", "p", "r-parent", "r", "h-parent"]
        assert lifecycle.playable(s, ann) == ["p-parent", "r-parent", "r", "h-parent"]


def test_a_persons_action_logs_the_user_who_took_it(db):
    uid = _user(db, "rita", "researcher")
    cid = _one(db)
    with db.session() as s:
        steps = [
            lifecycle.hold(s, cid, "look", user_id=uid),
            lifecycle.release(s, cid, "fine", user_id=uid),
            lifecycle.hide(s, cid, "retire", user_id=uid),
            lifecycle.restore(s, cid, "back", user_id=uid),
        ]
    assert [c.by for c in steps] == ["rita"] * 4
    assert [e[5] for e in _events(db, cid)] == [uid] * 4
    assert [e[3] for e in _events(db, cid)] == ["rita"] * 4


def test_an_action_racing_another_change_is_refused_not_applied(db, monkeypatch):
    """The state an action reads first can be stale (another process changed it since): the change itself
    re-reads it and refuses, so a hidden contestant is never released or held, nor a restored one restored
    again, on a stale read."""
    from sqlalchemy.orm.attributes import set_committed_value

    real = lifecycle._row
    cases = [
        ("release", "pending", "hidden", "pending or held"),
        ("hold", "pending", "hidden", "pending or released or held"),
        ("restore", "hidden", "held", "hidden"),
    ]
    for action, seen, now, allowed in cases:
        cid = _one(db, name=f"c-{action}")
        with db.session() as s:
            lifecycle.change(s, cid, now, action="sweep", by="sweep", reason="meanwhile")

        def stale(session, ident, seen=seen):  # what this process read before the other one's change
            row = real(session, ident)
            set_committed_value(row, "state", seen)
            return row

        monkeypatch.setattr(lifecycle, "_row", stale)
        with db.session() as s:
            with pytest.raises(LifecycleError, match=rf"^c-{action} is {now}; {action} needs it {allowed}$"):
                getattr(lifecycle, action)(s, cid, "stale")
        monkeypatch.setattr(lifecycle, "_row", real)
        assert _state(db, cid) == now, action


def test_a_user_whose_role_is_unknown_is_not_a_researcher(db):
    odd = _user(db, "odd", "researcher")
    with db.session() as s:
        s.query(User).filter_by(id=odd).update({"role": "guest"})  # e.g. a role a newer version wrote
    cid = _one(db)
    with db.session() as s:
        assert "only researchers may play it" in (lifecycle.may_play(s, cid, "named", odd) or "")


def test_a_verdict_logged_without_details_while_hidden_holds_a_held_one_and_names_no_verdict(db):
    """Verdict events logged before they carried details (an older row): a held contestant stays held, and the
    reason for a released one says the verdict was not named."""
    held, released = _hidden_from(db, "held", name="h"), _hidden_from(db, "released", name="r")
    with db.session() as s:
        for cid in (held, released):
            s.add(ContestantEvent(contestant_id=cid, action="verdict", by_user="rules", reason="old",
                                  from_state="hidden", to_state="hidden", details={}))  # fmt: skip
    with db.session() as s:
        assert lifecycle.restore_target(s, s.get_one(Contestant, held))[0] == "held"
        assert lifecycle.restore_target(s, s.get_one(Contestant, released)) == (
            "released",
            "the verdict recorded while it was hidden (?) releases it",
        )


def test_a_held_one_with_no_event_into_the_hold_comes_back_held(db):
    cid = _one(db)
    with db.session() as s:
        s.query(Contestant).filter_by(id=cid).update({"state": "held"})  # set by a migration, no event
    with db.session() as s:
        lifecycle.hide(s, cid, "retire")
    with db.session() as s:
        assert lifecycle.restore(s, cid).to_state == "held"
