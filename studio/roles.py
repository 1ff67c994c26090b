"""Shaped by role: a page holds the tabs and sections its viewer's role may use, not refusals.

``TAB_ROLES`` says which role each tab needs; a section inside a tab that needs more than its tab (the arena's
persona form, a label checklist's editor) is marked while the app is built (``restrict``). One load event
(``shape``) then shows each to the viewers whose role reaches it. With login on, they start hidden, so a page
never shows a lower role what it may not use, not even before the load answers. In the open single-user mode
the local operator holds every role, and everything starts shown.

The shape is convenience, not security: every handler still checks its role in the service it calls
(``studio.errors.require``), so a hidden tab's events are refused to a lower role exactly as before.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import gradio as gr

from vibestudio.accounts import PermissionDenied, require_role

#: The role each tab needs. An annotator's page: the arena, the boards, her labels and agreement, the model pages.
TAB_ROLES = {
    "arena": "annotator",
    "leaderboard": "annotator",
    "data": "researcher",
    "annotate": "researcher",
    "label": "annotator",
    "agreement": "annotator",
    "probes": "researcher",
    "train": "researcher",
    "models": "annotator",  # shaped for a lower role: no server paths, job config or curves (``for_annotators``)
    "admin": "admin",
}

_shaping: ContextVar[_Shape | None] = ContextVar("studio_role_shape", default=None)


class _Shape:
    """The blocks an app being built shows by role, and whether they start hidden (login on)."""

    def __init__(self, hidden_first: bool) -> None:
        self.hidden_first = hidden_first
        self.blocks: list[tuple[Any, str]] = []


@contextmanager
def shaping(hidden_first: bool) -> Iterator[_Shape]:
    """While the app is built: ``restrict`` records into the shape this yields."""
    shape = _Shape(hidden_first)
    token = _shaping.set(shape)
    try:
        yield shape
    finally:
        _shaping.reset(token)


def restrict(block: Any, role: str) -> Any:
    """Show ``block`` (a tab, an accordion, a row) only to viewers who hold ``role``; returns the block. Outside
    ``shaping`` (a page built alone, in a test) it does nothing."""
    shape = _shaping.get()
    if shape is not None and role != "annotator":
        shape.blocks.append((block, role))
        if shape.hidden_first:
            block.visible = False
    return block


def may(ctx: Any, request: gr.Request | None, role: str) -> bool:
    """Whether the viewer of ``request`` holds ``role`` (the local operator of the open mode holds every one)."""
    try:
        require_role(ctx.db, ctx.access.user_id(request), role)
    except PermissionDenied:
        return False
    return True


def visible_tabs(ctx: Any, request: gr.Request | None) -> list[str]:
    """The tabs the viewer's page holds, by id (the same rule ``shape`` applies)."""
    return [tab for tab, role in TAB_ROLES.items() if may(ctx, request, role)]


def shape(ctx: Any, demo: gr.Blocks, shaped: _Shape) -> None:
    """One page-load event that shows each recorded block to the viewers whose role reaches it."""
    if not shaped.blocks:
        return
    blocks = [b for b, _ in shaped.blocks]
    roles = [r for _, r in shaped.blocks]

    def on_load(request: gr.Request) -> list[Any]:
        held = {r: may(ctx, request, r) for r in set(roles)}
        return [gr.update(visible=held[r]) for r in roles]

    quiet_hidden_loads(ctx, demo, shaped)  # before this load is added: it must answer every role
    demo.load(on_load, None, blocks, api_visibility="private")


def quiet_hidden_loads(ctx: Any, demo: gr.Blocks, shaped: _Shape) -> int:
    """Page-load events that fill only what a viewer's page hides from them answer that viewer with no change:
    the Train tab's load no longer answers an annotator with a refusal and emptied pickers (whose change events
    then failed with a red "Error"). The event is unchanged for everyone else, and any handler it reaches still
    checks the role. Only handlers that take the request are quieted (the others never read the viewer).
    Returns how many."""
    needs = {b._id: r for b, r in shaped.blocks}
    quieted = 0
    for fn in demo.fns.values():
        if not fn.fn or not fn.outputs or not any(event == "load" for _, event in fn.targets):
            continue
        roles = [_hidden_by(out, needs) for out in fn.outputs]
        if None in roles or not _takes_request(fn.fn):
            continue
        fn.fn = _quiet(ctx, fn.fn, max(roles, key=RANK.index), len(fn.outputs))  # type: ignore[arg-type]
        quieted += 1
    return quieted


RANK = ["annotator", "researcher", "admin"]


def _hidden_by(block: Any, needs: dict[int, str]) -> str | None:
    """The role the nearest shaped block around ``block`` (or itself) needs; None when nothing shapes it."""
    node = block
    while node is not None:
        if getattr(node, "_id", None) in needs:
            return needs[node._id]
        node = getattr(node, "parent", None)
    return None


def _takes_request(fn: Any) -> bool:
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # an annotation that does not resolve: leave the handler as it is
        return False
    return gr.Request in hints.values() and not inspect.isgeneratorfunction(fn)


def _quiet(ctx: Any, fn: Any, role: str, n: int) -> Any:
    @functools.wraps(fn)
    def quiet(*args: Any, **kwargs: Any) -> Any:
        request = next((a for a in (*args, *kwargs.values()) if isinstance(a, gr.Request)), None)
        if request is not None and not may(ctx, request, role):
            return gr.skip() if n == 1 else tuple(gr.skip() for _ in range(n))
        return fn(*args, **kwargs)

    return quiet
