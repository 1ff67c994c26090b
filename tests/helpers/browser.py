"""Waits for browser tests. Each waits for a state that belongs to the step (a status naming the turn, a stored
row), never for one that was already true before the action; the limit only decides how long a real failure takes
to report, so it is generous (a loaded CI machine is slow, not wrong)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

STEP_MS = 120_000  # the longest one browser step may take (a streamed turn, a stored vote, a page update)


def wait_text(page, selector: str, text: str, timeout: int = STEP_MS) -> None:
    """Wait until the element's text contains ``text`` (pick a text that only this step can produce)."""
    page.wait_for_function(
        "([sel, t]) => { const e = document.querySelector(sel); return !!e && e.innerText.includes(t); }",
        arg=[selector, text],
        timeout=timeout,
    )


def wait_empty(page, selector: str, timeout: int = STEP_MS) -> None:
    """Wait until the element shows no text (use after an action that clears text that was there)."""
    page.wait_for_function(
        "sel => { const e = document.querySelector(sel); return !!e && e.innerText.trim() === ''; }",
        arg=selector,
        timeout=timeout,
    )


def upload(page, selector: str, path, timeout: int = STEP_MS, resend_after_ms: int = 20_000) -> None:
    """Put the file at ``path`` into the ``gr.File`` at ``selector`` and wait until the server holds it.

    Held means the upload request was answered with success and the box lists the file as a stored file (its name
    in the file table with a download link). The box's "Uploading 1 file…" note already shows the name, so a wait
    for the name alone can end before the component has a value, and an Import clicked then finds no file.

    A file set on the input was once lost in CI: no upload request left the browser within 90 s, and the box never
    showed the name (a loaded machine; 8 loaded reruns did not reproduce it). So when no upload request has left
    within ``resend_after_ms``, the file is set again on the input now on the page, up to three times, and the
    test's output says so; a failed or refused upload still fails the test.
    """
    name = Path(path).name
    field = page.locator(f"{selector} input[type=file]")

    def is_upload(request) -> bool:
        return request.method == "POST" and "/upload?" in request.url

    for attempt in range(1, 4):
        try:
            with page.expect_request(is_upload, timeout=resend_after_ms) as sent:
                field.set_input_files(str(path))
            break
        except Exception as exc:  # Playwright's TimeoutError: no upload request left the browser
            if "Timeout" not in type(exc).__name__ or attempt == 3:
                raise
            print(
                f"[upload] {name}: no upload request {resend_after_ms} ms after attempt {attempt}; setting it again"
            )
            field.set_input_files([])  # the same file set again on an input that holds it fires no change
    response = sent.value.response()  # waits for the answer; None when the request failed
    assert response is not None and response.ok, (
        f"the upload of {name} failed: {sent.value.failure or (response.status, response.text()[:300])}"
    )
    page.wait_for_function(
        """([sel, name]) => {
            const box = document.querySelector(sel);
            if (!box || box.querySelector('.uploading')) return false;
            return [...box.querySelectorAll('td.filename')].some(
                td => td.getAttribute('aria-label') === name
                    && td.parentElement.querySelector('td.download a, td.download button'));
        }""",
        arg=[selector, name],
        timeout=timeout,
    )


class EventTrail:
    """The events a page sent to the server, by name and time, and what its console said: a browser test that waits
    in vain says whether the page kept asking (a poll that ticks) or had gone quiet, and what the server logged.

    ``EventTrail(page, url)`` starts listening; ``str(trail)`` summarises: each event's count and last time (seconds
    since the trail started), the console's errors and warnings, and the server log's tail when ``log`` is given.
    An event is named by its trigger (``train-launch.click``, ``Train.select``); a trigger with no element id (a
    timer) adds the first output it updates (``2.tick->train-jobs``). Playwright hands the page's events to the test
    only while the test calls it: wait with ``page.wait_for_timeout``, not ``time.sleep``, or the times are late."""

    def __init__(self, page, url: str, log=None) -> None:
        self._t0 = time.monotonic()
        self._log = log
        config = httpx.get(f"{url}/config", timeout=30).json()
        comps = {c["id"]: c.get("props", {}) for c in config.get("components", [])}
        names = {i: p.get("elem_id") or p.get("label") or str(i) for i, p in comps.items()}
        self.names: dict[int, str] = {}
        for dep in config.get("dependencies", []):
            targets = dep.get("targets") or []
            label = ", ".join(f"{names.get(t[0], t[0])}.{t[1]}" for t in targets) or "?"
            outputs = [comps.get(o, {}).get("elem_id") for o in dep.get("outputs") or []]
            if targets and not comps.get(targets[0][0], {}).get("elem_id") and any(outputs):
                label += "->" + next(o for o in outputs if o)  # a timer has no name: say what it updates
            self.names[dep["id"]] = label
        self.sent: list[tuple[float, str]] = []
        self.console: list[str] = []
        page.on("request", self._on_request)
        page.on("console", self._on_console)

    def _on_request(self, request) -> None:
        if request.method != "POST" or "/queue/join" not in request.url:
            return
        try:
            fn = (request.post_data_json or {}).get("fn_index")
        except Exception:  # not JSON: record it anyway
            fn = None
        self.sent.append((self.now(), self.names.get(fn, str(fn))))

    def _on_console(self, msg) -> None:
        if msg.type in ("error", "warning"):
            self.console.append(f"{self.now()}s {msg.type}: {msg.text[:300]}")

    def count(self, name: str, after: float = 0.0) -> int:
        """How many events whose name contains ``name`` the page sent after ``after`` seconds."""
        return sum(1 for t, n in self.sent if name in n and t > after)

    def now(self) -> float:
        """Seconds since the trail started, to a tenth."""
        return round(time.monotonic() - self._t0, 1)

    def __str__(self) -> str:
        counts: dict[str, list[float]] = {}
        for t, name in self.sent:
            counts.setdefault(name, []).append(t)
        events = "; ".join(f"{n} x{len(ts)} (first {ts[0]}s, last {ts[-1]}s)" for n, ts in counts.items())
        out = f"events sent ({self.now()} s since the trail started): {events or 'none'}"
        if self.console:
            out += "\nconsole:\n" + "\n".join(self.console[-20:])
        if self._log is not None:
            text = Path(self._log).read_text(errors="replace") if Path(self._log).exists() else ""
            out += "\nserver log (tail):\n" + text[-3000:]
        return out


def open_model(browser, url: str, name: str):  # type: ignore[no-untyped-def]
    """A new page on the studio at ``url`` with the Models tab open on contestant ``name``."""
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    page.goto(url)
    page.get_by_role("tab", name="Models").click()
    page.locator("#models-pick input").click()
    page.locator("#models-pick").get_by_role("option", name=name).click()
    return page


def sign_in(browser, url: str, name: str, password: str):  # type: ignore[no-untyped-def]
    """A new page in a context of its own (its own cookies) on the studio at ``url``, signed in as ``name``
    through the login form; returns once the studio's tabs are on the page."""
    page = browser.new_context(viewport={"width": 1400, "height": 1200}).new_page()
    page.set_default_timeout(STEP_MS)
    page.goto(url)
    page.locator("input[type=password]").fill(password)
    page.locator("input[type=text]").first.fill(name)
    page.get_by_role("button", name="Login").click()
    page.wait_for_selector("button[role=tab]")
    return page


def visible_tabs(page) -> list[str]:  # type: ignore[no-untyped-def]
    """The names of the tabs the page shows, in order."""
    return page.evaluate(
        "() => [...document.querySelectorAll('button[role=tab]')].filter(t => t.offsetParent !== null)"
        ".map(t => t.innerText.trim())"
    )


def settled(page, timeout: int = STEP_MS) -> None:  # type: ignore[no-untyped-def]
    """Wait until the events a click started have answered: their progress is gone (a short pause first, so
    the events have begun, and one after, so what they answered is drawn)."""
    page.wait_for_timeout(500)
    page.wait_for_function("!document.querySelector('.progress-text, .eta-bar')", timeout=timeout)
    page.wait_for_timeout(400)


def error_badges(page) -> list[str]:  # type: ignore[no-untyped-def]
    """Every red "Error" the page shows (a failed event's badge over its outputs, an error toast), each named by
    the nearest element id around it, a toast by its text."""
    return page.evaluate(
        r"""() => [...document.querySelectorAll('*')]
            .filter(e => e.offsetParent !== null && e.children.length === 0 && e.textContent.trim() === 'Error')
            .map(e => {
                const toast = e.closest('[class*=toast-body]');
                const where = (e.closest('[id]') || {}).id || e.className || e.tagName;
                return toast ? `toast: ${toast.innerText.replace(/\s+/g, ' ').slice(0, 300)}` : where;
            })"""
    )
