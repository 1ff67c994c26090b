"""Words that agree with what happened: a job config's ``learning_rate: 1e-9`` (a string to YAML 1.1) is a
number, the model page names a snapshot's sources and a default learning rate, a state line says who published,
a child trained on a task set says so, and a cancel during a report holds the child with the reason at once."""

from __future__ import annotations

import pytest
import yaml

from tests.helpers.training import pair_rows
from vibestudio.annotation.snapshots import write_snapshot
from vibestudio.arena import lifecycle
from vibestudio.arena.registry import ContestantSpec, get_contestant, register
from vibestudio.db.models import Job
from vibestudio.training.jobs import runner
from vibestudio.training.jobs.config import ConfigError, config_from_dict
from vibestudio.training.publishing.publish import Target, _publish, trained_on
from vibestudio.training.report.model_page import family
from vibestudio.training.report.text import lineage_md


@pytest.mark.parametrize("text,value", [("1e-9", 1e-9), ("5E-7", 5e-7), ("+2e-5", 2e-5)])
def test_an_exponent_learning_rate_is_a_number(text, value):
    data = yaml.safe_load(f"kind: dpo\nparent_contestant: p\nlearning_rate: {text}\n")
    assert isinstance(data["learning_rate"], str)  # what YAML 1.1 gives: the reason for the fix
    assert config_from_dict(data).learning_rate == value


@pytest.mark.parametrize("text", ["1e-9x", "inf", "nan", "1e", "e-9", "1.0.0e-3", "fast"])
def test_a_string_that_is_not_a_number_is_still_refused(text):
    with pytest.raises(ConfigError, match="learning_rate"):
        config_from_dict({"kind": "dpo", "parent_contestant": "p", "learning_rate": text})


def _child(db, tmp_path, config=None, queue_report=False):
    with db.session() as s:
        pid = register(s, ContestantSpec("p0"))
        job = Job(kind="dpo", config=config or {}, status="running")
        s.add(job)
        s.flush()
        parent, jid = get_contestant(s, pid), job.id
    t = Target(jid, "dpo", tmp_path, 3, "kid", "a child", parent, "base", True, None, True, config or {})
    return jid, _publish(db, t, contestant=True, queue_report=queue_report)


def test_the_state_line_says_published_not_publish_by_publish(db, tmp_path):
    _, p = _child(db, tmp_path)
    with db.session() as s:
        line = lifecycle.describe(s, p.contestant_id)
    assert "publish by publish" not in line and ": published, " in line


def test_a_cancel_during_the_report_holds_the_child_at_once_with_the_reason(db, tmp_path):
    jid, p = _child(db, tmp_path)  # end of job: the worker runs the report now
    with db.session() as s:
        assert lifecycle.state_of(s, p.contestant_id) == "pending"
    runner.cancel(db, jid)
    with db.session() as s:  # no reconcile, no `jobs list`: the cancel itself held it
        assert lifecycle.state_of(s, p.contestant_id) == "held"
        last = lifecycle.last_change(s, p.contestant_id)
    assert f"job {jid} is cancelled" in last["reason"] and "--record" in last["reason"]
    assert last["by"] == "cancel"


def test_a_cancelled_mid_run_report_job_holds_its_child(db, tmp_path):
    _, p = _child(db, tmp_path, {"drift_prompts": 20}, queue_report=True)
    runner.cancel(db, p.report_job)
    with db.session() as s:
        assert lifecycle.state_of(s, p.contestant_id) == "held"


def test_a_child_hidden_while_pending_whose_report_ended_comes_back_held(db, tmp_path):
    jid, p = _child(db, tmp_path)
    with db.session() as s:
        lifecycle.hide(s, p.contestant_id, "not now")
    runner.cancel(db, jid)
    with db.session() as s:
        assert lifecycle.restore(s, p.contestant_id).to_state == "held"


def test_the_lineage_names_sources_and_a_default_learning_rate(db, tmp_path):
    with db.session() as s:
        snap = write_snapshot(s, pair_rows(4), {"source": "test"}).hash
    with db.session() as s:
        pid = register(s, ContestantSpec("p0"))
        job = Job(kind="dpo", config={"learning_rate": None, "beta": 0.1}, status="succeeded")
        s.add(job)
        s.flush()
        cid = register(s, ContestantSpec("kid", parent_id=pid, job_id=job.id, snapshot_hash=snap))
        info = get_contestant(s, cid)
    page = {"contestant": info.as_dict(), "family": family(db, info)}
    md = lineage_md(page)
    assert "test 4" in md and "sources unknown" not in md
    assert "learning_rate=the kind's default" in md and "None" not in md


def test_a_task_set_child_says_its_task_set():
    assert trained_on("arith", "") == "task set arith"
    assert trained_on("", "ab" * 32, 10) == "snapshot abababababab (10 pairs)"
