"""`vibestudio ratings` with votes-to-flip and LC win rates: from a battles file (JSON and text) and from the studio
database (where `--baseline` used to print "-" for the LC win rate unless style control was asked for)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tests.helpers.standings import register_contestants, write_battles
from vibestudio.db.session import Database
from vibestudio.standings.ratings._simulate import simulate_arena
from vibestudio.studio.cli import app


def _run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_votes_to_flip_from_a_file(tmp_path: Path) -> None:
    frame, _ = simulate_arena(seed=5, n_honest=20, votes_per_honest=60)
    path = tmp_path / "battles.jsonl"
    frame.to_json(path, orient="records", lines=True)
    r = _run("ratings", "--battles", str(path), "--bootstrap", "0", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    names = [m["name"] for m in out["models"]]
    flips = out["votes_to_flip"]
    assert [(f["higher"], f["lower"]) for f in flips] == list(zip(names, names[1:], strict=False))
    assert all(isinstance(f["votes"], int) and f["votes"] >= 1 for f in flips)
    first = out["flip"]["pairs"][0]
    assert len(first["removed"]) == first["votes"] and {"judge", "tstamp"} <= set(first["removed"][0])
    r = _run("ratings", "--battles", str(path), "--bootstrap", "0")
    assert r.exit_code == 0 and "Votes to flip" in r.output and "holds over" in r.output
    r = _run("ratings", "--battles", str(path), "--bootstrap", "0", "--json", "--no-flip")
    assert "votes_to_flip" not in json.loads(r.stdout)


def test_from_the_database_lc_win_rate_and_flip_votes() -> None:
    db = Database()
    db.migrate()
    ids = register_contestants(db)
    write_battles(db, ids, 200)
    r = _run("ratings", "--bootstrap", "0", "--json", "--baseline", "charlie")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    others = [m for m in out["models"] if m["name"] != "charlie"]
    assert others and all(
        m["lc_win_rate"] is not None for m in others
    )  # was None ("-") without --style-control
    assert len(out["votes_to_flip"]) == len(out["models"]) - 1
    removed = out["flip"]["pairs"][0]["removed"]
    assert removed and all(v["battle_id"] is not None for v in removed)


def test_decide_cli() -> None:
    from datetime import timedelta

    from tests.helpers.standings import T0
    from vibestudio.db.models import Battle, Turn, Vote

    db = Database()
    db.migrate()
    ids = register_contestants(db)
    with db.session() as s:
        for k in range(40):
            a, b = ("alpha", "bravo") if k % 2 else ("bravo", "alpha")
            battle = Battle(
                a_id=ids[a], b_id=ids[b], left_is_a=True, mode="anonymous", status="voted", created_at=T0
            )
            battle.turns.append(
                Turn(
                    idx=0,
                    user_msg="q",
                    answer_a="x " * (k + 1),
                    answer_b="y",
                    tps_a=10.0 + k % 3,
                    tps_b=20.0 + k % 3,
                )
            )
            battle.votes.append(
                Vote(turn_idx=0, outcome="a" if k % 3 else "b", created_at=T0 + timedelta(minutes=k))
            )
            s.add(battle)
    r = _run("decide", "alpha", "bravo", "--price-per-hour", "3", "--json")
    assert r.exit_code == 0, r.output
    (card,) = json.loads(r.stdout)
    assert card["a"] == "alpha" and card["speed_cost"]["price_per_hour"] == 3.0
    assert card["sentence"] and card["missing"]
    r = _run("decide", "alpha", "bravo")
    assert r.exit_code == 0 and "### alpha vs bravo" in r.output and "no price per hour" in r.output
    r = _run("decide", "alpha")
    assert r.exit_code != 0 and "at least two" in r.output
    r = _run("decide", "alpha", "ghost")
    assert r.exit_code != 0 and "ghost" in r.output


def test_ratings_judges_cli(tmp_path: Path) -> None:
    from vibestudio.standings.ratings._composite import simulate_judged_arena

    frame, _ = simulate_judged_arena(judge_noise=0.6, human_votes=400, judge_votes=800, seed=2)
    path = tmp_path / "judged.jsonl"
    frame.to_json(path, orient="records", lines=True)
    r = _run("ratings", "judges", "--battles", str(path), "--judge", "judge", "--rounds", "4", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    (j,) = out["judges"]
    assert j["judge"] == "judge" and j["n_human_votes"] == 400 and "sentence" in j
    assert out["board"]["models"]
    r = _run(
        "ratings", "judges", "--battles", str(path), "--judge", "judge", "--rounds", "2", "--source", "human"
    )
    assert r.exit_code == 0 and "Board on human votes" in r.output and "judge votes" in r.output
    r = _run("ratings", "judges", "--battles", str(path), "--judge", "judge", "--source", "both")
    assert r.exit_code != 0 and "--source" in r.output


def test_ratings_kinds_cli() -> None:
    from datetime import timedelta

    from tests.helpers.standings import T0
    from vibestudio.db.models import Battle, Turn, Vote
    from vibestudio.studio.cli._common import open_context

    ctx = open_context()  # seeds the MT-Bench prompt set, as the app does
    ids = register_contestants(ctx.db)
    with ctx.db.session() as s:
        battle = Battle(
            a_id=ids["alpha"], b_id=ids["bravo"], left_is_a=True, mode="anonymous", status="voted"
        )
        battle.turns.append(
            Turn(idx=0, user_msg="Write a Python function that sorts a list.", answer_a="x", answer_b="y")
        )
        battle.votes.append(Vote(turn_idx=0, outcome="a", created_at=T0 + timedelta(minutes=1)))
        s.add(battle)
    r = _run("ratings", "kinds", "--text", "Solve 2x + 3 = 11 for x.", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["report"]["n_prompts"] == 80 and out["report"]["accuracy"] > 0.3
    assert out["classified"][0]["category"] == "math"
    assert out["typed_battles"] == 1 and out["typed_by_kind"] == {"coding": 1}
    r = _run("ratings", "kinds")
    assert r.exit_code == 0 and "held-out accuracy" in r.output
