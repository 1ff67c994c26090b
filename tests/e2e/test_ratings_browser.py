"""Leaderboard and Admin in real Chromium over a store of simulated votes: the board is current when the tab is
opened and follows new votes on its timer, the method choice and the "which method predicts best" view work, and
the Admin tab flags the rigged account."""

from __future__ import annotations

import subprocess
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from arena.ratings._simulate import simulate_arena
from arena.registry import ContestantSpec, register
from db.models import Battle, Contestant, Turn, User, Vote
from db.session import Database
from tests.helpers.browser import STEP_MS
from tests.helpers.servers import start_server

pytestmark = pytest.mark.e2e
OUTCOME = {
    "model_a": "a",
    "model_b": "b",
    "tie": "tie",
    "tie (bothbad)": "both_bad",
    "tie (bothgood)": "both_good",
}


def _store(db: Database, frame, start: datetime) -> None:
    """Write simulated battles as voted anonymous battles, one vote each, by passwordless users."""
    with db.session() as s:
        ids = {c: i for c, i in s.query(User.name, User.id)}
        for judge in sorted(set(frame["judge"]) - set(ids)):
            user = User(name=judge, role="annotator")
            s.add(user)
            s.flush()
            ids[judge] = user.id
        contestants = {n: i for n, i in s.query(Contestant.public_name, Contestant.id)}
        for name in sorted(set(frame["model_a"]) | set(frame["model_b"])):
            if name not in contestants:
                contestants[name] = register(s, ContestantSpec(name))
        for k, row in enumerate(frame.itertuples(index=False)):
            when = start + timedelta(seconds=30 * k)
            battle = Battle(
                a_id=contestants[row.model_a],
                b_id=contestants[row.model_b],
                left_is_a=True,
                mode="anonymous",
                status="voted",
                created_at=when,
            )
            battle.turns.append(Turn(idx=0, user_msg=row.question_id, answer_a="answer", answer_b="answer"))
            battle.votes.append(
                Vote(turn_idx=0, outcome=OUTCOME[row.winner], user_id=ids[row.judge], created_at=when)
            )
            s.add(battle)


@pytest.fixture
def rated_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "studio-home"
    home.mkdir()
    monkeypatch.setenv("VIBESTUDIO_HOME", str(home))
    db = Database()
    db.migrate()
    frame, truth = simulate_arena(seed=41, n_honest=12, votes_per_honest=60, riggers=1, rigger_votes=150)
    _store(db, frame, datetime(2026, 1, 5))
    proc, url = start_server(home)
    yield url, db, len(frame)
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_leaderboard_current_methods_and_admin_flags(rated_server, browser):
    url, db, n_votes = rated_server
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(url)
    page.get_by_role("tab", name="Leaderboard").click()
    summary = "document.querySelector('#leaderboard-summary').innerText"
    page.wait_for_function(f"{summary}.includes('{n_votes} rated votes')", timeout=STEP_MS)
    page.wait_for_function(f"{summary}.includes('Method:') && {summary}.includes('auto')", timeout=STEP_MS)

    # votes that arrive while the tab is open show up without pressing Refresh (the tab's timer)
    more, _ = simulate_arena(seed=42, n_honest=2, votes_per_honest=10)
    _store(db, more, datetime(2026, 2, 1))
    page.wait_for_function(f"{summary}.includes('{n_votes + 20} rated votes')", timeout=STEP_MS)

    page.get_by_role("tab", name="Which method predicts best").click()
    page.locator("#leaderboard-predict").click()
    table = "document.querySelector('#leaderboard-predict-table').innerText"
    page.wait_for_function(f"{table}.includes('davidson') && {table}.includes('random')", timeout=STEP_MS)
    assert "Best:" in page.locator("#leaderboard-predict-summary").inner_text()

    page.locator("#leaderboard-method").get_by_text("Davidson (ties modelled)").click()
    page.wait_for_function(
        f"{summary}.includes('Davidson (ties modelled)') && {summary}.includes('(chosen)')"
    )
    assert "tie (bothgood)" in page.locator("#leaderboard-summary").inner_text()

    page.get_by_role("tab", name="Admin").click()
    page.locator("#admin-check-annotators").click()
    page.wait_for_function(
        "document.querySelector('#admin-checks-summary').innerText.includes('Flagged: r0')", timeout=STEP_MS
    )
    assert "votes follow" in page.locator("#admin-checks-table").inner_text()
    page.close()
