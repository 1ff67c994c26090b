"""A crawler over a studio page: it opens every tab and sub-tab (tabs in an overflow menu too, through the menu),
opens every accordion, clicks every enabled button once (``gr.Button``: a ``<button>`` with a size and a variant
class), and records what each click left behind: a red "Error" badge on a component, an error toast, a console
error, an HTTP response >= 400, or a traceback in the server log.

``crawl(page, log, skip)`` returns a ``Crawl``: the buttons clicked, the views visited and the problems, each tied to
the button that caused it (``Crawl.failures()`` lists them one per line). A click that enables more buttons (Start
on the Label tab enables the verdicts) is followed: the crawler keeps clicking in a view until no enabled button is
left unclicked. Skipped buttons are named by their element id (or their text when they have none).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

#: Buttons that start long work with a model or a training process (each would run for minutes on the embedded
#: model, or start a job the embedded worker then trains); everything else is clicked.
LONG_WORK = {
    "arena-send",  # two streamed answers from the embedded model (a prompt may be filled by *Random prompt*)
    "arena-regenerate",  # two more streamed answers
    "queues-create",  # generates a whole on-policy queue
    "queues-judge",  # a judge model over every item
    "queues-checklists",  # a model writes a checklist per prompt
    "probes-run",  # sycophancy probes: 20 items per probe and contestant
    "evals-run",  # verifiable evals over a contestant
    "train-launch",  # a training job
    "train-resume",  # the failed job queued again: a training job
    "train-publish",  # a checkpoint report over 80 prompts
}
#: Buttons on pages whose refusals are being fixed in other work for #35 (arena.py, train.py, models.py): what they
#: leave behind is printed, not failed. Remove a button here when its page answers in place.
ELSEWHERE: dict[str, str] = {}
IDLE_MS = 90_000  # the longest one click may keep the page busy (a loaded 2-core machine is slow, not wrong)

#: Tag the visible, enabled gr.Buttons that have no crawl id yet; return [id, name] for each in page order.
BUTTONS_JS = """() => {
    const sizes = ['sm', 'md', 'lg'], variants = ['primary', 'secondary', 'stop', 'huggingface'];
    window.__crawlN = window.__crawlN || 0;
    const out = [];
    for (const b of document.querySelectorAll('button')) {
        const c = b.classList;
        if (!sizes.some(s => c.contains(s)) || !variants.some(v => c.contains(v))) continue;
        if (b.getAttribute('role') === 'tab' || b.offsetParent === null || b.disabled) continue;
        if (!b.dataset.crawl) b.dataset.crawl = String(++window.__crawlN);
        out.push([b.dataset.crawl, b.id || b.innerText.trim().replace(/\\s+/g, ' ')]);
    }
    return out;
}"""

#: Visible tab lists not seen before, tagged; return their crawl ids.
TABLISTS_JS = """() => {
    window.__crawlT = window.__crawlT || 0;
    const out = [];
    for (const t of document.querySelectorAll('.tab-wrapper')) {
        if (t.offsetParent === null || t.dataset.crawlTabs) continue;
        t.dataset.crawlTabs = String(++window.__crawlT);
        out.push(t.dataset.crawlTabs);
    }
    return out;
}"""

#: Tag the page's top-level tab list (the first in the document) and return its crawl id.
TOP_JS = """() => {
    const t = document.querySelector('.tab-wrapper');
    t.dataset.crawlTabs = '0';
    return '0';
}"""

#: The tab names of a tab list, in order: Gradio 6 keeps every name in a hidden copy of the row; the tabs that do not
#: fit sit in an overflow menu ("More tabs"), the others in the row (``role=tab``).
TABS_JS = """id => {
    const wrap = document.querySelector(`[data-crawl-tabs="${id}"]`);
    const names = b => b.innerText.trim();
    const shown = [...wrap.querySelectorAll('[role=tablist] [role=tab]')].filter(b => !b.disabled).map(names);
    const more = [...wrap.querySelectorAll('.overflow-dropdown button')].map(names);
    return [...shown, ...more];
}"""

#: Open every closed, visible accordion (Gradio's ``.label-wrap`` toggles); return how many.
ACCORDIONS_JS = """() => {
    let n = 0;
    for (const a of document.querySelectorAll('button.label-wrap')) {
        if (a.offsetParent !== null && !a.classList.contains('open')) { a.click(); n++; }
    }
    return n;
}"""

#: Red marks not seen before: status trackers in the error state and error toasts, with the element they sit on.
BADGES_JS = """() => {
    const out = [];
    const marks = document.querySelectorAll('[data-testid=status-tracker] .error, .toast-body.error');
    for (const e of marks) {
        if (e.dataset.crawlSeen || e.offsetParent === null) continue;
        e.dataset.crawlSeen = '1';
        const toast = e.classList.contains('toast-body');
        const owner = e.closest('[id]');
        const text = toast ? (e.querySelector('[data-testid=toast-text]')?.innerText || 'error toast') : 'Error badge';
        out.push(`${toast ? 'toast' : 'badge'} on ${owner ? '#' + owner.id : '?'}: ${text.trim().slice(0, 200)}`);
    }
    return out;
}"""

#: The elements that show Gradio's progress (pending or generating) now.
BUSY_JS = """() => [...document.querySelectorAll('[data-testid=status-tracker]')].filter(
    e => e.offsetParent !== null && !e.classList.contains('hide')  // a timer's quiet refresh hides its progress
        && (e.querySelector('.progress-text, .eta-bar') || e.classList.contains('generating'))
).map(e => (e.closest('[id]') || {}).id || '?')"""


@dataclass
class Crawl:
    """What a crawl did: buttons clicked and views visited (in order), skipped buttons, problems per button."""

    clicked: list[str] = field(default_factory=list)
    views: list[str] = field(default_factory=list)
    overflow: list[str] = field(default_factory=list)  # tabs opened through the overflow menu
    seconds: dict[str, float] = field(
        default_factory=dict
    )  # per click and per view opened, until the page settled
    skipped: list[str] = field(default_factory=list)
    problems: dict[str, list[str]] = field(default_factory=dict)

    def add(self, where: str, problem: str) -> None:
        self.problems.setdefault(where, []).append(problem)

    def failures(self) -> str:
        """One line per offending button (or view): what it left behind."""
        return "\n".join(f"- {where}: {'; '.join(found)}" for where, found in self.problems.items())

    def slowest(self, n: int = 8) -> str:
        top = sorted(self.seconds.items(), key=lambda kv: -kv[1])[:n]
        return ", ".join(f"{k} {v} s" for k, v in top)

    def summary(self) -> str:
        return (
            f"{len(self.clicked)} buttons clicked, {len(self.views)} views visited "
            f"({len(self.overflow)} through an overflow menu), "
            f"{len(self.skipped)} skipped ({', '.join(sorted(set(self.skipped))) or 'none'}), "
            f"{len(self.problems)} with problems"
        )


class _Watch:
    """The page's console errors, failed responses and requests in flight, since the last ``take()``."""

    def __init__(self, page) -> None:
        self.events: list[str] = []
        self.in_flight = 0
        page.on("console", lambda m: m.type == "error" and self.events.append(f"console: {m.text[:200]}"))
        page.on("pageerror", lambda exc: self.events.append(f"page error: {str(exc)[:200]}"))
        page.on("response", self._response)
        page.on("request", self._start)
        page.on("requestfinished", self._end)
        page.on("requestfailed", self._end)

    def _response(self, response) -> None:
        if response.status >= 400:
            self.events.append(f"HTTP {response.status} {response.request.method} {response.url[:160]}")

    def _start(self, request) -> None:
        if "/queue/join" in request.url:
            self.in_flight += 1

    def _end(self, request) -> None:
        if "/queue/join" in request.url:
            self.in_flight -= 1

    def take(self) -> list[str]:
        out, self.events = self.events, []
        return out


class _Crawler:
    def __init__(self, page, log: Path, skip: set[str]) -> None:
        self.page, self.log, self.skip = page, log, skip
        self.watch = _Watch(page)
        self.out = Crawl()
        self.done: set[str] = set()  # crawl ids of buttons clicked or skipped
        self.log_at = self._log_size()

    def _log_size(self) -> int:
        return self.log.stat().st_size if self.log.exists() else 0

    def _log_news(self) -> list[str]:
        """Tracebacks the server logged since the last look (their last line says what was raised)."""
        size = self._log_size()
        with open(self.log, "rb") as f:
            f.seek(self.log_at)
            text = f.read(size - self.log_at).decode("utf-8", "replace")
        self.log_at = size
        found = []
        for block in text.split("Traceback (most recent call last):")[1:]:
            lines = [x for x in block.splitlines() if x.strip() and not x.startswith((" ", "\t"))]
            found.append(f"server traceback: {(lines[0] if lines else '?')[:200]}")
        return found

    def settle(self) -> None:
        """Wait until no event is in flight and no output shows progress (then a moment for the page to draw)."""
        self.page.wait_for_timeout(300)
        deadline = time.monotonic() + IDLE_MS / 1000
        while time.monotonic() < deadline:
            if self.watch.in_flight <= 0 and not self.page.evaluate(BUSY_JS):
                self.page.wait_for_timeout(200)
                if self.watch.in_flight <= 0 and not self.page.evaluate(BUSY_JS):
                    return
            self.page.wait_for_timeout(200)
        busy = self.page.evaluate(BUSY_JS)
        raise AssertionError(
            f"the page was still busy {IDLE_MS} ms after a click: {self.watch.in_flight} events in flight, "
            f"progress shown on {busy}"
        )

    def check(self, where: str, t0: float) -> None:
        self.settle()
        self.out.seconds[where] = round(time.monotonic() - t0, 1)
        for problem in [*self.page.evaluate(BADGES_JS), *self.watch.take(), *self._log_news()]:
            self.out.add(where, problem)
        for close in self.page.locator("[data-testid=toast-close]").all():  # a toast must not ride on
            try:
                close.click(timeout=2_000)
            except Exception:  # it closed itself meanwhile
                pass

    def open_tab(self, tablist: str, name: str) -> None:
        """Open the tab ``name``: in its row, or (when it does not fit) through the "More tabs" menu, as a person
        would."""
        wrap = self.page.locator(f'[data-crawl-tabs="{tablist}"]')
        exact = re.compile(f"^{re.escape(name)}$")
        tab = wrap.locator("[role=tablist] [role=tab]").filter(has_text=exact)
        if not tab.count():
            wrap.locator(".overflow-menu > button").click()
            tab = wrap.locator(".overflow-dropdown button").filter(has_text=exact)
            self.out.overflow.append(name)
        tab.first.click()

    def view(self, path: list[str], t0: float) -> None:
        where = " > ".join(path)
        self.out.views.append(where)
        self.check(f"open {where}", t0)
        self.page.evaluate(ACCORDIONS_JS)
        self.settle()
        while True:
            todo = [(i, n) for i, n in self.page.evaluate(BUTTONS_JS) if i not in self.done]
            if not todo:
                break
            crawl_id, name = todo[0]
            self.done.add(crawl_id)
            if name in self.skip:
                self.out.skipped.append(name)
                continue
            t0 = time.monotonic()
            self.page.locator(f'[data-crawl="{crawl_id}"]').click()
            self.out.clicked.append(f"{where} / {name}")
            self.check(f"{where} / {name}", t0)
        for tablist in self.page.evaluate(TABLISTS_JS):
            for name in self.page.evaluate(TABS_JS, tablist):
                t0 = time.monotonic()
                self.open_tab(tablist, name)
                self.view([*path, name], t0)


def crawl(page, log: Path, skip: set[str]) -> Crawl:
    """Crawl the studio open in ``page`` (its top-level tabs are the first tab list); ``log`` is the server's."""
    c = _Crawler(page, log, skip)
    c.check("page load", time.monotonic())
    top = page.evaluate(TOP_JS)
    for name in page.evaluate(TABS_JS, top):
        t0 = time.monotonic()
        c.open_tab(top, name)
        c.view([name], t0)
    return c.out
