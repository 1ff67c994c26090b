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
    from pathlib import Path

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
