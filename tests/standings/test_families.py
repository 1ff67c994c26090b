"""Families: siblings from one root form one family; the best of four equally good variants leads by chance and
reads "can't tell", a clearly better one reads "lead beyond chance"; one-member families and unrated variants are
unmeasurable with the reason; a variant is provisional until enough votes arrive after publish; hiding keeps the
contestant and its history and logs who hid it and why."""

from __future__ import annotations

import pytest

from vibestudio.arena.registry import ContestantSpec, RegistryError, register
from vibestudio.db.models import Battle, Vote
from vibestudio.standings.families import families, hide, removal_log, selection_effect


def _family(db, n=4):
    with db.session() as s:
        root = register(s, ContestantSpec("base"))
        ids = [register(s, ContestantSpec(f"base-dpo-{i}", parent_id=root)) for i in range(n)]
        grandchild = register(s, ContestantSpec("base-dpo-0-again", parent_id=ids[0]))
        register(s, ContestantSpec("loner"))
    return root, ids, grandchild


def _rows(ratings):
    return [{"name": n, "rating": r, "ci_low": r - h, "ci_high": r + h} for n, (r, h) in ratings.items()]


def test_best_of_equally_good_siblings_is_cant_tell(db):
    _family(db)
    ratings = {"base": (1000, 20), "base-dpo-0": (1030, 60), "base-dpo-1": (1010, 60), "base-dpo-2": (1000, 60),
               "base-dpo-3": (990, 60), "base-dpo-0-again": (1005, 60)}  # fmt: skip
    with db.session() as s:
        fams = families(s, _rows(ratings))
    fam = fams[0]
    assert fam.root == "base" and len(fam.members) == 6
    assert {m.name: m.depth for m in fam.members}["base-dpo-0-again"] == 2
    sel = fam.selection
    assert sel is not None and sel.n_variants == 5 and sel.best == "base-dpo-0"
    # best of 5 with se ~30.6 each: the chance lead is about 1.16 se ~ 35 points, the observed lead ~ 23
    assert 25 < sel.chance_mean < 45 and sel.lead < sel.chance_95 and sel.verdict == "can't tell"
    loner = next(f for f in fams if f.root == "loner")
    assert loner.selection is None and "one member" in loner.reason


def test_a_clear_winner_leads_beyond_chance():
    sel = selection_effect({"a": (1200, 1180, 1220), "b": (1000, 980, 1020), "c": (1005, 985, 1025)})
    assert (
        sel is not None
        and sel.best == "a"
        and sel.verdict == "lead beyond chance"
        and sel.beyond_chance > 100
    )
    assert selection_effect({"a": (1000, 990, 1010)}) is None


def test_unrated_variants_are_unmeasurable(db):
    _family(db, n=2)
    with db.session() as s:
        fam = families(s, _rows({"base-dpo-0": (1000, 30)}))[0]
    assert fam.selection is None and "1 of 3 variant(s) rated" in fam.reason


def test_provisional_until_votes_after_publish(db):
    root, ids, _ = _family(db, n=2)
    with db.session() as s:
        for _ in range(3):
            b = Battle(a_id=ids[0], b_id=root, left_is_a=True, status="done")
            s.add(b)
            s.flush()
            s.add(Vote(battle_id=b.id, turn_idx=0, outcome="a"))
    with db.session() as s:
        members = {m.name: m for m in families(s, [], min_votes=3)[0].members}
    assert members["base-dpo-0"].votes_after_publish == 3 and not members["base-dpo-0"].provisional
    assert members["base-dpo-1"].provisional and not members["base"].provisional  # the root is no variant


def test_hiding_keeps_history_and_logs_who(db):
    _family(db, n=2)
    with db.session() as s:
        with pytest.raises(RegistryError, match="reason"):
            hide(s, "base-dpo-1", "alice", "")
        hide(s, "base-dpo-1", "alice", "regressed on the probes")
    with db.session() as s:
        fam = families(s, [])[0]
        log = removal_log(s)
    member = next(m for m in fam.members if m.name == "base-dpo-1")
    assert member.hidden and len(fam.members) == 4  # still listed, with its history
    assert log[0]["contestant"] == "base-dpo-1" and log[0]["by"] == "alice" and log[0]["action"] == "hide"
    assert fam.log == log
    with db.session() as s:
        hide(s, "base-dpo-1", "bob", "", restore=True)
        assert [e["action"] for e in removal_log(s)] == ["hide", "restore"]
