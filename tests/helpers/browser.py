"""Waits for browser tests. Each waits for a state that belongs to the step (a status naming the turn, a stored
row), never for one that was already true before the action; the limit only decides how long a real failure takes
to report, so it is generous (a loaded CI machine is slow, not wrong)."""

from __future__ import annotations

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
