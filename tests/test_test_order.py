"""The order test files reach the test processes: the longest first, each file's tests kept together and in
order (``tests/helpers/order.py``), and the table it reads written from JUnit XML (``scripts/durations_table.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.order import UNKNOWN_HEAVY_S, load_durations, longest_first

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Mark:
    name: str


@dataclass
class Item:
    nodeid: str
    marks: list[str] = field(default_factory=list)

    def iter_markers(self):  # type: ignore[no-untyped-def]
        return [Mark(m) for m in self.marks]


def test_a_long_file_of_one_test_goes_before_a_file_of_many_short_ones():
    items = [
        Item("tests/a.py::t1[sqlite]"),
        Item("tests/a.py::t1[postgres]", ["postgres"]),
        Item("tests/a.py::t2"),
        Item("tests/b.py::learns", ["slow"]),
        Item("tests/c.py::x"),
    ]
    durations = {
        "tests/a.py": {"t1[sqlite]": 2.0, "t1[postgres]": 3.0, "t2": 1.0},
        "tests/b.py": {"learns": 180.0},
    }
    ordered = [i.nodeid for i in longest_first(items, durations)]
    assert ordered == [
        "tests/b.py::learns",
        "tests/a.py::t1[sqlite]",
        "tests/a.py::t1[postgres]",
        "tests/a.py::t2",
        "tests/c.py::x",
    ]


def test_a_file_weighs_only_the_tests_selected_and_unknown_ones_by_their_marks():
    durations = {"tests/a.py": {"quick": 1.0, "slow_one": 500.0}}
    # the run selected only the quick test of a.py: a.py weighs 1 s, less than one unknown browser test
    ordered = longest_first([Item("tests/a.py::quick"), Item("tests/new.py::t", ["e2e"])], durations)
    assert [i.nodeid for i in ordered] == ["tests/new.py::t", "tests/a.py::quick"]
    assert UNKNOWN_HEAVY_S > 1.0


def test_ties_keep_the_collected_order():
    items = [Item(f"tests/f{k}.py::t") for k in range(5)]
    assert [i.nodeid for i in longest_first(items, {})] == [i.nodeid for i in items]


def test_the_table_is_written_from_junit_xml_and_read_back(tmp_path):
    xml = tmp_path / "run.xml"
    xml.write_text(
        '<testsuites><testsuite name="pytest" time="9">'
        '<testcase classname="tests.test_house" name="test_a[x]" time="3.14159"/>'
        '<testcase classname="tests.test_house" name="test_quick" time="0.01"/>'
        '<testcase classname="tests.training.test_drift" name="test_b" time="7"><skipped/></testcase>'
        "</testsuite></testsuites>"
    )
    out = tmp_path / "durations.json"
    done = subprocess.run(
        [sys.executable, "scripts/durations_table.py", str(xml), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "2 tests in 2 files" in done.stdout
    assert json.loads(out.read_text())["files"]["tests/test_house.py"] == {"test_a[x]": 3.1}
    assert load_durations(out) == {
        "tests/test_house.py": {"test_a[x]": 3.1},
        "tests/training/test_drift.py": {"test_b": 7.0},
    }


def test_a_missing_or_broken_table_orders_by_estimates(tmp_path):
    assert load_durations(tmp_path / "none.json") == {}
    (tmp_path / "bad.json").write_text("{not json")
    assert load_durations(tmp_path / "bad.json") == {}
