"""``vibestudio drift``, ``models show``, ``models hold`` / ``release`` against a real database and the tiny model."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.session import Database
from vibestudio.studio.cli import app
from vibestudio.training.report import verdict


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
    r = _run(
        "drift",
        "cli-child",
        "--prompts",
        "20",
        "--max-tokens",
        "6",
        "--eval-items",
        "4",
        "--fail-on",
        "watch",
    )
    assert r.exit_code == 0, r.output  # a pass passes the strictest gate
    assert report["verdict"]["verdict"] == "pass" and report["flagged"] == []
    against_nobody = ("drift", "cli-child", "--against", "nobody", "--prompts", "20", "--eval-items", "0")
    r = _run(*against_nobody)
    assert r.exit_code == 0 and "unknown" in r.output and "no longer exists" in r.output
    # the CI gate: the report prints in full, then the exit status says whether the release may go on
    r = _run(*against_nobody, "--fail-on", "unknown")
    assert r.exit_code == 3 and "no longer exists" in r.output and "--fail-on unknown blocks it" in r.output
    r = _run(*against_nobody, "--fail-on", "regress")
    assert r.exit_code == 0, r.output
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


def test_the_ci_gate_reads_the_recorded_verdict(tmp_path):
    """``models show --fail-on``: exit 3 when the recorded verdict is at or past the gate, 0 otherwise; no verdict
    yet counts as unknown; a gate name that is not a verdict is a usage error naming the option."""
    db = Database()  # the database the CLI opens (the test's data home)
    db.migrate()
    with db.session() as s:
        look = {"engine": "transformers", "model_ref": str(tmp_path), "sampling": {"max_tokens": 6}}
        parent = register(s, ContestantSpec("gate-parent", **look))
        bad = register(s, ContestantSpec("gate-bad", parent_id=parent, **look))
        good = register(s, ContestantSpec("gate-good", parent_id=parent, **look))
        register(s, ContestantSpec("gate-new", parent_id=parent, **look))
    verdict.record(db, bad, verdict.Verdict("regress", ["flattery up 30% [18%, 41%]"], hold=True))
    verdict.record(db, good, verdict.Verdict("pass"))
    codes = {
        (name, gate): _run("models", "show", name, "--json", "--fail-on", gate).exit_code
        for name in ("gate-bad", "gate-good", "gate-new")
        for gate in ("watch", "unknown", "regress")
    }
    assert codes == {
        ("gate-bad", "watch"): 3, ("gate-bad", "unknown"): 3, ("gate-bad", "regress"): 3,
        ("gate-good", "watch"): 0, ("gate-good", "unknown"): 0, ("gate-good", "regress"): 0,
        ("gate-new", "watch"): 3, ("gate-new", "unknown"): 3, ("gate-new", "regress"): 0,
    }  # fmt: skip
    assert _run("models", "show", "gate-bad").exit_code == 0  # no gate, no block
    r = _run("models", "show", "gate-good", "--fail-on", "pass")
    assert r.exit_code == 2 and "--fail-on" in r.output
    db.dispose()


def test_blocks_orders_the_verdicts() -> None:
    order = ["pass", "watch", "unknown", "regress"]
    for gate in order[1:]:
        assert [verdict.blocks(v, gate) for v in order] == [
            order.index(v) >= order.index(gate) for v in order
        ]
    assert verdict.blocks(None, "unknown") and not verdict.blocks("regress", None)
