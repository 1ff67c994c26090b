"""How a job config's problems read: a YAML syntax error names the line its unclosed item starts on, errors come
in file order, an unknown field suggests the close one, and a skipped report says the child will be held."""

from __future__ import annotations

from pathlib import Path

import pytest

from vibestudio.db.session import data_home
from vibestudio.training.jobs.config import ConfigError, load_config, parse_config_text, yaml_syntax
from vibestudio.training.jobs.service import check_config


def _refusal(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return str(info.value)


# ---- 2. the line where the unclosed construct began, and where PyYAML noticed ----------------------------------
UNCLOSED = "kind: dpo\nmax_steps: 4\nseed: 2\nlora: true\nbeta: [0.1\nloss_type: sigmoid\n"


def test_an_unclosed_bracket_is_named_where_it_opens(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(UNCLOSED, encoding="utf-8")
    assert _refusal(path) == (
        f"{path}:5: not valid YAML: the '[' opened here is not closed (noticed at line 6, column 10: "
        "expected ',' or ']', but got ':')"
    )
    _, [error] = parse_config_text(UNCLOSED)
    assert error.message.startswith("line 5: not valid YAML: the '[' opened here") and error.where == "line 5"


@pytest.mark.parametrize(
    ("text", "line", "said"),
    [
        ("kind: dpo\nmax_steps: [1,\n", 2, "the '[' opened here is not closed (noticed at line 3, column 1"),
        ("kind: dpo\ndrift_thresholds: {a: 1\nbeta: 2\n", 2, "the '{' opened here is not closed"),
        ('kind: dpo\noutput_name: "abc\nbeta: 2\n', 2, "the double quote opened here is not closed"),
        ("kind: dpo\nbeta: 0.1\n  steps: 3\n", 3, "mapping values are not allowed here (column 8)"),
        ("kind: dpo\nbeta: 0.1\n- x\n", 3, "while parsing a block mapping that began at line 1"),
    ],
)
def test_each_syntax_error_names_its_line(text, line, said):
    found_line, words = yaml_syntax(text)
    assert found_line == line and said in words, words
    assert "\n" not in words


def test_a_one_line_value_is_said_by_column():
    assert yaml_syntax("[0.1", one_line=True) == (
        1,
        "the '[' at column 1 is not closed (noticed at column 5: expected ',' or ']', but got '<stream end>')",
    )
    assert yaml_syntax("[0.1]") == (None, "")


# ---- 4. errors in the order of the file's lines --------------------------------------------------------------------
def test_field_errors_come_in_file_order(tmp_path):
    path = tmp_path / "job.yaml"
    # pydantic reports in declaration order: max_steps, then lora, then beta
    path.write_text("kind: dpo\nbeta: 0\nlora: 3\nmax_steps: 0\n", encoding="utf-8")
    said = _refusal(path).split("; ")
    assert [s.split(": ")[0] for s in said] == [f"{path}:2", f"{path}:3", f"{path}:4"], said
    _, errors = parse_config_text("kind: dpo\nbeta: 0\nlora: 3\nmax_steps: 0\n")
    assert [e.where for e in errors] == ["line 2", "line 3", "line 4"]


# ---- 5. an unknown field: the close one, not all of them -----------------------------------------------------------
def test_a_misspelt_field_suggests_the_close_one(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text("kind: dpo\nmax_steps: 4\nbetaa: 0.2\n", encoding="utf-8")
    said = _refusal(path)
    assert said.startswith(f"{path}:3: unknown field 'betaa' for a dpo job; did you mean 'beta'?"), said
    assert "lora_target_modules" not in said and "docs/job-config.md" in said
    path.write_text("kind: dpo\nzqxv: 1\n", encoding="utf-8")
    said = _refusal(path)
    assert "did you mean" not in said and "lora_target_modules" in said  # nothing close: every field


# ---- 6. a skipped report: a note from the rules in force, not a refusal ----------------------------------------------
HELD = "the child will be held until a researcher lets it in (the built-in verdict rules: hold.skipped_report: true)"


def test_a_skipped_report_is_noted_from_the_rules(db, tiny_parent, make_snapshot):
    snap = make_snapshot(8)
    base = {"kind": "dpo", "parent_contestant": "tiny-parent", "snapshot_hash": snap, "drift_prompts": 0}
    check = check_config(db, base)
    assert check.ok and check.found is not None
    assert check.found.notes == [f"no checkpoint report (drift_prompts 0): {HELD}"]
    assert check.estimate is not None and HELD in check.estimate.summary()
    folder = data_home() / "rules"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "lenient.yaml").write_text("version: 2\nrules: []\nhold:\n  skipped_report: false\n")
    check = check_config(db, {**base, "verdict_rules": "lenient.yaml"})
    assert check.ok and check.found is not None
    assert check.found.notes == [
        "no checkpoint report (drift_prompts 0): the child plays at once, unchecked "
        "(verdict_rules 'lenient.yaml': hold.skipped_report: false)"
    ]
    for other in ({"drift_prompts": 20}, {"publish": False}, {"kind": "reward"}):
        check = check_config(db, {**base, **other})
        assert check.ok and check.found is not None and check.found.notes == [], other
        assert check.estimate is None or HELD not in check.estimate.summary()
