"""Identifiability: a persona with a fixed opening is recognisable, two that write alike are not, too few answers is
"can't tell"; the AUC and its interval are right; folds never split a prompt; the arena can strip the opening."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tests.helpers.fake_openai import FakeOpenAI
from vibestudio.arena.battles import ArenaLimits, ArenaService
from vibestudio.arena.identifiability import Answer, _folds, auc_with_interval, measure
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.models import Turn

WORDS = (
    "sleep light water walk early routine screen coffee room dark cool quiet read tea bed morning habit rest "
    "noise phone window"
).split()


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(12, 30))) + "."


def _answers(n: int, opening: str = "What a great question! 😊 ") -> list[Answer]:
    rng = random.Random(7)
    out = []
    for k in range(n):
        prompt = f"prompt {k}"
        out.append(Answer("warm", opening + _text(rng), prompt))
        out.append(Answer("plain-1", _text(rng), prompt))
        out.append(Answer("plain-2", _text(rng), prompt))
    return out


def test_a_fixed_opening_is_recognisable_and_look_alikes_are_not():
    rep = measure(_answers(40))
    warm, p1, p2 = rep.get("warm"), rep.get("plain-1"), rep.get("plain-2")
    assert warm.verdict == "recognisable" and warm.auc > 0.95 and warm.auc_ci[0] > 0.75
    assert warm.n_answers == 40 and warm.n_others == 80
    assert warm.top1 > 0.9 and warm.top1_ci[0] > warm.chance
    assert "not blind in practice" in warm.warning
    for c in (p1, p2):  # the same word distribution: a coin would do as well
        assert c.verdict != "recognisable" and c.auc_ci[0] < 0.75 and c.warning is None
    assert rep.warnings() == [warm.warning]
    bare = measure(_answers(40, opening=""))  # the opening stripped: nothing gives it away any more
    assert bare.get("warm").verdict != "recognisable"


def test_too_few_answers_is_cant_tell_with_the_reason():
    rep = measure(_answers(10))
    assert {c.verdict for c in rep.contestants} == {"can't tell"}
    assert all("10 answers (need 20)" in c.reason and c.auc is None for c in rep.contestants)
    assert "can't tell" in rep.get("warm").line()
    one_prompt = [Answer(a.contestant, a.text, "same") for a in _answers(30)]
    rep = measure(one_prompt)
    assert rep.notes and "one prompt" in rep.notes[0]
    assert measure([]).contestants == []


def test_auc_and_its_interval():
    rng = np.random.default_rng(0)
    pos, neg = rng.normal(1, 1, 60), rng.normal(0, 1, 90)
    auc, (lo, hi) = auc_with_interval(pos, neg)
    brute = np.mean([(p > q) + 0.5 * (p == q) for p in pos for q in neg])
    assert auc == pytest.approx(brute) and lo < auc < hi and 0.05 < hi - lo < 0.3
    assert auc_with_interval(np.ones(5), np.ones(5))[0] == 0.5  # ties count half
    assert auc_with_interval(np.array([2.0, 3.0]), np.array([0.0, 1.0]))[0] == 1.0


def test_folds_keep_every_prompt_in_one_fold():
    prompts = [f"p{k % 17}" for k in range(200)]
    fold = _folds(prompts, 5, 0)
    for p in set(prompts):
        assert len({int(f) for f, q in zip(fold, prompts, strict=True) if q == p}) == 1
    assert set(fold.tolist()) == set(range(5))


def test_the_arena_can_strip_a_personas_fixed_opening(db):
    fake = FakeOpenAI()
    try:
        with db.session() as s:
            for name in ("opener-1", "opener-2"):
                register(
                    s,
                    ContestantSpec(
                        name,
                        engine="openai",
                        model_ref="fixed",
                        prefill="Ooh, fun one! ",
                        engine_config=fake.config(),
                        sampling={"max_tokens": 16},
                    ),
                )
        shown = {}
        for strip in (False, True):
            svc = ArenaService(db, ArenaLimits(strip_prefill=strip))
            bid = svc.start_battle().battle_id
            last = list(svc.generate_turn(bid, "hi"))[-1]
            with db.session() as s:
                turn = s.query(Turn).filter_by(battle_id=bid).one()
                shown[strip] = (last.left, turn.answer_a)
        assert shown[False][0].startswith("Ooh, fun one! ") and shown[False][1].startswith("Ooh, fun one! ")
        assert shown[True] == ("Hello there, friend.", "Hello there, friend.")
        assert fake.requests[-1]["messages"][-1] == {"role": "assistant", "content": "Ooh, fun one! "}
    finally:
        fake.close()


def test_the_cli_measures_ended_battles_only():
    import json
    from datetime import timedelta

    from typer.testing import CliRunner

    from vibestudio.arena.battle_end import db_now
    from vibestudio.db.models import Battle
    from vibestudio.db.session import Database
    from vibestudio.studio.cli import app

    db = Database()
    db.migrate()
    fake = FakeOpenAI()
    try:
        with db.session() as s:
            for name, opening in (("cli-warm", "What a great question! 😊 "), ("cli-plain", "")):
                register(
                    s,
                    ContestantSpec(
                        name,
                        engine="openai",
                        model_ref="counter",
                        prefill=opening,
                        engine_config=fake.config(),
                        sampling={"max_tokens": 8},
                    ),
                )
        svc = ArenaService(db)
        for k in range(22):
            bid = svc.start_battle().battle_id
            list(svc.generate_turn(bid, f"question {k}"))
            svc.record_vote(bid, "tie")
        run = CliRunner().invoke(app, ["models", "identifiability", "--json"])
        assert run.exit_code == 0, run.output
        assert json.loads(run.stdout)["n_answers"] == 0  # every battle is still open: nothing to read
        with db.session() as s:
            for b in s.query(Battle):
                b.active_at = db_now(s) - timedelta(hours=1)
        assert len(svc.end_idle_battles()) == 22
        rep = json.loads(CliRunner().invoke(app, ["models", "identifiability", "--json"]).stdout)
        warm = next(c for c in rep["contestants"] if c["name"] == "cli-warm")
        # the arena showed (and stored) the answers without the opening; the measure puts it back beside them
        assert rep["n_answers"] == 44 and rep["shown_stripped"] and warm["has_opening"]
        assert warm["with_opening"]["verdict"] == "recognisable" and warm["gives_away"] > 0.2
        assert warm["without_opening"]["verdict"] != "recognisable" and warm["warning"] is None
        text = CliRunner().invoke(app, ["models", "identifiability"]).stdout
        assert "cli-warm: with its opening AUC" in text and "without it" in text and "gives away +" in text
        # the opening shown: votes on it are not blind, and the warning says both numbers
        env = {"VIBESTUDIO_STRIP_PREFILL": "0"}
        shown = CliRunner().invoke(app, ["models", "identifiability"], env=env).stdout
        assert "warning: cli-warm is recognisable" in shown and "without its opening: AUC" in shown
        bare = CliRunner().invoke(app, ["models", "identifiability", "--strip-prefill"]).stdout
        assert "cli-warm: AUC" in bare and "recognisable" not in bare.split("cli-warm")[1].split("\n")[
            0
        ].replace("not recognisable", "")
    finally:
        fake.close()
