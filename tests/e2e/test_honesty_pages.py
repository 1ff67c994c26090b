"""The Agreement tab's judge-against-people-by-vibe table and the Leaderboard's Families section in a real Chromium,
on a studio whose database holds a judged and human-labelled queue and a family of four sibling checkpoints."""

from __future__ import annotations

import pytest

from tests.helpers.browser import STEP_MS
from tests.helpers.servers import start_server, stop_server
from vibestudio.annotation.queues import NewItem, add_item, create_queue
from vibestudio.arena.registry import ContestantSpec, register
from vibestudio.db.models import Label
from vibestudio.db.session import Database
from vibestudio.standings.families import hide

pytestmark = pytest.mark.e2e

FANCY = "## Great question!\n\n- **First**, a long and friendly point.\n- **Second**, another point with more words."
PLAIN = "Two points: first, second."


@pytest.fixture
def server(tmp_path):
    home = tmp_path / "studio-home"
    home.mkdir()
    db = Database(f"sqlite:///{home / 'studio.sqlite'}")
    db.migrate()
    with db.session() as s:
        create_queue(s, "styleq")
        for i in range(12):
            item = add_item(
                s, "styleq", NewItem([{"role": "user", "content": f"Q{i}"}], [FANCY, PLAIN + str(i)])
            )
            s.flush()
            s.add(Label(item_id=item.id, queue="styleq", annotator="judge:j", kind="judge", outcome="1"))
            s.add(Label(item_id=item.id, queue="styleq", annotator="ann", kind="human", outcome="2"))
        root = register(s, ContestantSpec("fam-root"))
        for i in range(4):
            register(s, ContestantSpec(f"fam-v{i}", parent_id=root))
        hide(s, "fam-v3", "alice", "too agreeable")
    db.dispose()
    proc, url = start_server(home)
    yield url
    stop_server(proc)


def test_vibe_disagreement_and_families_in_the_browser(server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(server)
    page.get_by_role("tab", name="Agreement").click()
    page.locator("#agreement-queue input").click()
    page.locator("#agreement-queue").get_by_role("option", name="styleq").click()
    page.locator("#agreement-compute").click()
    page.locator("#agreement-judge input").wait_for()
    page.wait_for_function("document.querySelector('#agreement-judge input').value.includes('judge:j')")
    page.locator("#agreement-vibes-run").click()
    page.locator("#agreement-vibes").get_by_text("judge more swayed").first.wait_for(timeout=STEP_MS)
    vibes = page.locator("#agreement-vibes").inner_text()
    assert "12/12 (100%)" in vibes and "0/12 (0%)" in vibes and "no evidence (0)" in vibes  # emoji: none
    page.get_by_role("tab", name="Leaderboard").click()
    page.get_by_text("Families: checkpoints with a common ancestor").click()
    page.locator("#families-show").click()
    page.locator("#families-table").get_by_text("fam-v3").first.wait_for(timeout=STEP_MS)
    table = page.locator("#families-table").inner_text()
    assert "hidden" in table and "provisional" in table and "root" in table
    notes = page.locator("#families-notes").inner_text()
    assert "selection effect unmeasurable" in notes and "alice did hide on fam-v3 (too agreeable)" in notes
