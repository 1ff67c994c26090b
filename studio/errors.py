"""Errors shown to users: a refusal answers in place, a safe message in the page, the full detail in the log.

Two kinds of failure reach a page:
- a **refusal** (``Refusal``): the user can fix it. Examples: "pick a queue first", a name that is taken,
  a file that does not parse. A handler wired with ``in_place`` answers it in the status element next to
  its button: an HTML or Markdown output it already has. It leaves every other output as it was
  (``gr.skip()``). So there is no red "Error" badge over the outputs, and no toast that follows the user
  to other tabs. There is no traceback in the server log either. An API caller reads the same message in
  that output. Unwired, a ``Refusal`` is still a ``gr.Error`` (a toast), without the traceback Gradio
  prints for other errors.
- a **denial** (``accounts.PermissionDenied``) stays a plain ``gr.Error``. An API client of a lower role
  must get it as an error, and the page hides nothing from it.

Any message passes ``studio.render.error_text``. It holds no file paths (the file's name only), URLs,
key-like strings or markup, and its length is bounded. Gradio renders toasts as HTML, so the text is also
escaped. Anything a page does not catch is shown by Gradio as a generic "Error", never as exception text.
(The app launches with ``show_error=False``.) That is a bug, and it is logged with its traceback.
"""

from __future__ import annotations

import functools
import html
import inspect
import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import gradio as gr

from vibestudio.studio.render import error_text, literal, to_html

log = logging.getLogger("studio")
F = TypeVar("F", bound=Callable[..., Any])
FALLBACK = "Something went wrong; the server log has the details."


class Refusal(gr.Error):
    """An action refused for a reason the user can fix; ``str()`` is the safe (escaped) message."""

    def __init__(self, message: str) -> None:
        super().__init__(message, print_exception=False)


def _is_denial(exc: BaseException | str) -> bool:
    from vibestudio.accounts import PermissionDenied

    return isinstance(exc, PermissionDenied)


def user_error(exc: BaseException | str) -> gr.Error:
    """The error to raise for ``exc``: a ``Refusal`` (answered in place where the handler is wired with
    ``in_place``), or a plain ``gr.Error`` for a role denial. ``raise user_error(exc) from exc``."""
    text = error_text(exc) or FALLBACK
    if isinstance(exc, BaseException):
        log.info("refused: %s: %s", type(exc).__name__, text)
    if _is_denial(exc):
        return gr.Error(text, print_exception=False)
    return Refusal(text)


def refuse(message: str) -> Refusal:
    """A ``Refusal`` saying what to do first: ``raise refuse("Pick a queue.")``."""
    return Refusal(error_text(message) or FALLBACK)


def refusal_text(message: str, kind: Any = gr.HTML) -> str:
    """The refusal as the status element shows it: a warning line (HTML through the display path for a
    ``gr.HTML``, Markdown for a ``gr.Markdown``, plain text otherwise)."""
    plain = html.unescape(message)
    if isinstance(kind, gr.HTML) or kind is gr.HTML:
        return to_html(f"⚠️ {literal(plain)}")
    if isinstance(kind, gr.Markdown) or kind is gr.Markdown:
        return f"⚠️ {literal(plain)}"
    return f"⚠️ {plain}"


def in_place(outputs: Sequence[Any], status: Any) -> Callable[[F], F]:
    """Wire a handler so that a ``Refusal`` it raises becomes its message in ``status`` (one of ``outputs``, the
    element next to the button) and ``gr.skip()`` for every other output. Works for plain handlers and
    generators; Gradio still sees the handler's own signature (``gr.Request``, ``gr.Progress``). The wrapper
    carries ``refusals_in_place = True``: ``tests/studio/test_refusals_wired.py`` reads it from the built app."""
    outputs = list(outputs)
    at = next((i for i, o in enumerate(outputs) if o is status), None)
    if at is None:
        raise ValueError("the status element must be one of the outputs")

    def answer(exc: Refusal) -> Any:
        values = [gr.skip()] * len(outputs)
        values[at] = refusal_text(exc.message, status)
        return values[0] if len(outputs) == 1 else tuple(values)

    def wrap(fn: F) -> F:
        if inspect.isgeneratorfunction(fn):

            @functools.wraps(fn)
            def gen(*args: Any, **kwargs: Any) -> Any:
                try:
                    yield from fn(*args, **kwargs)
                except Refusal as exc:
                    yield answer(exc)

            gen.refusals_in_place = True  # type: ignore[attr-defined]
            return gen  # type: ignore[return-value]

        @functools.wraps(fn)
        def plain(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except Refusal as exc:
                return answer(exc)

        plain.refusals_in_place = True  # type: ignore[attr-defined]
        return plain  # type: ignore[return-value]

    return wrap


def wire(
    trigger: Callable[..., Any],
    fn: Callable[..., Any],
    inputs: Any,
    outputs: Sequence[Any],
    status: Any,
    **kwargs: Any,
) -> Any:
    """``trigger(fn, inputs, outputs, **kwargs)`` with ``fn`` wrapped by ``in_place(outputs, status)``:
    ``wire(button.click, on_save, [name], [note, table], note, api_name="save")``."""
    return trigger(in_place(outputs, status)(fn), inputs, list(outputs), **kwargs)


def require(ctx: Any, request: Any, role: str) -> int | None:
    """Role before work: the acting user's id, or a ``gr.Error`` naming the role they lack. A handler whose
    service needs ``role`` calls this first, so nothing a lower role sent is read, parsed or validated; the
    service checks again (it is the check the CLI and the Python API share)."""
    from vibestudio.accounts import PermissionDenied, require_role

    try:
        uid = ctx.access.user_id(request)
        require_role(ctx.db, uid, role)
    except PermissionDenied as exc:
        raise user_error(exc) from exc
    return uid
