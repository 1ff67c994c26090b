"""No dead ends without a browser (#35): every event handler of the built app, called as a fresh page would call it
(each input at the value it starts with: empty boxes, nothing picked), answers; none raises ``gr.Error`` for a
precondition the user can meet, and none crashes. The browser crawler (``tests/e2e/test_crawl.py``) checks the same
on a served studio, with what the page shows.

Handlers that start long work (a model's answers, a training job) are left out by their button, as the crawler
leaves them out.
"""

from __future__ import annotations

import inspect
import types

import gradio as gr
import pytest

from tests.helpers.crawler import LONG_WORK


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from common.settings import Settings
    from studio.app import build_app
    from studio.context import build_context

    home = tmp_path_factory.mktemp("dead-ends")
    ctx = build_context(Settings(database_url=f"sqlite:///{home / 's.sqlite'}"))
    return build_app(ctx)


def _trigger_names(demo: gr.Blocks, block_fn) -> list[str]:  # type: ignore[no-untyped-def]
    names = []
    for block_id, event in block_fn.targets:
        block = demo.blocks.get(block_id)
        name = getattr(block, "elem_id", None) or getattr(block, "value", None) or type(block).__name__
        names.append(f"{name}.{event}")
    return names


def _call(block_fn, demo: gr.Blocks):  # type: ignore[no-untyped-def]
    """Call the handler with each input's starting value, a request of the open mode and a silent progress."""
    values = []
    for comp in block_fn.inputs:
        value = comp.value
        values.append(value() if callable(value) else value)
    args, kwargs = [], {}
    it = iter(values)
    for p in inspect.signature(block_fn.fn).parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            args.extend(it)
        elif isinstance(p.default, gr.Progress):
            kwargs[p.name] = lambda *a, **k: None
        elif "Request" in str(p.annotation):
            kwargs[p.name] = gr.Request(username=None)
        elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            try:
                kwargs[p.name] = next(it)
            except StopIteration:
                if p.default is p.empty:
                    raise
    out = block_fn.fn(*args, **kwargs)
    if isinstance(out, types.GeneratorType):
        out = list(out)
    return out


def _handlers(demo: gr.Blocks):  # type: ignore[no-untyped-def]
    for block_fn in demo.fns.values():
        if block_fn.fn is None:  # a JavaScript-only event (the tabs' timer switch)
            continue
        names = _trigger_names(demo, block_fn)
        if any(n.split(".")[0] in LONG_WORK for n in names):
            continue
        yield ", ".join(names), block_fn


def test_every_handler_answers_a_fresh_page(app):
    dead: dict[str, str] = {}
    called = 0
    for name, block_fn in _handlers(app):
        called += 1
        try:
            _call(block_fn, app)
        except gr.Error as exc:  # a precondition refused with a red badge instead of in place
            dead[f"{block_fn.fn.__module__}: {name}"] = f"gr.Error: {exc.message}"
        except Exception as exc:  # a crash: Gradio would show a red badge too
            dead[f"{block_fn.fn.__module__}: {name}"] = f"{type(exc).__name__}: {str(exc)[:160]}"
    assert called > 40
    assert not dead, "handlers that dead-end on a fresh page:\n" + "\n".join(f"- {k}: {v}" for k, v in dead.items())
