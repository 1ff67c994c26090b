"""Battle lifecycle: streaming, multi-turn context, blind votes per turn, reveal, regenerate, new round, named mode,
anonymity of everything returned before the reveal, engine failures, queueing and bad input.

The core flow runs on the real llama.cpp engine (short answers); edge cases that need an engine to misbehave on
cue run on ``FakeOpenAI``, a scripted server at the HTTP edge.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import asdict

import pytest
from sqlalchemy import func, select

from tests.helpers.fake_openai import FakeOpenAI, register_http
from vibestudio.arena.battles import ArenaLimits, ArenaService, BattleError, Reveal, VoteReceipt
from vibestudio.arena.registry import (
    ContestantSpec,
    RegistryError,
    ensure_defaults,
    list_contestants,
    register,
)
from vibestudio.arena.sampling import PairPolicy
from vibestudio.db.models import Battle, RubricScore, Turn, Vote
from vibestudio.standings.records import battle_records


@pytest.fixture
def fake():
    f = FakeOpenAI()
    yield f
    f.close()


def _short_pair(db, n=2):
    with db.session() as s:
        return [
            register(
                s,
                ContestantSpec(
                    f"tiny-{i}",
                    sampling={"max_tokens": 12, "temperature": 0.5, "seed": i},
                    system_prompt="Answer briefly.",
                ),
            )
            for i in range(n)
        ]


_http = register_http
#: Real llama.cpp answers kept short: anonymous battles answer under the arena's one cap, not the personas' 12
SHORT = ArenaLimits(blind_max_tokens=12)


def _count(db, model):
    with db.session() as s:
        return s.scalar(select(func.count(model.id)))


def test_defaults_register_plain_model_and_personas(db):
    with db.session() as s:
        new = ensure_defaults(s)
        again = ensure_defaults(s)
        items = list_contestants(s)
    assert len(new) >= 4 and again == []
    assert {"smollm2-plain", "smollm2-concise", "smollm2-warm", "smollm2-playful"} <= {
        c.public_name for c in items
    }
    assert len({(c.system_prompt, c.prefill, str(c.sampling)) for c in items}) == len(items)
    assert all("SmolLM2" in c.aliases for c in items)


def test_register_rejects_duplicates_and_unknown_fields(db):
    with db.session() as s:
        register(s, ContestantSpec("x"))
    with pytest.raises(RegistryError, match="already exists"), db.session() as s:
        register(s, ContestantSpec("x"))
    with pytest.raises(RegistryError, match="unknown sampling field"), db.session() as s:
        register(s, ContestantSpec("y", sampling={"temprature": 0.3}))
    with pytest.raises(RegistryError, match="engine"), db.session() as s:
        register(s, ContestantSpec("z", engine="nope"))
    with pytest.raises(RegistryError, match="base_url"), db.session() as s:
        register(s, ContestantSpec("w", engine="openai", model_ref="m"))
    with pytest.raises(RegistryError, match="takes no engine_config"), db.session() as s:
        register(s, ContestantSpec("v", engine_config={"base_url": "http://x"}))


def test_turn_streams_both_sides_votes_are_blind_and_reveal_names(db):
    a, b = _short_pair(db)
    svc = ArenaService(db, SHORT, rng=random.Random(1))
    view = svc.start_battle()
    assert view.left_name is None and view.right_name is None
    updates = list(svc.generate_turn(view.battle_id, "Name a colour."))
    assert len(updates) > 2 and updates[-1].done and updates[-1].error is None
    final = updates[-1]
    assert final.left.strip() and final.right.strip() and final.turn_idx == 0
    with db.session() as s:
        battle = s.get(Battle, view.battle_id)
        turn = s.scalar(select(Turn).where(Turn.battle_id == view.battle_id))
        assert {battle.a_id, battle.b_id} == {a, b}
        assert battle.sampling_prob == pytest.approx(1.0) and battle.sampler in ("active", "uniform")
        left_is_a = battle.left_is_a
        assert (turn.answer_a, turn.answer_b) == (
            (final.left, final.right) if left_is_a else (final.right, final.left)
        )
        assert turn.tokens_a > 0 and turn.latency_a is not None and turn.tps_a and turn.tps_a > 0
        assert turn.wait_a is not None and turn.wait_a >= 0
    receipt = svc.record_vote(view.battle_id, "left")
    assert receipt == VoteReceipt(view.battle_id, 0, "left", revealed_before_vote=False)
    assert "tiny" not in repr(receipt)
    with pytest.raises(BattleError, match="already has a vote"):
        svc.record_vote(view.battle_id, "right")
    reveal = svc.reveal(view.battle_id)
    assert reveal.outcome == ("a" if left_is_a else "b")
    assert {reveal.left_name, reveal.right_name} == {"tiny-0", "tiny-1"}
    assert reveal.turns[0].vote == "left" and reveal.turns[0].left.tokens
    assert svc.reveal(view.battle_id).left_name == reveal.left_name  # idempotent
    with pytest.raises(BattleError, match="ended"):
        list(svc.generate_turn(view.battle_id, "More?"))
    with pytest.raises(BattleError, match="ended"):
        svc.record_vote(view.battle_id, "tie", turn_idx=0)
    assert _count(db, Vote) == 1


def test_each_side_keeps_its_own_context_and_every_turn_can_be_voted(db, fake):
    _http(db, fake, "echo-x", "echo", system_prompt="sys-X")
    _http(db, fake, "echo-y", "echo", system_prompt="sys-Y")
    svc = ArenaService(db)
    bid = svc.start_battle().battle_id
    list(svc.generate_turn(bid, "first"))
    svc.record_vote(bid, "tie")
    list(svc.generate_turn(bid, "second"))
    with db.session() as s:
        turns = list(s.scalars(select(Turn).where(Turn.battle_id == bid).order_by(Turn.idx)))
    second = [r for r in fake.requests if r["messages"][-1]["content"] == "second"]
    assert len(second) == 2
    for req in second:
        system = req["messages"][0]["content"]
        assert [m["role"] for m in req["messages"]] == ["system", "user", "assistant", "user"]
        # its own first answer (the echo of its own system prompt), never the other side's
        assert req["messages"][2]["content"] == f"system={system}; user=first; "
    assert {req["messages"][0]["content"] for req in second} == {"sys-X", "sys-Y"}
    assert {turns[0].answer_a, turns[0].answer_b} == {
        "system=sys-X; user=first; ",
        "system=sys-Y; user=first; ",
    }
    r = svc.record_vote(bid, "both_bad", turn_idx=1)
    assert r.turn_idx == 1
    with db.session() as s:
        outcomes = list(s.scalars(select(Vote.outcome).where(Vote.battle_id == bid).order_by(Vote.turn_idx)))
    assert outcomes == ["tie", "both_bad"]
    assert battle_records_for(db) == []  # an open battle counts nowhere
    svc.reveal(bid)
    assert [rec["turn"] for rec in battle_records_for(db)] == [1, 2]


def battle_records_for(db, **kw):
    with db.session() as s:
        return battle_records(s, **kw)


def test_five_outcomes_are_stored_distinctly_with_rubric_scores(db, fake):
    _http(db, fake, "f1", "fixed")
    _http(db, fake, "f2", "counter")
    svc = ArenaService(db, limits=ArenaLimits(max_turns=5))
    bid = svc.start_battle().battle_id
    with db.session() as s:
        left_is_a = s.get(Battle, bid).left_is_a
    for i, choice in enumerate(("left", "right", "tie", "both_good", "both_bad")):
        list(svc.generate_turn(bid, f"q{i}"))
        rubric = {"helpfulness": {"left": 5, "right": 2}} if i == 0 else None
        svc.record_vote(bid, choice, rubric=rubric)
    with db.session() as s:
        outcomes = list(s.scalars(select(Vote.outcome).where(Vote.battle_id == bid).order_by(Vote.turn_idx)))
        scores = {(r.criterion, r.side): r.value for r in s.scalars(select(RubricScore))}
    a, b = ("a", "b") if left_is_a else ("b", "a")
    assert outcomes == [a, b, "tie", "both_good", "both_bad"]
    assert scores == {("helpfulness", a): 5.0, ("helpfulness", b): 2.0}
    svc.end_battle(bid)
    winners = [r["winner"] for r in battle_records_for(db, with_text=False)]
    assert winners[2:] == ["tie", "tie (bothgood)", "tie (bothbad)"]


def test_bad_rubric_or_vote_stores_nothing(db, fake):
    _http(db, fake, "f1", "fixed")
    _http(db, fake, "f2", "fixed")
    svc = ArenaService(db)
    bid = svc.start_battle().battle_id
    list(svc.generate_turn(bid, "q"))
    for rubric, msg in (
        ({"vibes": {"left": 3}}, "unknown rubric criterion"),
        ({"helpfulness": {"left": 9}}, "outside 1..5"),
        ({"helpfulness": {"middle": 3}}, "side must be"),
        ({"helpfulness": {"left": "lots"}}, "not a number"),
    ):
        with pytest.raises(BattleError, match=msg):
            svc.record_vote(bid, "left", rubric=rubric)
    with pytest.raises(BattleError, match="no turn 3"):
        svc.record_vote(bid, "left", turn_idx=2)
    assert _count(db, Vote) == 0 and _count(db, RubricScore) == 0


def test_regenerate_keeps_replaced_answers_and_is_refused_after_a_vote(db, fake):
    _http(db, fake, "c1", "counter")
    _http(db, fake, "c2", "counter")
    svc = ArenaService(db, limits=ArenaLimits(max_regenerations=1))
    bid = svc.start_battle().battle_id
    first = list(svc.generate_turn(bid, "q"))[-1]
    again = list(svc.regenerate(bid))
    assert again[-1].done and again[-1].regenerated and again[-1].turn_idx == 0
    assert {again[-1].left, again[-1].right}.isdisjoint({first.left, first.right})
    with db.session() as s:
        turn = s.scalar(select(Turn).where(Turn.battle_id == bid))
        assert _count(db, Turn) == 1 and len(turn.replaced) == 1
        assert {turn.replaced[0]["answer_a"], turn.replaced[0]["answer_b"]} == {first.left, first.right}
        assert {turn.answer_a, turn.answer_b} == {again[-1].left, again[-1].right}
    with pytest.raises(BattleError, match="regenerated 1 times"):
        list(svc.regenerate(bid))
    list(svc.generate_turn(bid, "q2"))
    svc.record_vote(bid, "left")
    with pytest.raises(BattleError, match="already has a vote"):
        list(svc.regenerate(bid))
    # the regenerated request saw the same history as the original (nothing from the replaced answer)
    q_requests = [r for r in fake.requests if r["messages"][-1]["content"] == "q"]
    assert len(q_requests) == 4 and all(len(r["messages"]) == 1 for r in q_requests)


def test_leak_in_an_answer_flags_the_turn_and_every_later_vote(db, fake):
    _http(db, fake, "sunny-bot", "sunny", aliases=["Sunny"])
    _http(db, fake, "quiet", "fixed")
    svc = ArenaService(db)
    bid = svc.start_battle().battle_id
    list(svc.generate_turn(bid, "Who are you?"))
    with db.session() as s:
        t = s.scalar(select(Turn))
        assert t.leak_a != t.leak_b  # only the answer that said "Sunny"
    assert svc.record_vote(bid, "left").revealed_before_vote
    svc.end_battle(bid)
    assert battle_records_for(db) == [] and len(battle_records_for(db, include_revealed=True)) == 1


def test_user_words_are_not_scanned(db, fake):
    _http(db, fake, "quiet-1", "fixed", aliases=["Sunny"])
    _http(db, fake, "quiet-2", "fixed")
    svc = ArenaService(db)
    bid = svc.start_battle().battle_id
    list(svc.generate_turn(bid, "Are you Sunny? Or quiet-2? Or SmolLM2?"))
    assert not svc.record_vote(bid, "tie").revealed_before_vote


def test_leak_in_a_replaced_answer_still_counts(db, fake):
    # "counter" never leaks; the alias "answer" makes its first answer a leak, which regenerate cannot undo
    _http(db, fake, "c1", "counter", aliases=["answer 1"])
    _http(db, fake, "c2", "fixed")
    svc = ArenaService(db)
    bid = svc.start_battle().battle_id
    list(svc.generate_turn(bid, "q"))
    list(svc.regenerate(bid))
    with db.session() as s:
        t = s.scalar(select(Turn))
        assert "answer 1" in (t.replaced[0]["answer_a"] + t.replaced[0]["answer_b"])
        assert t.leak_a or t.leak_b
    assert svc.record_vote(bid, "left").revealed_before_vote


def test_real_persona_told_to_state_its_name_is_flagged(db):
    with db.session() as s:
        register(s, ContestantSpec("leaky", prefill="I am SmolLM2, and", sampling={"max_tokens": 6}))
        register(s, ContestantSpec("quiet", prefill="Hello there", sampling={"max_tokens": 6}))
    svc = ArenaService(db, ArenaLimits(strip_prefill=False, blind_max_tokens=6))  # the openings shown
    bid = svc.start_battle().battle_id
    list(svc.generate_turn(bid, "Who are you?"))
    r = svc.vote(bid, "left")
    assert r.revealed_before_vote and isinstance(r, Reveal)
    assert battle_records_for(db) == [] and len(battle_records_for(db, include_revealed=True)) == 1


def test_named_mode_is_stored_flagged_and_left_out_of_ratings(db, fake):
    x = _http(db, fake, "named-x", "fixed")
    y = _http(db, fake, "named-y", "counter")
    svc = ArenaService(db)
    view = svc.start_battle(pair=(y, x), mode="named")
    assert (view.left_name, view.right_name, view.mode) == ("named-y", "named-x", "named")
    list(svc.generate_turn(view.battle_id, "q"))
    svc.record_vote(view.battle_id, "left")
    with db.session() as s:
        b = s.get(Battle, view.battle_id)
        assert b.mode == "named" and b.sampling_prob is None and b.sampler == "named" and b.left_is_a
    assert battle_records_for(db, include_named=True) == []  # open: counted nowhere
    nxt = svc.new_round(view.battle_id)
    assert battle_records_for(db) == []
    assert battle_records_for(db, include_named=True)[0]["model_a"] == "named-y"
    assert (nxt.left_name, nxt.right_name) == ("named-y", "named-x") and nxt.battle_id != view.battle_id
    with pytest.raises(BattleError, match="needs both"):
        svc.start_battle(mode="named")
    with pytest.raises(BattleError, match="itself"):
        svc.start_battle(pair=(x, x), mode="named")


def test_new_round_ends_the_battle_unrevealed_and_draws_again(db, fake):
    _http(db, fake, "n1", "fixed")
    _http(db, fake, "n2", "fixed")
    _http(db, fake, "n3", "fixed")
    svc = ArenaService(db)
    first = svc.start_battle().battle_id
    list(svc.generate_turn(first, "q"))
    second = svc.new_round(first)
    assert second.battle_id != first and second.left_name is None
    with db.session() as s:
        b = s.get(Battle, first)
        assert b.status == "abandoned" and b.ended_at is not None and b.revealed_at is None
    with pytest.raises(BattleError, match="stay anonymous"):
        svc.reveal(first)
    list(svc.generate_turn(second.battle_id, "q"))
    svc.record_vote(second.battle_id, "right")
    svc.new_round(second.battle_id)
    with db.session() as s:
        assert s.get(Battle, second.battle_id).status == "voted"
    assert len(battle_records_for(db)) == 1  # a voted battle counts even if never revealed


def test_reveal_needs_a_vote(db, fake):
    _http(db, fake, "r1", "fixed")
    _http(db, fake, "r2", "fixed")
    svc = ArenaService(db)
    bid = svc.start_battle().battle_id
    with pytest.raises(BattleError, match="vote on at least one turn"):
        svc.reveal(bid)
    list(svc.generate_turn(bid, "q"))
    with pytest.raises(BattleError, match="vote on at least one turn"):
        svc.reveal(bid)


def _identity_strings(db):
    with db.session() as s:
        out = set()
        for c in list_contestants(s, active_only=False):
            out |= {
                c.public_name,
                c.model_ref,
                c.engine,
                str(c.engine_config.get("base_url", "")),
                c.system_prompt,
            }
            out |= set(c.aliases)
    return {x for x in out if x}


def test_nothing_returned_before_the_reveal_names_a_contestant(db, fake):
    _http(db, fake, "zebra-persona", "fixed", system_prompt="You are zebra-persona the helper.")
    _http(db, fake, "okapi-persona", "down-model", base_url=f"http://127.0.0.1:{_closed_port()}/v1")
    svc = ArenaService(db)
    view = svc.start_battle()
    payloads = [repr(asdict(view))]
    updates = list(svc.generate_turn(view.battle_id, "Hello"))
    payloads += [repr(asdict(u)) for u in updates]
    final = updates[-1]
    assert final.done and "will not be rated" in final.error and "not reachable" in final.error
    assert (final.left_error or final.right_error) == "its engine is not reachable"
    for call in (lambda: svc.record_vote(view.battle_id, "left"), lambda: svc.reveal(view.battle_id)):
        with pytest.raises(BattleError) as err:
            call()
        payloads.append(str(err.value))
    blob = "\n".join(payloads)
    for ident in _identity_strings(db):
        assert ident not in blob, ident
    with db.session() as s:
        b = s.get(Battle, view.battle_id)
        assert b.status == "errored" and "okapi-persona" in b.error and "[down]" in b.error
    assert _count(db, Turn) == 0


def _closed_port() -> int:
    from tests.helpers.servers import free_port

    return free_port()


def test_engine_down_marks_battle_errored_and_unvotable(db, tmp_path):
    with db.session() as s:
        register(s, ContestantSpec("ok", sampling={"max_tokens": 8}))
        register(s, ContestantSpec("down", model_ref=str(tmp_path / "missing.gguf")))
    svc = ArenaService(db)
    bid = svc.start_battle().battle_id
    last = list(svc.generate_turn(bid, "Hello"))[-1]
    assert last.done and "not be rated" in last.error and "not reachable" in last.error
    assert str(tmp_path) not in last.error and "missing.gguf" not in last.error
    with db.session() as s:
        b = s.get(Battle, bid)
        assert b.status == "errored" and "missing.gguf" in b.error
        assert s.scalar(select(func.count(Turn.id))) == 0
    with pytest.raises(BattleError, match="errored"):
        svc.vote(bid, "left")


@pytest.mark.parametrize(
    ("model", "public"),
    [("garbage", "malformed"), ("midfail", "engine failed"), ("http500", "engine failed")],
)
def test_garbage_from_an_engine_errors_the_battle(db, fake, model, public):
    _http(db, fake, "good", "fixed")
    _http(db, fake, "bad", model)
    svc = ArenaService(db)
    bid = svc.start_battle().battle_id
    last = list(svc.generate_turn(bid, "q"))[-1]
    assert last.done and public in last.error and "/secret/path" not in last.error
    assert _count(db, Turn) == 0


def test_error_on_a_later_turn_takes_the_whole_battle_out_of_ratings(db, fake):
    _http(db, fake, "ok", "fixed")
    flaky = _http(db, fake, "flaky", "fixed")
    svc = ArenaService(db)
    bid = svc.start_battle().battle_id
    list(svc.generate_turn(bid, "q"))
    svc.record_vote(bid, "left")
    assert battle_records_for(db) == []  # open: not counted yet
    with db.session() as s:
        from vibestudio.db.models import Contestant

        s.get(Contestant, flaky).engine_config = fake.config(timeout_s=5) | {
            "base_url": "http://127.0.0.1:9/v1"
        }
    list(svc.generate_turn(bid, "q2"))
    with db.session() as s:
        assert s.get(Battle, bid).status == "errored"
    svc.end_battle(bid)  # leaves an errored battle errored
    assert battle_records_for(db) == []  # errored: never counted


def test_slow_answer_times_out_and_errors_the_battle(db, fake):
    fake.hang_s = 3.0
    _http(db, fake, "fast", "fixed")
    _http(db, fake, "stuck", "hang")
    svc = ArenaService(db, limits=ArenaLimits(answer_timeout_s=0.5))
    bid = svc.start_battle().battle_id
    t0 = time.monotonic()
    last = list(svc.generate_turn(bid, "q"))[-1]
    assert time.monotonic() - t0 < 2.5
    assert "did not answer in time" in last.error
    with db.session() as s:
        assert s.get(Battle, bid).status == "errored" and "[timeout]" in s.get(Battle, bid).error


def test_requests_beyond_an_engines_limit_wait_and_see_their_position(db, fake):
    # both contestants share one engine (same model and server) limited to one answer at a time
    _http(db, fake, "s1", "slow", system_prompt="one", concurrency=1)
    _http(db, fake, "s2", "slow", system_prompt="two", concurrency=1)
    svc = ArenaService(db)
    bid = svc.start_battle().battle_id
    updates = list(svc.generate_turn(bid, "q"))
    assert updates[-1].error is None
    assert any(u.left_queue == 0 or u.right_queue == 0 for u in updates)
    with db.session() as s:
        t = s.scalar(select(Turn))
        assert max(t.wait_a, t.wait_b) > 0.3 and min(t.wait_a, t.wait_b) < 0.3


def test_a_battle_answers_one_turn_at_a_time(db, fake):
    _http(db, fake, "s1", "slow")
    _http(db, fake, "s2", "slow")
    svc = ArenaService(db)
    bid = svc.start_battle().battle_id
    gen = svc.generate_turn(bid, "q")
    next(gen)
    with pytest.raises(BattleError, match="still answering"):
        list(svc.generate_turn(bid, "again"))
    with pytest.raises(BattleError, match="still answering"):
        svc.record_vote(bid, "left")
    gen.close()  # the user went away: the engines are told to stop, nothing is stored
    assert _count(db, Turn) == 0
    assert list(svc.generate_turn(bid, "q"))[-1].error is None


def test_one_user_has_at_most_the_cap_of_turns_in_flight(db, fake):
    from vibestudio.accounts import add_user

    _http(db, fake, "s1", "slow")
    _http(db, fake, "s2", "slow")
    ann, bob = (add_user(db, n, "a long test password").id for n in ("ann", "bob"))
    svc = ArenaService(db, limits=ArenaLimits(turns_in_flight_per_user=1))
    first, second, other = (svc.start_battle(user_id=u).battle_id for u in (ann, ann, bob))
    running = svc.generate_turn(first, "q")
    next(running)
    with pytest.raises(BattleError, match="already have a turn being answered.*VIBESTUDIO_TURNS_IN_FLIGHT"):
        svc.check_turn_slot(ann)
    with pytest.raises(BattleError, match="already have a turn being answered"):
        list(svc.generate_turn(second, "q"))  # another battle of the same user waits for the first
    svc.check_turn_slot(bob)
    assert list(svc.generate_turn(other, "q"))[-1].error is None  # another user is not held back
    svc.check_turn_slot(None)  # the local operator is not capped
    assert list(running)[-1].error is None
    assert list(svc.generate_turn(second, "q"))[-1].error is None  # the slot is free again
    # a turn that stops early (the user went away) gives its slot back too
    gen = svc.regenerate(second)
    next(gen)
    gen.close()
    svc.check_turn_slot(ann)
    unlimited = ArenaService(db, limits=ArenaLimits(turns_in_flight_per_user=0))
    gen = unlimited.generate_turn(first, "again")
    next(gen)
    assert list(unlimited.generate_turn(second, "again"))[-1].error is None
    gen.close()


def test_bad_input_is_refused_and_writes_nothing(db, fake):
    _http(db, fake, "b1", "fixed")
    _http(db, fake, "b2", "fixed")
    svc = ArenaService(db, limits=ArenaLimits(max_prompt_chars=50, max_turns=2, max_conversation_chars=80))
    bid = svc.start_battle().battle_id
    with pytest.raises(BattleError, match="empty"):
        list(svc.generate_turn(bid, "   "))
    with pytest.raises(BattleError, match="limit is 50"):
        list(svc.generate_turn(bid, "x" * 51))
    with pytest.raises(BattleError, match="nothing to vote on"):
        svc.record_vote(bid, "left")
    with pytest.raises(BattleError, match="nothing to regenerate"):
        list(svc.regenerate(bid))
    with pytest.raises(BattleError, match="unknown vote"):
        svc.record_vote(bid, "left-ish")
    with pytest.raises(BattleError, match="does not exist"):
        list(svc.generate_turn(9999, "Hi"))
    with pytest.raises(BattleError, match="unknown mode"):
        svc.start_battle(mode="secret")
    with pytest.raises(BattleError, match="prompt 424242"):
        svc.start_battle(prompt_id=424242)
    list(svc.generate_turn(bid, "Hi " * 10))
    with pytest.raises(BattleError, match="limit is 80"):
        list(svc.generate_turn(bid, "y" * 45))
    list(svc.generate_turn(bid, "Again"))
    with pytest.raises(BattleError, match="limit of 2 turns"):
        list(svc.generate_turn(bid, "Third"))
    assert _count(db, Turn) == 2 and _count(db, Vote) == 0 and _count(db, Battle) == 1


def test_prompt_category_is_stored_with_the_battle(db, fake):
    from vibestudio.arena.prompts import ensure_mt_bench, random_prompt

    _http(db, fake, "p1", "fixed")
    _http(db, fake, "p2", "fixed")
    with db.session() as s:
        ensure_mt_bench(s)
        p = random_prompt(s, rng=random.Random(2))
    svc = ArenaService(db)
    bid = svc.start_battle(prompt_id=p.id).battle_id
    list(svc.generate_turn(bid, p.turns[0]))
    svc.record_vote(bid, "tie")
    svc.end_battle(bid)
    rec = battle_records_for(db)[0]
    assert rec["category"] == p.category and rec["question_id"] == p.question_id


def test_concurrent_battles_on_one_llama_pool_all_finish(db):
    _short_pair(db, n=3)
    svc = ArenaService(db, SHORT, policy=PairPolicy(sampler="uniform"))
    ids = [svc.start_battle().battle_id for _ in range(3)]
    results: dict[int, object] = {}

    def play(bid: int) -> None:
        results[bid] = list(svc.generate_turn(bid, "Say one word."))[-1]

    threads = [threading.Thread(target=play, args=(bid,)) for bid in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert all(results[b].done and results[b].error is None for b in ids)
    assert _count(db, Turn) == 3


def test_cli_plays_a_two_turn_battle_and_reveals(monkeypatch, tmp_path, fake):
    from typer.testing import CliRunner

    from vibestudio.db.session import Database
    from vibestudio.studio.cli import app

    monkeypatch.setenv("VIBESTUDIO_HOME", str(tmp_path / "cli-home"))
    db = Database()
    db.migrate()
    _http(db, fake, "cli-a", "fixed")
    _http(db, fake, "cli-b", "counter")
    db.dispose()
    args = ["battle", "--prompt", "Hi", "--vote", "left", "--prompt", "More", "--vote", "both_bad"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.output.count("Vote on turn") == 2 and "Model A was cli-" in result.output
    db = Database()
    with db.session() as s:
        assert [v.outcome for v in s.scalars(select(Vote).order_by(Vote.turn_idx))][1] == "both_bad"
        assert s.scalars(select(Battle)).one().status == "voted"
    db.dispose()
    bad = CliRunner().invoke(app, ["battle", "--prompt", "Hi", "--vote", "maybe"])
    assert bad.exit_code == 1 and "unknown vote 'maybe'" in bad.output


def test_an_answer_cut_at_its_length_limit_says_so(db):
    from vibestudio.arena.battles import hit_length_limit
    from vibestudio.arena.engines.base import EngineError, GenerationStats
    from vibestudio.arena.registry import get_contestant
    from vibestudio.arena.streaming import SideState

    _short_pair(db)  # max_tokens 12: an essay cannot end in 12 tokens
    svc = ArenaService(db, SHORT, rng=random.Random(3))
    view = svc.start_battle()
    final = list(svc.generate_turn(view.battle_id, "Write a long essay on the history of Rome."))[-1]
    assert final.done and final.error is None
    assert final.left_cut and final.right_cut
    with db.session() as s:
        info = get_contestant(s, "tiny-0")
    assert not hit_length_limit(SideState(info, "Blue.", stats=GenerationStats(tokens=3)), 512)
    assert hit_length_limit(SideState(info, "x", stats=GenerationStats(tokens=12)), 512)
    assert hit_length_limit(SideState(info, "x", stats=GenerationStats(tokens=8)), 8)  # the arena's own cap
    errored = SideState(info, "x", stats=GenerationStats(tokens=12), error=EngineError("down", "timeout"))
    assert not hit_length_limit(errored, 512)
