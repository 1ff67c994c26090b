"""The verifiable eval set: the shipped file loads, each checker passes the answers it should and fails the others,
a real run on the embedded SmolLM2 (llama.cpp) stores checked answers, an engine that is down stops the run without
counting as wrong answers, and only researchers may start runs.
"""

from __future__ import annotations

import json
import socket

import pytest
from sqlalchemy import select

from vibestudio.accounts import PermissionDenied, add_user
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.models import EvalResult
from vibestudio.standings.evals import EvalError, load_items, run_check, run_evals
from vibestudio.standings.evals import eval_scores as scores


def test_the_shipped_eval_set_loads():
    name, items = load_items()
    assert name.startswith("verifiable-") and 100 <= len(items) <= 150
    assert len({i.id for i in items}) == len(items)
    assert {i.category for i in items} == {"format", "arithmetic", "units", "factual"}
    assert load_items()[0] == name  # the name is a content hash: stable while the file is


CASES = [
    ({"type": "bullets", "n": 3}, "- apple\n- pear\n- plum", True),
    ({"type": "bullets", "n": 3}, "Here you go:\n* apple\n* pear\n* plum\nEnjoy!", True),
    ({"type": "bullets", "n": 3}, "- apple\n- pear", False),
    ({"type": "bullets", "n": 3}, "- a\n- b\n- c\n- d", False),
    ({"type": "numbered", "n": 4}, "1. Mercury\n2. Venus\n3. Earth\n4. Mars", True),
    ({"type": "numbered", "n": 4}, "1) Mercury\n2) Venus\n3) Earth", False),
    ({"type": "lowercase"}, "the sea is wide. it is blue!", True),
    ({"type": "lowercase"}, "The sea is wide.", False),
    ({"type": "lowercase"}, "123 !!", False),
    ({"type": "uppercase"}, "HELLO FRIEND, HOW ARE YOU?", True),
    ({"type": "uppercase"}, "HELLO friend", False),
    ({"type": "include_words", "words": ["lantern"]}, "Lanterns glow in the autumn dusk.", True),
    ({"type": "include_words", "words": ["mountain", "bread"]}, "We ate bread by the lake.", False),
    (
        {"type": "exclude_words", "words": ["light"]},
        "A rainbow is sunshine split into colors by raindrops.",
        True,
    ),
    ({"type": "exclude_words", "words": ["light"]}, "Rainbows bend Light through water.", False),
    ({"type": "json", "keys": {"name": "string", "age": "number"}}, '{"name": "Ada", "age": 36}', True),
    (
        {"type": "json", "keys": {"name": "string", "age": "number"}},
        '```json\n{"name": "Ada", "age": 36}\n```',
        True,
    ),
    ({"type": "json", "keys": {"name": "string", "age": "number"}}, '{"name": "Ada", "age": "36"}', False),
    (
        {"type": "json", "keys": {"name": "string", "age": "number"}},
        'Sure! {"name": "Ada", "age": 36}',
        False,
    ),
    ({"type": "json", "keys": {"name": "string"}}, '["Ada"]', False),
    (
        {"type": "json", "keys": {"colors": "list"}, "lengths": {"colors": 3}},
        '{"colors": ["red", "blue", "teal"]}',
        True,
    ),
    (
        {"type": "json", "keys": {"colors": "list"}, "lengths": {"colors": 3}},
        '{"colors": ["red", "blue"]}',
        False,
    ),
    ({"type": "max_words", "n": 5}, "A small, soft cat.", True),
    ({"type": "max_words", "n": 5}, "A small soft cat sleeps all day.", False),
    ({"type": "max_words", "n": 5}, "   ", False),
    ({"type": "starts_with", "options": ["Yes", "No"]}, "Yes, the sun is a star.", True),
    ({"type": "starts_with", "options": ["Yes", "No"]}, "**yes** - it is.", True),
    ({"type": "starts_with", "options": ["Yes", "No"]}, "Yesterday I saw the sun.", False),
    ({"type": "ends_with", "text": "Happy coding!"}, "Practice daily. Happy coding!\n", True),
    ({"type": "ends_with", "text": "Happy coding!"}, "Happy coding! Practice daily.", False),
    ({"type": "no_commas"}, "Rivers run. They carry water to the sea.", True),
    ({"type": "no_commas"}, "Rivers run, and they carry water.", False),
    ({"type": "quoted"}, '"Autumn, because of the colours."', True),
    ({"type": "quoted"}, "\u201cAutumn.\u201d", True),
    ({"type": "quoted"}, 'Autumn, "because".', False),
    ({"type": "equals", "text": "Paris"}, " paris.", True),
    ({"type": "equals", "text": "Paris"}, "The capital is Paris.", False),
    ({"type": "number", "value": 42}, "17 + 25 = 42", True),
    ({"type": "number", "value": 1024}, "2^10 is 1,024.", True),
    ({"type": "number", "value": 12}, "144 / 12 = 12.0", True),
    ({"type": "number", "value": 63}, "100 - 37 = 73", False),
    ({"type": "number", "value": 21}, "Twenty-one dollars.", False),
    (
        {"type": "all", "checks": [{"type": "lowercase"}, {"type": "include_words", "words": ["quiet"]}]},
        "quiet snow",
        True,
    ),
    (
        {"type": "all", "checks": [{"type": "lowercase"}, {"type": "include_words", "words": ["quiet"]}]},
        "Quiet snow",
        False,
    ),
]


@pytest.mark.parametrize(("spec", "answer", "expected"), CASES)
def test_checkers_on_hand_written_answers(spec, answer, expected):
    passed, detail = run_check(spec, answer)
    assert passed is expected, detail
    assert detail


def test_a_bad_eval_file_names_the_line(tmp_path):
    good = {"id": "x", "prompt": "Say hi.", "check": {"type": "lowercase"}}
    for bad, message in (
        ({"id": "y", "prompt": "Hi", "check": {"type": "rhymes"}}, "check type must be one of"),
        ({"id": "y", "prompt": "Hi", "check": {"type": "bullets"}}, "missing 1 required"),
        ({"id": "x", "prompt": "Hi", "check": {"type": "lowercase"}}, "duplicate id"),
        ({"id": "y", "check": {"type": "lowercase"}}, "missing field 'prompt'"),
    ):
        path = tmp_path / f"bad{len(message)}.jsonl"
        path.write_text(json.dumps(good) + "\n\n" + json.dumps(bad) + "\n")
        with pytest.raises(EvalError, match=rf"line 3: .*{message}"):
            load_items(path)


def test_real_run_on_the_embedded_model_stores_checked_answers(db):
    _, items = load_items()
    chosen = [i for i in items if i.id in ("math-add", "fmt-lowercase", "fmt-one-word")]
    with db.session() as s:
        register(s, ContestantSpec("smol-eval", sampling={"temperature": 0.0, "max_tokens": 64, "seed": 1}))
    calls = []
    run = run_evals(db, "smol-eval", items=chosen, max_tokens=16, progress=lambda *a: calls.append(a))
    assert [c[:2] for c in calls] == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert run.stopped is None and run.answered == 3 and len(run.results) == 3
    with db.session() as s:
        rows = s.scalars(select(EvalResult).where(EvalResult.run_id == run.run_id)).all()
        board = scores(s)
    assert {r.item_id for r in rows} == {"math-add", "fmt-lowercase", "fmt-one-word"}
    for row in rows:
        assert row.answer.strip() and row.tokens and 0 < row.tokens <= 17 and row.latency is not None
        item = next(i for i in chosen if i.id == row.item_id)
        assert row.passed is run_check(item.check, row.answer)[0]
    assert board["smol-eval"]["answered"] == 3
    assert board["smol-eval"]["score"] == pytest.approx(sum(r.passed for r in rows) / 3)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_engine_that_is_down_stops_the_run_and_is_not_scored(db):
    with db.session() as s:
        register(
            s,
            ContestantSpec(
                "gone",
                engine="openai",
                model_ref="m",
                engine_config={"base_url": f"http://127.0.0.1:{_closed_port()}/v1"},
            ),
        )
    run = run_evals(db, "gone", limit=5)
    assert run.stopped and "down" in run.stopped and len(run.results) == 1 and run.score is None
    with db.session() as s:
        (row,) = s.scalars(select(EvalResult)).all()
        assert row.error.startswith("[down]") and not row.passed
        assert "gone" not in scores(s)


def test_runs_need_a_researcher_and_a_known_contestant(db):
    with db.session() as s:
        ann = add_user(s, "ann", "a long test password", role="annotator")
    with pytest.raises(PermissionDenied):
        run_evals(db, "smollm2-plain", limit=1, user_id=ann.id)
    with pytest.raises(EvalError, match="no contestant"):
        run_evals(db, "nobody", limit=1)


def test_goldilocks_joins_rating_evals_speed_and_price(db, tmp_path):
    from vibestudio.db.models import Battle, Turn
    from vibestudio.standings.goldilocks import goldilocks, load_prices

    eval_set, _ = load_items()
    with db.session() as s:
        a = register(s, ContestantSpec("fast", sampling={"max_tokens": 8}))
        b = register(s, ContestantSpec("slow", sampling={"max_tokens": 8}))
        register(s, ContestantSpec("fresh", sampling={"max_tokens": 8}))
        battle = Battle(a_id=a, b_id=b, left_is_a=True, status="voted")
        for k, (tps_a, tps_b) in enumerate([(40.0, 10.0), (60.0, 12.0), (50.0, 11.0)]):
            battle.turns.append(
                Turn(
                    idx=k,
                    user_msg="q",
                    tokens_a=100,
                    tokens_b=300,
                    latency_a=0.1,
                    latency_b=0.5,
                    tps_a=tps_a,
                    tps_b=tps_b,
                )
            )
        s.add(battle)
        for cid, item, passed in ((a, "math-add", True), (a, "math-mul", False), (b, "math-add", True)):
            s.add(
                EvalResult(
                    run_id="r", contestant_id=cid, eval_set=eval_set, item_id=item, passed=passed, answer="x"
                )
            )
        # an older answer to the same item is superseded by the latest one
        s.add(
            EvalResult(
                run_id="old", contestant_id=b, eval_set=eval_set, item_id="math-mul", passed=True, answer="x"
            )
        )
        s.add(
            EvalResult(
                run_id="new", contestant_id=b, eval_set=eval_set, item_id="math-mul", passed=False, answer="y"
            )
        )
    prices = tmp_path / "prices.yaml"
    prices.write_text("currency: EUR\nengines: {llama_cpp: 0.5}\ncontestants: {slow: 2.0, fresh: null}\n")
    models = [{"name": "fast", "rating": 1050.0, "ci_low": 1000.0, "ci_high": 1100.0, "n_battles": 12}]
    with db.session() as s:
        rows = {r["name"]: r for r in goldilocks(s, models, load_prices(prices))}
    fast, slow, fresh = rows["fast"], rows["slow"], rows["fresh"]
    assert [r["name"] for r in rows.values()][0] == "fast"  # rated first
    assert fast["rating"] == 1050.0 and slow["rating"] is None and fresh["n_battles"] == 0
    assert fast["eval_score"] == 0.5 and slow["eval_score"] == 0.5 and fresh["eval_score"] is None
    assert fast["tokens_per_s"] == 50.0 and slow["tokens_per_s"] == 11.0 and fast["latency_s"] == 0.1
    assert fast["speed_source"] == "arena" and fresh["speed_source"] is None
    assert fast["cost_per_1k"] == 0.5 and fast["cost_per_answer"] == pytest.approx(0.05)
    assert slow["cost_per_1k"] == 2.0 and slow["cost_per_answer"] == pytest.approx(0.6)
    assert fresh["cost_per_1k"] is None and fast["currency"] == "EUR"
    prices.write_text("engines: {llama_cpp: -1}\n")
    with pytest.raises(ValueError, match="engines.llama_cpp"):
        load_prices(prices)


def test_cli_runs_and_scores():
    from typer.testing import CliRunner

    from vibestudio.studio.cli import app
    from vibestudio.studio.context import build_context

    ctx = build_context()  # the studio database under the test's VIBESTUDIO_HOME
    with ctx.db.session() as s:
        register(
            s, ContestantSpec("gone", engine="openai", model_ref="m", engine_config={"base_url": _down_url()})
        )
    runner = CliRunner()
    out = runner.invoke(app, ["evals", "run", "--contestant", "gone", "--json"])
    assert out.exit_code == 0, out.output
    summary = json.loads(out.output.strip().splitlines()[-1])
    assert summary["contestant"] == "gone" and summary["answered"] == 0 and "down" in summary["stopped"]
    out = runner.invoke(app, ["evals", "scores"])
    assert out.exit_code == 0 and "No eval results yet" in out.output
    out = runner.invoke(app, ["evals", "run", "--contestant", "nobody"])
    assert out.exit_code == 1 and "no contestant 'nobody'" in out.output


def _down_url() -> str:
    return f"http://127.0.0.1:{_closed_port()}/v1"


def test_every_exact_match_item_accepts_its_answer_and_rejects_a_wrong_one():
    _, items = load_items()
    checked = 0
    for item in items:
        kind = item.check["type"]
        if kind == "number":
            value = item.check["value"]
            right = f"Sure! The answer is {value:g}."
            wrong = f"The answer is {value + 1:g}."
        elif kind == "include_words" and item.category == "factual":
            right = "It is " + " and ".join(item.check["words"]) + "."
            wrong = "I am not sure."
        else:
            continue
        assert run_check(item.check, right)[0], (item.id, right)
        assert not run_check(item.check, wrong)[0], (item.id, wrong)
        checked += 1
    assert checked >= 80
