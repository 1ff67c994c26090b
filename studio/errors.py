"""Errors shown to users: a safe message in the page, the full detail in the log.

A message that reaches a toast passes ``studio.render.error_text``: no file paths (the file's name only), URLs,
key-like strings or markup, and bounded length. Gradio renders toasts as HTML, so the text is also escaped. The
exception itself, with its traceback, goes to the server log. Anything a page does not catch is shown by Gradio
as a generic "Error" (the app launches with ``show_error=False``), never as exception text.
"""

from __future__ import annotations

import logging
from typing import Any

import gradio as gr

from studio.render import error_text

log = logging.getLogger("studio")


def user_error(exc: BaseException | str) -> gr.Error:
    """A ``gr.Error`` safe to show for ``exc``; logs ``exc`` in full. ``raise user_error(exc) from exc``."""
    if isinstance(exc, BaseException):
        log.info("shown to the user as an error: %r", exc, exc_info=exc)
    return gr.Error(error_text(exc) or "Something went wrong; the server log has the details.")


def require(ctx: Any, request: Any, role: str) -> int | None:
    """Role before work: the acting user's id, or a ``gr.Error`` naming the role they lack. A handler whose
    service needs ``role`` calls this first, so nothing a lower role sent is read, parsed or validated; the
    service checks again (it is the check the CLI and the Python API share)."""
    from accounts import PermissionDenied, require_role

    try:
        uid = ctx.access.user_id(request)
        require_role(ctx.db, uid, role)
    except PermissionDenied as exc:
        raise user_error(exc) from exc
    return uid
