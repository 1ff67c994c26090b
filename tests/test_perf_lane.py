"""The performance lane (`scripts/perf_lane.py`): the repository's budget file is well formed and names benchmarks
that exist, a ratio past its budget or a benchmark that prints none fails the lane, and the table says which."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("perf_lane", ROOT / "scripts" / "perf_lane.py")
assert _spec is not None and _spec.loader is not None
lane = importlib.util.module_from_spec(_spec)
sys.modules["perf_lane"] = lane
_spec.loader.exec_module(lane)


def test_the_repository_budgets_load_and_name_real_benchmarks() -> None:
    budgets = lane.load()
    names = {b.name for b in budgets}
    assert {"ratings-vs-reference", "flip-overhead", "help-vs-typer"} <= names
    for b in budgets:
        scripts = [c for c in b.command if c.endswith(".py")]
        assert scripts and all((ROOT / s).is_file() for s in scripts), b.command
        assert len(b.reason) > 40  # says why the number and its headroom
        assert b.truth.startswith(("printed:", "test:")), b.name  # each speed budget names its truth check


def test_a_ratio_met_by_another_result_is_a_miss(tmp_path: Path) -> None:
    printed = "printed: the benchmark compares"
    ok = _entry("true", "print('truth: pass'); print('ratio: 3')", "floor = 2", printed)
    assert lane.main(["--budgets", str(_write(tmp_path, ok))]) == 0
    wrong = _entry("fast-but-wrong", "print('truth: FAIL'); print('ratio: 3')", "floor = 2", printed)
    table = tmp_path / "table.txt"
    assert lane.main(["--budgets", str(_write(tmp_path, wrong)), "--table", str(table)]) == 1
    assert "its truth check failed" in table.read_text()
    unchecked = _entry("unchecked", "print('ratio: 3')", "floor = 2", printed)
    assert lane.main(["--budgets", str(_write(tmp_path, unchecked))]) == 1
    no_truth = '[[budget]]\nname = "x"\ncommand = ["python"]\nfloor = 1\nreason = "r"\n'
    with pytest.raises(ValueError, match="needs a truth check"):
        lane.load(_write(tmp_path, no_truth))
    ghost = _entry("x", "pass", "floor = 1", "test: tests/test_perf_lane.py::test_that_does_not_exist")
    with pytest.raises(ValueError, match="does not exist"):
        lane.load(_write(tmp_path, ghost))


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "budgets.toml"
    path.write_text(body, encoding="utf-8")
    return path


def _entry(
    name: str,
    code: str,
    bound: str,
    truth: str = "test: tests/test_perf_lane.py::test_the_last_ratio_line_counts",
) -> str:
    return (
        f'[[budget]]\nname = "{name}"\ncommand = ["python", "-c", "{code}"]\n{bound}\nreason = "a test"\n'
        f'truth = "{truth}"\n\n'
    )


def test_a_miss_or_a_missing_ratio_fails_the_lane(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kept = _entry("kept", "print('ratio: 2.5 (x)')", "floor = 2.0") + _entry(
        "under-ceiling", "print('ratio: 1.2')", "ceiling = 1.5"
    )
    path = _write(tmp_path, kept)
    assert lane.main(["--budgets", str(path)]) == 0
    missed = kept + _entry("too-slow", "print('ratio: 1.9')", "floor = 2.0")
    assert lane.main(["--budgets", str(_write(tmp_path, missed))]) == 1
    table = tmp_path / "table.txt"
    silent = _entry("silent", "print('no number here')", "ceiling = 9")
    assert lane.main(["--budgets", str(_write(tmp_path, silent)), "--table", str(table)]) == 1
    text = table.read_text()
    assert "silent" in text and "FAIL" in text and "printed no 'ratio:' line" in text
    crashed = _entry("crashed", "raise SystemExit(3)", "floor = 1")
    assert lane.main(["--budgets", str(_write(tmp_path, crashed))]) == 1
    assert "exit status 3" in capsys.readouterr().out


def test_bad_budget_files_are_refused(tmp_path: Path) -> None:
    both = '[[budget]]\nname = "x"\ncommand = ["python"]\nfloor = 1\nceiling = 2\nreason = "r"\ntruth = "printed: x"\n'
    with pytest.raises(ValueError, match="exactly one of floor and ceiling"):
        lane.load(_write(tmp_path, both))
    no_reason = '[[budget]]\nname = "x"\ncommand = ["python"]\nfloor = 1\ntruth = "printed: x"\n'
    with pytest.raises(ValueError, match="needs a reason"):
        lane.load(_write(tmp_path, no_reason))
    twice = _entry("x", "pass", "floor = 1") * 2
    with pytest.raises(ValueError, match="used twice"):
        lane.load(_write(tmp_path, twice))


def test_the_last_ratio_line_counts() -> None:
    assert lane.parse_ratio("ratio: 9 (first)\nmore\n  ratio: 0.25 (last)\n") == 0.25
    assert lane.parse_ratio("the ratio: is not at a line start 3\n") is None
