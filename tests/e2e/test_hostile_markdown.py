"""The hostile Markdown corpus (``tests/data/hostile_markdown.jsonl``) in real Chromium, on every page that shows
untrusted text: answers from a scripted OpenAI-compatible contestant (a real local HTTP server), a hostile prompt,
hostile contestant names in the reveal, a queue item (prompt and both answers) on the Label tab, and every tab
opened under the Content-Security-Policy.

Every case points its image, iframe, stylesheet and script at a second local server that logs each request. The
test fails if that server sees any request, if any script from the text runs (``window.__xss``, a dialog), if an
element from the text is positioned out of its message box (``position: fixed/absolute/sticky``), or if the
browser reports a CSP violation (the policy must not break Gradio's own page). The corpus is batched into two
answers so one page load covers it all.
"""

from __future__ import annotations

import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from tests.helpers.browser import STEP_MS, upload
from tests.helpers.servers import start_server

pytestmark = pytest.mark.e2e
CORPUS = Path(__file__).parents[1] / "data" / "hostile_markdown.jsonl"


class _Server:
    """A local HTTP server on its own thread; ``handler`` answers, ``requests`` logs every path asked for."""

    def __init__(self, handler_cls: type[BaseHTTPRequestHandler]) -> None:
        self.requests: list[str] = []
        handler_cls.owner = self  # type: ignore[attr-defined]
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler_cls)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Beacon(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _log(self):
        self.owner.requests.append(f"{self.command} {self.path}")  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    do_GET = do_POST = do_HEAD = _log


def _cases(beacon: str) -> list[str]:
    lines = CORPUS.read_text("utf-8").splitlines()
    return [json.loads(x)["markdown"].replace("{B}", beacon) for x in lines if x.strip()]


def _halves(beacon: str) -> list[str]:
    cases = _cases(beacon)
    return ["\n\n".join(cases[k::2]) for k in (0, 1)]


def _contestant(halves: list[str]) -> type[BaseHTTPRequestHandler]:
    class Contestant(BaseHTTPRequestHandler):
        """OpenAI-compatible chat completions: model ``half0``/``half1`` streams that half of the corpus."""

        def log_message(self, *args):
            pass

        def do_GET(self):
            body = json.dumps({"data": [{"id": "half0"}, {"id": "half1"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            text = halves[1 if req.get("model") == "half1" else 0]
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            step = 2000
            for i in range(0, len(text), step):
                chunk = {"choices": [{"index": 0, "delta": {"content": text[i : i + step]}}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")

    return Contestant


@pytest.fixture
def hostile(tmp_path):
    beacon = _Server(_Beacon)
    halves = _halves(beacon.url)
    engine = _Server(_contestant(halves))
    home = tmp_path / "studio-home"
    home.mkdir()
    from vibestudio.annotation.queues import NewItem, add_item, create_queue
    from vibestudio.arena.registry import ContestantSpec, register
    from vibestudio.db.session import Database

    name = f'<img src="{beacon.url}/name.png">evil\u202eeman'
    db = Database(f"sqlite:///{home / 'studio.sqlite'}")
    db.migrate()
    with db.session() as s:
        for k, public in enumerate((name, f"[x]({beacon.url}/n2) *two*")):
            register(
                s,
                ContestantSpec(
                    public,
                    engine="openai",
                    model_ref=f"half{k}",
                    engine_config={"base_url": f"{engine.url}/v1"},
                ),
            )
        create_queue(s, "hostile", overlap=1)
        add_item(s, "hostile", NewItem([{"role": "user", "content": halves[1]}], halves, [{}, {}]))
    db.dispose()
    proc, url = start_server(home, {"VIBESTUDIO_MAX_NEW_TOKENS": "4000"})
    yield url, beacon
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    engine.close()
    beacon.close()


AUDIT_JS = """(sel) => {
  const out = {tags: [], positioned: [], attrs: [], fixedText: 0};
  for (const box of document.querySelectorAll(sel)) {
    for (const el of box.querySelectorAll('*')) {
      const tag = el.tagName.toLowerCase();
      if (['img','iframe','script','link','style','svg','math','object','embed','video','audio','form','input',
           'button','x-beacon'].includes(tag) && !el.closest('.vs-md') === false) tags.push(tag);
      if (el.closest('.vs-md')) {
        const pos = getComputedStyle(el).position;
        if (!['static', 'relative'].includes(pos)) out.positioned.push(tag + ':' + pos);
        for (const a of el.getAttributeNames())
          if (a.startsWith('on') || a === 'style' || a === 'src') out.attrs.push(tag + '@' + a);
      }
    }
    out.fixedText += (box.innerText.match(/FIXED-/g) || []).length;
  }
  const tags = out.tags;
  for (const el of document.querySelectorAll(sel + ' .vs-md *'))
    if (['img','iframe','script','link','style','svg'].includes(el.tagName.toLowerCase())) tags.push(el.tagName);
  return out;
}"""


def _audit(page, sel: str) -> dict:
    out = page.evaluate(AUDIT_JS, sel)
    assert out["tags"] == [] and out["positioned"] == [] and out["attrs"] == [], (sel, out)
    return out


def test_hostile_corpus_on_every_page(hostile, browser, tmp_path):
    url, beacon = hostile
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    console: list[str] = []
    dialogs: list[str] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    response = page.goto(url)
    assert response is not None
    csp = response.headers.get("content-security-policy", "")
    assert "img-src 'self' data: blob:" in csp and "frame-ancestors 'none'" in csp
    assert response.headers.get("x-content-type-options") == "nosniff"

    page.wait_for_selector("#arena-prompt textarea")
    page.locator("#arena-prompt textarea").fill(
        f"hi ![p]({beacon.url}/prompt.png) <iframe src={beacon.url}/pf> \u202eRTL"
    )
    page.locator("#arena-send").click()
    page.wait_for_selector("#vote-left:not([disabled])", timeout=120_000)
    panes = _audit(page, "#chat-left, #chat-right")
    n_fixed = sum(1 for x in CORPUS.read_text("utf-8").splitlines() if "FIXED-" in x)
    assert panes["fixedText"] >= n_fixed, panes  # every payload shows as text
    assert "⟨U+202E⟩" in page.locator("#chat-left").inner_text()  # the prompt's bidi override, shown
    box = page.locator("#vote-left").bounding_box()
    assert box is not None
    assert page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y).closest('#vote-left') !== null",
        [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
    ), "something from an answer covers the vote button"

    page.locator("#vote-left").click()
    page.wait_for_selector("#arena-reveal-btn:not([disabled])", timeout=STEP_MS)
    page.locator("#arena-reveal-btn").click()
    page.wait_for_function("document.querySelector('#arena-reveal').innerText.includes('Model A was')")
    reveal = page.locator("#arena-reveal").inner_text()
    assert "<img src=" in reveal and "⟨U+202E⟩" in reveal and "*two*" in reveal
    _audit(page, "#arena-reveal")

    # a persona file whose names are hostile, through the Arena's upload
    persona_file = tmp_path / "personas.yaml"
    persona_file.write_text(
        yaml.safe_dump(
            {
                "personas": [
                    {
                        "name": f"{case[:150]} #{k}",
                        "description": case[:500],
                        "engine": "openai",
                        "model": "half0",
                        "engine_config": {"base_url": "http://127.0.0.1:9/v1"},
                    }  # fmt: skip
                    for k, case in enumerate(_cases(beacon.url)[:6])
                ]
            },
            allow_unicode=True,
        ),
        encoding="utf-8",
    )
    page.get_by_text("Add a persona").first.click()
    upload(page, "#persona-file", persona_file)
    page.locator("#persona-import").click()
    page.wait_for_function(
        "document.querySelector('#persona-result').innerText.includes('Added')", timeout=STEP_MS
    )
    _audit(page, "#persona-result")

    # an import file of hostile preference rows, and checklists written by the scripted model (a judge's output)
    rows = tmp_path / "prefs.jsonl"
    rows.write_text(
        "\n".join(
            json.dumps({"prompt": case, "chosen": case, "rejected": f"no {k}"})
            for k, case in enumerate(_cases(beacon.url))
        )
        + '\n{"prompt": "'
        + "<img src="
        + beacon.url
        + '/badrow.png>", "chosen": 3}\n',
        encoding="utf-8",
    )
    page.get_by_role("tab", name="Annotate").click()
    page.get_by_text("Import preference data").click()
    upload(page, "#queues-file", rows)
    page.get_by_label("Skip bad rows (and list them)").check()
    page.locator("#queues-import").click()
    page.wait_for_function(
        "document.querySelector('#queues-imported').innerText.includes('skipped')", timeout=STEP_MS
    )
    _audit(page, "#queues-imported")
    page.get_by_text("AI judge").first.click()
    box = page.locator("#queues-judge-queue input")
    box.fill("hostile")
    box.press("Enter")
    page.locator("#queues-checklists").click()
    page.wait_for_function(
        "document.querySelector('#queues-judged').innerText.includes('Checklists')", timeout=STEP_MS
    )
    _audit(page, "#queues-judged, #queues-table")

    page.get_by_role("tab", name="Label").click()
    page.locator("#label-annotator textarea, #label-annotator input").first.fill("<b>kim</b>\u200b")
    page.wait_for_function(
        "document.querySelector('#label-queue input') && document.querySelector('#label-queue input').value",
        timeout=STEP_MS,
    )
    page.locator("#label-start").click()
    page.wait_for_function(
        "document.querySelector('#label-left').innerText.includes('FIXED-')", timeout=STEP_MS
    )
    _audit(page, "#label-prompt, #label-left, #label-right, #label-progress, #label-checklist")
    assert "Checklist for this prompt" in page.locator("#label-checklist").inner_text()
    assert "<b>kim</b>⟨U+200B⟩" in page.locator("#label-progress").inner_text()
    page.hover("#label-left")

    for tab in ("Leaderboard", "Data", "Annotate", "Agreement", "Train", "Admin", "Arena"):
        page.get_by_role("tab", name=tab).click()
        page.wait_for_timeout(400)
    page.wait_for_timeout(1000)

    assert page.evaluate("window.__xss === undefined"), page.evaluate("window.__xss")
    assert dialogs == []
    assert beacon.requests == [], beacon.requests
    violations = [m for m in console if "Content Security Policy" in m or "Refused to" in m]
    assert violations == [], violations
    page.close()
