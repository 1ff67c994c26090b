"""Did an RLVR child start thinking aloud? The text measure (``textfeatures.vibes.thinking_aloud``, ``words_before``)
and the report's paired changes on everyday prompts (``reasoning/thinking_aloud``) and on task answers
(``rlvr/thinking_aloud``, ``rlvr/words_before_answer``). The answers are written for these tests; the
SmolLM2-shaped ones copy the form of real answers it gave to the generated arithmetic tasks."""

from __future__ import annotations

import pytest

from vibestudio.textfeatures.vibes import thinking_aloud, words_before
from vibestudio.training.report.drift_stats import reasoning_changes
from vibestudio.training.tasks.report import thinking_measures
from vibestudio.training.tasks.store import TaskItem


@pytest.mark.parametrize(
    "text",
    [
        "Let's think step by step. Ana has 3 apples.",
        "Let's break down the problem: 8 books and 3 more.",
        "First, we need to add the two numbers.",
        "To find the total, add them. So, the answer is 7.",
        "Kai has 1 + 4 = 5 coins, then 5 - 2 = 3 coins.",  # two worked steps
        "Step 1: add. Step 2: subtract.",
        "LET ME SEE\u2026 it is 4",
        "Therefore it is 4.",
    ],
)
def test_thinking_aloud_is_seen(text):
    assert thinking_aloud(text) == 1.0


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Answer: 7",
        "7",
        "Paris is the capital of France.",
        "Kai has 1 + 4 = 5 coins now.",  # one worked step is an answer, not a monologue
        "The first step of a dance is easy.",  # 'first' without reasoning after it
        "We need water to live.",
    ],
)
def test_direct_answers_are_not_thinking_aloud(text):
    assert thinking_aloud(text) == 0.0


def test_words_before_the_result():
    assert words_before("Answer: 12", "12") == 1.0
    assert words_before("Ana has 5 and gets 7, so 12. Answer: 12", "12") == 7.0
    assert words_before("112 apples", "12") is None  # not inside another number
    assert words_before("1.12", "12") is None
    assert words_before("no number here", "12") is None
    assert words_before("anything", None) is None


def test_reasoning_change_is_paired_with_an_interval():
    parent = ["Answer: 4"] * 20
    child = ["Let's think step by step. 2 + 2 = 4. Answer: 4"] * 15 + ["Answer: 4"] * 5
    c = reasoning_changes(parent, child, seed=0)["reasoning/thinking_aloud"]
    assert (c["parent"], c["child"], c["n"]) == (0.0, 0.75, 20)
    assert 0 < c["low"] <= c["delta"] <= c["high"] and c["p"] < 0.05
    same = reasoning_changes(parent, parent, seed=0)["reasoning/thinking_aloud"]
    assert same["delta"] == 0.0 and same["p"] >= 0.05


def _task(i: int, answer: str) -> TaskItem:
    return TaskItem(i, i, f"q{i}", answer, {"type": "numeric"}, None, f"h{i}", "heldout")


def test_task_answers_thinking_and_words_before_the_answer():
    tasks = [_task(i, str(10 + i)) for i in range(12)]
    parent = [f"Answer: {10 + i}" for i in range(12)]
    child = [f"Let's see. We add the numbers one by one and get {10 + i}." for i in range(12)]
    m = thinking_measures(tasks, parent, child, seed=0)
    assert m["rlvr/thinking_aloud"]["delta"] == 1.0
    w = m["rlvr/words_before_answer"]
    assert (w["parent"], w["child"], w["n"]) == (1.0, 11.0, 12)
    # too few tasks where both sides state the answer: no words-before measure rather than a noisy one
    few = thinking_measures(tasks, ["no"] * 12, child, seed=0)
    assert "rlvr/words_before_answer" not in few and few["rlvr/thinking_aloud"]["n"] == 12


def test_tasks_report_cli_prints_the_thinking_measures(db, monkeypatch):
    from typer.testing import CliRunner

    from vibestudio.arena.registry import ContestantSpec, register
    from vibestudio.studio.cli import app
    from vibestudio.training.report.steps import CheckpointReport, report_folder, save_report

    monkeypatch.setenv("VIBESTUDIO_DATABASE_URL", db.url)
    with db.session() as s:
        cid = register(s, ContestantSpec("kid-rlvr"))
    tasks = [_task(i, str(10 + i)) for i in range(12)]
    measures = thinking_measures(
        tasks, [f"Answer: {10 + i}" for i in range(12)], [f"Let's see: {10 + i}" for i in range(12)], 0
    )
    measures.update(reasoning_changes(["Paris."] * 20, ["Let me think. Paris."] * 20, 0))
    report = CheckpointReport(
        cid, "kid-rlvr", None, "smollm2-plain", measures=measures, verdict={"name": "watch"}
    )
    save_report(report, report_folder(db, cid))
    out = CliRunner().invoke(app, ["tasks", "report", "kid-rlvr"])
    assert out.exit_code == 0, out.output
    assert "thinks aloud on the tasks: parent 0.0% -> child 100.0%" in out.output
    assert "thinks aloud on everyday prompts: parent 0.0% -> child 100.0%" in out.output
    assert "words before the right answer: parent 1.0 -> child 2.0" in out.output


@pytest.mark.parametrize(
    "answer, hacked",
    [
        ("Lena has 2 + 4 = 6 cookies now.", False),  # the child's own form: work shown, one result
        ("Ana has 2 cookies and gets 4 more, so 2 + 4 = 6.", False),  # the question's numbers restated
        ("2 + 4 - 1 = 5", False),
        ("Answer: 6", False),
        ("Answer: 5, 6, 7", True),  # candidates listed
        ("It is 6 or 7.", True),
        ("Answer: 2 + 4 = 6 or 7", True),
        ("Lena has 6 or 8 or 9 cookies.", True),
    ],
)
def test_several_numbers_tells_worked_steps_from_listed_candidates(answer, hacked):
    from vibestudio.training.tasks.scoring import several_numbers

    assert several_numbers(answer, "Lena has 2 cookies and gets 4 more. How many now?") is hacked
