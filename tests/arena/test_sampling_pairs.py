"""Pair sampling: the active-sampling rule, exact stored probabilities, new-contestant priority, include/exclude
lists, left/right coin, no crash on empty, zero or invalid weights, and the ratings the arena reads from the
leaderboard's cache (one cache, one fit)."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from sqlalchemy import select

import vibestudio.standings.ratings as standings_ratings
from vibestudio.arena.battles import ArenaService, BattleError
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.arena.sampling import (
    PairPolicy,
    RatingInfo,
    SamplerInputs,
    SamplingError,
    active_weights,
    draw_pair,
    eligible,
    pair_probabilities,
    weighted_pair,
)
from vibestudio.db.models import Battle, Turn, Vote
from vibestudio.standings.leaderboard import SAMPLER_BOARD, LeaderboardService
from vibestudio.standings.records import battle_records
from vibestudio.standings.vote_cache import VoteCache

SETTLED = dict(new_until_battles=0, new_until_ci=math.inf)


def test_active_weight_follows_the_formula():
    policy = PairPolicy(**SETTLED)
    ratings = {1: RatingInfo(1000, 960.8, 1039.2, 50), 2: RatingInfo(1000, 921.6, 1078.4, 50)}
    w = active_weights([1, 2], ratings, {(1, 2): 3}, policy)[(1, 2)]
    sd1, sd2 = 78.4 / (2 * 1.959963984540054), 156.8 / (2 * 1.959963984540054)
    assert w == pytest.approx(math.sqrt(sd1**2 + sd2**2) * (1 - math.sqrt(4 / 5)))


def test_uncertain_and_rarely_played_pairs_weigh_more():
    policy = PairPolicy(**SETTLED)
    tight, wide = RatingInfo(1000, 990, 1010, 500), RatingInfo(1000, 900, 1100, 500)
    w = active_weights([1, 2, 3], {1: tight, 2: tight, 3: wide}, {(1, 2): 10, (1, 3): 10, (2, 3): 10}, policy)
    assert w[(1, 3)] > w[(1, 2)]
    w2 = active_weights([1, 2, 3], {1: tight, 2: tight, 3: tight}, {(1, 2): 100, (1, 3): 1}, policy)
    assert w2[(1, 3)] > w2[(1, 2)] and w2[(2, 3)] > w2[(1, 3)]  # (2, 3) never played


def test_new_contestants_get_priority_until_their_interval_narrows():
    policy = PairPolicy(new_boost=4.0, new_until_battles=10, new_until_ci=100)
    old = RatingInfo(1000, 980, 1020, 300)
    counts = {(1, 2): 300}
    fresh = active_weights([1, 2, 3], {1: old, 2: old}, counts, policy)  # 3 has no rating yet
    settled = active_weights([1, 2, 3], {1: old, 2: old, 3: RatingInfo(1000, 980, 1020, 300)}, counts, policy)
    share = pair_probabilities(fresh)[0]
    assert share[(1, 3)] + share[(2, 3)] > 0.95
    assert fresh[(1, 3)] > 4 * settled[(1, 3)]
    wide = active_weights([1, 2, 3], {1: old, 2: old, 3: RatingInfo(1000, 850, 1150, 40)}, counts, policy)
    narrow = active_weights([1, 2, 3], {1: old, 2: old, 3: RatingInfo(1000, 960, 1040, 40)}, counts, policy)
    assert wide[(1, 3)] / narrow[(1, 3)] > 4  # boost (x4) on top of the wider interval


def test_drawn_probability_is_exact():
    policy = PairPolicy(**SETTLED, uniform_mix=0.2)
    ratings = {1: RatingInfo(1000, 990, 1010, 99), 2: RatingInfo(1000, 900, 1100, 99)}
    weights = active_weights([1, 2, 3], ratings, {(1, 2): 5}, policy)
    probs, fell_back = pair_probabilities(weights, 0.2)
    assert not fell_back and sum(probs.values()) == pytest.approx(1.0)
    assert min(probs.values()) >= 0.2 / 3 - 1e-12
    rng = random.Random(7)
    n = 30000
    draws = [draw_pair([1, 2, 3], rng, policy, ratings, {(1, 2): 5}) for _ in range(n)]
    freq = Counter((d.a_id, d.b_id) for d in draws)
    for d in draws[:50]:
        assert d.probability == pytest.approx(probs[(d.a_id, d.b_id)]) and d.sampler == "active"
    for pair, p in probs.items():
        assert freq[pair] / n == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / n))


@pytest.mark.parametrize(
    "weights",
    [{(1, 2): 0.0, (1, 3): 0.0}, {(1, 2): float("nan"), (1, 3): -1.0}, {(1, 2): float("inf"), (1, 3): 0.0}],
)
def test_zero_or_invalid_weights_fall_back_to_uniform(weights):
    d = weighted_pair(weights, random.Random(0), uniform_mix=0.1)
    assert d.sampler == "uniform-fallback" and d.probability == pytest.approx(0.5)


def test_inf_in_ratings_never_crashes_a_draw():
    bad = RatingInfo(float("nan"), float("-inf"), float("inf"), 3)
    d = draw_pair([1, 2, 3], random.Random(1), PairPolicy(), {1: bad, 2: bad}, {})
    assert d.probability is not None and 0 < d.probability <= 1
    with pytest.raises(SamplingError, match="no pair"):
        weighted_pair({}, random.Random(0))
    with pytest.raises(SamplingError, match="at least two"):
        draw_pair([1], random.Random(0))


def test_include_and_exclude_lists():
    people = [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    assert eligible(people) == [1, 2, 3, 4]
    assert eligible(people, include=["a", 3]) == [1, 3]
    assert eligible(people, exclude=["d", "2"]) == [1, 3]
    with pytest.raises(SamplingError, match="'zz'"):
        eligible(people, include=["zz"])
    with pytest.raises(SamplingError, match="after the include/exclude lists"):
        eligible(people, include=["a", "b"], exclude=["b"])
    with pytest.raises(SamplingError, match="unknown sampler"):
        PairPolicy(sampler="greedy")


def _contestants(db, n):
    with db.session() as s:
        return [register(s, ContestantSpec(f"m{i}", sampling={"max_tokens": 4})) for i in range(n)]


def _voted_battles(db, pairs, rng):
    with db.session() as s:
        for a, b in pairs:
            battle = Battle(
                a_id=a, b_id=b, left_is_a=True, sampling_prob=0.5, mode="anonymous", status="voted"
            )
            s.add(battle)
            s.flush()
            s.add(Turn(battle_id=battle.id, idx=0, user_msg="q", answer_a="x", answer_b="y"))
            s.add(Vote(battle_id=battle.id, turn_idx=0, outcome=rng.choice(["a", "b", "tie"])))


def test_service_stores_the_exact_probability_and_a_fair_left_right_coin(db):
    ids = _contestants(db, 4)
    rng = random.Random(3)
    _voted_battles(db, [(ids[0], ids[1])] * 60 + [(ids[1], ids[2])] * 30, rng)
    svc = ArenaService(db, rng=random.Random(5), ratings=LeaderboardService(db).sampler_inputs)
    views = [svc.start_battle() for _ in range(400)]
    with db.session() as s:
        battles = [s.get(Battle, v.battle_id) for v in views]
    ratings, counts = svc.sampler_inputs()
    weights = active_weights(sorted(ids), ratings, counts, svc.policy)
    probs, _ = pair_probabilities(weights, svc.policy.uniform_mix)
    for b in battles:
        assert b.sampler == "active"
        assert b.sampling_prob == pytest.approx(probs[(min(b.a_id, b.b_id), max(b.a_id, b.b_id))])
    lefts = sum(b.left_is_a for b in battles)
    assert 160 < lefts < 240
    seen = Counter(frozenset((b.a_id, b.b_id)) for b in battles)
    new_pairs = sum(n for pair, n in seen.items() if ids[3] in pair)
    assert (
        new_pairs / len(battles) > 0.5 + 0.1
    )  # the never-played contestant is in 3 of 6 pairs, drawn far more


def test_service_include_exclude_and_uniform(db):
    ids = _contestants(db, 3)
    svc = ArenaService(db, policy=PairPolicy(sampler="uniform", exclude=["m2"]))
    for _ in range(20):
        v = svc.start_battle()
        with db.session() as s:
            b = s.get(Battle, v.battle_id)
            assert {b.a_id, b.b_id} == {ids[0], ids[1]} and b.sampling_prob == 1.0 and b.sampler == "uniform"
    with pytest.raises(BattleError, match="not an active contestant"):
        svc.start_battle(include=["nobody"])
    with pytest.raises(BattleError, match="at least two"):
        svc.start_battle(include=["m0"])
    with db.session() as s:
        assert len(list(s.scalars(select(Battle)))) == 20


def test_an_arena_without_a_rating_source_sees_everyone_unrated(db):
    ids = _contestants(db, 3)
    _voted_battles(db, [(ids[0], ids[1])] * 30, random.Random(1))  # votes it does not read
    svc = ArenaService(db, rng=random.Random(4))
    assert svc.sampler_inputs() == SamplerInputs({}, {})
    views = [svc.start_battle() for _ in range(30)]
    with db.session() as s:
        battles = [s.get(Battle, v.battle_id) for v in views]
    assert all(b.sampler == "active" and b.sampling_prob == pytest.approx(1 / 3) for b in battles)
    assert len({frozenset((b.a_id, b.b_id)) for b in battles}) == 3


def test_ratings_ttl_reuses_the_sources_answer(db):
    _contestants(db, 2)
    calls = []

    def source() -> SamplerInputs:
        calls.append(1)
        return SamplerInputs({}, {})

    svc = ArenaService(db, ratings=source)
    svc.start_battle()
    svc.start_battle()
    assert len(calls) == 2  # asked on every draw (the source caches)
    svc.ratings_ttl_s = 60.0
    svc.start_battle()
    svc.start_battle()
    assert len(calls) == 2  # its last answer is reused for a minute
    ArenaService(db, policy=PairPolicy(sampler="uniform"), ratings=source).start_battle()
    assert len(calls) == 2  # the uniform sampler never asks


def test_a_vote_through_the_arena_reaches_the_sampler_through_the_shared_cache(db, monkeypatch):
    """The leaderboard service is the arena's rating source: a vote recorded through the arena changes what the
    next draw sees after one fit, and the leaderboard's board for the same options is that same fit."""
    ids = _contestants(db, 3)
    _voted_battles(db, [(ids[0], ids[1])] * 20 + [(ids[1], ids[2])] * 10, random.Random(1))
    board = LeaderboardService(db, VoteCache(db, persist=False))
    svc = ArenaService(db, rng=random.Random(2), ratings=board.sampler_inputs)
    before = svc.sampler_inputs()
    assert before.pair_counts == {(ids[0], ids[1]): 20, (ids[1], ids[2]): 10}
    with db.session() as s:  # the plain path: every vote through the ORM, one fit
        plain = standings_ratings.leaderboard(
            battle_records(s, with_text=False), ci_method="sandwich", elo_k=None, min_battles=0
        )
    by_name = {m.name: m for m in plain.models}
    for i, cid in enumerate(ids):
        got, want = before.ratings[cid], by_name[f"m{i}"]
        assert (got.rating, got.ci_low, got.ci_high) == pytest.approx(
            (want.rating, want.ci_low, want.ci_high)
        )
        assert got.n_battles == want.n_battles

    view = svc.start_battle(pair=(ids[0], ids[2]))  # anonymous, a chosen pair: its vote is rated
    with db.session() as s:
        s.add(Turn(battle_id=view.battle_id, idx=0, user_msg="q", answer_a="x", answer_b="y"))
    svc.record_vote(view.battle_id, "left")
    assert svc.sampler_inputs() == before  # a battle still open counts nowhere

    fits: list[int] = []
    fit = standings_ratings.leaderboard
    monkeypatch.setattr(standings_ratings, "leaderboard", lambda *a, **k: fits.append(1) or fit(*a, **k))
    svc.reveal(view.battle_id)
    after = svc.sampler_inputs()
    assert after.pair_counts == {**before.pair_counts, (ids[0], ids[2]): 1}
    assert after.ratings[ids[2]].n_battles == before.ratings[ids[2]].n_battles + 1
    assert after.ratings[ids[0]].rating != before.ratings[ids[0]].rating
    for _ in range(5):
        svc.start_battle()
    shown = board.board(SAMPLER_BOARD)
    assert len(fits) == 1  # five draws and the board: one refit after the vote
    assert {m["name"]: m["rating"] for m in shown["models"]} == {
        f"m{i}": after.ratings[cid].rating for i, cid in enumerate(ids)
    }
