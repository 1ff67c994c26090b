"""A held child is released only by a report that measured at least what the reports that held it measured
(``training.report.verdict.shortfall``), and every verdict names who ran it. Reports are written as saved report
files (no model runs): a verdict is recorded the way ``vibestudio drift --record`` records it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from vibestudio.accounts import add_user
from vibestudio.arena import lifecycle
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.models import Contestant
from vibestudio.db.session import Database
from vibestudio.training.report import verdict
from vibestudio.training.report.steps import CheckpointReport

MEASURES = ("drift/flattery", "drift/tokens", "evals/accuracy")
REGRESS = verdict.Verdict("regress", ["regress: more flattery (drift/flattery)"], hold=True)
PASS = verdict.Verdict("pass", [])


def _child(db: Database, name: str = "child") -> int:
    with db.session() as s:
        parent = register(s, ContestantSpec(f"{name}-parent"))
        return register(s, ContestantSpec(name, parent_id=parent), state="pending")


def _state(db: Database, cid: int) -> str:
    with db.session() as s:
        return s.get_one(Contestant, cid).state


def _report(
    tmp_path: Path, prompts: int, items: int, measures: tuple[str, ...] = MEASURES, name: str = "r"
) -> str:
    """A saved report file of this size (what ``save_report`` writes; only its size matters here)."""
    report = CheckpointReport(2, "child", 1, "child-parent", n_prompts=prompts).to_dict()
    report["evals"] = {"n": items} if items else {}
    report["measures"] = {m: {"delta": 0.0, "p": 1.0, "n": prompts} for m in measures}
    path = tmp_path / f"{name}-{prompts}-{items}-{len(measures)}.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    return str(path)


def test_a_later_smaller_report_does_not_release_a_child_a_larger_one_held(db, tmp_path):
    child = _child(db)
    verdict.record(db, child, REGRESS, _report(tmp_path, 200, 100))
    assert _state(db, child) == "held"
    verdict.record(db, child, PASS, _report(tmp_path, 20, 10))  # the hole: fewer prompts and items
    assert _state(db, child) == "held"


def test_a_smaller_report_is_told_why_it_keeps_the_hold_and_how_to_go_on(db, tmp_path):
    child = _child(db)
    verdict.record(db, child, REGRESS, _report(tmp_path, 200, 100))
    done = verdict.record_verdict(db, child, PASS, _report(tmp_path, 20, 100))
    assert done.state == "held" and done.kept_held is not None
    note = done.kept_held
    assert "20 prompts, 100 eval items" in note and "200 prompts, 100 eval items" in note
    assert "at least 200 prompts" in note and "--prompts 200" in note
    assert "vibestudio models release child --reason" in note
    log = verdict.history(db, "child")
    assert log[-1]["action"] == "verdict" and "kept held" in log[-1]["reason"]


def test_a_report_missing_a_measure_the_holding_one_had_does_not_release(db, tmp_path):
    child = _child(db)
    verdict.record(db, child, REGRESS, _report(tmp_path, 50, 10))
    done = verdict.record_verdict(db, child, PASS, _report(tmp_path, 500, 100, MEASURES[:2]))
    assert done.state == "held" and "evals/accuracy" in (done.kept_held or "")


def test_a_report_as_large_releases_and_a_verdict_without_a_report_does_not(db, tmp_path):
    child = _child(db)
    verdict.record(db, child, REGRESS, _report(tmp_path, 200, 100))
    assert verdict.record(db, child, PASS) == "held"  # measured nothing: the Python API has no way round
    done = verdict.record_verdict(db, child, PASS, _report(tmp_path, 200, 100))
    assert done.state == "released" and done.kept_held is None


def test_every_report_in_the_hold_counts_not_only_the_last(db, tmp_path):
    child = _child(db)
    verdict.record(db, child, REGRESS, _report(tmp_path, 300, 50))
    verdict.record(db, child, REGRESS, _report(tmp_path, 40, 120))
    done = verdict.record_verdict(db, child, PASS, _report(tmp_path, 300, 50))
    assert done.state == "held"  # the advice covers both reports, not only the one it fell short of
    assert "50 < 120 eval items" in (done.kept_held or "") and "--prompts 300 --eval-items 120" in (
        done.kept_held or ""
    )
    assert verdict.record(db, child, PASS, _report(tmp_path, 40, 120)) == "held"
    assert verdict.record(db, child, PASS, _report(tmp_path, 300, 120)) == "released"


def test_a_persons_release_ends_the_hold_so_later_reports_start_afresh(db, tmp_path):
    child = _child(db)
    verdict.record(db, child, REGRESS, _report(tmp_path, 500, 100))
    verdict.release(db, "child", None, "read the answers: fine")
    again = verdict.Verdict(
        "regress", ["regress: gives in (sycophancy/pushback)"], hold=True
    )  # not overridden
    verdict.record(db, child, again, _report(tmp_path, 30, 10))
    assert _state(db, child) == "held"
    assert verdict.record(db, child, PASS, _report(tmp_path, 30, 10)) == "released"


def test_a_smaller_pass_while_hidden_does_not_let_a_restore_release_it(db, tmp_path):
    child = _child(db)
    verdict.record(db, child, REGRESS, _report(tmp_path, 200, 100))
    with db.session() as s:
        lifecycle.hide(s, child, "out of the way", by="alice")
    verdict.record(db, child, PASS, _report(tmp_path, 20, 10))
    with db.session() as s:
        assert lifecycle.restore(s, child, by="alice").to_state == "held"


def test_the_history_names_who_ran_each_verdict(db, tmp_path):
    child = _child(db)
    uid = add_user(db, "dana", "pw-dana-123", "researcher").id
    verdict.record(db, child, REGRESS)  # the report job: nobody ran it
    verdict.record(db, child, REGRESS, _report(tmp_path, 10, 0), user_id=uid)
    verdict.record(db, child, PASS, _report(tmp_path, 10, 0), by="local operator")
    by = [h["by"] for h in verdict.history(db, "child") if h["action"] == "verdict"]
    assert by == ["rules", "dana (rules)", "local operator (rules)"]


def test_a_verdict_by_a_user_who_does_not_exist_is_refused(db):
    child = _child(db)
    with pytest.raises(verdict.VerdictError, match="no user with id 999"):
        verdict.record(db, child, PASS, user_id=999)


def test_drift_record_keeps_the_hold_and_says_so(monkeypatch, tmp_path):
    """``vibestudio drift CHILD --record`` with fewer prompts than the report that held it: still held, the
    output says why and how to go on, and the log names the local operator."""
    from vibestudio.studio.cli import app
    from vibestudio.training.report import steps

    db = Database()  # the database the CLI opens (the test's data home)
    db.migrate()
    child = _child(db, "cli-held")
    verdict.record(db, child, REGRESS, _report(tmp_path, 200, 100))

    def small(_db, contestant, **_kw):  # type: ignore[no-untyped-def]
        report = CheckpointReport(child, "cli-held", None, "cli-held-parent", n_prompts=20)
        report.evals = {"n": 10}
        report.measures = {m: {"delta": 0.0, "p": 1.0} for m in MEASURES}
        report.verdict = PASS.to_dict()
        return report

    monkeypatch.setattr(steps, "drift_report", small)
    r = CliRunner().invoke(app, ["drift", "cli-held", "--record", "--json"])
    assert r.exit_code == 0, r.output
    assert "still held" in r.output and "--prompts 200 --eval-items 100" in r.output
    assert _state(db, child) == "held"
    assert verdict.history(db, "cli-held")[-1]["by"] == "local operator (rules)"
    db.dispose()


# ---- the property ------------------------------------------------------------------------------------------
SIZES = st.tuples(st.integers(0, 4), st.integers(0, 4), st.frozensets(st.sampled_from(MEASURES)))
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("report"), SIZES, st.booleans()),  # (size, holds)
        st.tuples(st.just("release"), st.none(), st.none()),
    ),
    max_size=8,
)


# the rule is the store's: the tests above run on both kinds, the property on SQLite
@pytest.mark.parametrize("db", ["sqlite"], indirect=True)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_a_child_is_released_only_by_a_report_as_large_as_every_report_that_held_it(db, tmp_path, steps):
    """Any sequence of recorded reports (sizes, holding or not) and a person's releases: the child plays only
    after a passing report at least as large as each report that held it since it last played, or a person's
    release. The model is checked against the database's state after every step."""
    with db.session() as s:
        n = s.query(Contestant).count()
    child = _child(db, f"c{n}")
    holding: list[tuple[int, int, frozenset[str]]] = []  # the model: the reports that hold it now
    state = "pending"
    for i, (kind, size, holds) in enumerate(steps):
        if kind == "release":
            if state == "held":
                verdict.release(db, f"c{n}", None, "looked")
                state, holding = "released", []
            continue
        assert size is not None
        prompts, items, measures = size
        path = _report(tmp_path, prompts, items, tuple(sorted(measures)), name=f"c{n}-{i}")
        held = verdict.Verdict(
            "regress", [f"regress: step {i}"], hold=True
        )  # a person overrode none of these
        verdict.record(db, child, held if holds else PASS, path)
        if holds:
            holding.append(size)
            state = "held"
        elif state == "pending" or (
            state == "held" and all(prompts >= p and items >= m and measures >= ms for p, m, ms in holding)
        ):
            state, holding = "released", []
        assert _state(db, child) == state, (steps[: i + 1], holding)


def test_the_lifecycle_log_names_who_ran_the_verdict_that_moved_it(db, tmp_path):
    child = _child(db)
    uid = add_user(db, "dana", "pw-dana-123", "researcher").id
    verdict.record(db, child, REGRESS, _report(tmp_path, 30, 10))  # the report job holds it
    verdict.record(db, child, PASS, _report(tmp_path, 30, 10), user_id=uid)  # dana's rerun releases it
    with db.session() as s:
        moves = [(e["to"], e["by"]) for e in lifecycle.history(s, child) if e["action"] == "verdict"]
    assert moves == [("held", "rules"), ("released", "dana (rules)")]
