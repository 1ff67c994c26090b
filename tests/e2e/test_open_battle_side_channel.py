"""No side channel names a contestant before the reveal: two browser contexts, one playing a two-turn battle, the
other reading every view that counts votes or answers (the Data tab's counts; the Leaderboard's summary and table,
matrices, rating over time, Goldilocks, each contestant's vibe profile, Families with "votes since publish", and
Identifiability; the Models tab's page of every contestant: ratings, head-to-head, vibe profile, identifiability,
speed) before and after each step. Nothing the reader sees may change until the battle ends; after the reveal it
does, for exactly the two contestants that played. Removing any one of the open-battle filters makes it fail.

The contestants are three scripted OpenAI-compatible endpoints on one real local HTTP server (fast, so the
test is about the boards, not generation)."""

from __future__ import annotations

import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.helpers.browser import STEP_MS
from tests.helpers.servers import start_server

pytestmark = pytest.mark.e2e
NAMES = ["otter-one", "otter-two", "otter-three"]
ANSWERS = {
    "m0": "Sure. Sleep at the same time every day.",
    "m1": "Great question! 😊 Here are **three** tips:\n\n- dark room\n- no coffee\n- walk",
    "m2": "## Plan\n\n1. Cool room\n2. No screens\n\nDone!",
}


class _Engine(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        text = ANSWERS.get(req.get("model"), "ok")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for word in text.split(" "):
            chunk = {"choices": [{"index": 0, "delta": {"content": word + " "}}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")


@pytest.fixture
def arena(tmp_path):
    yield from _studio(tmp_path, {})


@pytest.fixture
def idle_arena(tmp_path):
    """A studio whose battles end after 0.1 minutes (6 s) without activity."""
    yield from _studio(tmp_path, {"VIBESTUDIO_BATTLE_IDLE_MINUTES": "0.1"})


def _studio(tmp_path, env):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Engine)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    home = tmp_path / "studio-home"
    home.mkdir()
    from vibestudio.arena.registry import ContestantSpec, register
    from vibestudio.db.session import Database

    db = Database(f"sqlite:///{home / 'studio.sqlite'}")
    db.migrate()
    with db.session() as s:
        for k, name in enumerate(NAMES):
            register(
                s, ContestantSpec(name, engine="openai", model_ref=f"m{k}", engine_config={"base_url": base})
            )
    db.dispose()
    proc, url = start_server(home, env)
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    server.shutdown()
    server.server_close()


def _click_and_settle(page, selector: str) -> None:
    page.locator(selector).click()
    page.wait_for_timeout(300)
    page.wait_for_function("!document.querySelector('.progress-text, .eta-bar')", timeout=STEP_MS)
    page.wait_for_timeout(300)


def _steady_text(page, selector: str) -> str:
    """The element's text once two reads half a second apart agree (its tab's timer may re-draw it meanwhile)."""
    last = page.locator(selector).inner_text()
    for _ in range(20):
        page.wait_for_timeout(500)
        now = page.locator(selector).inner_text()
        if now == last:
            return now
        last = now
    raise AssertionError(f"{selector} kept changing: {last!r}")


def _read_everything(page, url: str) -> dict[str, str]:
    """What a second tab can read about the contestants: every board and profile, as text."""
    page.goto(url)
    page.wait_for_selector("#arena-prompt textarea")
    page.get_by_role("tab", name="Data").click()
    page.wait_for_function("document.querySelector('#data-counts').innerText.includes('battle')")
    # opening the tab re-reads the counts: read them once that re-read's timer is gone
    page.wait_for_timeout(300)
    page.wait_for_function("!document.querySelector('.progress-text, .eta-bar')", timeout=STEP_MS)
    seen = {"data": _steady_text(page, "#data-counts")}
    page.get_by_role("tab", name="Leaderboard").click()
    _click_and_settle(page, "#leaderboard-refresh")
    seen["summary"] = page.locator("#leaderboard-summary").inner_text().split(" Refreshed")[0]
    seen["table"] = page.locator("#leaderboard-table").inner_text()
    for tab, button in (("Matrices", "#leaderboard-matrices"), ("Over time", "#leaderboard-over-time"),
                        ("Goldilocks", "#leaderboard-goldilocks")):  # fmt: skip
        page.get_by_role("tab", name=tab).click()
        _click_and_settle(page, button)
        seen[tab] = page.evaluate(PLOTS_JS, button)
    seen["goldilocks-table"] = page.locator("#goldilocks-table").inner_text()
    page.get_by_role("tab", name="Vibe profiles").click()
    for name in NAMES:
        box = page.locator("#leaderboard-vibe-a input")
        box.fill(name)
        box.press("Enter")
        _click_and_settle(page, "#leaderboard-vibes")
        seen[f"vibes:{name}"] = (
            page.locator("#leaderboard-vibe-text").inner_text()
            + page.locator("#leaderboard-vibe-table").inner_text()
        )
    page.get_by_role("tab", name="Identifiability").click()
    _click_and_settle(page, "#ident-measure")
    page.wait_for_function("document.querySelector('#ident-notes').innerText.includes('answers;')")
    seen["identifiability"] = (
        page.locator("#ident-table").inner_text() + page.locator("#ident-notes").inner_text()
    )
    page.get_by_text("Families: checkpoints with a common ancestor").click()
    _click_and_settle(page, "#families-show")
    page.locator("#families-table").get_by_text(NAMES[0]).first.wait_for()
    seen["families"] = (
        page.locator("#families-table").inner_text() + page.locator("#families-notes").inner_text()
    )
    page.get_by_role("tab", name="Models").click()
    for name in NAMES:
        page.locator("#models-pick input").click()
        page.locator("#models-pick").get_by_role("option", name=name, exact=True).click()
        page.wait_for_function(
            "([name]) => document.querySelector('#models-header').innerText.includes(name) && "
            "document.querySelector('#models-vibe').innerText.includes('Identifiability')",
            arg=[name],
        )
        page.wait_for_function("!document.querySelector('.progress-text, .eta-bar')")
        seen[f"model:{name}"] = "\n".join(
            page.locator(f"#models-{part}").inner_text()
            for part in ("header", "lineage", "rating", "vibe", "report")
        )
    return seen


# The text Plotly drew (axis labels, names, annotations) in the tab of `button`; waits until drawn.
PLOTS_JS = """async (button) => {
  const panel = document.querySelector(button).closest('.tabitem');
  for (let i = 0; i < 50; i++) {
    const plots = panel.querySelectorAll('.js-plotly-plot');
    const empty = panel.querySelectorAll('.empty, [aria-label="Empty value"]').length;
    if (plots.length || empty) break;
    await new Promise(r => setTimeout(r, 100));
  }
  return Array.from(panel.querySelectorAll('.js-plotly-plot')).map(p => p.textContent).join('|');
}"""


def test_boards_and_profiles_do_not_move_until_the_battle_ends(arena, browser):
    player = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    reader = browser.new_context(viewport={"width": 1280, "height": 1400}).new_page()
    before = _read_everything(reader, arena)
    assert "0 rated votes" in before["summary"] or "0</strong> rated" in before["summary"], before["summary"]

    player.goto(arena)
    player.wait_for_selector("#arena-prompt textarea")
    for n, (text, vote) in enumerate((("One tip for sleep?", "left"), ("And another?", "tie")), start=1):
        player.locator("#arena-prompt textarea").fill(text)
        player.locator("#arena-send").click()
        player.wait_for_selector(f"#vote-{vote}:not([disabled])", timeout=STEP_MS)
        assert _read_everything(reader, arena) == before, f"answers of turn {n} moved a board"
        player.locator(f"#vote-{vote}").click()
        player.wait_for_function(
            f"document.querySelector('#arena-status').innerText.includes('Vote on turn {n} saved')",
            timeout=STEP_MS,
        )
        assert _read_everything(reader, arena) == before, f"the vote on turn {n} moved a board"

    player.locator("#arena-reveal-btn").click()
    player.wait_for_function("document.querySelector('#arena-reveal').innerText.includes('Model A was')")
    after = _read_everything(reader, arena)
    assert "2 rated votes" in after["summary"], after["summary"]
    assert after["data"] != before["data"]
    moved = [name for name in NAMES if after[f"vibes:{name}"] != before[f"vibes:{name}"]]
    assert len(moved) == 2, moved  # exactly the two contestants of the battle, and only now
    pages = [name for name in NAMES if after[f"model:{name}"] != before[f"model:{name}"]]
    assert set(moved) <= set(pages), (pages, moved)  # their model pages moved (others' may: rank "of N")
    assert after["families"] != before["families"]  # their votes since publish, now that the battle ended


def test_an_abandoned_battle_counts_after_the_idle_timeout(idle_arena, browser):
    """A voter who votes and closes the tab (no reveal, no new round): the vote is on the board after the timeout."""
    player_context = browser.new_context(viewport={"width": 1280, "height": 900})
    player = player_context.new_page()
    player.goto(idle_arena)
    player.wait_for_selector("#arena-prompt textarea")
    player.locator("#arena-prompt textarea").fill("One tip for sleep?")
    player.locator("#arena-send").click()
    player.wait_for_selector("#vote-right:not([disabled])", timeout=STEP_MS)
    player.locator("#vote-right").click()
    player.wait_for_function(
        "document.querySelector('#arena-status').innerText.includes('Vote on turn 1 saved')"
    )
    player_context.close()  # the tab is closed: nobody reveals this battle

    reader = browser.new_page(viewport={"width": 1280, "height": 1000})
    reader.goto(idle_arena)
    reader.wait_for_selector("#arena-prompt textarea")
    reader.get_by_role("tab", name="Leaderboard").click()
    summary = ""
    for _ in range(40):  # the timeout is 6 s and the sweep runs every 0.6 s; allow a loaded machine
        _click_and_settle(reader, "#leaderboard-refresh")
        summary = reader.locator("#leaderboard-summary").inner_text()
        if "1 rated vote" in summary:
            break
        reader.wait_for_timeout(500)
    assert "1 rated vote" in summary, summary
