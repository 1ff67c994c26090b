"""Hostile text in real Chromium: answers, prompts, contestant names and queue items carrying ``<script>``,
``<img src=x onerror=...>``, ``javascript:`` links, full-page ``position:fixed`` boxes and remote images.

The answers come from the real llama.cpp engine: each contestant's prefill is the hostile HTML and
``max_tokens=1``, so the stored answer is the payload plus one model token. Nothing may run (every payload sets
a ``window.__xss_*`` flag or opens a dialog if it does), no element from the payload may reach the DOM (no
``img``, ``iframe``, ``a``, ``style`` or overlay of ours), and the payload text must be visible as text.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers.browser import wait_text
from tests.helpers.servers import start_server

pytestmark = pytest.mark.e2e

PAYLOAD = (
    "<script>window.__xss_script=1;alert('script')</script>"
    '<img src=x onerror="window.__xss_img=1">'
    " [click me](javascript:window.__xss_md=1) "
    '<a href="javascript:window.__xss_a=1" id="xss-link">raw link</a>'
    '<b onmouseover="window.__xss_hover=1" id="xss-bold">bold</b>'
    '<iframe src="javascript:parent.__xss_iframe=1"></iframe>'
    '<svg onload="window.__xss_svg=1"></svg>'
    '<div id="xss-overlay" style="position:fixed;top:0;left:0;width:100%;height:100%;z-index:9999">X</div>'
    "![beacon](http://127.0.0.1:9/beacon.png) "
    "XSS-MARKER "
)
HOSTILE_NAME = '<img src=x onerror="window.__xss_name=1">evil'
PROMPT = 'hi <img src=x onerror="window.__xss_prompt=1"> PROMPT-MARKER'
FLAGS_JS = "Object.keys(window).filter(k => k.startsWith('__xss'))"
INJECTED_JS = """() => {
  const q = s => Array.from(document.querySelectorAll(s));
  return {
    ids: ['xss-link', 'xss-bold', 'xss-overlay'].filter(id => document.getElementById(id)),
    onerror: q('[onerror],[onload],[onmouseover]').length,
    js_links: q('a[href^="javascript:"]').length,
    iframes: q('iframe').length,
    beacons: q('img').filter(i => (i.getAttribute('src') || '').includes('beacon') || i.getAttribute('src') === 'x')
      .length,
  };
}"""
CLEAN = {"ids": [], "onerror": 0, "js_links": 0, "iframes": 0, "beacons": 0}


def _prepare(home: Path) -> None:
    """Only two contestants, both hostile (no defaults are seeded when contestants exist), and a queue."""
    from vibestudio.annotation.queues import NewItem, add_item, create_queue
    from vibestudio.arena.registry import ContestantSpec, register
    from vibestudio.db.session import Database

    db = Database(f"sqlite:///{home / 'studio.sqlite'}")
    db.migrate()
    with db.session() as s:
        register(s, ContestantSpec(HOSTILE_NAME, prefill=PAYLOAD, sampling={"max_tokens": 1}))
        register(s, ContestantSpec("plain-but-hostile", prefill=PAYLOAD, sampling={"max_tokens": 1}))
        create_queue(s, "xss", overlap=1)
        add_item(s, "xss", NewItem([{"role": "user", "content": PROMPT}], [PAYLOAD, PAYLOAD], [{}, {}]))
    db.dispose()


@pytest.fixture
def hostile_server(tmp_path):
    home = tmp_path / "studio-home"
    home.mkdir()
    _prepare(home)
    # the payload is the opening (shown, not hidden as by default) and one model token (the one shared cap)
    proc, url = start_server(home, {"VIBESTUDIO_STRIP_PREFILL": "0", "VIBESTUDIO_BLIND_MAX_TOKENS": "1"})
    yield url
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_hostile_answers_names_and_items_stay_inert(hostile_server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(hostile_server)
    page.wait_for_selector("#arena-prompt textarea")
    page.locator("#arena-prompt textarea").fill(PROMPT)
    page.locator("#arena-send").click()
    wait_text(page, "#arena-status", "Turn 1 answered")

    for pane in ("#chat-left", "#chat-right"):
        text = page.locator(pane).inner_text()
        assert "XSS-MARKER" in text and "<script>" in text and "onerror" in text, text[:500]
        assert "javascript:" in text and "position:fixed" in text and "[image: beacon]" in text  # not loaded
    assert "PROMPT-MARKER" in page.locator("#chat-left").inner_text()
    page.hover("#chat-left")  # would fire an onmouseover that survived
    assert page.evaluate(INJECTED_JS) == CLEAN
    # the vote buttons are not covered by anything from an answer
    box = page.locator("#vote-left").bounding_box()
    assert box is not None
    top = page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y).closest('#vote-left') !== null",
        [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
    )
    assert top, "something from an answer covers the vote button"

    page.locator("#vote-left").click()
    wait_text(page, "#arena-status", "Vote on turn 1 saved")
    page.locator("#arena-reveal-btn").click()
    wait_text(page, "#arena-reveal", "Model A was")
    assert "onerror" in page.locator("#arena-reveal").inner_text()  # the hostile name, as text

    page.get_by_role("tab", name="Label").click()
    page.locator("#label-annotator textarea, #label-annotator input").first.fill("kim")
    page.wait_for_function(
        "document.querySelector('#label-queue input') && document.querySelector('#label-queue input').value"
    )
    page.locator("#label-start").click()
    wait_text(page, "#label-left", "XSS-MARKER")
    assert "<script>" in page.locator("#label-left").inner_text()
    assert "PROMPT-MARKER" in page.locator("#label-prompt").inner_text()
    page.hover("#label-left")
    page.wait_for_timeout(500)

    assert page.evaluate(FLAGS_JS) == [] and dialogs == []
    assert page.evaluate(INJECTED_JS) == CLEAN
    page.close()
