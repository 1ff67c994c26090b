"""Objectives side by side (#40): one freeze of the votes for every objective, matched budgets, all-or-nothing
launch with refusals by objective and field, owner-only reads, and "can't tell" unless intervals are apart; a slow
test trains KTO (on a pair snapshot) and SimPO (reference-free) on the tiny model and compares the children."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import func, select

from tests.helpers.postgres import ONE_KIND
from tests.helpers.training import add_votes
from vibestudio.accounts import PermissionDenied, add_user
from vibestudio.annotation.snapshots import get_snapshot
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.models import Comparison, Job
from vibestudio.training.compare import (
    Measured,
    _apart,
    calls,
    comparison,
    launch_comparison,
    list_comparisons,
    markdown,
)
from vibestudio.training.jobs import runner
from vibestudio.training.jobs.errors import JobError

VOTES = ["a", "b", "both_good", "a", "both_bad", "b", "a", "tie", "b", "both_good"]


@pytest.fixture
def queued_only(monkeypatch):
    """Jobs stay queued: nothing is started in this process's tests."""
    monkeypatch.setattr(runner, "start_next", lambda db: None)


@pytest.fixture
def voted(db, tiny_parent):
    with db.session() as s:
        other = register(s, ContestantSpec("other-model"))
    add_votes(db, tiny_parent, other, VOTES)
    return tiny_parent


def _jobs(db) -> dict[str, Job]:
    with db.session() as s:
        return {j.kind: j for j in s.scalars(select(Job))}


def test_one_freeze_of_the_votes_matched_budgets_and_a_view(db, voted, queued_only):
    cid = launch_comparison(db, "tiny-parent", "dpo,kto,simpo", max_steps=3, per_device_train_batch_size=2)
    jobs = _jobs(db)
    assert set(jobs) == {"dpo", "kto", "simpo"}
    assert {k: j.config["max_steps"] for k, j in jobs.items()} == {"dpo": 3, "kto": 3, "simpo": 3}
    # the same answers per step: a pair row holds two answers, so KTO's batch of single answers is twice as big
    batch = {k: j.config["per_device_train_batch_size"] for k, j in jobs.items()}
    assert batch == {"dpo": 2, "kto": 4, "simpo": 2}
    assert jobs["dpo"].config["snapshot_hash"] == jobs["simpo"].config["snapshot_hash"]
    with db.session() as s:
        pairs = get_snapshot(s, jobs["dpo"].config["snapshot_hash"])
        single = get_snapshot(s, jobs["kto"].config["snapshot_hash"])
        assert single.filter["layout"] == "unpaired" and "layout" not in pairs.filter
        # the same votes, read once: KTO keeps both-good and both-bad, the pairs take the decisive votes
        assert pairs.filter["objectives"] == single.filter["objectives"]
        assert pairs.n_pairs == 6 and single.n_pairs == 18  # 9 votes label both answers; the plain tie none
    view = comparison(db, cid)
    assert [c.objective for c in view.children] == ["dpo", "kto", "simpo"]
    assert view.children[1].rows == "10 desirable + 8 undesirable answers from 9 votes"
    assert view.children[0].rows == "6 pairs"
    assert view.budget == {"max_steps": 3, "answers_per_step": 4, "lora": True, "seed": 42}
    assert all(c.status == "queued" and c.verdict_note == "job queued" for c in view.children)
    assert all(c.winner is None and c.text.startswith("can't tell") for c in view.calls)
    text = markdown(view)
    assert "can't tell" in text and "10 desirable + 8 undesirable" in text
    assert [c.id for c in list_comparisons(db)] == [cid]


def _counts(db) -> tuple[int, int]:
    with db.session() as s:
        return s.scalar(select(func.count(Job.id))) or 0, s.scalar(select(func.count(Comparison.id))) or 0


@pytest.mark.parametrize(
    ("objectives", "extra", "match"),
    [
        ("dpo", {}, "at least two"),
        ("dpo,dpo", {}, "each objective once"),
        ("dpo,ppo", {}, "ppo unknown"),
        (
            "dpo,kto",
            {"per_objective": {"kto": {"score_criterion": "helpfulness", "desirable_threshold": 9}}},
            "kto.desirable_threshold",
        ),
        ("dpo,orpo", {"per_objective": {"simpo": {"beta": 1.0}}}, "simpo not among"),
        ("dpo,orpo", {"max_steps": 0}, r"dpo\.max_steps|max_steps"),
    ],
)
def test_a_refusal_names_the_objective_and_launches_nothing(db, voted, queued_only, objectives, extra, match):
    with pytest.raises(JobError, match=match):
        launch_comparison(db, "tiny-parent", objectives, **extra)
    assert _counts(db) == (0, 0)


def test_too_few_pairs_refuses_with_the_counts(db, tiny_parent, queued_only):
    with db.session() as s:
        other = register(s, ContestantSpec("other-model"))
    add_votes(db, tiny_parent, other, ["both_good", "both_bad", "a"])
    with pytest.raises(JobError, match=r"only 1 preference pair\(s\) from 3 vote\(s\)"):
        launch_comparison(db, "tiny-parent", "dpo,kto")
    assert _counts(db) == (0, 0)


def test_another_researcher_cannot_read_it(db, voted, queued_only):
    rita = add_user(db, "rita", "a long test password", "researcher").id
    rex = add_user(db, "rex", "a long test password", "researcher").id
    cid = launch_comparison(db, "tiny-parent", ["dpo", "orpo"], created_by=rita)
    assert [c.id for c in list_comparisons(db, user_id=rex)] == []
    with pytest.raises(PermissionDenied):
        comparison(db, cid, user_id=rex)
    assert len(comparison(db, cid, user_id=rita).children) == 2


_interval = st.tuples(
    st.floats(-5, 5, allow_nan=False), st.floats(0, 3, allow_nan=False), st.floats(0, 3, allow_nan=False)
)


@given(st.lists(_interval, min_size=2, max_size=4), st.sampled_from(["higher", "lower", "closer to 0"]))
def test_a_winner_only_when_its_interval_is_apart(intervals, better):
    items = [(f"o{i}", Measured(v, v - lo, v + hi, 10)) for i, (v, lo, hi) in enumerate(intervals)]
    winner = _apart(items, better)
    if winner is None:
        return
    w = dict(items)[winner]
    for name, m in items:
        if name == winner:
            continue
        assert m.high < w.low or m.low > w.high, "a winner's interval overlaps another's"
        if better == "higher":
            assert w.low > m.high
        elif better == "lower":
            assert w.high < m.low
        else:
            assert max(abs(w.low), abs(w.high)) < min(abs(m.low), abs(m.high)) or m.low > 0 or m.high < 0


def test_overlapping_intervals_read_cant_tell_and_apart_ones_name_the_objective():
    from vibestudio.training.compare import Child

    a = Child("dpo", "DPO", 1, "succeeded", "")
    b = Child("kto", "KTO", 2, "succeeded", "")
    a.evals, b.evals = Measured(0.10, 0.05, 0.15, 50), Measured(0.12, 0.06, 0.18, 50)
    a.kl, b.kl = Measured(2.0, 1.5, 2.5, 8), Measured(0.4, 0.2, 0.6, 8)
    got = {c.measure: c for c in calls([a, b])}
    assert got["eval accuracy change"].winner is None and "overlap" in got["eval accuracy change"].text
    assert got["KL to the parent"].winner == "kto"
    b.kl = None
    assert calls([a, b])[1].text.startswith("can't tell: measured for 1 of 2")


STEPS = {"max_steps": 2, "learning_rate": 5e-3, "drift_prompts": 0, "eval_items": 0, "kl_max_new_tokens": 8}


@pytest.mark.slow  # two real jobs on the tiny model, each with its (small) report: about a minute on a CPU
@pytest.mark.parametrize("db", ONE_KIND, indirect=True)
def test_two_objectives_train_publish_and_compare(db, tiny_parent, make_snapshot):
    snap = make_snapshot(8)
    cid = launch_comparison(db, "tiny-parent", "kto,simpo", snap, per_device_train_batch_size=2, **STEPS)
    deadline = time.monotonic() + 600
    view = comparison(db, cid)
    while not view.done and time.monotonic() < deadline:
        runner.fail_lost(db)
        time.sleep(2)
        view = comparison(db, cid)
    assert view.done, [(c.objective, c.status, c.state) for c in view.children]
    for c in view.children:
        assert c.status == "succeeded", (c.objective, c.error)
        assert c.contestant == f"tiny-parent-{c.objective}-j{c.job_id}" and c.verdict, c
        assert c.steps == 2 and c.train_seconds and c.peak_memory_gib
        # KL to the parent on held-out prompts, for the reference-free SimPO too (LoRA off = the parent)
        assert c.kl is not None and c.kl.n == 8 and c.kl.low <= c.kl.value <= c.kl.high, (
            c.objective,
            c.kl_note,
        )
    assert view.snapshots == {"pairs": snap}
    assert {c.measure for c in view.calls} >= {"eval accuracy change", "KL to the parent"}
    assert "| SimPO |" in markdown(view)
