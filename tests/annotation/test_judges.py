"""AI judges: verdict parsing, swap combination and bias arithmetic (pure logic), the judge service with an
engine that always picks the first position, and the real SmolLM2 llama.cpp engine as a judge (short runs)."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from vibestudio.annotation.bias import (
    Rate,
    combine,
    family_rate,
    first_position_choice,
    longer_rate,
    model_family,
    position_rate,
)
from vibestudio.annotation.judges import (
    PAIRWISE_PREFILL,
    JudgeSpec,
    bias_report,
    both_orders,
    parse_checklist,
    parse_pairwise,
    parse_rating,
    run_judge,
)
from vibestudio.annotation.labelling import next_task, submit_label
from vibestudio.annotation.queues import NewItem, add_item, create_queue
from vibestudio.annotation.rubrics import get_rubric
from vibestudio.arena.engines.base import GenerationStats, Stream
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.models import Judgement, Label, RubricScore


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Verdict: [[A]]", "A"),
        ("Verdict: [[b]] because", "B"),
        ("Verdict: [[C", "C"),
        ("After thinking, my final verdict is [[B]].", "B"),
        ("Verdict: [[A]] ... no wait [[B]]", None),  # contradictory
        ("Verdict: B", "B"),
        ("Answer A is better than answer B.", "A"),
        ("It's a tie.", "C"),
        ("Verdict: [[Answer", None),
        ("I cannot decide", None),
    ],
)
def test_parse_pairwise(text, expected):
    assert parse_pairwise(text) == expected


def test_parse_rating_and_checklist():
    rubric = get_rubric()
    helpful, fmt, syc = (rubric.criterion(n) for n in ("helpfulness", "formatting", "no_sycophancy"))
    assert parse_rating("Rating: [[4]](https://x", helpful) == 4.0
    assert parse_rating("Rating: [[9]] or 3", helpful) == 3.0
    assert parse_rating("Rating: [[over-formatted]]", fmt) == 1.0
    assert parse_rating("Rating: [[Appr", fmt) == 0.0
    assert parse_rating("Rating: [[yes", syc) is None
    assert parse_rating("no idea", helpful) is None
    assert parse_checklist("1. Names a city\n2) Gives dates\n- ok\n3. Is short", 3) == [
        "Names a city",
        "Gives dates",
        "Is short",
    ]


def test_combine_and_position_logic():
    assert combine("1", "1") == "1" and combine("tie", "tie") == "tie"
    assert combine("1", "2") == "inconsistent" and combine("1", "tie") == "inconsistent"
    assert combine("unparsed", "1") == "unparsed"
    # run without swap shows answer 1 first; with swap answer 2 first
    assert first_position_choice("1", False) is True and first_position_choice("2", True) is True
    assert first_position_choice("2", False) is False and first_position_choice("tie", True) is None
    runs = [("1", False), ("2", True), ("1", False), ("1", True), ("tie", False), ("unparsed", True)]
    r = position_rate(runs)
    assert (r.hits, r.n) == (3, 4) and r.value == 0.75


def test_length_and_family_rates():
    verdicts = [("1", 100, 10), ("2", 100, 10), ("2", 5, 50), ("tie", 1, 9), ("1", 7, 7)]
    assert longer_rate(verdicts) == Rate(2, 3)
    fam = [("1", "smollm", "gpt"), ("2", "smollm", "gpt"), ("1", "gpt", "smollm"), ("1", "smollm", "smollm")]
    assert family_rate(fam, "smollm") == Rate(1, 3)
    assert str(family_rate(fam, None)) == "n/a"
    assert model_family("smollm2-plain") == model_family("SmolLM2-135M-Instruct.Q4_1.gguf") == "smollm"
    assert model_family("gpt-4-0613") == "gpt" and model_family("meta-llama/Llama-3-8B") == "llama"
    assert model_family(None) is None


class FirstPositionEngine:
    """Always answers that the first answer shown is better (a maximally position-biased judge)."""

    name = "fake"
    concurrency = 1

    def stream_chat(self, messages, sampling, prefill=""):
        return Stream(iter([prefill, "A]]"]), GenerationStats(tokens=1))


class ContentEngine:
    """Prefers the answer that says 'good', wherever it is shown."""

    name = "fake"
    concurrency = 1

    def stream_chat(self, messages, sampling, prefill=""):
        text = messages[-1]["content"]
        a = text.split("[The Start of Answer A]")[1].split("[The End of Answer A]")[0]
        return Stream(iter([prefill, "A]]" if "good" in a else "B]]"]), GenerationStats(tokens=1))


def _judge_queue(db, name="jq"):
    with db.session() as s:
        create_queue(s, name, rubric=get_rubric(), overlap=2)
        register(s, ContestantSpec("judge-bot", sampling={"max_tokens": 8}))
        for i in range(3):
            add_item(
                s,
                name,
                NewItem(
                    [{"role": "user", "content": f"Q{i}"}],
                    [f"good long answer {i} " * (3 - i), f"bad {i}"],
                    [{"model": "smollm2-plain"}, {"model": "gpt-4"}],
                ),
            )


@pytest.mark.parametrize("engine,outcome", [(FirstPositionEngine(), "inconsistent"), (ContentEngine(), "1")])
def test_judge_runs_twice_with_positions_swapped(db, monkeypatch, engine, outcome):
    _judge_queue(db)
    monkeypatch.setattr("vibestudio.annotation.judges.engine_for", lambda info: engine)
    res = run_judge(db, JudgeSpec(judge="judge-bot", queue="jq"))
    assert res.verdicts == {outcome: 3}
    with db.session() as s:
        runs = s.scalars(select(Judgement).order_by(Judgement.id)).all()
        labels = s.scalars(select(Label)).all()
    assert [(j.swapped, j.verdict) for j in runs[:2]] == (
        [(False, "1"), (True, "2")] if outcome == "inconsistent" else [(False, "1"), (True, "1")]
    )
    assert all(j.label_id == labels[0].id for j in runs[:2])
    assert {(lab.kind, lab.annotator, lab.outcome) for lab in labels} == {
        ("judge", "judge:judge-bot", outcome)
    }
    again = run_judge(db, JudgeSpec(judge="judge-bot", queue="jq"))
    assert again.n_items == 0  # already judged
    redo = run_judge(db, JudgeSpec(judge="judge-bot", queue="jq", rerun=True))
    assert redo.n_items == 3
    with db.session() as s:  # a rerun replaces the judge's earlier verdicts
        assert len(s.scalars(select(Label)).all()) == 3 and len(s.scalars(select(Judgement)).all()) == 6
    rep = bias_report(db, "jq", "judge-bot")
    if outcome == "inconsistent":
        assert rep.first_position == Rate(6, 6) and rep.consistency == Rate(0, 3)
    else:
        assert rep.first_position == Rate(3, 6) and rep.consistency == Rate(3, 3)
        assert rep.longer == Rate(3, 3)  # the good answers are the longer ones here


def test_bias_report_own_family_and_human_agreement(db, monkeypatch):
    _judge_queue(db)
    monkeypatch.setattr("vibestudio.annotation.judges.engine_for", lambda info: ContentEngine())
    run_judge(db, JudgeSpec(judge="judge-bot", queue="jq"))
    # two people label every item: they prefer answer 1 on items 0-1 and answer 2 on item 2
    for who in ("ann", "bob"):
        while True:
            with db.session() as s:
                task = next_task(s, "jq", who)
                if task is None:
                    break
                item_1_left = task.left.startswith("good")
                want_first = not task.prompt[0]["content"].endswith("2")
                submit_label(s, task.assignment_id, who, "left" if item_1_left == want_first else "right")
    rep = bias_report(db, "jq", "judge:judge-bot", family="smollm")
    assert rep.own_family == Rate(3, 3)  # answer 1 is smollm2-plain each time and always chosen
    assert rep.human_own_family == Rate(2, 3)
    assert rep.human_items == 3 and rep.human_agreement == Rate(2, 3)
    d = rep.as_dict()
    assert d["human_agreement"] == {"rate": pytest.approx(2 / 3), "hits": 2, "n": 3}


def test_real_smollm2_judge_pairwise_and_rubric_grade(db):
    with db.session() as s:
        create_queue(s, "real", rubric=get_rubric(), overlap=1)
        register(s, ContestantSpec("smol-judge", sampling={"max_tokens": 8}))
        add_item(s, "real", NewItem([{"role": "user", "content": "What is 2+2?"}], ["4", "5"]))
    res = run_judge(
        db, JudgeSpec(judge="smol-judge", queue="real", absolute=True, criteria=["no_sycophancy"])
    )
    assert res.n_items == 1 and sum(res.verdicts.values()) == 1 and res.errors == []
    with db.session() as s:
        judgements = s.scalars(select(Judgement).order_by(Judgement.id)).all()
        label = s.scalar(select(Label))
        scores = s.scalars(select(RubricScore)).all()
    assert [(j.kind, j.swapped, j.side) for j in judgements] == [
        ("pairwise", False, None),
        ("pairwise", True, None),
        ("absolute", False, "1"),
        ("absolute", False, "2"),
    ]
    assert all(j.raw.startswith(PAIRWISE_PREFILL) for j in judgements[:2])
    assert all(j.verdict in ("1", "2", "tie", "unparsed") for j in judgements[:2])
    assert label.outcome == combine(judgements[0].verdict, judgements[1].verdict)
    assert label.kind == "judge" and label.annotator == "judge:smol-judge"
    assert res.n_scores + res.unparsed_scores == 2
    assert all(s.value in (0.0, 1.0) and s.criterion == "no_sycophancy" and s.judgement_id for s in scores)


def test_judges_enter_the_agreement_report_next_to_people(db, monkeypatch):
    from vibestudio.annotation.agreement_report import agreement_report

    _judge_queue(db)
    monkeypatch.setattr("vibestudio.annotation.judges.engine_for", lambda info: ContentEngine())
    run_judge(db, JudgeSpec(judge="judge-bot", queue="jq"))
    while True:
        with db.session() as s:
            task = next_task(s, "jq", "ann")
            if task is None:
                break
            submit_label(s, task.assignment_id, "ann", "left" if task.left.startswith("good") else "right")
    with db.session() as s:
        people = agreement_report(s, "jq")
        both = agreement_report(s, "jq", kinds=("human", "judge"))
    assert people.annotators == ["ann"] and people.pairs == []
    assert both.annotators == ["ann", "judge:judge-bot"]
    (pair,) = both.pairs
    assert (pair.percent, pair.n) == (1.0, 3)  # both always chose the "good" answer


def test_both_orders_maps_letters_back_to_item_terms_and_catches_a_position_biased_judge():
    shown: list[tuple[str, str]] = []

    def always_a(first: str, second: str) -> str:  # prefers whatever it sees first
        shown.append((first, second))
        return "[[A]]"

    assert both_orders(always_a, "one", "two") == (("1", "[[A]]"), ("2", "[[A]]"))
    assert shown == [("one", "two"), ("two", "one")]  # answer 1 first, then answer 2 first
    assert combine("1", "2") == "inconsistent"  # so its label is never a win

    def fair(first: str, second: str) -> str | None:
        return {"good": "[[A]]", "meh": "[[B]]"}.get(first)

    assert [v for v, _ in both_orders(fair, "good", "meh")] == ["1", "1"]
    replies = iter(["[[C]]", None])  # a tie, then no reply at all (engine down)
    assert both_orders(lambda a, b: next(replies), "x", "y") == (("tie", "[[C]]"), ("unparsed", ""))
