"""Blind by default: in anonymous battles both sides answer under one token cap (named mode keeps the personas'
own), the persona's fixed opening is not shown unless a setting asks for it, the identifiability measure shows
what the opening gives away (with and without it, side by side), and a turn with an empty answer takes no vote.

Engines are ``FakeOpenAI`` (scripted answers at the HTTP edge): what these tests check is what the arena asks
for and stores, not what a model writes.
"""

from __future__ import annotations

import random

import pytest
from sqlalchemy import select

from tests.helpers.fake_openai import FakeOpenAI, register_http
from vibestudio.arena.battles import BLIND_MAX_TOKENS, ArenaLimits, ArenaService, BattleError
from vibestudio.arena.identifiability import compare_openings, with_opening
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.common.settings import Settings
from vibestudio.db.models import Battle, Contestant, Turn, utcnow

OPENING = "What a great question! 😊 "


@pytest.fixture
def fake():
    f = FakeOpenAI()
    yield f
    f.close()


def _caps(fake: FakeOpenAI) -> dict[str, int]:
    """The max_tokens each contestant's last request asked for, by its system prompt (its name)."""
    return {r["messages"][0]["content"]: r["max_tokens"] for r in fake.requests}


def test_anonymous_sides_share_one_cap_and_named_mode_keeps_the_personas(db, fake):
    # "fixed" streams three words whatever the cap: under a shared cap of 2 both sides are "cut"
    for name, cap in (("terse", 3), ("chatty", 50)):
        register_http(db, fake, name, "fixed", system_prompt=name, sampling={"max_tokens": cap})
    svc = ArenaService(db, ArenaLimits(blind_max_tokens=2), rng=random.Random(0))
    bid = svc.start_battle().battle_id
    last = list(svc.generate_turn(bid, "Tell me a story."))[-1]
    assert last.done and last.error is None
    assert _caps(fake) == {"terse": 2, "chatty": 2}  # one cap, not 3 and 50
    assert last.left_cut and last.right_cut  # the cut-off note cannot tell the sides apart
    svc.record_vote(bid, "tie")  # the cap holds on every turn of the battle, regenerations included
    list(svc.generate_turn(bid, "And another."))
    list(svc.regenerate(bid))
    assert _caps(fake) == {"terse": 2, "chatty": 2} and len(fake.requests) == 6
    fake.requests.clear()
    with db.session() as s:
        pair = tuple(s.scalars(select(Contestant.id).order_by(Contestant.id)))
    named = svc.start_battle(pair=pair, mode="named").battle_id
    last = list(svc.generate_turn(named, "Tell me a story."))[-1]
    assert _caps(fake) == {"terse": 3, "chatty": 50}  # named mode: the names are known, each keeps its own
    assert (
        last.left_cut != last.right_cut
    )  # and there the note does tell them apart (3 tokens: the cap of 3 is hit)


def test_the_shared_cap_never_exceeds_the_arena_cap():
    assert ArenaLimits().shared_cap() == BLIND_MAX_TOKENS == Settings().blind_max_tokens
    assert ArenaLimits(max_new_tokens=24).shared_cap() == 24
    assert ArenaLimits(blind_max_tokens=0).shared_cap() == 1  # never a zero-token answer


def test_the_opening_is_hidden_by_default_and_a_setting_shows_it(db, fake, monkeypatch):
    assert ArenaLimits().strip_prefill and Settings().strip_prefill
    monkeypatch.setenv("VIBESTUDIO_STRIP_PREFILL", "0")
    assert not Settings().strip_prefill  # the way to opt out
    with db.session() as s:
        for name in ("opener-a", "opener-b"):
            spec = ContestantSpec(
                name, engine="openai", model_ref="fixed", prefill=OPENING, engine_config=fake.config()
            )
            register(s, spec)
    svc = ArenaService(db, rng=random.Random(1))
    bid = svc.start_battle().battle_id
    last = list(svc.generate_turn(bid, "hi"))[-1]
    with db.session() as s:
        turn = s.scalars(select(Turn).where(Turn.battle_id == bid)).one()
    assert (last.left, turn.answer_a) == ("Hello there, friend.", "Hello there, friend.")


def test_with_opening_puts_it_back_or_takes_it_off_however_it_was_stored():
    assert with_opening("Hello.", OPENING, keep=True) == OPENING + "Hello."
    assert with_opening(OPENING + "Hello.", OPENING, keep=True) == OPENING + "Hello."
    assert with_opening(OPENING + "Hello.", OPENING, keep=False) == "Hello."
    assert with_opening("Hello.", OPENING, keep=False) == "Hello."
    assert with_opening("Hello.", "Sure.", keep=True) == "Sure. Hello."  # the space the stream dropped
    assert with_opening("Hello.", "", keep=True) == "Hello."


WORDS = "sleep light water walk early routine screen coffee room dark cool quiet read tea bed".split()


def _ended_battles(db, n: int) -> None:
    """``n`` ended battles of an opener against a plain contestant (and two plain ones), stored as the arena
    stores them by default: without the opening."""
    rng = random.Random(3)
    with db.session() as s:
        ids = {}
        for name, prefill in (("warm", OPENING), ("plain-1", ""), ("plain-2", "")):
            spec = ContestantSpec(name, prefill=prefill)
            ids[name] = register(s, spec)
        for k in range(n):
            for a, b in (("warm", "plain-1"), ("plain-2", "warm"), ("plain-1", "plain-2")):
                battle = Battle(
                    a_id=ids[a],
                    b_id=ids[b],
                    left_is_a=True,
                    mode="anonymous",
                    status="voted",
                    ended_at=utcnow(),
                )
                s.add(battle)
                s.flush()
                text = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(12, 30))) for _ in range(2)]
                s.add(
                    Turn(
                        battle_id=battle.id, idx=0, user_msg=f"prompt {k}", answer_a=text[0], answer_b=text[1]
                    )
                )


def test_identifiability_shows_what_the_opening_gives_away_side_by_side(db):
    _ended_battles(db, 14)  # 28 answers each
    with db.session() as s:
        hidden = compare_openings(s, shown_stripped=True)
        shown = compare_openings(s, shown_stripped=False)
    warm = hidden.get("warm")
    assert warm.has_opening and warm.with_opening.verdict == "recognisable"
    assert warm.without_opening.verdict != "recognisable" and warm.gives_away > 0.2
    assert "with its opening AUC" in warm.line() and "gives away +" in warm.line()
    assert hidden.warnings() == []  # as the arena shows them (no opening), votes on it are blind
    (warning,) = shown.warnings()  # shown with the opening: not blind, and the warning says both numbers
    assert warning.startswith("warm is recognisable") and "without its opening: AUC" in warning
    plain = hidden.get("plain-1")
    assert not plain.has_opening and "no fixed opening" in plain.line()
    assert hidden.as_dict()["contestants"][0]["with_opening"]["auc"] is not None


def test_a_turn_with_an_empty_answer_takes_no_vote(db, fake):
    for name in ("ea", "eb"):
        register_http(db, fake, name, "fixed")
    svc = ArenaService(db, rng=random.Random(2))
    bid = svc.start_battle().battle_id
    with db.session() as s:
        s.add(Turn(battle_id=bid, idx=0, user_msg="hi", answer_a="An answer.", answer_b="  \n"))
    view = svc.battle_view(bid)
    assert view.unvoted_turns == [0] and view.blank_turns == [0] and view.votable_turns == []
    with pytest.raises(BattleError, match="turn 1 has an empty answer"):
        svc.record_vote(bid, "left")
    list(svc.regenerate(bid))  # another try: both answer now, and the vote is taken
    assert svc.battle_view(bid).votable_turns == [0]
    assert svc.record_vote(bid, "left").turn_idx == 0
    assert svc.shown_answers(bid, 0) == (0, ("Hello there, friend.", "Hello there, friend."))
    assert svc.shown_answers(bid, 5) is None
