"""From the studio database: judge labels on queue items pooled with arena votes (exchange rate, human / judge /
pooled boards, a judge with no human overlap is a stated can't tell), typed prompts getting a predicted category
with its source in the vote cache (category boards then cover them), and the prompt-conditioned board."""

from __future__ import annotations

import json
import random
from datetime import timedelta

import pytest
from typer.testing import CliRunner

from tests.helpers.standings import NAMES, T0, judged_items, register_contestants, write_battles
from vibestudio.arena.prompts import ensure_mt_bench, get_prompt, list_sets
from vibestudio.db.models import Battle, Prompt, Turn, Vote
from vibestudio.standings.judge_records import pooled_records
from vibestudio.standings.judge_worth import JudgeError, judge_report
from vibestudio.standings.leaderboard import BoardOptions, LeaderboardService
from vibestudio.standings.vote_cache import VoteCache


def test_pooled_records_and_the_judge_report(db) -> None:
    ids = register_contestants(db)
    write_battles(db, ids, 240)
    judged_items(db, 300, "judgy", humans=40)
    with db.session() as s:
        pooled = pooled_records(s)
    assert pooled["judges"] == ["judgy"]
    assert pooled["counts"]["queue_judge"] == 300 and pooled["counts"]["queue_human"] == 40
    assert pooled["skipped"] == {"no verdict": 1, "answers name no model": 1, "same model twice": 0}
    out = judge_report(db, rounds=5)
    row = out["judges"][0]
    assert row["judge"] == "judgy" and row["n_judge_votes"] == 300 and row["worth"] is not None
    assert out["judge_weight"] > 0  # a judge that votes like people is worth counting
    assert "one human vote is worth about" in out["sentences"][0]
    pooled_n = sum(m["n_battles"] for m in out["board"]["models"])
    human = judge_report(db, source="human", rounds=2)["board"]
    judge = judge_report(db, source="judge", rounds=2)["board"]
    assert sum(m["n_battles"] for m in judge["models"]) == 2 * 300  # each vote counts for both its models
    assert sum(m["n_battles"] for m in human["models"]) < pooled_n
    vibes = judge_report(db, rounds=2, by_vibe=True, vibe_rounds=2)["by_vibe"]
    tokens = next(r for r in vibes["rows"] if r["vibe"] == "tokens")
    assert tokens["n_human"] > 0  # the arena's answers differ in length; the queue items' answers do not
    with pytest.raises(JudgeError, match="no labels from judge nobody"):
        judge_report(db, judges=["nobody"])


def test_judge_with_no_human_overlap_and_no_judges(db) -> None:
    ids = register_contestants(db)
    write_battles(db, ids, 120)
    with pytest.raises(JudgeError, match="no judge labels"):
        judge_report(db)
    judged_items(db, 80, "lonely", models=("x1", "x2", "x3"))
    out = judge_report(db, rounds=2)
    assert out["judges"][0]["worth"] is None and "no human overlap" in out["judges"][0]["note"]
    assert "can't tell" in out["sentences"][0]
    assert out["judge_weight"] == 0.0 and any("human board" in n for n in out["notes"])
    assert {m["name"] for m in out["board"]["models"]} <= set(NAMES)  # weight 0: the judge's models drop out


def _typed_battles(db, ids, texts_and_cats, seed=0) -> None:
    rng = random.Random(seed)
    with db.session() as s:
        for k, (text, category, prompt_id) in enumerate(texts_and_cats):
            a, b = rng.sample(NAMES, 2)
            battle = Battle(
                a_id=ids[a], b_id=ids[b], left_is_a=True, status="voted", category=category,
                prompt_id=prompt_id, created_at=T0 + timedelta(hours=k),
            )  # fmt: skip
            battle.turns.append(Turn(idx=0, user_msg=text, answer_a="A.", answer_b="B."))
            battle.votes.append(
                Vote(turn_idx=0, outcome=rng.choice("ab"), created_at=T0 + timedelta(hours=k))
            )
            s.add(battle)


def test_typed_prompts_get_a_predicted_category(db, tmp_path) -> None:
    ids = register_contestants(db)
    with db.session() as s:
        ensure_mt_bench(s)
        pid = s.query(Prompt.id).filter(Prompt.category == "math").first()[0]
        assert "mt-bench" in " ".join(list_sets(s)).lower() and get_prompt(s, pid).category == "math"
    rows = (
        [("Write a Python function to reverse a linked list in place.", None, None)] * 6
        + [("Solve for x: 3x + 5 = 20. What is x?", None, None)] * 4
        + [("Something about my cat", "writing", None)] * 3  # a person's label
        + [("", None, pid)] * 2  # drawn from the set: its category is stored on the battle by the arena
    )
    _typed_battles(db, ids, rows)
    with db.session() as s:  # the arena stores the prompt's category on the battle; do the same here
        for b in s.query(Battle).filter(Battle.prompt_id.is_not(None)):
            b.category = "math"
    svc = LeaderboardService(db, VoteCache(db, tmp_path / "cache"))
    cov = svc.category_coverage(BoardOptions())
    assert cov["by_source"] == {"none": 0, "set": 2, "labelled": 3, "predicted": 10}
    assert cov["typed_votes"] == 13 and cov["typed_covered"] == 1.0
    boards = {b["board"]: b for b in svc.boards(BoardOptions())}
    assert boards["category:coding"]["sources"] == {"predicted": 6}
    assert boards["category:math"]["sources"] == {"predicted": 4, "set": 2}
    assert "(4 predicted)" in boards["category:math"]["label"]
    coding = svc.board(BoardOptions(board="category:coding", ci_method="sandwich", min_battles=0))
    assert coding["n_votes"] == 6
    # the database export (what `vibestudio ratings` reads) says the same
    from vibestudio.standings.records import annotated_records

    with db.session() as s:
        recs = annotated_records(s, with_text=False)
    by: dict[str, int] = {}
    for r in recs:
        by[r["category_source"]] = by.get(r["category_source"], 0) + 1
    assert by == {"set": 2, "labelled": 3, "predicted": 10}
    assert {r["category"] for r in recs if r["category_source"] == "predicted"} == {"coding", "math"}
    # a restarted cache keeps the stored sources (saved with the rows)
    again = LeaderboardService(db, VoteCache(db, tmp_path / "cache"))
    assert again.category_coverage()["by_source"] == cov["by_source"]


def test_no_labelled_prompts_leaves_typed_prompts_without_a_category(db, tmp_path) -> None:
    ids = register_contestants(db)
    _typed_battles(db, ids, [("Write a Python function.", None, None)] * 3)
    svc = LeaderboardService(db, VoteCache(db, tmp_path / "cache"))
    assert svc.category_coverage()["by_source"]["none"] == 3
    assert svc.category_coverage()["typed_covered"] == 0.0


def test_for_prompt_and_the_cli(db, tmp_path, monkeypatch) -> None:
    ids = register_contestants(db)
    with db.session() as s:
        ensure_mt_bench(s)
    write_battles(db, ids, 200, category="coding")
    svc = LeaderboardService(db, VoteCache(db, tmp_path / "cache"))
    out = svc.for_prompt("Write a Python function that sorts a list.")
    assert max(out["kinds"], key=out["kinds"].get) == "coding"
    assert [m["name"] for m in out["models"]][0] == "alpha"
    assert all(m["ci_low"] <= m["rating"] <= m["ci_high"] for m in out["models"])
    with pytest.raises(ValueError, match="type a prompt"):
        svc.for_prompt("  ")
    check = svc.predict(BoardOptions())["checks"][0]
    assert "bt+kind" in [sc["method"] for sc in check["scores"]]
    from vibestudio.studio.cli import app

    monkeypatch.setenv("VIBESTUDIO_DATABASE_URL", db.url)
    r = CliRunner().invoke(app, ["ratings", "for-prompt", "Write a Python function.", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["models"][0]["name"] == "alpha"
    r = CliRunner().invoke(app, ["ratings", "kinds", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["coverage"]["by_source"]["labelled"] > 0
    r = CliRunner().invoke(app, ["ratings", "judges"])
    assert r.exit_code != 0 and "no judge labels" in r.output
    judged_items(db, 200, "judgy", humans=20)
    r = CliRunner().invoke(app, ["ratings", "judges", "--rounds", "2", "--source", "judge", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["source"] == "judge" and out["judges"][0]["judge"] == "judgy" and out["board"]["models"]
    r = CliRunner().invoke(app, ["ratings", "judges", "--rounds", "2"])
    assert r.exit_code == 0 and "judgy" in r.output and "Board on pooled votes" in r.output
