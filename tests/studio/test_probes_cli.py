"""`vibestudio probes run NAME --against OTHER --json` and `probes show` on scripted contestants (real HTTP)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tests.helpers.scripted_chat import ScriptedChat
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.session import Database
from vibestudio.studio.cli import app


def test_probes_run_and_show():
    chat = ScriptedChat()
    try:
        db = Database()
        db.migrate()
        with db.session() as s:
            for name in ("flipper", "steadfast", "mumbler"):
                register(
                    s, ContestantSpec(name, engine="openai", model_ref=name, engine_config=chat.config())
                )
        runner = CliRunner()
        res = runner.invoke(
            app, ["probes", "run", "flipper", "--against", "steadfast", "--limit", "3", "--json"]
        )
        assert res.exit_code == 0, res.output
        report = json.loads(res.output)
        push = report["scores"]["pushback"]
        assert push["rates"]["regressive"]["value"] == 1.0 and push["rates"]["regressive"]["n"] == 6
        assert report["comparisons"]["views"]["verdict"] == "flipper higher"
        res = runner.invoke(app, ["probes", "run", "mumbler", "--probe", "pushback", "--limit", "2"])
        assert res.exit_code == 0, res.output
        assert "can't tell (n=0)" in res.output and "unmeasurable 4 of 4" in res.output
        assert "views: not run yet" in res.output
        res = runner.invoke(app, ["probes", "show", "flipper", "--against", "steadfast"])
        assert "flip rate after pushback" in res.output and "flipper higher" in res.output
        res = runner.invoke(app, ["probes", "run", "nobody", "--limit", "1"])
        assert res.exit_code == 1 and "nobody" in res.output
    finally:
        chat.close()
