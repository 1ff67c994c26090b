"""The judge-described differences as the Models tab and ``vibestudio drift`` show them: judge-written text stays
text on the page, and the CLI runs the step with its caps (scripted models behind the real HTTP engine)."""

from __future__ import annotations

from typer.testing import CliRunner

from tests.helpers.scripted_judge import ScriptedJudge
from vibestudio.db.session import Database
from vibestudio.studio.cli import app
from vibestudio.studio.render import literal, to_html
from vibestudio.training.report.text import described_md


def test_judge_text_reaches_the_page_only_as_text():
    report = {
        "described": {
            "judge": "j",
            "propose_prompts": 9,
            "validate_prompts": 11,
            "calls": {"total": 47},
            "seconds": 1.0,
            "alpha": 0.05,
            "candidates": [{"axis": "<img src=x onerror=alert(1)> | pipes", "batches": 1}],
            "axes": [
                {
                    "axis": "<img src=x onerror=alert(1)> | pipes",
                    "more_in": "child",
                    "child_share": 1.0,
                    "low": 0.7,
                    "high": 1.0,
                    "n": 11,
                    "decisive": 11,
                    "child_more": 11,
                    "parent_more": 0,
                    "neither": 0,
                    "inconsistent": 0,
                    "unreadable": 0,
                    "q": 0.001,
                    "found": True,
                    "note": "",
                    "examples": [
                        {"prompt": "q", "parent": "p", "child": "<script>x()</script>", "more": "child"}
                    ],
                }
            ],
        }
    }
    page = to_html(described_md(report, literal))
    assert "<img" not in page and "<script" not in page and "&lt;img src=x" in page
    assert page.count("<tr>") == 2  # header + one axis: the pipe in the axis did not split the row


def test_the_cli_shows_the_described_differences():
    chat = ScriptedJudge()
    db = Database()
    db.migrate()
    parent = chat.add(db, "plain")
    chat.add(db, "cheery", parent=parent)
    chat.add(db, "honest-judge")
    db.dispose()
    args = ["drift", "cheery", "--prompts", "20", "--eval-items", "0", "--judge", "honest-judge"]
    try:
        r = CliRunner().invoke(app, [*args, "--describe-axes", "1", "--describe-prompts", "8"])
    finally:
        chat.close()
    assert r.exit_code == 0, r.output
    assert chat.requests["honest-judge"] == 40 + 3 + 2 * 8
    assert "### Judge-described differences (judge honest-judge)" in r.stdout
    assert "| “uses emoji” | child | 100% [" in r.stdout
