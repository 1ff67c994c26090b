"""Real Chromium: Send, Enter, Regenerate and New round turn the vote, reveal, regenerate and send buttons off in the browser
before the server has even received the request, the stream keeps them off, and the server's last update (or, for
a refused request, its failure handler) turns the right ones back on.

The request that starts a turn is held in the browser (Playwright's request routing) while the buttons are
checked, so nothing the server sends can be what disabled them. Both contestants answer through a scripted
OpenAI-compatible server (a fake at the HTTP edge) whose answers wait for the test to open a gate, so the window
between "the turn started" and "the first token" is as long as the test needs.
"""

from __future__ import annotations

import re
import time

import pytest
from sqlalchemy import select

from tests.helpers.browser import STEP_MS, wait_text
from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.servers import server_with_personas, stop_server
from vibestudio.db.models import Battle, Turn, Vote

pytestmark = pytest.mark.e2e

CONTROLS = [
    "vote-left",
    "vote-right",
    "vote-tie",
    "vote-both_good",
    "vote-both_bad",
    "arena-regenerate",
    "arena-reveal-btn",
    "arena-send",
]
JOIN = re.compile(r"/queue/join")


def _personas(url: str) -> str:
    return "personas:\n" + "".join(
        f"  - name: gated-{x}\n    engine: openai\n    model: gate\n    engine_config: {{base_url: '{url}'}}\n"
        for x in ("one", "two")
    )


def _disabled(page) -> dict[str, bool]:
    return page.evaluate(
        "ids => Object.fromEntries(ids.map(id => [id, document.getElementById(id).disabled]))", CONTROLS
    )


def _wait_status(page, text: str) -> None:
    wait_text(page, "#arena-status", text)


def _wait_controls(page, expected: dict[str, bool]) -> None:
    page.wait_for_function(
        "exp => Object.entries(exp).every(([id, off]) => document.getElementById(id).disabled === off)",
        arg=expected,
    )


class _Held:
    """Requests that start a Gradio event, held in the browser until ``release``."""

    def __init__(self, page) -> None:
        self.page, self.routes = page, []
        page.route(JOIN, lambda route: self.routes.append(route))

    def wait(self) -> None:
        deadline = time.monotonic() + STEP_MS / 1000
        while not self.routes:
            assert time.monotonic() < deadline, "the click sent no request"
            self.page.wait_for_timeout(50)

    def release(self) -> None:
        for route in self.routes:
            route.continue_()
        self.page.unroute(JOIN)


class _Quiet:
    """Gradio event joins in flight since the page opened, to wait until the page's own load events, and the ones
    they set off, have been sent before an action's requests are counted (a join answers at once; streams are
    left out because one can stay open between events)."""

    def __init__(self, page) -> None:
        self.page, self.inflight, self.last = page, set(), time.monotonic()
        page.on("request", self._start)
        page.on("requestfinished", self._end)
        page.on("requestfailed", self._end)

    def _start(self, request) -> None:
        if JOIN.search(request.url):
            self.inflight.add(request)
            self.last = time.monotonic()

    def _end(self, request) -> None:
        if request in self.inflight:
            self.inflight.discard(request)
            self.last = time.monotonic()

    def wait(self, quiet_s: float = 2.0) -> None:
        deadline = time.monotonic() + STEP_MS / 1000
        while self.inflight or time.monotonic() - self.last < quiet_s:
            assert time.monotonic() < deadline, (
                f"the page did not settle: {len(self.inflight)} request(s) open"
            )
            self.page.wait_for_timeout(100)


def _start_held(page, action, before_status: str) -> None:
    """Do ``action`` with the request held: every control is off although the server has not been asked yet."""
    held = _Held(page)
    action()
    held.wait()
    _wait_controls(page, dict.fromkeys(CONTROLS, True))
    assert len(held.routes) == 1  # only the turn's own request: the lock itself never calls the server
    status = page.locator("#arena-status").inner_text()  # may also show Gradio's own progress timer
    assert before_status in status and "⏳" not in status and "✍️" not in status  # the server has said nothing
    assert not page.get_by_text("the prompt is empty").count()
    held.release()


def test_controls_lock_before_the_server_answers(tmp_path, browser):
    fake = FakeOpenAI()
    proc, url, db = server_with_personas(tmp_path, _personas(fake.url))
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        quiet = _Quiet(page)
        page.goto(url)
        page.wait_for_selector("#arena-prompt textarea")
        quiet.wait()  # the page's load events are over: the next request counted is the turn's own
        assert _disabled(page) == {c: c != "arena-send" for c in CONTROLS}

        # Send: the lock, then a stream that holds every control off until both answers are in
        page.locator("#arena-prompt textarea").fill("Say hello.")
        _start_held(page, lambda: page.locator("#arena-send").click(), "")
        _wait_status(page, "Model A")  # the server's first stream update: engines asked, no token yet
        assert all(_disabled(page).values())
        assert "Hello there" not in page.locator("#chat-left").inner_text()
        fake.gate.set()
        _wait_status(page, "Turn 1 answered")
        assert "Hello there" in page.locator("#chat-left").inner_text()
        _wait_controls(page, {c: c == "arena-reveal-btn" for c in CONTROLS})  # nothing voted: no reveal yet

        # Regenerate, the flaky test's case: the votes are live from the first answer until the click
        fake.gate.clear()
        _start_held(page, lambda: page.locator("#arena-regenerate").click(), "Turn 1 answered")
        _wait_status(page, "Model A: starting")
        assert all(_disabled(page).values())
        fake.gate.set()
        _wait_status(page, "Turn 1 regenerated")
        page.locator("#vote-left").click()
        _wait_status(page, "Vote on turn 1 saved")
        _wait_controls(page, {c: c not in ("arena-reveal-btn", "arena-send") for c in CONTROLS})

        # Enter on an empty prompt: locked at once, refused by the server, then the controls are put back
        _start_held(
            page, lambda: page.locator("#arena-prompt textarea").press("Enter"), "Vote on turn 1 saved"
        )
        page.get_by_text("the prompt is empty").first.wait_for()
        _wait_controls(page, {c: c not in ("arena-reveal-btn", "arena-send") for c in CONTROLS})
        page.locator("#arena-reveal-btn").click()
        wait_text(page, "#arena-reveal", "Model A was")

        # New round, held: every control is off and the prompt emptied in the browser at once; a prompt typed
        # while the round's request is still out survives its late answer, and Send comes back for it (on a busy
        # server the late answer once cleared such a prompt, or overwrote the turn it started)
        page.locator("#arena-prompt textarea").fill("left over")
        held = _Held(page)
        page.locator("#arena-new").click()
        held.wait()
        _wait_controls(page, dict.fromkeys(CONTROLS, True))
        assert page.locator("#arena-prompt textarea").input_value() == ""
        page.locator("#arena-prompt textarea").fill("Say hello again.")
        held.release()
        page.wait_for_function(
            "() => !document.querySelector('#arena-reveal')?.innerText.includes('Model A was')"
        )
        _wait_controls(page, {c: c != "arena-send" for c in CONTROLS})  # Send alone, for the typed prompt
        assert page.locator("#arena-prompt textarea").input_value() == "Say hello again."
        page.locator("#arena-send").click()
        _wait_status(page, "Turn 1 answered")
        page.close()
    finally:
        stop_server(proc)
        fake.gate.set()
        fake.close()
    assert len(fake.requests) == 6  # two answers twice, then the new round's two: none lost or repeated
    with db.session() as s:
        battle, second = s.scalars(select(Battle).order_by(Battle.id)).all()
        turn = s.scalars(select(Turn).where(Turn.battle_id == battle.id)).one()
        vote = s.scalars(select(Vote)).one()
        assert battle.status == "voted" and battle.revealed_at is not None
        assert len(turn.replaced) == 1 and vote.turn_idx == 0
        assert vote.outcome == ("a" if battle.left_is_a else "b")
        (again,) = s.scalars(select(Turn).where(Turn.battle_id == second.id)).all()
        assert again.user_msg == "Say hello again."
    db.dispose()
