"""``vibestudio train KIND --dry-run`` checks a job config the way the user trial read it: ``--set kind=`` is held
to the command's kind, a YAML syntax error names the line its unclosed item starts on, a bad ``--set`` value is
one line, every refusal is printed the same way, a skipped report says the child will be held, and ``--set``
shows FIELD=VALUE in the help."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from vibestudio.db.session import data_home
from vibestudio.training.jobs import runner


def _run(*args: str):
    from vibestudio.studio.cli import app

    return CliRunner().invoke(app, list(args))


def _problems(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("Error: ")]


def _job_file(tmp_path: Path, snap: str = "", extra: str = "") -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(
        f"kind: dpo\nparent_contestant: tiny-parent\nsnapshot_hash: '{snap}'\n{extra}", encoding="utf-8"
    )
    return path


# ---- 1. --set kind= is the command's kind or refused, as a file's kind is ---------------------------------------
def test_set_kind_of_another_kind_is_refused_naming_the_set(tmp_path):
    path = _job_file(tmp_path)
    r = _run("train", "dpo", "--config", str(path), "--set", "kind=kto", "--dry-run")
    assert r.exit_code == 1, r.output
    assert _problems(r.output) == ["Error: --set kind=kto: it is a 'kto' job; use `vibestudio train kto`"]
    r = _run("train", "dpo", "--config", str(path), "--set", "kind=banana", "--dry-run")
    assert r.exit_code == 1, r.output
    [said] = _problems(r.output)
    assert said.startswith("Error: --set kind=banana: unknown job kind 'banana'") and "dpo" in said, said
    r = _run("train", "dpo", "--config", str(path), "--set", "kind=kto", "--dry-run", "--json")
    assert r.exit_code == 1
    out = json.loads(r.stdout)
    assert not out["ok"] and [(e["field"], e["where"]) for e in out["errors"]] == [("kind", "--set kind=kto")]


def test_a_file_of_an_unknown_kind_is_not_sent_to_a_command_that_does_not_exist(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text("kind: banana\n", encoding="utf-8")
    r = _run("train", "dpo", "--config", str(path), "--dry-run")
    assert r.exit_code == 1
    [said] = _problems(r.output)
    assert (
        said.startswith(f"Error: {path}: unknown job kind 'banana'") and "vibestudio train banana" not in said
    )


def test_set_kind_equal_to_the_command_is_accepted(home_db, tmp_path):
    db, snap = home_db
    path = _job_file(tmp_path, snap, "drift_prompts: 0\n")
    r = _run("train", "dpo", "--config", str(path), "--set", "kind=dpo", "--dry-run")
    assert r.exit_code == 0, r.output
    assert "kind: dpo" in r.output and runner.list_jobs(db) == []


# ---- 2. a YAML syntax error: the line its unclosed item starts on, printed as the field errors are ---------------
def test_an_unclosed_bracket_is_named_on_the_line_it_opens(tmp_path):
    path = tmp_path / "bad_syntax.yaml"
    path.write_text("kind: dpo\nmax_steps: 4\nseed: 2\nlora: true\nbeta: [0.1\nloss_type: sigmoid\n")
    r = _run("train", "dpo", "--config", str(path), "--dry-run")
    assert r.exit_code == 1
    assert _problems(r.output) == [
        f"Error: {path}:5: not valid YAML: the '[' opened here is not closed (noticed at line 6, column 10: "
        "expected ',' or ']', but got ':')"
    ], r.output


def test_a_syntax_error_and_a_field_error_are_printed_alike(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text("kind: dpo\nbeta: 'x\n", encoding="utf-8")
    syntax = _problems(_run("train", "dpo", "--config", str(path), "--dry-run").output)
    path.write_text("kind: dpo\nbeta: 0\n", encoding="utf-8")
    field = _problems(_run("train", "dpo", "--config", str(path), "--dry-run").output)
    assert [s.startswith(f"Error: {path}:2: ") for s in syntax + field] == [True, True], (syntax, field)
    assert "the single quote opened here is not closed" in syntax[0]
    path.write_text("kind: dpo\nbeta: 'x\n", encoding="utf-8")
    r = _run("train", "dpo", "--config", str(path), "--dry-run", "--json")
    assert r.exit_code == 1
    [error] = json.loads(r.stdout)["errors"]
    assert error["message"].startswith(f"{path}:2: not valid YAML") and error["where"] == f"{path}:2"


# ---- 3. a bad --set value is one line ----------------------------------------------------------------------------
def test_a_set_value_that_is_not_yaml_is_one_line(tmp_path):
    path = _job_file(tmp_path)
    r = _run("train", "dpo", "--config", str(path), "--set", "beta=[0.1", "--dry-run")
    assert r.exit_code == 1
    said = [line for line in r.output.splitlines() if line.strip()]
    assert said == [
        "Error: --set beta=[0.1: not a valid value (the '[' at column 1 is not closed (noticed at column 5: "
        "expected ',' or ']', but got '<stream end>'))"
    ], r.output


# ---- 6. a skipped report: the child will be held, read from the rules in force -----------------------------------
def test_a_skipped_report_says_the_child_will_be_held(home_db, tmp_path):
    db, snap = home_db
    path = _job_file(tmp_path, snap, "drift_prompts: 0\n")
    r = _run("train", "dpo", "--config", str(path), "--dry-run")
    assert r.exit_code == 0, r.output
    held = "the child will be held until a researcher lets it in (the built-in verdict rules: hold.skipped_report: true)"
    assert held in r.output, r.output
    assert r.output.count(held) == 1  # said once, in the estimate or as a note
    out = json.loads(_run("train", "dpo", "--config", str(path), "--dry-run", "--json").stdout)
    assert out["ok"] and any(held in n for n in out["notes"]), out["notes"]
    folder = data_home() / "rules"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "lenient.yaml").write_text("version: 2\nrules: []\nhold:\n  skipped_report: false\n")
    r = _run("train", "dpo", "--config", str(path), "--set", "verdict_rules=lenient.yaml", "--dry-run")
    assert r.exit_code == 0, r.output
    assert "held until" not in r.output
    assert (
        "the child plays at once, unchecked (verdict_rules 'lenient.yaml': hold.skipped_report: false)"
        in r.output
    )
    r = _run("train", "dpo", "--config", str(path), "--set", "drift_prompts=20", "--dry-run", "--json")
    assert json.loads(r.stdout)["notes"] == []
    assert runner.list_jobs(db) == []


# ---- 7. --set shows what it takes ---------------------------------------------------------------------------------
def test_set_shows_field_equals_value_in_the_help():
    r = _run("train", "dpo", "--help")
    assert r.exit_code == 0
    assert "--set FIELD=VALUE" in " ".join(r.output.split()) and "list[str]" not in r.output, r.output
