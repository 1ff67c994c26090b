"""Every vote trains (#40): the KTO mapping from arena votes and scores, its refusals before launch, and the
config fields of KTO, ORPO and SimPO, all without training a model."""

from __future__ import annotations

import pytest

from tests.helpers.training import add_votes as _votes
from tests.helpers.training import pair_rows
from vibestudio.annotation.snapshots import get_snapshot, snapshot_from_votes, vote_unpaired, write_snapshot
from vibestudio.annotation.unpaired import ScoreRule, balance, from_pairs, unpaired_rows
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.training.jobs.config import JOB_KINDS, ConfigError, config_errors, make_config
from vibestudio.training.jobs.errors import JobError
from vibestudio.training.jobs.estimate import estimate, tokens_per_step
from vibestudio.training.jobs.service import check_config, launch_config


def _record(
    winner: str, a: str = "answer a", b: str = "answer b", vote_id: int = 1, history: bool = True
) -> dict:
    first = [{"role": "user", "content": "q"}]
    prior_b = (
        [{"role": "assistant", "content": "x"}, {"role": "user", "content": "more"}] if not history else []
    )
    return {
        "winner": winner,
        "model_a": "m-a",
        "model_b": "m-b",
        "vote_id": vote_id,
        "conversation_a": [*first, {"role": "assistant", "content": a}],
        "conversation_b": [*first, *prior_b, {"role": "assistant", "content": b}],
    }


def _labels(made) -> list[tuple[str, bool]]:
    return [(r["provenance"]["side"], r["label"]) for r in made.rows]


def test_each_outcome_maps_to_its_rows():
    assert _labels(unpaired_rows([_record("model_a")])) == [("a", True), ("b", False)]
    assert _labels(unpaired_rows([_record("model_b")])) == [("a", False), ("b", True)]
    assert _labels(unpaired_rows([_record("tie (bothgood)")])) == [("a", True), ("b", True)]
    assert _labels(unpaired_rows([_record("tie (bothbad)")])) == [("a", False), ("b", False)]
    tie = unpaired_rows([_record("tie")])
    assert tie.rows == [] and tie.skipped == {"tie_without_score": 2} and tie.vote_ids == []


def test_each_answer_keeps_its_own_history_and_empty_answers_are_left_out():
    made = unpaired_rows([_record("model_a", history=False), _record("tie (bothgood)", a="  ", vote_id=2)])
    assert [len(r["prompt"]) for r in made.rows] == [1, 3, 1]  # diverged sides still make rows
    assert made.skipped == {"empty_answer": 1} and made.vote_ids == [1, 2]
    assert (made.desirable, made.undesirable) == (2, 1)


def test_scores_override_the_vote_and_label_a_tie_missing_scores_fall_back():
    rule = ScoreRule("helpfulness", 4.0, (1.0, 5.0))
    scores = {
        1: {"a": {"helpfulness": 4.0}, "b": {"helpfulness": 3.9}},
        2: {"b": {"honesty": 1.0}},
        3: {"a": {"helpfulness": 2.0}},
    }
    records = [_record("model_b", vote_id=1), _record("tie", vote_id=2), _record("tie (bothgood)", vote_id=3)]
    made = unpaired_rows(records, scores, rule)
    got = [
        (r["provenance"]["vote_id"], r["provenance"]["side"], r["label"], r["provenance"]["labelled_by"])
        for r in made.rows
    ]
    assert got == [
        (1, "a", True, "score"),  # the vote said b; the score at the threshold says a is good
        (1, "b", False, "score"),
        (3, "a", False, "score"),  # both good, but a's score is low
        (3, "b", True, "vote"),  # no score: the vote's label stands
    ]
    assert made.skipped == {"tie_without_score": 2}  # vote 2's scores are on another criterion


@pytest.mark.parametrize("threshold", [0.5, 5.01, -1.0])
def test_a_threshold_outside_the_scale_is_refused_by_field(threshold):
    with pytest.raises(ValueError, match="outside"):
        ScoreRule("helpfulness", threshold, (1.0, 5.0))
    cfg, errors = config_errors(
        {"kind": "kto", "score_criterion": "helpfulness", "desirable_threshold": threshold}
    )
    assert cfg is None and [e.field for e in errors] == ["desirable_threshold"]
    assert "1..5" in errors[0].message


def test_kto_config_fields_are_checked():
    assert (
        make_config("kto", score_criterion="helpfulness").score_rule().threshold == 3.0
    )  # mid-scale by default
    for bad, field in (
        ({"desirable_threshold": 3.0}, "desirable_threshold"),  # no criterion to apply it to
        ({"score_criterion": "no_such"}, "score_criterion"),
        ({"desirable_weight": 0}, "desirable_weight"),
        ({"pairs": "on_policy"}, "pairs"),
        ({"loss_type": "sigmoid"}, "loss_type"),
    ):
        cfg, errors = config_errors({"kind": "kto", **bad})
        assert cfg is None and [e.field for e in errors] == [field], bad
    with pytest.raises(ConfigError, match="simpo_gamma"):
        make_config("simpo", simpo_gamma=-0.1)
    with pytest.raises(ConfigError, match="beta"):
        make_config("orpo", beta=0)


def test_registry_and_estimate_treat_the_new_kinds_as_preference_jobs(tiny_model_dir):
    assert {"kto", "orpo", "simpo"} <= set(JOB_KINDS)
    assert (JOB_KINDS["kto"].rows, JOB_KINDS["orpo"].reference, JOB_KINDS["simpo"].reference) == (
        "unpaired",
        False,
        False,
    )
    full = {
        k: estimate(make_config(k, lora=False), str(tiny_model_dir)) for k in ("dpo", "kto", "orpo", "simpo")
    }
    assert full["dpo"].breakdown["reference"] > 0 and full["kto"].breakdown["reference"] > 0
    assert full["orpo"].breakdown["reference"] == 0 == full["simpo"].breakdown["reference"]
    assert tokens_per_step(make_config("simpo"))[0] == 2 * 4


def test_paired_rows_become_one_of_each_class_and_the_weights_range():
    rows = from_pairs(pair_rows(3))
    assert [r["label"] for r in rows] == [True, False] * 3
    b = balance(2, 6, 1.0, 1.0)
    assert b["desirable_weight_range"] == (3.0, 3.99) and not b["in_range"]
    assert balance(2, 6, 3.5, 1.0)["in_range"] and balance(4, 4, 1.0, 1.0)["in_range"]


# ---- through the database: votes -> rows -> the check before launch ----------------------------------------------
@pytest.fixture
def other(db) -> int:
    with db.session() as s:
        return register(s, ContestantSpec("other-model"))


def test_both_good_and_both_bad_votes_reach_a_kto_snapshot_with_coverage(db, tiny_parent, other):
    _votes(db, tiny_parent, other, ["both_good", "both_bad", "a", "tie", "both_good"])
    with db.session() as s:
        info = snapshot_from_votes(s, unpaired=True)
        snap = get_snapshot(s, info.hash)
        objectives = snap.filter["objectives"]
        assert (info.n_pairs, snap.filter["layout"]) == (8, "unpaired")
        assert (
            sorted(snap.source_vote_ids) == sorted(set(snap.source_vote_ids))
            and len(snap.source_vote_ids) == 4
        )
    assert objectives["pairs"] == {"votes": 1, "left_out": {"not_decisive": 4}}
    assert objectives["kto"] == {
        "votes": 4,
        "desirable": 5,
        "undesirable": 3,
        "left_out_answers": {"tie_without_score": 2},
    }
    check = check_config(db, {"kind": "kto", "parent_contestant": "tiny-parent", "snapshot_hash": info.hash})
    assert check.ok, check.errors
    assert (check.balance["desirable"], check.balance["undesirable"]) == (5, 3)
    assert check.balance["desirable_weight"] == 1.0 and "desirable_weight_range" in check.balance


def test_no_undesirable_answers_is_refused_before_launch_naming_the_counts(db, tiny_parent, other):
    _votes(db, tiny_parent, other, ["both_good"] * 3 + ["tie"])
    config = {"kind": "kto", "parent_contestant": "tiny-parent"}
    check = check_config(db, config)  # the current votes
    assert [e.field for e in check.errors] == ["snapshot_hash"]
    assert "6 desirable and 0 undesirable answer(s) from 4 vote(s)" in check.errors[0].message
    assert check.balance["left_out"] == {"tie_without_score": 2}
    with pytest.raises(JobError, match="0 undesirable"):
        launch_config(db, config)
    with db.session() as s:  # a frozen snapshot with one class only: the same refusal
        good_only = [{**r, "label": True} for r in vote_unpaired(s)[0]]
        frozen = write_snapshot(s, good_only, {"source": "test"}).hash
    check = check_config(db, {**config, "snapshot_hash": frozen})
    assert "this snapshot has 6 desirable and 0 undesirable" in check.errors[0].message


def test_scores_label_a_tie_when_the_job_names_a_criterion(db, tiny_parent, other):
    _votes(db, tiny_parent, other, ["tie", "tie", "both_good"], scores={0: 5.0, 1: 1.0})
    config = {
        "kind": "kto",
        "parent_contestant": "tiny-parent",
        "score_criterion": "helpfulness",
        "desirable_threshold": 4,
    }
    check = check_config(db, config)
    assert check.ok, check.errors
    assert (check.balance["desirable"], check.balance["undesirable"]) == (3, 1)
    assert check.balance["left_out"] == {"tie_without_score": 2}  # the ties' unscored b answers


def test_a_paired_kind_refuses_an_unpaired_snapshot(db, tiny_parent, other):
    _votes(db, tiny_parent, other, ["a", "b", "both_bad", "both_good"])
    with db.session() as s:
        info = snapshot_from_votes(s, unpaired=True)
    for kind in ("dpo", "orpo", "simpo"):
        check = check_config(
            db, {"kind": kind, "parent_contestant": "tiny-parent", "snapshot_hash": info.hash}
        )
        assert [e.field for e in check.errors] == ["snapshot_hash"] and "unpaired" in check.errors[0].message
