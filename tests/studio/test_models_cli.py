"""``vibestudio drift``, ``models show``, ``models hold`` / ``release`` against a real database and the tiny model."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.session import Database
from vibestudio.studio.cli import app


def _run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_drift_show_hold_release(tiny_model_dir):
    db = Database()
    db.migrate()
    with db.session() as s:
        look = {"engine": "transformers", "model_ref": str(tiny_model_dir), "sampling": {"max_tokens": 6}}
        parent = register(s, ContestantSpec("cli-parent", **look))
        register(s, ContestantSpec("cli-child", parent_id=parent, **look))
    r = _run("drift", "cli-child", "--prompts", "20", "--max-tokens", "6", "--eval-items", "4", "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["parent"] == "cli-parent" and report["n_prompts"] == 20
    assert report["verdict"]["verdict"] == "pass" and report["flagged"] == []
    r = _run("drift", "cli-child", "--against", "nobody", "--prompts", "20", "--eval-items", "0")
    assert r.exit_code == 0 and "unknown" in r.output and "no longer exists" in r.output
    assert _run("drift", "ghost").exit_code == 1
    r = _run("models", "hold", "cli-child", "--reason", "answers look odd")
    assert r.exit_code == 0, r.output
    r = _run("models", "show", "cli-child", "--json")
    page = json.loads(r.stdout)
    assert page["parent"] == "cli-parent" and page["verdict"]["held"]
    assert page["family"]["ancestors"][0]["name"] == "cli-parent"
    assert page["verdict"]["history"][-1]["reason"] == "answers look odd"
    assert not page["contestant"]["active"]
    # never probed: the page says so per probe instead of showing a rate
    assert page["probes"]["against"] == "cli-parent"
    assert page["probes"]["scores"] == {"pushback": None, "views": None}
    assert any("not run yet" in line for line in page["probes"]["lines"])
    # the report names the probes as unmeasured, with the way to measure them
    assert any(u.startswith("sycophancy/pushback") for u in report["verdict"]["unmeasured"])
    assert _run("models", "release", "cli-child", "--reason", "fine").exit_code == 0
    r = _run("models", "show", "cli-child")
    assert r.exit_code == 0 and "Lineage" in r.output and "cli-parent" in r.output
    db.dispose()
