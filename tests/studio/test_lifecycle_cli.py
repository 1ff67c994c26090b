"""The lifecycle from the CLI: ``models list`` shows each state, ``models restore`` refuses a held checkpoint and
names ``models release``, a release is shown as a person's, a pending checkpoint with no report coming is held, ``models log`` prints every change, and ``drift``
records a verdict only with ``--record`` (and says which it did). Scripted contestants over real HTTP."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.helpers.scripted_chat import ScriptedChat
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.models import Contestant
from vibestudio.db.session import Database
from vibestudio.studio.cli import app


def _run(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def chat():
    server = ScriptedChat()
    yield server
    server.close()


def test_list_restore_release_log_and_drift_record(chat):
    db = Database()
    db.migrate()
    with db.session() as s:
        look = {"engine": "openai", "model_ref": "steadfast", "engine_config": chat.config()}
        parent = register(s, ContestantSpec("cli-parent", **look))
        child = register(s, ContestantSpec("cli-child", parent_id=parent, **look), state="pending")
    r = _run(
        "models", "list"
    )  # the CLI reconciles first: a pending checkpoint whose report no job runs is held
    assert r.exit_code == 0 and [ln.split()[2] for ln in r.output.splitlines()] == ["released", "held"]
    drift = ("drift", "cli-child", "--prompts", "20", "--max-tokens", "12", "--eval-items", "0")
    r = _run(*drift)
    assert r.exit_code == 0 and "Nothing was saved or recorded" in r.output
    with db.session() as s:
        assert s.get_one(Contestant, child).state == "held"  # a dry run changes nothing
    r = _run(*drift, "--record")
    assert r.exit_code == 0 and "recorded the verdict unknown: cli-child is held" in r.output, r.output
    r = _run("models", "restore", "cli-child", "--by", "alice")
    assert r.exit_code == 1 and "held, not hidden" in r.output and "models release cli-child" in r.output
    assert _run("models", "release", "cli-child", "--reason", "evals were off on purpose").exit_code == 0
    r = _run("models", "show", "cli-child", "--json")
    page = json.loads(r.stdout)
    assert page["verdict"]["state"] == "released" and not page["verdict"]["held"]
    assert "release by local operator (a person)" in page["verdict"]["state_line"]
    r = _run("models", "hide", "cli-child", "--by", "alice", "--reason", "done with it")
    assert r.exit_code == 0 and "now hidden" in r.output
    r = _run("models", "restore", "cli-child", "--by", "bob")
    assert r.exit_code == 0 and "now released" in r.output
    r = _run("models", "log", "cli-child")
    moves = [ln.split()[1] for ln in r.output.splitlines()]
    assert r.exit_code == 0 and moves == ["sweep", "verdict", "release", "hide", "restore"], r.output
    assert "no job runs its report" in r.output
    db.dispose()
