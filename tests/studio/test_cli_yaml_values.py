"""A YAML value given on the command line (``--reward``, ``--verifier``) that does not parse is refused on one
line naming the option and where the value goes wrong, not with PyYAML's multi-line message."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from vibestudio.studio.cli import app


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["train", "grpo", "--reward", "{type: length, max: [60"],
            "--reward {type: length, max: [60: not valid",
        ),
        (["train", "grpo", "--reward", "length:max=[60"], "--reward max=[60: not valid YAML"),
        (
            ["train", "grpo", "--tasks", "t", "--verifier", "{type: [x"],
            "--verifier {type: [x: not valid YAML",
        ),
        (
            ["tasks", "import", "nowhere.jsonl", "--name", "t", "--verifier", "{a: [b"],
            "--verifier {a: [b: not valid",
        ),
    ],
)
def test_a_bad_yaml_value_is_one_line_naming_its_option(args, said):
    r = CliRunner().invoke(app, [*args, "--dry-run"] if args[0] == "train" else args)
    assert r.exit_code == 1, r.output
    problem = [line for line in r.output.splitlines() if line.startswith("Error: ")]
    assert len(problem) == 1 and said in problem[0], r.output
    assert "is not closed" in problem[0] and "while parsing" not in r.output, r.output
