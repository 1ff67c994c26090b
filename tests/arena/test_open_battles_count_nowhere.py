"""Nothing counts an open battle, anywhere: every reader of votes or answers (battle records, every board, matrices,
rating over time, the sampler's counts, vibe profiles, speed, families' votes since publish, identifiability's
answers, the Data tab's counts, the model page) reads the same before and after an open battle's answers and votes,
and moves once the battle ends (idle, new round or reveal). The fast twin of the browser side-channel test."""

from __future__ import annotations

import json
from datetime import timedelta
from types import SimpleNamespace

import pytest

from tests.helpers.fake_openai import FakeOpenAI, register_http
from vibestudio.arena.battle_end import db_now
from vibestudio.arena.battles import ArenaLimits, ArenaService
from vibestudio.arena.identifiability import ended_answers
from vibestudio.db.models import Battle
from vibestudio.standings import goldilocks
from vibestudio.standings.families import families
from vibestudio.standings.leaderboard import BoardOptions, LeaderboardService, vibe_profile
from vibestudio.standings.records import battle_records

NAMES = ("open-a", "open-b")
OPTIONS = BoardOptions(ci_method="sandwich", min_battles=0)


@pytest.fixture
def fake():
    f = FakeOpenAI()
    yield f
    f.close()


def _everything(db) -> str:
    """What every reader says, as one comparable string (a fresh leaderboard service each time)."""
    from vibestudio.studio.pages.data import _counts
    from vibestudio.training.report.model_page import model_page

    svc = LeaderboardService(db)
    seen: dict[str, object] = {}
    board = svc.board(OPTIONS)
    seen["board"] = [(m["name"], round(m["rating"], 6), m["n_battles"]) for m in board["models"]]
    seen["n_votes"] = board["n_votes"]
    seen["boards"] = svc.boards(OPTIONS)
    seen["named"] = svc.board(BoardOptions(ci_method="sandwich", min_battles=0, include_named=True))[
        "n_votes"
    ]
    seen["matrices"] = {k: v.to_json() for k, v in svc.matrices(OPTIONS).items()}
    seen["over_time"] = svc.over_time(OPTIONS).to_json()
    ratings, pair_counts = svc.sampler_inputs()
    seen["sampler"] = (sorted(pair_counts.items()), sorted((k, repr(v)) for k, v in ratings.items()))
    with db.session() as s:
        seen["records"] = len(
            battle_records(s, include_named=True, include_revealed=True, include_self_play=True)
        )
        seen["vibes"] = [vibe_profile(s, n)["n_answers"] for n in NAMES]
        seen["speed"] = sorted((k, sorted(v.items())) for k, v in goldilocks.speed_stats(s).items())
        seen["families"] = [
            (m.name, m.votes_after_publish, m.provisional)
            for f in families(s, board["models"])
            for m in f.members
        ]
        seen["identifiability"] = len(ended_answers(s))
    seen["data"] = _counts(SimpleNamespace(db=db))
    for n in NAMES:
        page = model_page(db, n, svc)
        seen[f"page:{n}"] = json.dumps(
            {k: page[k] for k in ("ratings", "head_to_head", "vibe_profile", "speed", "identifiability")},
            default=str,
            sort_keys=True,
        )
    return json.dumps(seen, default=str, sort_keys=True)


@pytest.mark.parametrize("ending", ["idle", "reveal"])
def test_an_open_battle_moves_nothing_until_it_ends(db, fake, ending):
    for n in NAMES:
        register_http(db, fake, n, "fixed")
    svc = ArenaService(db, ArenaLimits(idle_minutes=30.0))
    before = _everything(db)
    bid = svc.start_battle().battle_id
    list(svc.generate_turn(bid, "first question"))
    assert _everything(db) == before, "the answers of an open battle moved a view"
    svc.record_vote(bid, "left")
    list(svc.generate_turn(bid, "second question"))
    svc.record_vote(bid, "right")
    assert _everything(db) == before, "the votes of an open battle moved a view"
    named = svc.start_battle(pair=_ids(db), mode="named").battle_id
    list(svc.generate_turn(named, "named question"))
    svc.record_vote(named, "tie")
    assert _everything(db) == before, "an open named battle moved a view"
    if ending == "idle":
        with db.session() as s:
            s.get(Battle, bid).active_at = db_now(s) - timedelta(minutes=31)
        assert svc.end_idle_battles() == [bid]
    elif ending == "new_round":
        svc.new_round(bid)
    else:
        svc.reveal(bid)
    after = json.loads(_everything(db))
    assert after["n_votes"] == 2 and after["records"] == 2
    assert after["families"] != json.loads(before)["families"]
    assert after["vibes"] == [2, 2] and after["identifiability"] == 4


def _ids(db):
    from vibestudio.arena.registry import get_contestant

    with db.session() as s:
        return tuple(get_contestant(s, n).id for n in NAMES)
