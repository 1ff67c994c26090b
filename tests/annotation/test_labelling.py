"""The labelling service: per-annotator order and layout stored, overlap honoured, verdicts in item terms,
rubric scores validated, skip, progress; the per-queue agreement report on the resulting labels."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import select

from vibestudio.annotation.agreement_report import agreement_report
from vibestudio.annotation.labelling import (
    LabelError,
    answer_cut,
    next_task,
    queue_progress,
    skip_task,
    submit_label,
)
from vibestudio.annotation.queues import NewItem, QueueError, add_item, create_queue, set_checklist
from vibestudio.annotation.rubrics import get_rubric
from vibestudio.db.models import Assignment, Label, RubricScore


def _queue(db, n=4, overlap=2, name="q"):
    with db.session() as s:
        create_queue(s, name, "on_policy", get_rubric(), overlap)
        ids = [
            add_item(
                s,
                name,
                NewItem(
                    [{"role": "user", "content": f"Question {i}?"}],
                    [f"first answer {i}", f"second answer {i}"],
                    [{"model": "secret-model-a", "policy_version": "p@1"}, {"model": "secret-model-b"}],
                ),
            ).id
            for i in range(n)
        ]
    return ids


def _label_all(db, queue, who, choice="left", rng=None):
    done = []
    while True:
        with db.session() as s:
            task = next_task(s, queue, who, rng=rng)
            if task is None:
                return done
            submit_label(s, task.assignment_id, who, choice)
            done.append(task)


def test_task_hides_models_and_maps_left_right_to_item_terms(db):
    _queue(db, n=1, overlap=1)
    with db.session() as s:
        task = next_task(s, "q", "ann", rng=random.Random(3))
        text = repr(task)
    assert "secret-model" not in text and "p@1" not in text
    assert {task.left, task.right} == {"first answer 0", "second answer 0"}
    with db.session() as s:
        submit_label(s, task.assignment_id, "ann", "left", reason="more specific")
        lab = s.scalar(select(Label))
        a = s.scalar(select(Assignment))
    assert lab.outcome == ("1" if task.left == "first answer 0" else "2")
    assert lab.left_is_first == a.left_is_first and lab.reason == "more specific" and a.status == "done"


def test_a_cut_answer_is_marked_on_its_own_side_whatever_the_layout(db):
    """The second answer stopped at its cap: the task marks whichever side it lands on, never the other."""
    with db.session() as s:
        create_queue(s, "cut", "on_policy", get_rubric(), 8)
        add_item(
            s,
            "cut",
            NewItem(
                [{"role": "user", "content": "Tell me a long story."}],
                ["A short, finished answer.", "Once upon a time there was a"],
                [
                    {"model": "m1", "tokens": 7, "sampling": {"max_tokens": 32}, "truncated": False},
                    {"model": "m2", "tokens": 32, "sampling": {"max_tokens": 32}},  # an older stamp: no flag
                ],
            ),
        )
    seen = set()
    for who in [f"ann{i}" for i in range(8)]:
        with db.session() as s:
            task = next_task(s, "cut", who, rng=random.Random(who))
        cut_side = task.right if task.right_cut else task.left
        assert (task.left_cut, task.right_cut) in ((True, False), (False, True))
        assert cut_side == "Once upon a time there was a"
        seen.add(task.left_cut)
    assert seen == {True, False}  # both layouts came up
    assert answer_cut({"truncated": True}) and not answer_cut({"tokens": 5, "sampling": {"max_tokens": 0}})
    assert not answer_cut({}) and not answer_cut({"tokens": "32", "sampling": {"max_tokens": 32}})


def test_order_and_layout_are_random_per_annotator_and_stored(db):
    _queue(db, n=12, overlap=3)
    orders = {}
    for who in ("ann", "bob", "cy"):
        tasks = _label_all(db, "q", who, rng=random.Random(hash(who) % 1000))
        orders[who] = [t.item_id for t in tasks]
        assert len(tasks) == 12
    assert len({tuple(o) for o in orders.values()}) == 3  # three different orders
    with db.session() as s:
        rows = s.scalars(select(Assignment)).all()
        layouts = {(a.annotator, a.item_id): a.left_is_first for a in rows}
        assert {a.position for a in rows if a.annotator == "bob"} == set(range(1, 13))
    assert 0 < sum(layouts.values()) < len(layouts)  # both layouts were used


def test_overlap_limits_how_many_annotators_see_an_item(db):
    _queue(db, n=3, overlap=2)
    assert len(_label_all(db, "q", "a1")) == 3
    assert len(_label_all(db, "q", "a2")) == 3
    assert _label_all(db, "q", "a3") == []
    with db.session() as s:
        p = queue_progress(s, "q")
    assert (p.n_items, p.labels, p.target, p.items_complete, p.fraction) == (3, 6, 6, 3, 1.0)
    assert [(x.annotator, x.done, x.available) for x in p.annotators] == [("a1", 3, 0), ("a2", 3, 0)]


def test_pending_item_comes_back_and_skip_frees_the_slot(db):
    _queue(db, n=2, overlap=1)
    with db.session() as s:
        t1 = next_task(s, "q", "a1")
    with db.session() as s:
        assert next_task(s, "q", "a1").assignment_id == t1.assignment_id  # reload: same item
        other = next_task(s, "q", "a2")
        assert other.item_id != t1.item_id  # a1's pending item holds its only slot
        skip_task(s, t1.assignment_id, "a1")
    with db.session() as s:
        assert next_task(s, "q", "a1") is None  # skipped its item; the other one is held by a2
        p = queue_progress(s, "q")
    with db.session() as s:
        again = next_task(s, "q", "a3")
    assert again is not None and again.item_id == t1.item_id  # skipped by a1: free for a3
    assert {x.annotator: x.skipped for x in p.annotators}["a1"] == 1


def test_rubric_scores_are_validated_and_stored_per_answer(db):
    _queue(db, n=1, overlap=1)
    with db.session() as s:
        task = next_task(s, "q", "ann")
    with pytest.raises(LabelError, match="helpfulness: 9 is not one of 1, 2, 3, 4, 5"), db.session() as s:
        submit_label(s, task.assignment_id, "ann", "tie", {"helpfulness": {"left": 9}})
    with pytest.raises(LabelError, match="no criterion 'charm'"), db.session() as s:
        submit_label(s, task.assignment_id, "ann", "tie", {"charm": {"left": 1}})
    with pytest.raises(LabelError, match="choice 'maybe'"), db.session() as s:
        submit_label(s, task.assignment_id, "ann", "maybe")
    with pytest.raises(LabelError, match="another annotator"), db.session() as s:
        submit_label(s, task.assignment_id, "eve", "tie")
    with db.session() as s:
        submit_label(
            s,
            task.assignment_id,
            "ann",
            "both_good",
            {
                "helpfulness": {"left": 5, "right": "3"},
                "formatting": {"left": "over-formatted", "right": None},
            },
        )
        scores = {(r.criterion, r.side, r.value) for r in s.scalars(select(RubricScore))}
    left, right = ("1", "2") if task.left == "first answer 0" else ("2", "1")
    assert scores == {("helpfulness", left, 5.0), ("helpfulness", right, 3.0), ("formatting", left, 1.0)}
    with pytest.raises(LabelError, match="already labelled"), db.session() as s:
        submit_label(s, task.assignment_id, "ann", "tie")


def test_unknown_queue_and_empty_name(db):
    with pytest.raises(QueueError, match="no queue named 'nope'"), db.session() as s:
        next_task(s, "nope", "ann")
    _queue(db, n=1)
    with pytest.raises(LabelError, match="annotator name"), db.session() as s:
        next_task(s, "q", "  ")


def test_checklist_is_stored_and_shown(db):
    ids = _queue(db, n=1, overlap=1)
    with db.session() as s:
        set_checklist(s, ids[0], ["Names a real place", "", "  Under 100 words "])
        task = next_task(s, "q", "ann")
    assert task.checklist == ["Names a real place", "Under 100 words"]


def test_agreement_report_on_a_labelled_queue(db):
    _queue(db, n=4, overlap=3)
    # annotators label in item terms through their own layouts; make them agree on items 1-3, differ on 4
    verdicts = {"a1": ["1", "1", "2", "tie"], "a2": ["1", "1", "2", "2"], "a3": ["1", "2", "2", "2"]}
    helpful = {"a1": [5, 4, 2, 3], "a2": [5, 4, 2, 2], "a3": [4, 4, 1, 2]}
    for who, outs in verdicts.items():
        while True:
            with db.session() as s:
                task = next_task(s, "q", who)
                if task is None:
                    break
                idx = int(task.prompt[0]["content"].split()[1].rstrip("?"))
                want = outs[idx]
                a = s.get(Assignment, task.assignment_id)
                choice = want if want == "tie" else ("left" if (want == "1") == a.left_is_first else "right")
                first_side = "left" if a.left_is_first else "right"
                submit_label(
                    s, task.assignment_id, who, choice, {"helpfulness": {first_side: helpful[who][idx]}}
                )
    with db.session() as s:
        rep = agreement_report(s, "q")
    assert rep.annotators == ["a1", "a2", "a3"] and rep.n_items == 4 and rep.n_labels == 12
    by_pair = {(p.a, p.b): p for p in rep.pairs}
    assert by_pair[("a1", "a2")].percent == pytest.approx(0.75) and by_pair[("a1", "a2")].n == 4
    from vibestudio.annotation.agreement import krippendorff_alpha

    expected = krippendorff_alpha([verdicts["a1"], verdicts["a2"], verdicts["a3"]])
    assert rep.outcome_alpha == pytest.approx(expected)
    (crit,) = rep.criteria
    assert crit.criterion == "helpfulness" and crit.level == "ordinal" and crit.n_units == 4
    assert crit.alpha == pytest.approx(
        krippendorff_alpha([helpful["a1"], helpful["a2"], helpful["a3"]], "ordinal")
    )
    # leave-one-out majority per item: (1,1,1) (1,1,2) (2,2,2) (tie,2,2)
    # a1: agree, no majority among (1,2), agree, tie vs (2,2) -> 2 of 3; a2: agree, none, agree, none -> 2 of 2
    # a3: agree, 2 vs (1,1), agree, none -> 2 of 3
    assert {m.annotator: (m.agree, m.n) for m in rep.majority} == {"a1": (2, 3), "a2": (2, 2), "a3": (2, 3)}
