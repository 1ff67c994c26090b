"""Real Chromium: the Data tab imports both Arena-Hard prompt files (rows holding U+2028 and other Unicode line
breaks) with category and subcategory, and shows a bad file's error with its line and field."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from tests.helpers.browser import STEP_MS, upload
from tests.helpers.servers import start_server, stop_server
from vibestudio.db.models import Prompt, PromptSet
from vibestudio.db.session import Database

pytestmark = pytest.mark.e2e

DATA = Path(__file__).resolve().parents[1] / "arena" / "data"


def _import(page, url: str, set_name: str, path: Path) -> None:
    page.goto(url)  # a fresh page: the file box shows the last upload instead of its file input
    page.get_by_role("tab", name="Data").click()
    page.wait_for_selector("#data-prompt-import")
    page.locator("#data-prompt-set-name").locator("textarea, input").first.fill(set_name)
    upload(page, "#data-prompt-file", path)
    page.locator("#data-prompt-import").click()


def test_data_tab_imports_arena_hard_files(tmp_path, browser):
    home = tmp_path / "home"
    home.mkdir()
    proc, url = start_server(home)
    bad = tmp_path / "broken.jsonl"
    bad.write_bytes((DATA / "arena_hard_v2.0_question.jsonl").read_bytes() + b'{"uid": "z9", "prompt": ""}\n')
    try:
        page = browser.new_page()
        for name, file in (
            ("ah-v0.1", "arena_hard_v0.1_question.jsonl"),
            ("ah-v2.0", "arena_hard_v2.0_question.jsonl"),
        ):
            _import(page, url, name, DATA / file)
            page.wait_for_function(
                "want => (document.querySelector('#data-prompt-import-result')?.innerText || '').includes(want)",
                arg=f"Imported 6 prompts into {name}",
                timeout=STEP_MS,
            )
        _import(page, url, "ah-broken", bad)
        page.wait_for_function(
            "() => document.body.innerText.includes(\"broken.jsonl:7: field 'turns'\")", timeout=STEP_MS
        )
        page.close()
    finally:
        stop_server(proc)
    db = Database(f"sqlite:///{home / 'studio.sqlite'}")
    with db.session() as s:
        names = set(s.scalars(select(PromptSet.name)))
        rows = s.execute(
            select(PromptSet.name, Prompt.category, Prompt.subcategory, Prompt.turns).join(Prompt.prompt_set)
        ).all()
    db.dispose()
    assert {"ah-v0.1", "ah-v2.0"} <= names and "ah-broken" not in names
    v20 = [r for r in rows if r[0] == "ah-v2.0"]
    assert len(v20) == 6 and {r[2] for r in v20} == {"coding", "math", "creative_writing"}
    assert any("\u2028" in r[3][0] for r in v20)
    v01 = [r for r in rows if r[0] == "ah-v0.1"]
    assert len(v01) == 6 and {r[1] for r in v01} == {"arena-hard-v0.1"}
    assert any("\u2028" in r[3][0] for r in v01) and any("\x85" in r[3][0] for r in v01)
