"""An annotator labels three items with the keyboard in real Chromium; the verdicts land in item terms through
the layout each item was shown in, a rubric score clicked on the way is kept, and no model name reaches the page."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from sqlalchemy import select

from tests.helpers.browser import wait_text
from tests.helpers.servers import start_server

pytestmark = pytest.mark.e2e


def _make_queue(home: Path) -> str:
    from vibestudio.annotation.queues import NewItem, add_item, create_queue
    from vibestudio.annotation.rubrics import get_rubric
    from vibestudio.db.session import Database

    url = f"sqlite:///{home / 'studio.sqlite'}"
    db = Database(url)
    db.migrate()
    with db.session() as s:
        create_queue(s, "kbd", rubric=get_rubric(), overlap=1)
        for i in range(3):
            add_item(
                s,
                "kbd",
                NewItem(
                    [{"role": "user", "content": f"Question number {i}?"}],
                    [f"Alpha reply {i}.", f"Beta reply {i}."],
                    [{"model": "secret-model-one"}, {"model": "secret-model-two"}],
                ),
            )
    db.dispose()
    return url


@pytest.fixture
def label_server(tmp_path, monkeypatch):
    home = tmp_path / "studio-home"
    home.mkdir()
    monkeypatch.setenv("VIBESTUDIO_HOME", str(home))
    url = _make_queue(home)
    proc, base = start_server(home)
    yield base, url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_annotator_labels_three_items_with_the_keyboard(label_server, browser):
    base, db_url = label_server
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(base)
    page.get_by_role("tab", name="Label").click()
    page.locator("#label-annotator textarea, #label-annotator input").first.fill("kim")
    page.wait_for_function(
        "document.querySelector('#label-queue input') && document.querySelector('#label-queue input').value === 'kbd'"
    )
    page.locator("#label-start").click()
    wait_text(page, "#label-prompt", "Question number")
    # a rubric score clicked with the mouse, then the verdict from the keyboard
    page.locator("#label-crit-0-a label").filter(has_text="4").click()
    for n, key in enumerate(["1", "2", "3"], start=1):
        assert "secret-model" not in page.content()
        page.keyboard.press(key)
        wait_text(page, "#label-progress", f": {n} done")  # each verdict stored: the count it alone makes
    wait_text(page, "#label-prompt", "Nothing left")
    shot = os.environ.get("VIBESTUDIO_LABEL_SCREENSHOT")
    if shot:
        Path(shot).parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=shot, full_page=True)
    page.close()

    from vibestudio.db.models import Assignment, Label, RubricScore
    from vibestudio.db.session import Database

    db = Database(db_url)
    with db.session() as s:
        rows = s.execute(
            select(Label, Assignment)
            .join(Assignment, Label.assignment_id == Assignment.id)
            .order_by(Assignment.position)
        ).all()
        scores = s.scalars(select(RubricScore)).all()
    db.dispose()
    assert [(lab.annotator, lab.kind) for lab, _ in rows] == [("kim", "human")] * 3
    expected = []
    for (_, a), choice in zip(rows, ["left", "right", "tie"], strict=True):
        if choice == "tie":
            expected.append("tie")
        else:
            expected.append("1" if (choice == "left") == a.left_is_first else "2")
    assert [lab.outcome for lab, _ in rows] == expected
    (score,) = scores
    first_label, first_assignment = rows[0]
    assert score.label_id == first_label.id and score.criterion == "helpfulness" and score.value == 4.0
    assert score.side == ("1" if first_assignment.left_is_first else "2")
