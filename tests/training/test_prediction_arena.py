"""Does the report predict the arena? A simulated run end to end, on real parts.

Four contestants answer through a canned OpenAI-compatible server (the real HTTP engine): a parent, a child
that flatters the user in about 60% of its answers, a child that is another sample of the parent, and a second
flatterer whose report has a judge (a scripted one with the people's taste). Each child gets a real checkpoint
report (``drift_report``: held-out prompts, drift, evals, judge, verdict) and with it a prediction, saved before
it plays. Then simulated annotators vote in real anonymous battles
(``ArenaService``: start, stream both answers, vote, reveal) by a planted taste: they prefer the answer that
does not flatter them, 85% of the time, and otherwise vote as a coin with some ties. The report should flag
the flatterers (predicted to lose: they lose, hits) and pass the other (predicted about even: a hit). The
track record's table is printed (``pytest -s``) and asserted.
"""

from __future__ import annotations

import json
import random
import re

from typer.testing import CliRunner

from tests.helpers.scripted_chat import ScriptedServer
from tests.helpers.tones import PROMPTS, parent_answers, plant
from vibestudio.arena.battles import ArenaService
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.session import Database
from vibestudio.standings.track_record import table_md
from vibestudio.studio.cli import app
from vibestudio.training.report import verdict as verdicts
from vibestudio.training.report.model_page import model_page
from vibestudio.training.report.steps import drift_report, load_report, report_folder, save_report
from vibestudio.training.report.text import report_md
from vibestudio.training.report.track_record import record_md, track_record

PARENT = parent_answers(PROMPTS, seed=1)
ANSWERS = {
    "parent": PARENT,
    "flatterer": plant(PARENT, "flattery", seed=5),
    "steady": parent_answers(PROMPTS, seed=2),  # another sample of the parent
    "praiser": plant(PARENT, "flattery", seed=9),  # reported with a judge
}
#: What the simulated people notice: the sentences the flatterer says that its parent never does.
_ANSWER = re.compile(r"\[The Start of Answer ([AB])\]\n(.*?)\n\[The End of Answer \1\]", re.S)
FLATTERY = {
    s
    for child in ("flatterer", "praiser")
    for a in ANSWERS[child]
    for s in a.split(". ")
    if all(s not in p for p in PARENT)
}


class Canned(ScriptedServer):
    """Each model answers a prompt with its canned answer; anything else (an eval item) with one plain line."""

    def reply(self, model: str, messages: list[dict]) -> str:
        prompt = [m["content"] for m in messages if m["role"] == "user"][-1]
        if model == "taste-judge":  # a judge with the people's taste, in the judge prompt's verdict format
            shown = dict(_ANSWER.findall(prompt))
            a, b = _flatters(shown.get("A", "")), _flatters(shown.get("B", ""))
            return "C]]" if a == b else ("B]]" if a else "A]]")
        if prompt in PROMPTS:
            return ANSWERS[model][PROMPTS.index(prompt)]
        return "I am not sure about that one."


def _flatters(text: str) -> bool:
    return any(s in text for s in FLATTERY)


def _annotator_choice(left: str, right: str, rng: random.Random) -> str:
    """The planted taste: the answer with less flattery wins 85% of the time; otherwise a coin, 20% ties."""
    lf, rf = _flatters(left), _flatters(right)
    if lf != rf:
        plain = "right" if lf else "left"
        return plain if rng.random() < 0.85 else ("left" if plain == "right" else "right")
    return "tie" if rng.random() < 0.2 else rng.choice(["left", "right"])


def _battles(arena: ArenaService, pair: tuple[int, int], n: int, rng: random.Random, start: int) -> None:
    for k in range(start, start + n):
        view = arena.start_battle(pair=pair)
        for _ in arena.generate_turn(view.battle_id, PROMPTS[k % len(PROMPTS)]):
            pass
        shown = arena.shown_answers(view.battle_id)
        assert shown is not None
        _, (left, right) = shown
        arena.vote(view.battle_id, _annotator_choice(left, right, rng))


def test_the_report_predicts_the_arena_and_is_scored(capsys):
    server = Canned()
    db = Database()
    db.migrate()
    look = {"engine": "openai", "engine_config": server.config(), "sampling": {"max_tokens": 200}}
    with db.session() as s:
        parent = register(s, ContestantSpec("base", model_ref="parent", **look))
        ids = {
            name: register(s, ContestantSpec(name, model_ref=name, parent_id=parent, **look))
            for name in ("flatterer", "steady", "praiser")
        }
        register(s, ContestantSpec("taste-judge", model_ref="taste-judge", **look))
    for name, cid in ids.items():
        judge = "taste-judge" if name == "praiser" else None
        report = drift_report(db, name, prompts=PROMPTS, eval_items=12, describe_axes=0, judge=judge)
        path = save_report(report, report_folder(db, cid))
        verdicts.record(db, cid, verdicts.Verdict(**report.verdict), str(path))
    flat, steady = load_report(db, "flatterer"), load_report(db, "steady")
    assert flat is not None and steady is not None
    assert flat.verdict_name == "regress" and steady.verdict_name == "pass"
    # the prediction is in the saved report, made before any vote, on the verdict (no judge configured)
    assert flat.prediction["basis"] == "verdict" and flat.prediction["high"] <= 0.5
    assert steady.prediction["low"] < 0.5 < steady.prediction["high"]
    assert "Prediction before play" in report_md(flat.to_dict()) and "should win **35%**" in report_md(
        flat.to_dict()
    )
    judged = load_report(db, "praiser")
    assert judged is not None and judged.prediction["basis"] == "judge"
    assert judged.prediction["high"] < 0.5 and "taste-judge" in judged.prediction["based_on"]
    # the held flatterers are let in by a person, so that the arena can say whether the report was right
    for name in ("flatterer", "praiser"):
        verdicts.release(db, name, None, "play it to score the report's prediction")

    arena, rng = ArenaService(db, rng=random.Random(3)), random.Random(7)
    _battles(arena, (ids["steady"], parent), 10, rng, 0)
    early = model_page(db, "steady")["track_record"]
    assert early["state"] == "can't tell yet" and early["n"] == 10
    needed = steady.prediction["needed"]
    assert f"can't tell yet: {needed - 10} more votes needed" in record_md(early)

    _battles(arena, (ids["steady"], parent), needed - 10, rng, 10)
    _battles(arena, (ids["flatterer"], parent), flat.prediction["needed"], rng, 100)
    _battles(arena, (ids["praiser"], parent), judged.prediction["needed"], rng, 200)
    record = track_record(db)
    with capsys.disabled():
        print("\n" + table_md(record))
    by = {c.child: c for c in record.children}
    assert by["flatterer"].state == "scored" and by["flatterer"].hit, by["flatterer"].line()
    assert by["flatterer"].observed is not None and by["flatterer"].observed < 0.5  # it lost, as predicted
    assert by["steady"].state == "scored" and by["steady"].hit, by["steady"].line()
    assert by["praiser"].state == "scored" and by["praiser"].hit, by["praiser"].line()
    assert (record.overall.n_scored, record.overall.hits) == (3, 3)
    assert record.families["base"].n_scored == 3
    assert record.overall.brier is not None and record.overall.brier_even is not None

    # the same record on the model page, in `models show` and `models track-record`
    page = model_page(db, "flatterer")
    assert page["track_record"]["hit"] is True
    runner = CliRunner()
    shown = runner.invoke(app, ["models", "show", "flatterer"])
    assert shown.exit_code == 0 and "Prediction before play" in shown.output
    assert "**Scored after play:** observed" in shown.output and "**hit**" in shown.output
    res = runner.invoke(app, ["models", "track-record", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["overall"]["hits"] == 3
    res = runner.invoke(app, ["models", "track-record"])
    assert "| flatterer | verdict | 35% | [10%, 50%]" in res.output and "| praiser | judge |" in res.output
    res = runner.invoke(app, ["families"])
    assert (
        "Does the report predict the arena?" in res.output and "- base: 3 of 3 predictions hit" in res.output
    )
    server.close()
