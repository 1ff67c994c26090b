"""Fresh on sight (#48): every tab and sub-tab shows, when it is opened, what a page loaded now would show.

One studio, two pages in real Chromium. Page A is loaded and every view visited (so each has drawn what it
knew). Then the state changes from outside the page, through the Python API: contestants and ended battles
with votes, a snapshot frozen, a job submitted and failed, a child contestant, a prompt set. Page B is loaded
now and visits every view; page A visits them all again. Each view of page A must read as page B's: its text
(inputs and the YAML editor left out: they hold what the visitor typed) and every picker's choices.

The views are found in the page, as the crawler finds them (``tests.helpers.crawler``): every tab, every sub-tab,
every accordion opened. The test checks that they are all the tabs the app's config holds, so a new tab is
covered without an edit here. A few views are named as well, with what each must now show: the changes a
person saw missing (#48).
"""

from __future__ import annotations

import difflib
import json
import re

import httpx
import pytest

from tests.helpers.crawler import ACCORDIONS_JS, TABS_JS, _Crawler
from tests.helpers.servers import seed_tiny_parent, start_server, stop_server
from vibestudio.db.session import Database

pytestmark = pytest.mark.e2e

#: Tag each visible tab list (a ``.tab-wrapper``) inside the region of tab list ``id`` that has no tag yet, and
#: return the tags of the visible ones directly inside that region, in page order.
SUBLISTS_JS = """id => {
    const region = REGION(id);
    window.__freshT = window.__freshT || 0;
    const out = [];
    for (const w of region.querySelectorAll('.tab-wrapper')) {
        if (w.offsetParent === null) continue;
        if (OWNER(w.parentElement) !== region) continue;  // a deeper list: reached from its own region
        if (!w.dataset.crawlTabs) w.dataset.crawlTabs = 'f' + (++window.__freshT);
        out.push(w.dataset.crawlTabs);
    }
    return out;
}"""

#: The open panel of tab list ``id`` (the region a view is read from), and the region an element belongs to.
HELPERS_JS = """
const REGION = id => {
    const wrap = document.querySelector(`[data-crawl-tabs="${id}"]`);
    const tabs = wrap.parentElement;
    return [...tabs.children].find(c => c.getAttribute('role') === 'tabpanel' && c.offsetParent !== null);
};
const OWNER = el => {
    let n = el;
    while (n && !(n.getAttribute && n.getAttribute('role') === 'tabpanel')) n = n.parentElement;
    return n;
};
"""

#: What the view of tab list ``id`` shows: its visible text, less inputs and the code editor (what the visitor
#: typed) and less nested tab lists' panels (read as views of their own); and its pickers, tagged, with labels.
LOOK_JS = """id => {
    const region = REGION(id);
    const skip = el => el.closest('.cm-editor, input, textarea, [data-testid=status-tracker]')
        || (OWNER(el) !== region);
    const parts = [];
    const walker = document.createTreeWalker(region, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const el = n.parentElement;
        if (!el || !n.textContent.trim() || skip(el) || !el.checkVisibility()) continue;
        parts.push(n.textContent.trim());
    }
    const pickers = [];
    window.__freshD = window.__freshD || 0;
    for (const input of region.querySelectorAll('input[role=combobox]')) {
        if (input.disabled || !input.checkVisibility() || OWNER(input) !== region) continue;
        if (!input.dataset.freshPick) input.dataset.freshPick = String(++window.__freshD);
        const block = input.closest('.block');
        const label = block ? (block.querySelector('[data-testid=block-info]') || {}).innerText || '' : '';
        pickers.push([input.dataset.freshPick, (block && block.id) || label.trim()]);
    }
    return {text: parts.join(' ').replace(/\\s+/g, ' '), pickers};
}"""

#: The choices a picker offers while open.
OPTIONS_JS = """tag => {
    const input = document.querySelector(`[data-fresh-pick="${tag}"]`);
    const list = document.getElementById(input.getAttribute('aria-controls'));
    if (!list) return null;
    return [...list.querySelectorAll('[role=option]')].map(li => li.innerText.replace('✓', '').trim());
}"""

#: Each empty chart's words (its ``::after`` text) and whether its icon still shows.
EMPTY_PLOTS_JS = """() => [...document.querySelectorAll('.vs-plot .empty')].map(e => [
    getComputedStyle(e, '::after').content,
    [...e.querySelectorAll('svg')].some(svg => getComputedStyle(svg).display !== 'none'),
])"""

#: Text that changes between two reads of the same state: clock times, durations, and what the job estimate reads
#: of the machine's load and memory at the moment.
VOLATILE = [
    (re.compile(r"\b\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?)?\b"), "<time>"),
    (re.compile(r"\b\d+(\.\d+)? ?(ms|s|min|h|GiB|MiB|s/step)\b"), "<amount>"),
    (re.compile(r"\b(load|x)\s?\d+(\.\d+)?"), "<load>"),
]


def _state_from_outside(home, tiny_model_dir) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Change the studio's database through the Python API, as the CLI or another user would; return the marks
    each named view must now show."""
    from datetime import datetime, timedelta

    from vibestudio.annotation.snapshots import snapshot_from_votes
    from vibestudio.arena.prompts import import_prompt_set
    from vibestudio.arena.registry import ContestantSpec, get_contestant, register
    from vibestudio.db.models import Battle, Turn, Vote
    from vibestudio.training.jobs import runner
    from vibestudio.training.jobs.service import check_config

    db = Database(f"sqlite:///{home / 'studio.sqlite'}")
    t0 = datetime(2026, 3, 2, 9, 30)
    with db.session() as s:
        ids = {n: register(s, ContestantSpec(n, description=f"fresh {n}")) for n in ("fresh-a", "fresh-b")}
        games = [("fresh-a", "fresh-b", "a"), ("fresh-b", "fresh-a", "b"), ("fresh-a", "fresh-b", "tie")]
        games += [("fresh-b", "fresh-a", "a"), ("fresh-a", "fresh-b", "b")]
        for k, (a, b, outcome) in enumerate(games):
            when = t0 + timedelta(minutes=5 * k)
            battle = Battle(a_id=ids[a], b_id=ids[b], left_is_a=True, mode="anonymous", status="voted",
                            created_at=when)  # fmt: skip
            battle.turns.append(Turn(idx=0, user_msg=f"fresh q{k}", answer_a=f"one {k}", answer_b=f"two {k}"))
            battle.votes.append(Vote(turn_idx=0, outcome=outcome, created_at=when + timedelta(minutes=1)))
            s.add(battle)
    with db.session() as s:
        snap = snapshot_from_votes(s)
    with db.session() as s:
        parent = get_contestant(s, "tiny-parent").id
        register(s, ContestantSpec("fresh-child", description="a child", parent_id=parent))
        import_prompt_set(s, "fresh-prompts", "p.jsonl", b'{"turns": ["Say hi."], "category": "x"}\n')
    cfg = {"kind": "dpo", "parent_contestant": "tiny-parent", "snapshot_hash": snap.hash}
    job = runner.submit(db, "dpo", check_config(db, cfg).config, start=False)
    runner.finish(db, job, "failed", "stopped by the fresh-on-sight test")
    db.dispose()
    return {"snapshot": snap.hash[:16], "job": f"#{job} ", "child": "fresh-child", "set": "fresh-prompts"}


def _normal(text: str) -> str:
    for pattern, mark in VOLATILE:
        text = pattern.sub(mark, text)
    return text


class _Views:
    """Every view of one page, visited in the page's own order: what each shows and what its pickers offer."""

    def __init__(self, page, log) -> None:  # type: ignore[no-untyped-def]
        self.page = page
        self.crawler = _Crawler(page, log, set())

    def js(self, script: str, arg=None):  # type: ignore[no-untyped-def]
        body = HELPERS_JS + f"return ({script})(arg);"
        return self.page.evaluate(f"arg => {{ {body} }}", arg)

    def visit(self) -> dict[str, dict]:
        """Open every tab and sub-tab (each accordion opened) and read each; keyed by the path of tab names."""
        self.page.evaluate("() => { document.querySelector('.tab-wrapper').dataset.crawlTabs = '0'; }")
        return self._visit("0", [])

    def _visit(self, tablist: str, path: list[str]) -> dict[str, dict]:
        seen: dict[str, dict] = {}
        for name in self.page.evaluate(TABS_JS, tablist):
            self.crawler.open_tab(tablist, name)
            self.crawler.settle()
            if self.page.evaluate(ACCORDIONS_JS):
                self.crawler.settle()
            where = [*path, name]
            seen[" > ".join(where)] = self._look(tablist)
            for inner in self.js(SUBLISTS_JS, tablist):
                seen.update(self._visit(inner, where))
        return seen

    def _look(self, tablist: str) -> dict:
        """The view's pickers' choices (each opened and closed), then, once that settled, its text."""
        pickers: dict[str, list[str]] = {}
        for tag, name in self.js(LOOK_JS, tablist)["pickers"]:
            label = name if name not in pickers else f"{name} #{tag}"
            box = self.page.locator(f'[data-fresh-pick="{tag}"]')
            box.click()
            self.page.wait_for_function(f"() => ({OPTIONS_JS})({tag!r}) !== null")
            pickers[label] = self.page.evaluate(OPTIONS_JS, tag)
            box.press("Escape")
            self.page.locator("body").click(position={"x": 1, "y": 1})  # leave the picker as it was
            self.page.wait_for_function(f"() => ({OPTIONS_JS})({tag!r}) === null")
        self.crawler.settle()
        return {"text": _normal(self.js(LOOK_JS, tablist)["text"]), "pickers": pickers}


def _config_tabs(url: str) -> set[str]:
    """Every tab the app's config holds, by its label."""
    config = httpx.get(f"{url}/config", timeout=30).json()
    return {
        c["props"]["label"]
        for c in config["components"]
        if c.get("type") == "tabitem" and c.get("props", {}).get("visible", True) is not False
    }


def _offers(views: dict[str, dict], where: str, picker: str, mark: str) -> bool:
    """Whether the picker ``picker`` of the view ``where`` offers a choice that holds ``mark``."""
    return any(mark in option for option in views[where]["pickers"].get(picker, []))


def _differences(old: dict[str, dict], new: dict[str, dict]) -> list[str]:
    out = []
    for where, now in new.items():
        was = old.get(where)
        if was is None:
            out.append(f"{where}: not found on the page that stayed open")
            continue
        if was["text"] != now["text"]:
            a, b = was["text"].split(), now["text"].split()
            spans = [
                f"...{' '.join(a[max(i1 - 4, 0) : i2 + 1])!r} where a new page shows {' '.join(b[j1 : j2 + 1])!r}"
                for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes()
                if tag != "equal"
            ]
            out.append(f"{where}: the page that stayed open shows\n  " + "\n  ".join(spans[:6]))
        for label, options in now["pickers"].items():
            if was["pickers"].get(label) != options:
                out.append(
                    f"{where}: picker {label!r} offers {was['pickers'].get(label)}, a new page {options}"
                )
    return out


@pytest.mark.timeout(1500)
def test_every_view_reads_what_changed_outside_when_opened(browser, tmp_path, tiny_model_dir):
    home = tmp_path / "home"
    home.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VIBESTUDIO_HOME", str(home))  # job folders go under the studio's data home
        db = Database(f"sqlite:///{home / 'studio.sqlite'}")
        seed_tiny_parent(db, tiny_model_dir)
        db.dispose()
    proc, url = start_server(home)
    try:
        log = home / "server.log"
        stays = browser.new_page(viewport={"width": 1400, "height": 1000})
        stays.goto(url)
        stays.wait_for_selector("#arena-prompt textarea")
        old = _Views(stays, log)
        before = old.visit()
        tabs = _config_tabs(url)
        visited = {part for where in before for part in where.split(" > ")}
        assert tabs <= visited, f"tabs of the app the page never opened: {sorted(tabs - visited)}"

        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("VIBESTUDIO_HOME", str(home))
            marks = _state_from_outside(home, tiny_model_dir)

        fresh = browser.new_page(viewport={"width": 1400, "height": 1000})
        fresh.goto(url)
        fresh.wait_for_selector("#arena-prompt textarea")
        truth = _Views(fresh, log).visit()
        again = old.visit()
        print(f"[fresh] {len(truth)} views: {', '.join(truth)}")

        # every view as a page loaded now shows it, and the views a person saw stale (#48) show the change
        stale = _differences(again, truth)
        (tmp_path / "views.json").write_text(json.dumps({"stayed": again, "new": truth}, indent=1))
        named = {
            "Data counts the battles": "5 ended battles" in again["Data"]["text"],
            "Train offers the snapshot": _offers(again, "Train", "train-snapshot", marks["snapshot"]),
            "Train lists the job": _offers(again, "Train", "train-job", marks["job"]),
            "Models lists the child": _offers(again, "Models", "models-pick", marks["child"]),
            "Arena offers the prompt set": _offers(again, "Arena", "Prompt set", marks["set"]),
        }
        stale += [f"{what}: no (see {tmp_path / 'views.json'})" for what, seen in named.items() if not seen]
        # a chart with nothing to draw says so in words (Gradio's own icon read as a broken image)
        empty = fresh.evaluate(EMPTY_PLOTS_JS)
        if not empty or not all("No chart yet" in text and not icon for text, icon in empty):
            stale.append(f"empty charts without words (text, icon shown): {empty}")
        assert not stale, f"{len(stale)} problems over {len(truth)} views:\n" + "\n".join(stale)
    finally:
        stop_server(proc)


def test_cancel_says_cancelling_before_the_server_answers(tmp_path, browser, tiny_model_dir, monkeypatch):
    """A running job, cancelled: the job's line says "cancelling" at once, while the server has not answered
    yet (every request held back), then the real state. Before, it said "running" until the next poll."""
    from vibestudio.training.jobs.heartbeat import register_worker
    from vibestudio.training.jobs.service import launch
    from vibestudio.training.jobs.workers import claim, parse_kinds

    monkeypatch.setenv("VIBESTUDIO_JOBS", "workers")  # a worker elsewhere runs it: no process here to stop
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    db = Database(f"sqlite:///{home / 'studio.sqlite'}")
    snap = seed_tiny_parent(db, tiny_model_dir)
    job = launch(db, "dpo", "tiny-parent", snap, max_steps=4)
    register_worker(db, "gpu-e2e", parse_kinds("dpo"), "0", 1, "/srv/vs")
    assert claim(db, "gpu-e2e", parse_kinds("dpo")) == job
    proc, url = start_server(home, {"VIBESTUDIO_JOBS": "workers"})
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1200})
        page.goto(url)
        page.get_by_role("tab", name="Train").click()  # the running job is picked and shown on opening
        detail = "(document.querySelector('#train-detail')?.innerText || '')"
        page.wait_for_function(f"{detail}.includes('running')")
        held: list = []

        def hold(route) -> None:  # type: ignore[no-untyped-def]
            if held and held[0] is None:  # let through
                route.continue_()
            else:
                held.append(route)

        page.route("**/queue/join*", hold)  # the server hears nothing until the test lets it
        page.locator("#train-cancel").click()
        page.wait_for_function(f"{detail}.includes('cancelling')", timeout=5_000)
        assert "running" not in page.locator("#train-detail").inner_text()
        waiting = list(held)
        held[:] = [None]
        for route in waiting:
            route.continue_()
        page.wait_for_function(f"{detail}.includes('cancelled')")
        page.close()
    finally:
        stop_server(proc)
        db.dispose()
