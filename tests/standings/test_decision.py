"""The decision card over a real database: every section with its interval, a sentence that says only what the
intervals allow, and "can't tell" naming what is missing (no evals, no probes, no speed, no price)."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from sqlalchemy import select

from tests.helpers.standings import T0, register_contestants
from vibestudio.db.models import Battle, Contestant, EvalResult, ProbeResult, Turn, Vote
from vibestudio.standings.decision import DecisionError, decision_card, decision_cards
from vibestudio.standings.evals import load_items
from vibestudio.standings.probes import load_probe

LONG = "## Plan\n\n- one\n- two\n- three\n\nWhat a great question! You are so smart. " + "word " * 60
SHORT = "Two sentences. Done."


def _arena(db, n: int = 160, a_wins: float = 0.5) -> dict[str, int]:
    """alpha answers long, flattering and slow; bravo short and fast; votes split `a_wins` for alpha."""
    ids = register_contestants(db)
    rng = random.Random(1)
    with db.session() as s:
        for k in range(n):
            a, b = ("alpha", "bravo") if k % 2 else ("bravo", "alpha")
            battle = Battle(
                a_id=ids[a],
                b_id=ids[b],
                left_is_a=True,
                mode="anonymous",
                status="voted",
                created_at=T0 + timedelta(hours=k),
            )
            text = {
                "alpha": LONG + "more " * rng.randint(0, 20),
                "bravo": SHORT + " Yes." * rng.randint(0, 2),
            }
            tps = {"alpha": rng.uniform(9, 11), "bravo": rng.uniform(28, 32)}
            battle.turns.append(
                Turn(
                    idx=0,
                    user_msg=f"q{k}",
                    answer_a=text[a],
                    answer_b=text[b],
                    tokens_a={"alpha": 80, "bravo": 6}[a],
                    tokens_b={"alpha": 80, "bravo": 6}[b],
                    tps_a=tps[a],
                    tps_b=tps[b],
                )
            )
            alpha_wins = rng.random() < a_wins
            battle.votes.append(
                Vote(
                    turn_idx=0,
                    outcome="a" if (a == "alpha") == alpha_wins else "b",
                    revealed_before_vote=False,
                    created_at=T0 + timedelta(hours=k, minutes=1),
                )
            )
            s.add(battle)
    return ids


def test_card_on_a_tied_pair_says_what_differs(db):
    ids = _arena(db)
    card = decision_card(db, "alpha", "bravo", price_per_hour=2.0)
    q = card.quality
    assert q["verdict"] == "tied" and q["a"]["n"] == q["b"]["n"] == 160
    assert q["a"]["value_low"] < q["a"]["value"] < q["a"]["value_high"]
    assert isinstance(q["votes_to_flip"], int) and q["votes_to_flip"] >= 1
    differs = {f["feature"] for f in card.vibes["features"] if f["differs"]}
    assert {"tokens", "flattery", "list_items", "headers"} <= differs
    sc = card.speed_cost
    assert sc["speed_verdict"] == "bravo faster" and sc["cheaper"] == "b"
    assert sc["a"]["cost"] == pytest.approx(2.0 / (sc["a"]["value"] * 3600) * 1000)
    assert sc["a"]["cost_low"] < sc["a"]["cost"] < sc["a"]["cost_high"]
    text = card.sentence
    assert text.startswith("alpha and bravo are tied in the arena;") and "would flip their order" in text
    # per answer: alpha ~8 s (80 tokens at ~10/s), bravo ~0.2 s (6 tokens at ~30/s): ~97% less
    assert (
        "bravo is shorter" in text
        and "flatters less" in text
        and "costs 9" in text
        and "less per answer" in text
    )
    assert sc["a"]["answer_cost_low"] < sc["a"]["answer_cost"] < sc["a"]["answer_cost_high"]
    assert sc["a"]["answer_cost"] == pytest.approx(8.0 * 2.0 / 3600, rel=0.15)
    assert "passes more" not in text  # no evals: nothing said about substance
    assert any("no verifiable evals for alpha" in m for m in card.missing)
    assert any("sycophancy" in m for m in card.missing)
    md = card.to_markdown()
    assert "| arena rating (95% CI) |" in md and "Can't tell:" in md
    # evals and probes where alpha is clearly better / flips more
    eval_set, items = load_items()
    probe_set, probe_items = load_probe("pushback")
    with db.session() as s:
        for i, item in enumerate(items[:40]):
            for name, passed in (("alpha", True), ("bravo", i % 3 == 0)):
                s.add(
                    EvalResult(
                        run_id="r",
                        contestant_id=ids[name],
                        eval_set=eval_set,
                        item_id=item.id,
                        passed=passed,
                        answer="x",
                    )
                )
        for i, item in enumerate(probe_items[:30]):
            for name, outcome in (("alpha", "regressive"), ("bravo", "unchanged" if i % 5 else "regressive")):
                s.add(
                    ProbeResult(
                        run_id="p",
                        contestant_id=ids[name],
                        probe_set=probe_set,
                        item_id=item.id,
                        variant="plain",
                        outcome=outcome,
                    )
                )
    card = decision_card(db, "alpha", "bravo", price_per_hour=2.0)
    assert card.substance["verdict"] == "alpha passes more"
    assert "alpha passes more verifiable evals" in card.sentence
    pushback = next(p for p in card.sycophancy["probes"] if p["probe"] == "pushback")
    assert pushback["higher"] == "a" and "gives in to pushback less" in card.sentence


def test_clear_winner_and_missing_data(db):
    _arena(db, a_wins=0.85)
    card = decision_card(db, "alpha", "bravo")  # no price per hour set
    assert card.quality["verdict"] == "alpha higher"
    assert card.sentence.startswith("People prefer alpha to bravo;")
    assert card.speed_cost["cost_verdict"] == "can't tell" and "costs" not in card.sentence
    assert any("no price per hour" in m for m in card.missing)
    lone = decision_card(db, "alpha", "charlie", price_per_hour=1.0)  # charlie never played
    assert lone.quality["verdict"] == "can't tell" and lone.quality["votes_to_flip"] is None
    assert lone.sentence.startswith("Can't tell whether people prefer alpha or charlie")
    assert any("charlie has no rated votes" in m for m in lone.missing)
    assert any("speed: charlie has 0 timed" in m for m in lone.missing)
    assert [c.b for c in decision_cards(db, ["alpha", "bravo", "charlie"], price_per_hour=1.0)] == [
        "bravo",
        "charlie",
    ]
    with pytest.raises(DecisionError, match="two different"):
        decision_card(db, "alpha", "alpha")
    with pytest.raises(DecisionError, match="nobody"):
        decision_card(db, "alpha", "nobody")
    with pytest.raises(DecisionError, match="price per hour"):
        decision_card(db, "alpha", "bravo", price_per_hour=-1.0)
    with db.session() as s:
        assert s.scalar(select(Contestant.id).where(Contestant.public_name == "nobody")) is None
