"""Real Chromium: the Models tab shows a child's prediction before play and its score after (a hit over 25
votes; another child "can't tell yet" with the votes still needed), and the Leaderboard's Families section says
whether the family's reports predicted the arena."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.helpers.browser import STEP_MS, open_model
from tests.helpers.servers import start_server, stop_server
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.models import Battle, Turn, Vote, utcnow
from vibestudio.db.session import Database
from vibestudio.training.report.prediction import predict
from vibestudio.training.report.steps import CheckpointReport, report_folder, save_report

pytestmark = pytest.mark.e2e


def _votes(db: Database, kid: int, mum: int, kid_wins: int, mum_wins: int) -> None:
    with db.session() as s:
        for k, outcome in enumerate(["a"] * kid_wins + ["b"] * mum_wins):
            b = Battle(a_id=kid, b_id=mum, left_is_a=k % 2 == 0, mode="anonymous", status="voted")
            b.turns.append(Turn(idx=0, user_msg=f"q{k}", answer_a="Kid answer.", answer_b="Mum answer."))
            b.votes.append(Vote(turn_idx=0, outcome=outcome, revealed_before_vote=False, created_at=utcnow()))
            s.add(b)


@pytest.fixture
def server(tmp_path, monkeypatch):
    home = tmp_path / "studio-home"
    home.mkdir()
    monkeypatch.setenv("VIBESTUDIO_HOME", str(home))
    db = Database(f"sqlite:///{home / 'studio.sqlite'}")
    db.migrate()
    with db.session() as s:
        mum = register(s, ContestantSpec("mum"))
        kids = {name: register(s, ContestantSpec(name, parent_id=mum)) for name in ("kid", "late")}
    made = datetime.now(UTC) - timedelta(hours=1)  # before any vote below
    for name, cid in kids.items():
        report = CheckpointReport(cid, name, mum, "mum", n_prompts=40)
        report.verdict = {"verdict": "regress", "reasons": ["regress: more flattery"]}
        report.prediction = predict(report.to_dict(), now=made)
        save_report(report, report_folder(db, cid))
    _votes(db, kids["kid"], mum, 6, 19)  # 24%: inside the predicted [10%, 50%]
    _votes(db, kids["late"], mum, 2, 3)
    db.dispose()
    proc, url = start_server(home)
    yield url
    stop_server(proc)


def test_models_and_families_show_the_track_record(server, browser):
    page = open_model(browser, server, "kid")
    page.wait_for_function(
        "document.querySelector('#models-report').innerText.includes('Scored after play')", timeout=STEP_MS
    )
    report = page.locator("#models-report").inner_text()
    assert "Prediction before play" in report and "should win 35% of votes" in report
    assert "95% interval [10%, 50%]" in report and "regress: more flattery" in report
    assert "observed 24%" in report and "over 25 votes (6 wins, 19 losses, 0 ties): hit" in report
    page.locator("#models-pick input").click()
    page.locator("#models-pick").get_by_role("option", name="late").click()
    page.wait_for_function(
        "document.querySelector('#models-report').innerText.includes('can’t tell yet') || "
        "document.querySelector('#models-report').innerText.includes(\"can't tell yet\")",
        timeout=STEP_MS,
    )
    assert "can't tell yet: 20 more votes needed" in page.locator("#models-report").inner_text()
    page.get_by_role("tab", name="Leaderboard").click()
    page.get_by_text("Families: checkpoints with a common ancestor").click()
    page.locator("#families-show").click()
    page.locator("#families-notes").get_by_text("Does the report predict the arena?").wait_for(
        timeout=STEP_MS
    )
    notes = page.locator("#families-notes").inner_text()
    assert "mum: 1 of 1 prediction hit (100%" in notes and "overall: 1 of 1 prediction hit" in notes
    page.close()
