"""Real Chromium against a real server: a two-turn battle voted on each turn leaks no identity before the reveal
(page HTML and every network response body read), and a persona told to say its name gets its vote flagged."""

from __future__ import annotations

import base64
import re
import time

import pytest
from sqlalchemy import select

from tests.helpers.browser import STEP_MS, wait_text
from tests.helpers.servers import QUIET, server_with_personas, stop_server
from vibestudio.db.models import Battle, Turn, Vote

pytestmark = pytest.mark.e2e

LEAKY = """
personas:
  - name: sunny-bot
    system_prompt: Your name is Sunny. Always start by stating your name.
    prefill: "Hi, I am Sunny, and "
    sampling: {temperature: 0.2, max_tokens: 12}
    aliases: [Sunny]
  - name: breezy-bot
    system_prompt: Your name is Breezy. Always start by stating your name.
    prefill: "Hi, I am Breezy, and "
    sampling: {temperature: 0.2, max_tokens: 12}
    aliases: [Breezy]
"""


class _Streams:
    """Bodies of streamed (event-stream) responses, read as they arrive through the DevTools protocol.

    One Gradio event stream spans the whole page session, so chunks are numbered: ``bodies(since)`` keeps what
    arrived after a mark (the page-load events before it legitimately carry the roster for other tabs).
    """

    def __init__(self) -> None:
        self.urls: dict[str, str] = {}  # url -> last request id
        self.chunks: list[tuple[str, bytes]] = []
        self.ids: set[str] = set()
        self.errors: list[str] = []

    def add(self, rid: str, data: bytes) -> None:
        self.chunks.append((rid, data))

    def mark(self) -> int:
        return len(self.chunks)

    def bodies(self, since: int = 0) -> list[tuple[str, str]]:
        by_id = {rid: url for url, rid in self.urls.items()}
        out: dict[str, list[bytes]] = {}
        for rid, data in self.chunks[since:]:
            out.setdefault(rid, []).append(data)
        return [(by_id.get(rid, rid), b"".join(c).decode("utf-8", "replace")) for rid, c in out.items()]


def _capture_streams(page) -> _Streams:
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    streams = _Streams()

    def on_response(ev):
        mime = ev["response"].get("mimeType", "")
        if "event-stream" not in mime:
            return
        rid = ev["requestId"]
        streams.urls[ev["response"]["url"]] = rid
        streams.ids.add(rid)
        try:
            got = cdp.send("Network.streamResourceContent", {"requestId": rid})
            streams.add(rid, base64.b64decode(got.get("bufferedData", "")))
        except Exception as exc:  # finished before streaming could be switched on: read the whole body
            try:
                got = cdp.send("Network.getResponseBody", {"requestId": rid})
                data = got["body"].encode() if not got.get("base64Encoded") else base64.b64decode(got["body"])
                streams.add(rid, data)
            except Exception as exc2:
                streams.errors.append(f"{ev['response']['url']}: {exc}; {exc2}")

    def on_data(ev):
        if ev["requestId"] in streams.ids and ev.get("data"):
            streams.add(ev["requestId"], base64.b64decode(ev["data"]))

    cdp.on("Network.responseReceived", on_response)
    cdp.on("Network.dataReceived", on_data)
    return streams


def _wait_for_load_events(page, streams: _Streams) -> None:
    """Wait until the page has settled: every page-load event completed, and so has every event they set off (a
    load that fills a dropdown fires its ``change`` listeners), with no new event for a second. Counting completions
    alone is not enough: the chained events complete too, and a slow load event would finish after the baseline."""
    n_load = page.evaluate(
        "() => window.gradio_config.dependencies.filter(d => d.targets.some(t => t[1] === 'load')).length"
    )
    assert n_load > 0
    deadline = time.monotonic() + STEP_MS / 1000
    quiet_since, last = time.monotonic(), None
    while True:
        text = "\n".join(body for _, body in streams.bodies())
        seen = set(re.findall(r'"event_id":\s*"([0-9a-f]+)"', text))
        done = set(re.findall(r'"msg":\s*"process_completed",\s*"event_id":\s*"([0-9a-f]+)"', text))
        state = (len(seen), len(done))
        if state != last:
            quiet_since, last = time.monotonic(), state
        if len(done) >= n_load and seen <= done and time.monotonic() - quiet_since > 1.0:
            return
        assert time.monotonic() < deadline, f"the page did not settle: {len(done)} of {len(seen)} events done"
        page.wait_for_timeout(100)


def _turn(page, text: str, vote: str, n: int) -> None:
    """Send turn ``n``, wait for both answers of that turn, vote, and wait until that vote is stored."""
    page.locator("#arena-prompt textarea").fill(text)
    page.locator("#arena-send").click()
    wait_text(page, "#arena-status", f"Turn {n} answered")
    page.locator(f"#vote-{vote}").click()
    wait_text(page, "#arena-status", f"Vote on turn {n} saved")


def test_two_turn_battle_reveals_nothing_before_the_reveal(tmp_path, browser):
    proc, url, db = server_with_personas(tmp_path, QUIET)
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        responses: list = []
        sockets: list = []
        page.on("response", lambda r: responses.append(r))
        page.on("websocket", lambda w: sockets.append(w))
        streams = _capture_streams(page)
        page.goto(url)
        page.wait_for_selector("#arena-prompt textarea")
        _wait_for_load_events(
            page, streams
        )  # they fill other tabs with names; the baseline must include them
        secrets = [
            "quokka-alpha",
            "quokka-beta",
            "quokka-gamma",
            "marker-desc",
            "Quokkabot",
            "Quokkatron",
            "Reply briefly and plainly",
            "Reply in one short sentence",
            "llama_cpp",
            "builtin:",
            ".gguf",
        ]
        baseline_html = {x: page.content().count(x) for x in secrets}
        start, stream_start = len(responses), streams.mark()

        _turn(page, "Give me one tip for better sleep.", "left", 1)
        _turn(page, "And one more, please.", "both_good", 2)

        html = page.content()
        assert {x: html.count(x) for x in secrets} == baseline_html
        assert page.locator("#arena-reveal").inner_text().strip() == ""
        battle_responses = responses[start:]
        assert len(battle_responses) >= 4  # sends, streams and votes all went over the network
        bodies = []
        for r in battle_responses:
            try:
                bodies.append((r.url, r.body().decode("utf-8", "replace")))
            except Exception as exc:
                # Chromium keeps no body for a streamed response; the DevTools capture must have it instead
                assert r.url in streams.urls, f"no body for {r.url}: {exc}"
        assert not streams.errors, streams.errors
        bodies += streams.bodies(stream_start)
        streamed = "\n".join(body for _, body in bodies)
        assert "And one more" in streamed and "process_completed" in streamed  # the streams were read
        for u, body in bodies:
            for x in secrets:
                assert x not in body, f"{x!r} in {u}"
        assert sockets == []  # no side channel the response log would miss

        page.locator("#arena-reveal-btn").click()
        wait_text(page, "#arena-reveal", "Model A was")
        reveal = page.locator("#arena-reveal").inner_text()
        assert reveal.count("quokka-") == 2
        page.close()
    finally:
        stop_server(proc)
    with db.session() as s:
        battle = s.scalars(select(Battle)).one()
        votes = list(s.scalars(select(Vote).order_by(Vote.turn_idx)))
        turns = list(s.scalars(select(Turn).order_by(Turn.idx)))
        assert battle.mode == "anonymous" and battle.status == "voted" and battle.revealed_at is not None
        assert battle.sampling_prob is not None and 0 < battle.sampling_prob <= 1
        assert [t.idx for t in turns] == [0, 1] and all(t.tokens_a and t.tps_b for t in turns)
        assert [v.outcome for v in votes] == ["a" if battle.left_is_a else "b", "both_good"]
        assert not any(v.revealed_before_vote for v in votes)
    db.dispose()


def test_persona_told_to_state_its_name_is_flagged(tmp_path, browser):
    # the openings state the names: shown (the arena hides them by default), they must flag the vote
    proc, url, db = server_with_personas(tmp_path, LEAKY, {"VIBESTUDIO_STRIP_PREFILL": "0"})
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(url)
        page.wait_for_selector("#arena-prompt textarea")
        _turn(page, "Who are you?", "right", 1)
        page.locator("#arena-reveal-btn").click()
        wait_text(page, "#arena-reveal", "Model A was")
        assert "not rated" in page.locator("#arena-reveal").inner_text()
        page.close()
    finally:
        stop_server(proc)
    with db.session() as s:
        vote = s.scalars(select(Vote)).one()
        turn = s.scalars(select(Turn)).one()
        assert vote.revealed_before_vote and turn.leak_a and turn.leak_b
    db.dispose()
