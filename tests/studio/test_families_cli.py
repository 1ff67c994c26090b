"""`vibestudio families` and `vibestudio models hide|restore`: a family of four siblings, one hidden with a logged
reason, listed with provisional flags and the unmeasurable selection effect (no votes yet)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.session import Database
from vibestudio.studio.cli import app


def test_families_and_hide():
    db = Database()
    db.migrate()
    with db.session() as s:
        root = register(s, ContestantSpec("base"))
        for i in range(4):
            register(s, ContestantSpec(f"base-v{i}", parent_id=root))
    runner = CliRunner()
    res = runner.invoke(app, ["models", "hide", "base-v3", "--by", "alice", "--reason", "sycophantic"])
    assert res.exit_code == 0 and "hide by alice" in res.output, res.output
    res = runner.invoke(app, ["models", "hide", "nobody", "--by", "alice", "--reason", "x"])
    assert res.exit_code == 1
    res = runner.invoke(app, ["families", "--json"])
    assert res.exit_code == 0, res.output
    fams = {f["root"]: f for f in json.loads(res.output)}
    base = fams["base"]
    assert (
        len(base["members"]) == 5
        and base["selection"] is None
        and "0 of 4 variant(s) rated" in base["reason"]
    )
    hidden = {m["name"]: m["hidden"] for m in base["members"]}
    assert hidden["base-v3"] and not hidden["base-v0"]
    assert all(m["provisional"] for m in base["members"] if m["depth"] == 1)
    assert base["log"][0]["by"] == "alice" and base["log"][0]["reason"] == "sycophantic"
    res = runner.invoke(app, ["families"])
    assert "selection effect unmeasurable" in res.output and "alice hide base-v3" in res.output
