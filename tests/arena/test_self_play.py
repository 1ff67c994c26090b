"""Self-play battles: one contestant on both sides at two temperatures, votes like any battle, counted nowhere in the
standings, and frozen into preference snapshots as on-policy pairs with each answer's sampling on record.

Answers come from ``FakeOpenAI`` at the HTTP edge; its ``sampler`` model says the temperature and seed it was sent,
so a test can tell which sampling wrote which answer.
"""

from __future__ import annotations

import random
from dataclasses import asdict

import pytest
from sqlalchemy import func, select

from tests.helpers.fake_openai import FakeOpenAI, register_http
from tests.helpers.standings import NAMES, register_contestants, write_battles
from vibestudio.annotation.snapshots import load_snapshot, snapshot_from_votes
from vibestudio.arena import lifecycle
from vibestudio.arena.battles import ArenaService, BattleError
from vibestudio.arena.self_play import (
    SELF_PLAY,
    check_temperatures,
    default_temperatures,
    effective_sampling,
    parse_temperatures,
)
from vibestudio.db.models import Battle, Contestant, Turn, Vote
from vibestudio.standings.families import _votes_after_publish
from vibestudio.standings.goldilocks import speed_stats
from vibestudio.standings.leaderboard import BoardOptions, LeaderboardService, vibe_profile
from vibestudio.standings.records import battle_records
from vibestudio.standings.vote_cache import VoteCache
from vibestudio.training.objectives.pairmix import pair_mix


@pytest.fixture
def fake():
    f = FakeOpenAI()
    yield f
    f.close()


def _http(db, fake, name, model, sampling=None, aliases=()):
    return register_http(
        db, fake, name, model, sampling=sampling or {"max_tokens": 16, "top_p": 0.8}, aliases=aliases
    )


def _said(text: str) -> tuple[float, int]:
    """The (temperature, seed) a ``sampler`` answer says it was asked for."""
    t, seed = text.split()
    return float(t.removeprefix("t=")), int(seed.removeprefix("seed="))


def _count(db, model) -> int:
    with db.session() as s:
        return s.scalar(select(func.count(model.id))) or 0


def test_one_contestant_answers_both_sides_at_its_two_temperatures(db, fake):
    cid = _http(db, fake, "solo", "sampler")
    svc = ArenaService(db, rng=random.Random(3))
    view = svc.start_self_play("solo", (0.3, 1.0))
    assert (view.mode, view.left_name, view.right_name, view.temperatures) == (
        SELF_PLAY,
        "solo",
        "solo",
        (0.3, 1.0),
    )
    with db.session() as s:
        b = s.get(Battle, view.battle_id)
        assert (b.a_id, b.b_id, b.sampler, b.sampling_prob) == (cid, cid, SELF_PLAY, None)
        over_a, over_b, left_is_a = b.sampling_a, b.sampling_b, b.left_is_a
    assert (over_a["temperature"], over_b["temperature"]) == (0.3, 1.0)
    assert over_a["seed"] != over_b["seed"]
    for turn, text in enumerate(("Hi.", "And again?")):
        last = list(svc.generate_turn(view.battle_id, text))[-1]
        assert last.done and last.error is None and last.turn_idx == turn
        left, right = (over_a, over_b) if left_is_a else (over_b, over_a)
        # each side answered with its own override, and the same one on every turn
        assert _said(last.left) == (left["temperature"], left["seed"])
        assert _said(last.right) == (right["temperature"], right["seed"])
    # the contestant's own sampling is kept under the override
    assert all(r["top_p"] == 0.8 and r["max_tokens"] == 16 for r in fake.requests)
    assert sorted(r["temperature"] for r in fake.requests) == [0.3, 0.3, 1.0, 1.0]
    receipt = svc.record_vote(view.battle_id, "left")
    assert "temperature" not in repr(receipt) and not receipt.revealed_before_vote
    reveal = svc.reveal(view.battle_id)
    assert (reveal.left_name, reveal.right_name, reveal.mode) == ("solo", "solo", SELF_PLAY)
    assert reveal.left_sampling == left and reveal.right_sampling == right


def test_which_side_has_which_temperature_is_hidden_until_the_reveal(db, fake):
    _http(db, fake, "solo", "counter")
    svc = ArenaService(db, rng=random.Random(0))
    seen, layouts = [], set()
    for _ in range(12):
        view = svc.start_self_play("solo", (1.0, 0.3))
        updates = list(svc.generate_turn(view.battle_id, "q"))
        receipt = svc.record_vote(view.battle_id, "right")
        with db.session() as s:
            layouts.add(s.get(Battle, view.battle_id).left_is_a)
        seen.append((asdict(view) | {"battle_id": 0}, repr(updates) + repr(receipt)))
        reveal = svc.reveal(view.battle_id)
        assert {reveal.left_sampling["temperature"], reveal.right_sampling["temperature"]} == {0.3, 1.0}
    assert layouts == {True, False}  # the coin put the first temperature on both screen sides
    views = [v for v, _ in seen]
    assert all(v == views[0] for v in views) and views[0]["temperatures"] == (0.3, 1.0)
    assert not any("seed" in text or "temperature" in text for _, text in seen)


def test_default_temperatures_and_bad_input_write_nothing(db, fake):
    _http(db, fake, "warm", "fixed", {"temperature": 0.7})
    _http(db, fake, "cold", "fixed", {"temperature": 0.2})
    _http(db, fake, "plain", "fixed", {})
    retired = _http(db, fake, "retired", "fixed")
    with db.session() as s:
        lifecycle.hide(s, retired, "retired for the test", by="tester")
    assert default_temperatures(0.7) == (0.7, 0.3) and default_temperatures(0.2) == (0.2, 1.0)
    assert default_temperatures(None) == (0.7, 0.3) and default_temperatures(1.5) == (1.5, 0.3)
    svc = ArenaService(db)
    for name, want in (("warm", (0.3, 0.7)), ("cold", (0.2, 1.0)), ("plain", (0.3, 0.7))):
        assert svc.start_self_play(name).temperatures == want
    n = _count(db, Battle)
    for args, msg in (
        (("ghost", (0.3, 1.0)), "no contestant 'ghost'"),
        ((999, (0.3, 1.0)), "no contestant 999"),
        (("retired", (0.3, 1.0)), "is hidden, not released"),
        (("warm", (0.0, 0.0)), "both temperatures are 0"),
        (("warm", (0.3,)), "exactly two temperatures"),
        (("warm", (0.3, 1.0, 2.0)), "exactly two temperatures"),
        (("warm", "0.3,1.0"), "exactly two temperatures"),
        (("warm", ("hot", 1.0)), "temperature 1: 'hot' is not a number"),
        (("warm", (0.3, None)), "temperature 2: None is not a number"),
        (("warm", (True, 1.0)), "temperature 1: True is not a number"),
        (("warm", (-0.1, 1.0)), "outside 0..5"),
        (("warm", (0.3, 9)), "temperature 2: 9 is outside 0..5"),
        (("warm", (float("nan"), 1.0)), "outside 0..5"),
    ):
        with pytest.raises(BattleError, match=msg):
            svc.start_self_play(*args)
    with pytest.raises(BattleError, match="prompt 123 does not exist"):
        svc.start_self_play("warm", prompt_id=123)
    with pytest.raises(BattleError, match="start_self_play"):
        svc.start_battle(mode=SELF_PLAY)
    with db.session() as s:
        warm = s.scalar(select(Battle.a_id).limit(1))
    with pytest.raises(BattleError, match="cannot battle itself"):
        svc.start_battle(pair=(warm, warm), mode="named")
    assert _count(db, Battle) == n  # every refusal came before any write
    # equal temperatures: two samples at one temperature, told apart by their seeds
    same = svc.start_self_play("warm", (0.7, 0.7))
    with db.session() as s:
        b = s.get(Battle, same.battle_id)
        assert b.sampling_a["temperature"] == b.sampling_b["temperature"] == 0.7
        assert b.sampling_a["seed"] != b.sampling_b["seed"]
    assert parse_temperatures(" 0.3 , 1 ") == (0.3, 1.0) == check_temperatures(["0.3", 1])
    for text in ("0.3", "0.3,", "0.3;1.0", "a,b", ""):
        with pytest.raises(ValueError, match="temperature"):
            parse_temperatures(text)


def test_regenerate_and_new_round_sample_again_with_new_seeds(db, fake):
    _http(db, fake, "solo", "sampler")
    svc = ArenaService(db, rng=random.Random(5))
    bid = svc.start_self_play("solo", (0.4, 0.9)).battle_id
    first = list(svc.generate_turn(bid, "q"))[-1]
    again = list(svc.regenerate(bid))[-1]
    (t_l, s_l), (t_r, s_r) = _said(first.left), _said(first.right)
    assert _said(again.left) == (t_l, s_l + 1) and _said(again.right) == (t_r, s_r + 1)
    svc.record_vote(bid, "left")
    nxt = svc.new_round(bid)
    assert nxt.mode == SELF_PLAY and nxt.left_name == "solo" and nxt.temperatures == (0.4, 0.9)
    with db.session() as s:
        old, new = s.get(Battle, bid), s.get(Battle, nxt.battle_id)
        assert old.status == "voted"
        assert (new.sampling_a["temperature"], new.sampling_b["temperature"]) == (
            old.sampling_a["temperature"],
            old.sampling_b["temperature"],
        )
        assert {new.sampling_a["seed"], new.sampling_b["seed"]}.isdisjoint(
            {old.sampling_a["seed"], old.sampling_b["seed"]}
        )
    # the record of the voted (regenerated) turn carries the seeds its answers were sampled with
    with db.session() as s:
        (rec,) = battle_records(s, include_self_play=True)
    assert {(rec["sampling_a"]["temperature"], rec["sampling_a"]["seed"])} | {
        (rec["sampling_b"]["temperature"], rec["sampling_b"]["seed"])
    } == {(t_l, s_l + 1), (t_r, s_r + 1)}


def test_a_self_play_vote_never_changes_the_standings(db, fake, tmp_path):
    ids = register_contestants(db)
    write_battles(db, ids, 60)
    with db.session() as s:  # alpha answers through the scripted server
        alpha = s.get_one(Contestant, ids["alpha"])
        alpha.engine, alpha.model_ref, alpha.engine_config = "openai", "sampler", fake.config()
    board = LeaderboardService(db, VoteCache(db, tmp_path / "cache"))
    named = BoardOptions(ci_method="sandwich", include_named=True, include_revealed=True, min_battles=0)

    def everything():
        out = board.board(named)
        with db.session() as s:
            profiles = {n: vibe_profile(s, n)["n_answers"] for n in NAMES}
            plain = battle_records(s, with_text=False, include_named=True, include_revealed=True)
            speed = speed_stats(s)
            family = _votes_after_publish(s, list(ids.values()))
        return (
            out["n_votes"],
            [(m["name"], m["n_battles"], m["wins"], m["rating"], m.get("elo")) for m in out["models"]],
            board.matrices(named)["counts"].to_dict(),
            board.sampler_inputs(),
            profiles,
            [r["vote_id"] for r in plain],
            speed,
            family,
        )

    before = everything()
    svc = ArenaService(db, rng=random.Random(1))
    bid = svc.start_self_play("alpha", (0.3, 1.0)).battle_id
    for q in ("q1", "q2"):
        list(svc.generate_turn(bid, q))
        svc.record_vote(bid, "left")
    svc.reveal(bid)
    assert everything() == before
    # read, flagged, and left out of the cache's rated rows and cells
    cache = board.cache
    rows = cache.column("self_play")
    assert rows.sum() == 2 and set(cache.column("battle_id")[rows].tolist()) == {bid}
    assert cache.query("SELECT count(*) AS n FROM votes WHERE battle_id = ?", [bid])["n"][0] == 0
    with db.session() as s:  # only a reader that asks for self-play sees it
        every = battle_records(
            s, with_text=False, include_named=True, include_revealed=True, include_self_play=True
        )
    assert len(every) == len(before[5]) + 2 and {r["battle_id"] for r in every[-2:]} == {bid}


def test_snapshot_rows_are_on_policy_with_each_answers_sampling(db, fake):
    _http(db, fake, "solo", "sampler")
    _http(db, fake, "same", "fixed")
    x = _http(db, fake, "x", "counter")
    y = _http(db, fake, "y", "fixed")
    svc = ArenaService(db, rng=random.Random(2))
    bid = svc.start_self_play("solo", (0.3, 1.0)).battle_id
    last = list(svc.generate_turn(bid, "Pick one."))[-1]
    svc.vote(bid, "right")
    dull = svc.start_self_play("same", (0.3, 1.0)).battle_id  # the fixed model says the same thing twice
    list(svc.generate_turn(dull, "q"))
    svc.vote(dull, "left")
    other = svc.start_battle(pair=(x, y)).battle_id  # an anonymous battle between two others
    list(svc.generate_turn(other, "q"))
    svc.vote(other, "left")
    with db.session() as s:
        snap = snapshot_from_votes(s)
        without = snapshot_from_votes(s, include_self_play=False)
    assert snap.skipped["same_answer"] == 1 and without.n_pairs == 1
    rows = load_snapshot(snap.path, snap.hash, provenance=True)
    assert snap.n_pairs == len(rows) == 2
    (mine,) = [r for r in rows if r["provenance"].get("self_play")]
    prov = mine["provenance"]
    assert prov["chosen_model"] == prov["rejected_model"] == prov["self_play"]["policy"] == "solo"
    assert prov["battle_id"] == bid and prov["turn"] == 1
    chosen, rejected = prov["self_play"]["chosen_sampling"], prov["self_play"]["rejected_sampling"]
    # the vote was "right": the chosen answer is the right pane's, and its sampling is the one that wrote it
    assert mine["chosen"][0]["content"] == last.right and mine["rejected"][0]["content"] == last.left
    assert _said(last.right) == (chosen["temperature"], chosen["seed"])
    assert _said(last.left) == (rejected["temperature"], rejected["seed"])
    assert chosen["top_p"] == rejected["top_p"] == 0.8
    assert pair_mix(rows, "solo") == {"on": 1, "half": 0, "off": 1, "unknown": 0, "total": 2}
    assert pair_mix(rows, "x")["on"] == 0
    (theirs,) = [r for r in rows if not r["provenance"].get("self_play")]
    assert "self_play" not in theirs["provenance"]


def test_a_self_play_answer_that_names_the_model_does_not_flag_the_vote(db, fake):
    _http(db, fake, "sunny-bot", "sunny", aliases=["Sunny"])
    svc = ArenaService(db)
    bid = svc.start_self_play("sunny-bot", (0.3, 1.0)).battle_id
    list(svc.generate_turn(bid, "Who are you?"))
    with db.session() as s:
        t = s.scalar(select(Turn))
        assert t.leak_a and t.leak_b  # on record
    assert not svc.record_vote(bid, "left").revealed_before_vote  # but the name was never a secret here
    with db.session() as s:
        assert not s.scalar(select(Vote.revealed_before_vote))


def test_effective_sampling_without_an_override_is_the_contestants_own():
    own = {"temperature": 0.7, "seed": 3}
    assert effective_sampling(own, None, 2) == own
    assert effective_sampling(own, {"temperature": 1.0, "seed": 10}, 2) == {"temperature": 1.0, "seed": 12}
    assert effective_sampling(None, {"temperature": 0.3}) == {"temperature": 0.3}


def test_cli_plays_a_self_play_battle(monkeypatch, tmp_path, fake):
    from typer.testing import CliRunner

    from vibestudio.db.session import Database
    from vibestudio.studio.cli import app

    monkeypatch.setenv("VIBESTUDIO_HOME", str(tmp_path / "cli-home"))
    db = Database()
    db.migrate()
    _http(db, fake, "cli-solo", "sampler")
    db.dispose()
    args = [
        "battle",
        "--self-play",
        "cli-solo",
        "--temperatures",
        "0.3,1.0",
        "--prompt",
        "Hi",
        "--vote",
        "left",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "Self-play: cli-solo at temperatures 0.3 and 1 (sides hidden)" in result.output
    reveal = result.output.strip().splitlines()[-1]
    assert reveal.count("cli-solo at temperature") == 2 and {"0.3", "1"} == {
        part.split("at temperature ")[1].split()[0] for part in reveal.split(" · ")
    }
    db = Database()
    with db.session() as s:
        b = s.scalars(select(Battle)).one()
        assert b.mode == SELF_PLAY and b.status == "voted" and b.a_id == b.b_id
    db.dispose()
    for bad, msg in (
        (["--self-play", "cli-solo", "--temperatures", "0.3"], "two numbers separated by a comma"),
        (["--self-play", "cli-solo", "--temperatures", "0,0"], "both temperatures are 0"),
        (["--self-play", "ghost"], "no contestant 'ghost'"),
        (["--temperatures", "0.3,1.0"], "goes with --self-play"),
        (["--self-play", "cli-solo", "--named", "a,b"], "not both"),
    ):
        out = CliRunner().invoke(app, ["battle", "--prompt", "Hi", "--vote", "left", *bad])
        assert out.exit_code == 1 and msg in out.output, out.output
    db = Database()
    with db.session() as s:
        assert s.scalar(select(func.count(Battle.id))) == 1  # the refused runs wrote nothing
    db.dispose()
