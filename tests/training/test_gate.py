"""The gate is before play: a published checkpoint is pending while its report runs, and the arena keeps drawing
anonymous battles without it until its verdict is recorded; a regress never plays anonymously. Bad input: a
report that crashes, a parent whose model disappears mid-report, a worker killed between publish and verdict,
two publishes of one checkpoint, a skipped report, and a rules file that lets unknown verdicts play."""

from __future__ import annotations

import random
import subprocess
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from vibestudio.arena.battles import ArenaService
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.models import Battle, Contestant, ContestantEvent, Job
from vibestudio.training.jobs import runner
from vibestudio.training.jobs.config import make_config
from vibestudio.training.jobs.heartbeat import this_host
from vibestudio.training.jobs.metrics import MetricWriter
from vibestudio.training.jobs.pending import hold_orphans
from vibestudio.training.jobs.preflight import preflight
from vibestudio.training.objectives.context import JobContext, TrainResult
from vibestudio.training.publishing.publish import publish
from vibestudio.training.report import steps
from vibestudio.training.report.job import ReportOptions, run_report

PASS = {"evals/accuracy": {"parent": 0.5, "child": 0.5, "delta": 0.0, "q": 1.0, "p": 1.0},
        "drift/flattery": {"parent": 0.1, "child": 0.1, "delta": 0.0, "q": 1.0, "p": 1.0}}  # fmt: skip
REGRESS = {**PASS, "evals/accuracy": {"parent": 0.6, "child": 0.2, "delta": -0.4, "q": 0.001, "p": 0.001}}


def _publish(db, tiny_parent, make_snapshot, tmp_path: Path, name="tiny-child", status="running", pid=None):
    cfg = make_config(
        "dpo", parent_contestant="tiny-parent", snapshot_hash=make_snapshot(4), output_name=name
    )
    with db.session() as s:
        checked = preflight(s, cfg)
        # a pid is this process's runner's: the job records this process's identity (training.jobs.heartbeat.this_host)
        job = Job(kind="dpo", config=cfg.to_dict(), status=status, pid=pid, host=this_host() if pid else None)
        s.add(job)
        s.flush()
        job_id = job.id
    ctx = JobContext(job_id, cfg, checked, tmp_path, MetricWriter(db, job_id))
    result = TrainResult(tmp_path / "output", True, 3, 1.0, time.perf_counter())
    return ctx, result, publish(db, ctx, result)


def _scripted(measures, started: threading.Event, go: threading.Event):
    """A checkpoint report that takes as long as the test wants and ends with the given measures."""

    def report(db, contestant, **kw):
        started.set()
        assert go.wait(30)
        with db.session() as s:
            child = s.get_one(Contestant, contestant)
            parent = s.get_one(Contestant, child.parent_id)
        r = steps.CheckpointReport(child.id, child.public_name, parent.id, parent.public_name, n_prompts=20)
        r.measures = dict(measures)
        r.verdict = steps._decide(r, kw.get("rules_path")).to_dict()
        return r

    return report


def _others(db, n=3):
    with db.session() as s:
        return [register(s, ContestantSpec(f"persona-{i}")) for i in range(n)]


def _draw(arena, db, n):
    drawn = []
    for _ in range(n):
        v = arena.start_battle()
        with db.session() as s:
            b = s.get_one(Battle, v.battle_id)
            drawn += [b.a_id, b.b_id]
    return drawn


def _state(db, cid):
    with db.session() as s:
        return s.get_one(Contestant, cid).state


@pytest.mark.parametrize("measures, final", [(PASS, "released"), (REGRESS, "held")])
def test_never_drawn_before_its_verdict_and_a_regress_never_plays(
    db, tiny_parent, make_snapshot, tmp_path, monkeypatch, measures, final
):
    _others(db)
    ctx, result, pub = _publish(db, tiny_parent, make_snapshot, tmp_path)
    child = pub.contestant_id
    assert pub.state == "pending" and pub.needs_report
    with db.session() as s:
        row = s.get_one(Contestant, child)
        parent = s.get_one(Contestant, tiny_parent)
        # the one publish path inherits the parent's persona and sampling
        assert (row.persona["system_prompt"], row.sampling) == (
            parent.persona["system_prompt"],
            parent.sampling,
        )
    started, go = threading.Event(), threading.Event()
    monkeypatch.setattr(steps, "drift_report", _scripted(measures, started, go))
    states: list[str] = []
    worker = threading.Thread(
        target=lambda: states.append(run_report(db, child, ReportOptions(drift_prompts=20)))
    )
    worker.start()
    assert started.wait(30)
    # eligible, the child would be in 4 of the 10 pairs: 60 draws would all miss it with probability 0.6^60
    arena = ArenaService(db, rng=random.Random(1))
    during = _draw(arena, db, 60)
    assert child not in during and _state(db, child) == "pending"
    go.set()
    worker.join(30)
    assert states == [final] and _state(db, child) == final
    after = _draw(arena, db, 60)
    assert (child in after) is (final == "released"), (final, after.count(child))
    with db.session() as s:
        events = s.scalars(select(ContestantEvent).where(ContestantEvent.contestant_id == child)).all()
        first_with_child = s.scalar(
            select(Battle.id)
            .where((Battle.a_id == child) | (Battle.b_id == child))
            .order_by(Battle.id)
            .limit(1)
        )
        verdict_at = next(e for e in events if e.action == "verdict")
    assert [(e.action, e.to_state) for e in events] == [("publish", "pending"), ("verdict", final)]
    if final == "released":  # the first battle that drew it came after the verdict row
        with db.session() as s:
            assert s.get_one(Battle, first_with_child).created_at >= verdict_at.created_at


def test_a_report_that_crashes_holds_it_with_the_reason(
    db, tiny_parent, make_snapshot, tmp_path, monkeypatch
):
    *_, pub = _publish(db, tiny_parent, make_snapshot, tmp_path)

    def crash(*a, **kw):
        raise RuntimeError("out of memory in the middle of the report")

    monkeypatch.setattr(steps, "drift_report", crash)
    assert run_report(db, pub.contestant_id, ReportOptions(drift_prompts=20)) == "held"
    with db.session() as s:
        last = s.scalars(select(ContestantEvent).order_by(ContestantEvent.id.desc())).first()
    assert last.action == "verdict" and "report failed" in last.reason and "out of memory" in last.reason


def test_a_parent_whose_model_vanishes_mid_report_leaves_it_held(
    db, tiny_model_dir, make_snapshot, tmp_path, monkeypatch
):
    import shutil

    copy = tmp_path / "parent-model"
    shutil.copytree(tiny_model_dir, copy)
    with db.session() as s:
        register(s, ContestantSpec("tiny-parent", engine="transformers", model_ref=str(copy),
                                   sampling={"max_tokens": 8}))  # fmt: skip
    *_, pub = _publish(db, None, make_snapshot, tmp_path)
    real = steps.drift_report

    def vanish_then_report(db_, contestant, **kw):
        shutil.rmtree(copy)  # the parent's checkpoint is deleted while the report starts
        return real(db_, contestant, **{**kw, "eval_items": 0})

    monkeypatch.setattr(steps, "drift_report", vanish_then_report)
    assert run_report(db, pub.contestant_id, ReportOptions(drift_prompts=20, drift_max_tokens=8)) == "held"
    with db.session() as s:
        last = s.scalars(select(ContestantEvent).order_by(ContestantEvent.id.desc())).first()
    assert "verdict unknown" in last.reason and "answers" in last.reason


def test_a_worker_killed_between_publish_and_verdict_is_held_by_the_sweep(
    db, tiny_parent, make_snapshot, tmp_path
):
    dead = subprocess.Popen(["true"])
    dead.wait()
    *_, pub = _publish(db, tiny_parent, make_snapshot, tmp_path, pid=dead.pid)
    assert _state(db, pub.contestant_id) == "pending"
    assert hold_orphans(db) == []  # its job still reads running: the report may be coming
    runner.reconcile(db, start=False)  # the worker is gone: the job fails, the sweep holds the checkpoint
    with db.session() as s:
        job = s.get_one(Job, s.get_one(Contestant, pub.contestant_id).job_id)
        last = s.scalars(select(ContestantEvent).order_by(ContestantEvent.id.desc())).first()
    assert job.status == "failed" and _state(db, pub.contestant_id) == "held"
    assert last.action == "sweep" and f"job {job.id} is failed" in last.reason and "--record" in last.reason
    assert hold_orphans(db) == []  # nothing else to do, and it never releases
    assert _state(db, pub.contestant_id) == "held"


def test_two_publishes_of_one_checkpoint_are_one_contestant(
    db, tiny_parent, make_snapshot, tmp_path, monkeypatch
):
    ctx, result, first = _publish(db, tiny_parent, make_snapshot, tmp_path)
    again = publish(db, ctx, result)  # the resumed worker publishing its final checkpoint again
    assert (again.contestant_id, again.checkpoint_id) == (first.contestant_id, first.checkpoint_id)
    assert again.already and again.needs_report  # still pending: it reruns the missing report
    monkeypatch.setattr(steps, "drift_report", _scripted(PASS, threading.Event(), _set(threading.Event())))
    assert run_report(db, first.contestant_id, ReportOptions(drift_prompts=20)) == "released"
    third = publish(db, ctx, result)
    assert third.already and not third.needs_report and third.state == "released"
    with db.session() as s:
        n = len(s.scalars(select(Contestant.id).where(Contestant.public_name == "tiny-child")).all())
        pubs = s.scalars(select(ContestantEvent.action).where(ContestantEvent.action == "publish")).all()
    assert n == 1 and len(pubs) == 2  # the first publish and the retried one; the third changed nothing


def _set(event: threading.Event) -> threading.Event:
    event.set()
    return event


def test_a_skipped_report_holds_by_default_and_a_rule_can_let_it_play(
    db, tiny_parent, make_snapshot, tmp_path
):
    *_, pub = _publish(db, tiny_parent, make_snapshot, tmp_path)
    assert run_report(db, pub.contestant_id, ReportOptions(drift_prompts=0)) == "held"
    rules = tmp_path / "lenient.yaml"
    rules.write_text(
        "version: 2\nrules: []\nhold:\n  verdicts: [regress]\n  skipped_report: false\n", encoding="utf-8"
    )
    *_, other = _publish(db, tiny_parent, make_snapshot, tmp_path / "b", name="tiny-child-2")
    assert (
        run_report(db, other.contestant_id, ReportOptions(drift_prompts=0, verdict_rules=str(rules)))
        == "released"
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules: []\nhold:\n  verdicts: [maybe]\n", encoding="utf-8")
    *_, third = _publish(db, tiny_parent, make_snapshot, tmp_path / "c", name="tiny-child-3")
    assert (
        run_report(db, third.contestant_id, ReportOptions(drift_prompts=20, verdict_rules=str(bad))) == "held"
    )
