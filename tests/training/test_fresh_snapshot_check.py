"""The check before launch applies one rule to a fresh snapshot of the current votes and to a frozen one (#27): the
same "at least min_pairs" refusal and the same on/half/off mix, so a config the check calls valid also launches."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from tests.helpers.training import add_votes
from vibestudio.annotation.snapshots import vote_pairs, write_snapshot
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.models import DatasetSnapshot
from vibestudio.training.jobs.errors import JobError
from vibestudio.training.jobs.service import check_config, launch_config


def _votes(db, parent: int, other: int, n: int, start: int = 0) -> None:
    add_votes(db, parent, other, ["a" if k % 2 else "b" for k in range(start, start + n)], start=start)


def _snapshots(db) -> int:
    with db.session() as s:
        return s.scalar(select(func.count(DatasetSnapshot.id))) or 0


@pytest.mark.parametrize("frozen", [False, True], ids=["fresh", "frozen"])
def test_three_pairs_are_refused_either_way(db, tiny_parent, frozen):
    with db.session() as s:
        other = register(s, ContestantSpec("other-model"))
    _votes(db, tiny_parent, other, 3)
    snapshot = ""
    if frozen:
        with db.session() as s:
            snapshot = write_snapshot(s, vote_pairs(s)[0], {"source": "test"}).hash
    before = _snapshots(db)
    config = {"kind": "dpo", "parent_contestant": "tiny-parent", "snapshot_hash": snapshot}
    check = check_config(db, config)
    assert not check.ok
    assert [e.field for e in check.errors] == ["snapshot_hash"]
    assert "3 pair(s) to train on" in check.errors[0].message and "at least 4" in check.errors[0].message
    assert check.mix == {"on": 0, "half": 3, "off": 0, "unknown": 0, "total": 3}
    assert _snapshots(db) == before  # the check wrote nothing
    with pytest.raises(JobError, match="at least 4"):
        launch_config(db, config)
    _votes(db, tiny_parent, other, 1, start=3)
    if not frozen:  # the fourth vote is in the current votes, so the fresh snapshot now passes
        again = check_config(db, config)
        assert again.ok, again.errors
        assert again.mix is not None and again.mix["total"] == 4


def test_pairs_filter_on_a_fresh_snapshot(db, tiny_parent):
    with db.session() as s:
        other = register(s, ContestantSpec("other-model"))
    _votes(db, tiny_parent, other, 6)
    check = check_config(db, {"kind": "dpo", "parent_contestant": "tiny-parent", "pairs": "on_policy"})
    assert [e.field for e in check.errors] == ["pairs"]
    assert "current votes make 0 pair(s)" in check.errors[0].message
