"""A refused config says where the bad value came from: the file and the line of its key, or the --set that
gave it. A config whose report could never reach a verdict (a measure a required rule needs is turned off) is
refused before launch, naming the field, the rule and the way on; nothing is written."""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select
from typer.testing import CliRunner

from vibestudio.db.models import Job
from vibestudio.db.session import Database, data_home
from vibestudio.training.jobs.config import (
    ConfigError,
    DPOJobConfig,
    Sources,
    load_config,
    parse_config_text,
)
from vibestudio.training.jobs.errors import JobError
from vibestudio.training.jobs.preflight import REPORT_SWITCHES
from vibestudio.training.jobs.service import check_config, launch_config
from vibestudio.training.report.verdict import load_rules

JOB = """\
# a DPO job
kind: dpo

parent_contestant: tiny-parent
max_steps: 4
learning_rate: 0.0001
beta: 0
loss_type: sigmoid
"""


def _jobs(db: Database) -> int:
    with db.session() as s:
        return s.scalar(select(func.count(Job.id))) or 0


def _refusal(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return str(info.value)


# ---- 1. a bad field in a file: the file, the line, the field ----------------------------------------------------
def test_a_bad_field_in_a_yaml_file_names_the_file_its_line_and_the_field(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(JOB, encoding="utf-8")
    said = _refusal(path)
    assert said.startswith(f"{path}:7: beta must be > 0"), said
    path.write_text(JOB.replace("beta: 0", "beta: 0.1").replace("loss_type: sigmoid", "loss_type: sigmiod"))
    assert _refusal(path).startswith(f"{path}:8: loss_type 'sigmiod' unknown")


def test_every_bad_field_gets_its_own_line(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text("kind: dpo\nmax_steps: 0\nlora: 3\nfavourite_colour: blue\n", encoding="utf-8")
    said = _refusal(path)
    for line, name in ((2, "max_steps"), (3, "lora"), (4, "favourite_colour")):
        assert f"{path}:{line}: " in said and name in said.split(f"{path}:{line}: ")[1].split(";")[0]


def test_a_json_config_file_names_the_line_too(tmp_path):
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"kind": "dpo", "max_steps": 4, "beta": -1}, indent=1), encoding="utf-8")
    assert _refusal(path).startswith(f"{path}:4: beta must be > 0")
    path.write_text('{"kind": "dpo",\n "beta": 0.1,\n "max_steps": }\n', encoding="utf-8")
    assert _refusal(path).startswith(f"{path}:3:")


def test_a_yaml_syntax_error_names_the_file_and_line(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text("kind: dpo\nbeta: 0.1\n  steps: [\n", encoding="utf-8")
    assert _refusal(path).startswith(f"{path}:3: not valid YAML")


def test_an_item_inside_a_field_is_found_on_its_own_line(tmp_path):
    path = tmp_path / "grpo.yaml"
    path.write_text("kind: grpo\nrewards:\n  - type: length\n    max: 60\n  - 3\n", encoding="utf-8")
    said = _refusal(path)
    assert said.startswith(f"{path}:5: ") and "rewards" in said, said


def test_a_field_the_file_does_not_set_falls_back_to_the_file(tmp_path):
    """num_generations 3 does not divide the default batch (4): the error is on a field the file leaves out."""
    path = tmp_path / "grpo.yaml"
    path.write_text("kind: grpo\nnum_generations: 3\n", encoding="utf-8")
    said = _refusal(path)
    assert said.startswith(f"{path}: per_device_train_batch_size"), said


def test_the_train_tab_text_gets_the_line_of_a_bad_field():
    _, errors = parse_config_text(JOB)
    assert [(e.field, e.where) for e in errors] == [("beta", "line 7")]
    assert errors[0].message.startswith("line 7: beta must be > 0")


BOUNDED = [
    (f.name, f.metadata)
    for f in dataclasses.fields(DPOJobConfig)
    if any(k in f.metadata for k in ("ge", "gt"))
    and f.default is not None
    and isinstance(f.default, int | float)
]


def _bad_value(meta) -> float:
    return meta["ge"] - 1 if "ge" in meta else meta["gt"] - 1


def _field(name: str):
    return next(f for f in dataclasses.fields(DPOJobConfig) if f.name == name)


@settings(max_examples=40, deadline=None)
@given(
    picked=st.lists(st.sampled_from(BOUNDED), min_size=1, max_size=8, unique_by=lambda f: f[0]),
    bad=st.integers(min_value=0, max_value=7),
    gaps=st.lists(st.sampled_from(["", "# note", "   "]), min_size=8, max_size=8),
    flow=st.booleans(),
)
def test_any_bad_field_in_a_generated_file_is_named_on_its_line(picked, bad, gaps, flow):
    """A file of some bounded fields in any order, with blank and comment lines between, one of them out of
    bounds: the refusal names that field on its line (block YAML, or JSON-like flow style one key a line)."""
    bad %= len(picked)
    lines = ["{" if flow else "kind: dpo"] + (['"kind": "dpo",'] if flow else [])
    line_of_bad = 0
    for i, (name, meta) in enumerate(picked):
        if gaps[i] and not flow:
            lines.append(gaps[i])
        value = _bad_value(meta) if i == bad else _field(name).default
        comma = "," if flow and i < len(picked) - 1 else ""
        lines.append(f'"{name}": {value}{comma}' if flow else f"{name}: {value}")
        if i == bad:
            line_of_bad = len(lines)
    if flow:
        lines.append("}")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("job.json" if flow else "job.yaml")
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        said = _refusal(path)
    name = picked[bad][0]
    assert said.startswith(f"{path}:{line_of_bad}: {name} must be"), (said, lines)


# ---- 2. a bad --set says it came from --set ----------------------------------------------------------------------


def _cli(*args: str):
    from vibestudio.studio.cli import app

    return CliRunner().invoke(app, list(args))


def test_a_bad_set_override_names_the_set_not_the_file(home_db, tmp_path):
    db, snap = home_db
    path = tmp_path / "job.yaml"
    path.write_text(
        f"kind: dpo\nparent_contestant: tiny-parent\nsnapshot_hash: {snap}\nbeta: 0.2\ndrift_prompts: 0\n",
        encoding="utf-8",
    )
    r = _cli("train", "dpo", "--config", str(path), "--set", "beta=0", "--dry-run")
    assert r.exit_code == 1
    assert "--set beta=0: beta must be > 0" in r.output, r.output
    assert f"{path}:" not in r.output
    r = _cli("train", "dpo", "--config", str(path), "--set", "beta=-1", "--dry-run", "--json")
    errors = json.loads(r.stdout)["errors"]
    assert [(e["field"], e["where"]) for e in errors] == [("beta", "--set beta=-1")]
    path.write_text(
        f"kind: dpo\nparent_contestant: tiny-parent\nsnapshot_hash: {snap}\nbeta: 0\ndrift_prompts: 0\n",
        encoding="utf-8",
    )
    r = _cli("train", "dpo", "--config", str(path), "--dry-run")
    assert r.exit_code == 1 and f"{path}:4: beta must be > 0" in r.output, r.output
    r = _cli("train", "dpo", "--config", str(path), "--set", "beta=0.3", "--dry-run")
    assert r.exit_code == 0, r.output  # the override wins over the file's bad value
    assert _jobs(db) == 0


def test_the_api_takes_where_each_value_came_from(db, tiny_parent, make_snapshot):
    snap = make_snapshot(8)
    data = {"kind": "dpo", "parent_contestant": "tiny-parent", "snapshot_hash": snap, "max_steps": 0}
    check = check_config(db, data, sources=Sources(given={"max_steps": "--set max_steps=0"}))
    assert [e.message for e in check.errors] == ["--set max_steps=0: max_steps must be at least 1 (got 0)"]
    assert "--set max_steps=0" in check.message()


# ---- 3. a report knob that leaves a required measure unmeasured is refused -----------------------------------------
def _required(measure_family: str) -> list[str]:
    return [r.name for r in load_rules().rules if r.required and r.measure.startswith(measure_family)]


def test_evals_turned_off_are_refused_while_a_rule_requires_them(db, tiny_parent, make_snapshot):
    snap = make_snapshot(8)
    base = {"kind": "dpo", "parent_contestant": "tiny-parent", "snapshot_hash": snap, "drift_prompts": 20}
    assert check_config(db, base).ok
    check = check_config(db, {**base, "eval_items": 0})
    assert [e.field for e in check.errors] == ["eval_items"]
    said = check.errors[0].message
    rule = _required("evals/")[0]
    for part in (rule, "evals/accuracy", "eval_items", "verdict_rules", "unknown"):
        assert part in said, said
    with pytest.raises(JobError, match="eval_items"):
        launch_config(db, {**base, "eval_items": 0})
    assert _jobs(db) == 0  # nothing written for a refused check
    # no report at all (drift_prompts 0), or nothing published: nothing to decide, nothing refused
    assert check_config(db, {**base, "eval_items": 0, "drift_prompts": 0}).ok
    assert check_config(db, {**base, "kind": "reward", "publish": False, "eval_items": 0}).ok


def test_the_check_reads_the_rules_the_config_names(db, tiny_parent, make_snapshot):
    """Rules that do not require the evals let eval_items 0 pass; rules that require the judge refuse a config
    without one, by the same mechanism."""
    snap = make_snapshot(8)
    folder = data_home() / "rules"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "no_evals.yaml").write_text(
        "version: 1\nrules:\n  - {measure: drift/flattery, when: significant_increase, verdict: regress}\n"
    )
    (folder / "judged.yaml").write_text(
        "version: 1\nrules:\n  - {name: judge must like it, measure: 'judge/*', when: below, value: 0.4,"
        " verdict: watch, required: true}\n"
    )
    base = {"kind": "dpo", "parent_contestant": "tiny-parent", "snapshot_hash": snap, "drift_prompts": 20}
    assert check_config(db, {**base, "eval_items": 0, "verdict_rules": "no_evals.yaml"}).ok
    check = check_config(db, {**base, "verdict_rules": "judged.yaml"})
    assert [e.field for e in check.errors] == ["judge"]
    assert "judge must like it" in check.errors[0].message and "judged.yaml" in check.errors[0].message
    assert check_config(db, {**base, "verdict_rules": "judged.yaml", "judge": "tiny-parent"}).ok


def test_the_refusal_is_tied_to_the_file_line_of_the_field(db, tiny_parent, make_snapshot):
    snap = make_snapshot(8)
    text = f"kind: dpo\nparent_contestant: tiny-parent\nsnapshot_hash: {snap}\ndrift_prompts: 20\neval_items: 0\n"
    check = check_config(db, text)
    assert [(e.field, e.where) for e in check.errors] == [("eval_items", "line 5")]


def test_each_switch_names_what_the_report_leaves_unmeasured_when_it_is_off():
    """The switches' measure names are the report's own: its steps, run with the switch off, leave exactly
    those unmeasured (so a renamed measure cannot slip past the check)."""
    from vibestudio.training.report import steps

    def gaps(step, *args) -> set[str]:
        report = steps.CheckpointReport(1, "child", 0, "parent")
        step(None, report, *args, lambda _msg: None)
        return set(report.unmeasured)

    made = {
        "eval_items": gaps(steps._record_evals, None, None, 0, 8, 42),
        "judge": gaps(steps._record_judge, None, [], None, 42)
        | gaps(steps._record_described, None, [], None, (6, 11), 42),
        "describe_axes": gaps(steps._record_described, "judge", [], None, (0, 11), 42),
    }
    assert {s.field: set(s.measures) for s in REPORT_SWITCHES} == made
