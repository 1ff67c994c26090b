"""The Data tab's pair count is the snapshot's: over generated votes (every mode, outcome, reveal flag, open or
ended battle, identical or empty answers), ``collected`` counts exactly the pairs Freeze then writes; the tab
says that number and ``vibestudio export --dry-run`` prints it. The old "decisive votes" count took named and revealed votes a snapshot leaves out."""

from __future__ import annotations

import json
from dataclasses import asdict
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, func, select
from typer.testing import CliRunner

from vibestudio.annotation.snapshots import collected, snapshot_from_votes
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.arena.self_play import SELF_PLAY
from vibestudio.db.models import Battle, DatasetSnapshot, Turn, Vote
from vibestudio.db.session import Database
from vibestudio.studio.cli import app

VOTE = st.fixed_dictionaries(
    {
        "mode": st.sampled_from(["anonymous", "named", SELF_PLAY]),
        "status": st.sampled_from(["voted", "voted", "open", "errored"]),
        "outcome": st.sampled_from(["a", "b", "tie", "both_good", "both_bad"]),
        "revealed": st.booleans(),
        "answers": st.sampled_from(["different", "different", "same", "empty"]),
    }
)


def _contestants(db) -> tuple[int, int]:
    with db.session() as s:
        return register(s, ContestantSpec("left")), register(s, ContestantSpec("right"))


def _write(db, ids: tuple[int, int], votes: list[dict]) -> None:
    with db.session() as s:
        for table in (Vote, Turn, Battle, DatasetSnapshot):
            s.execute(delete(table))
        for k, v in enumerate(votes):
            a, b = (ids[0], ids[0]) if v["mode"] == SELF_PLAY else ids
            answer_b = {"different": f"theirs {k}", "same": f"mine {k}", "empty": " "}[v["answers"]]
            battle = Battle(a_id=a, b_id=b, left_is_a=True, mode=v["mode"], status=v["status"])
            battle.turns.append(Turn(idx=0, user_msg=f"q{k}", answer_a=f"mine {k}", answer_b=answer_b))
            battle.votes.append(Vote(turn_idx=0, outcome=v["outcome"], revealed_before_vote=v["revealed"]))
            s.add(battle)


def _old_decisive(db) -> int:
    """What the Data tab counted before: A-or-B votes of every ended battle."""
    with db.session() as s:
        q = (
            select(func.count(Vote.id))
            .join(Battle, Vote.battle_id == Battle.id)
            .where(Battle.status.not_in(["open", "errored"]), Vote.outcome.in_(["a", "b"]))
        )
        return int(s.scalar(q) or 0)


def test_the_count_is_the_pairs_freeze_writes(db) -> None:
    ids = _contestants(db)

    @settings(max_examples=25, deadline=None)
    @given(votes=st.lists(VOTE, max_size=12))
    def check(votes: list[dict]) -> None:
        _write(db, ids, votes)
        with db.session() as s:
            counted = collected(s)
            snap = snapshot_from_votes(s, min_pairs=0)
        assert counted.pairs == snap.n_pairs
        assert counted.skipped == snap.skipped
        ended = [v for v in votes if v["status"] == "voted"]
        assert (counted.battles, counted.votes) == (len(ended), len(ended))
        assert counted.read == sum(1 for v in ended if v["mode"] != "named" and not v["revealed"])

    check()


def test_the_data_tab_says_the_snapshots_number(db) -> None:
    from vibestudio.studio.pages.data import _counts

    ids = _contestants(db)
    decisive = {"status": "voted", "outcome": "a", "revealed": False, "answers": "different"}
    _write(
        db,
        ids,
        [
            {**decisive, "mode": "anonymous"},  # a pair
            {**decisive, "mode": "named"},  # a snapshot leaves named battles out
            {**decisive, "mode": "anonymous", "revealed": True},  # and votes cast after a reveal
            {**decisive, "mode": "anonymous", "answers": "same"},  # and two identical answers
            {**decisive, "mode": "anonymous", "outcome": "tie"},
        ],
    )
    text = _counts(SimpleNamespace(db=db))
    with db.session() as s:
        snap = snapshot_from_votes(s)
    assert snap.n_pairs == 1 and _old_decisive(db) == 4
    assert f"**{snap.n_pairs}** preference pair a snapshot would freeze now" in text
    assert "from the 3 votes it reads" in text and "two identical answers" in text, text
    # the two votes it does not read (the named battle, the vote after a reveal) are said, not dropped silently
    assert "not read: 2 (named mode, or a model named before the vote)" in text, text


def test_the_cli_dry_run_prints_the_counts_and_writes_nothing() -> None:
    db = Database()  # the CLI's own database, under this test's data home
    db.migrate()
    decisive = {"status": "voted", "outcome": "b", "revealed": False, "answers": "different"}
    _write(db, _contestants(db), [{**decisive, "mode": "anonymous"}, {**decisive, "mode": "named"}])
    runner = CliRunner()
    plain = runner.invoke(app, ["export", "--dry-run"])
    named = runner.invoke(app, ["export", "--dry-run", "--include-named"])
    assert plain.exit_code == 0 and named.exit_code == 0, plain.output + named.output
    with db.session() as s:
        assert json.loads(plain.stdout) == {**asdict(collected(s)), "unread": 1}  # the named battle's vote
        assert s.scalar(select(func.count(DatasetSnapshot.id))) == 0
    assert (json.loads(plain.stdout)["pairs"], json.loads(named.stdout)["pairs"]) == (1, 2)
    assert json.loads(named.stdout)["unread"] == 0
    refused = runner.invoke(app, ["export", "--dry-run", "--format", "trl"])
    assert refused.exit_code != 0 and "--dry-run" in refused.output
