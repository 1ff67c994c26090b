"""`vibestudio ratings` on a battles file: methods, interval kinds, the robust board, and the predict, annotators
and methods subcommands (text and JSON), with clear errors for bad options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vibestudio.standings.ratings._simulate import simulate_arena
from vibestudio.studio.cli import app


@pytest.fixture(scope="module")
def battles(tmp_path_factory: pytest.TempPathFactory) -> Path:
    frame, _ = simulate_arena(seed=31, n_honest=20, votes_per_honest=60, riggers=1, rigger_votes=200)
    path = tmp_path_factory.mktemp("cli") / "battles.jsonl"
    frame.to_json(path, orient="records", lines=True)
    return path


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_methods_and_intervals(battles: Path) -> None:
    code, out = run(
        "ratings", "--battles", str(battles), "--method", "davidson", "--ci", "sandwich", "--json"
    )
    assert code == 0, out
    data = json.loads(out)
    assert data["method"] == "davidson" and set(data["tie_parameters"]) >= {"tie (bothgood)", "tie (bothbad)"}
    code, out = run("ratings", "--battles", str(battles), "--method", "rao-kupper", "--bootstrap", "20")
    assert code == 0 and "Rao-Kupper" in out and "Tie probability between two equal models" in out
    code, out = run("ratings", "--battles", str(battles), "--bootstrap", "0", "--json")
    assert code == 0 and "method" not in json.loads(out)


def test_robust_board_down_weights_the_rigger(battles: Path) -> None:
    code, out = run("ratings", "--battles", str(battles), "--robust", "--ci", "sandwich")
    assert code == 0, out
    assert "down-weighted r0" in out


def test_predict(battles: Path) -> None:
    code, out = run("ratings", "predict", "--battles", str(battles), "--rounds", "50")
    assert code == 0, out
    assert "time split" in out and "random split" in out and "davidson" in out and "Best board method" in out
    code, out = run(
        "ratings", "predict", "--battles", str(battles), "--split", "time", "--json", "--rounds", "50"
    )
    data = json.loads(out)
    assert [c["split"] for c in data["checks"]] == ["time"]
    assert data["best_board_method"] in ("bt", "rao-kupper", "davidson")


def test_annotators(battles: Path) -> None:
    code, out = run("ratings", "annotators", "--battles", str(battles))
    assert code == 0, out
    assert "flagged: r0" in out
    code, out = run("ratings", "annotators", "--battles", str(battles), "--json")
    assert json.loads(out)["flagged"] == ["r0"]


def test_methods_summary(battles: Path) -> None:
    code, out = run("ratings", "methods", "--battles", str(battles))
    assert code == 0, out
    assert "davidson: largest rating change" in out and "rao-kupper" in out


def test_bad_options(battles: Path, tmp_path: Path) -> None:
    code, out = run("ratings", "--battles", str(battles), "--method", "glicko")
    assert code == 1 and "method must be one of" in out
    code, out = run("ratings", "--battles", str(battles), "--ci", "jackknife")
    assert code == 1 and "--ci must be" in out
    code, out = run("ratings", "predict", "--battles", str(battles), "--split", "weekly")
    assert code == 1 and "--split must be" in out
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"model_a": "x", "model_b": "y", "winner": "draw"}\n')
    code, out = run("ratings", "annotators", "--battles", str(bad))
    assert code == 1 and "line 1" in out and "draw" in out


def test_start_up_imports_stay_lazy() -> None:
    """`vibestudio --help` and `import standings.ratings` load none of the heavy libraries; a ratings run loads only what
    it uses (no gradio, torch, transformers, SQLAlchemy, scipy.optimize or scipy.special)."""
    import subprocess
    import sys

    heavy = ("gradio", "torch", "transformers", "sqlalchemy", "pandas", "numpy", "scipy", "duckdb")
    code = "import sys; {stmt}; print(','.join(m for m in {mods!r} if m in sys.modules))"
    for stmt in ("import vibestudio.studio.cli", "import vibestudio.standings.ratings"):
        out = subprocess.run(
            [sys.executable, "-c", code.format(stmt=stmt, mods=heavy)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        assert out == "", (stmt, out)
    stmt = "from studio.cli import app; from standings.ratings import ratings_report; import standings.ratings._report"
    mods = ("gradio", "torch", "transformers", "sqlalchemy", "scipy.optimize", "scipy.special", "scipy.stats")
    out = subprocess.run(
        [sys.executable, "-c", code.format(stmt=stmt, mods=mods)], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "", out


def test_role_names_match_the_accounts_module() -> None:
    from vibestudio.accounts import ROLES
    from vibestudio.studio.cli import users as cli_users

    assert cli_users.ROLES == ROLES
