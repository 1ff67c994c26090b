"""Errors shown to users: a safe message in the page, the full detail in the log.

A message that reaches a toast passes ``studio.render.error_text``: no file paths (the file's name only), URLs,
key-like strings or markup, and bounded length. Gradio renders toasts as HTML, so the text is also escaped. The
exception itself, with its traceback, goes to the server log. Anything a page does not catch is shown by Gradio
as a generic "Error" (the app launches with ``show_error=False``), never as exception text.
"""

from __future__ import annotations

import logging

import gradio as gr

from studio.render import error_text

log = logging.getLogger("studio")


def user_error(exc: BaseException | str) -> gr.Error:
    """A ``gr.Error`` safe to show for ``exc``; logs ``exc`` in full. ``raise user_error(exc) from exc``."""
    if isinstance(exc, BaseException):
        log.info("shown to the user as an error: %r", exc, exc_info=exc)
    return gr.Error(error_text(exc) or "Something went wrong; the server log has the details.")
