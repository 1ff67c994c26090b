"""On-policy queues on the real llama.cpp engine (short answers): k answers per prompt, stamps, pairs,
progress, resume; policy against another contestant; labelled and exported with the stamps as provenance."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from vibestudio.annotation.formats import ExportSpec, export_rows
from vibestudio.annotation.labelling import next_task, submit_label
from vibestudio.annotation.onpolicy import OnPolicySpec, generate_queue, policy_version
from vibestudio.annotation.queues import QueueError, get_queue
from vibestudio.arena.prompts import import_prompt_set
from vibestudio.arena.registry import ContestantSpec, get_contestant, register
from vibestudio.db.models import QueueItem

PROMPTS = [
    {"turns": ["Name a fruit."], "category": "x"},
    {"turns": ["Name a colour.", "Why?"], "category": "y"},
]


@pytest.fixture
def setup(db):
    with db.session() as s:
        import_prompt_set(s, "tiny", "tiny.jsonl", "\n".join(json.dumps(p) for p in PROMPTS).encode())
        register(
            s,
            ContestantSpec(
                "zebra-7", sampling={"max_tokens": 8, "temperature": 1.0}, system_prompt="Be brief."
            ),
        )
        register(s, ContestantSpec("quokka-3", sampling={"max_tokens": 8, "temperature": 0.7}))
    return db


def test_k_answers_per_prompt_are_stamped_and_paired(setup):
    db = setup
    calls = []
    spec = OnPolicySpec(
        queue="op", prompt_set="tiny", policy="zebra-7", k=3, temperatures=[0.9, 1.3], overlap=2
    )
    res = generate_queue(db, spec, progress=lambda d, t, note: calls.append((d, t)))
    assert res.n_prompts == 2 and res.n_answers == 6 and res.errors == []
    assert res.n_items + res.identical == 6  # 3 pairs per prompt
    assert calls[0] == (0, 6) and calls[-1] == (6, 6) and len(calls) == 7
    with db.session() as s:
        info = get_contestant(s, "zebra-7")
        items = s.scalars(select(QueueItem).where(QueueItem.queue_id == "op")).all()
        q = get_queue(s, "op")
    assert q.status == "ready" and q.overlap == 2 and q.rubric["name"] == "default"
    assert q.config["policy_version"] == policy_version(info)
    stamps = [st for it in items for st in it.meta["answers"]]
    assert {st["policy_version"] for st in stamps} == {policy_version(info)}
    assert {(st["variant"], st["sampling"]["seed"], st["sampling"]["temperature"]) for st in stamps} <= {
        (0, 0, 0.9),
        (1, 1, 1.3),
        (2, 2, 0.9),
    }
    assert all(st["sampling"]["max_tokens"] == 8 and st["tokens"] > 0 for st in stamps)
    assert all(
        it.prompt_messages == [{"role": "user", "content": it.prompt_messages[0]["content"]}] for it in items
    )
    assert {it.prompt_messages[0]["content"] for it in items} <= {"Name a fruit.", "Name a colour."}

    again = generate_queue(db, spec)
    assert again.resumed == 2 and again.n_answers == 0 and again.n_items == 0
    with pytest.raises(QueueError, match="exists with other settings"):
        generate_queue(db, OnPolicySpec(queue="op", prompt_set="tiny", policy="zebra-7", k=2))


def test_policy_against_another_contestant_and_export_provenance(setup):
    db = setup
    res = generate_queue(
        db, OnPolicySpec(queue="vs", prompt_set="tiny", policy="zebra-7", opponent="quokka-3", max_prompts=1)
    )
    assert res.n_answers == 2
    with db.session() as s:
        item = s.scalar(select(QueueItem).where(QueueItem.queue_id == "vs"))
        assert [st["model"] for st in item.meta["answers"]] == ["zebra-7", "quokka-3"]
        task = next_task(s, "vs", "ann")
        assert "zebra" not in repr(task) and "quokka" not in repr(task)
        submit_label(s, task.assignment_id, "ann", "left", {"helpfulness": {"left": 4, "right": 2}})
        rows, _ = export_rows(s, ExportSpec("trl", queues=["vs"]))
    (row,) = rows
    prov = row["provenance"]
    chosen_side = 0 if row["chosen"] == item.answer_1 else 1
    assert prov["chosen_model"] == ["zebra-7", "quokka-3"][chosen_side]
    assert prov["chosen_position"] == "left" and prov["rejected_position"] == "right"
    assert prov["chosen_policy_version"].startswith(["zebra-7@", "quokka-3@"][chosen_side])
    assert prov["chosen_sampling"]["max_tokens"] == 8 and prov["annotators"] == ["ann"]
    assert {(x["answer"], x["value"]) for x in prov["rubric_scores"]} == {("chosen", 4.0), ("rejected", 2.0)}
