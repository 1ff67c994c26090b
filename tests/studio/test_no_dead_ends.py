"""No dead ends without a browser (#35): every button and tab handler of the built app, called as a fresh page would call it
(each input at the value it starts with: empty boxes, nothing picked), answers; none raises ``gr.Error`` for a
precondition the user can meet, and none crashes. The browser crawler (``tests/e2e/test_crawl.py``) checks the same
on a served studio, with what the page shows.

Handlers that start long work (a model's answers, a training job) are left out by their button, as the crawler
leaves them out.
"""

from __future__ import annotations

import time
import types

import gradio as gr

from tests.helpers.crawler import ELSEWHERE, LONG_WORK


def _call(block_fn):  # type: ignore[no-untyped-def]
    """Call the handler as Gradio does (its ``gr.Request`` and ``gr.Progress`` put in by Gradio's own
    ``special_args``), each input at its starting value, as the open single-user mode's request."""
    from gradio.helpers import special_args

    values = [c.value() if callable(c.value) else c.value for c in block_fn.inputs]
    args, _, _, _ = special_args(block_fn.fn, values, request=gr.Request(username=None))
    out = block_fn.fn(*args)
    return list(out) if isinstance(out, types.GeneratorType) else out


def _handlers(demo: gr.Blocks):  # type: ignore[no-untyped-def]
    """(name, handler) for each event a person starts on a fresh page: a click on an enabled button and a tab's
    opening. Left out: JavaScript-only events, buttons that start disabled (no click reaches them), buttons that
    start long work, the page's load (the crawler checks it, as the page runs it) and reactions to a changed input
    (``change``, ``input``, a table's ``select``: the value they react to is not the fresh page's)."""
    for block_fn in demo.fns.values():
        if block_fn.fn is None:  # a JavaScript-only event (the tabs' timer switch)
            continue
        targets = [(demo.blocks.get(i), event) for i, event in block_fn.targets]
        acts = [(b, e) for b, e in targets if e == "click" or (e == "select" and isinstance(b, gr.Tab))]
        acts = [(b, e) for b, e in acts if not (isinstance(b, gr.Button) and b.interactive is False)]
        if not acts:
            continue
        names = [
            f"{getattr(b, 'elem_id', None) or getattr(b, 'label', None) or type(b).__name__}.{e}"
            for b, e in acts
        ]
        if any(n.rsplit(".", 1)[0] in LONG_WORK for n in names):
            continue
        yield ", ".join(names), block_fn


def test_every_handler_answers_a_fresh_page(fresh_app):
    app = fresh_app
    dead: dict[str, str] = {}
    called, slow = 0, []
    for name, block_fn in _handlers(app):
        called += 1
        t0 = time.perf_counter()
        try:
            _call(block_fn)
        except gr.Error as exc:  # a precondition refused with a red badge instead of in place
            dead[name] = f"gr.Error: {exc.message}"
        except Exception as exc:  # a crash: Gradio would show a red badge too
            dead[name] = f"{type(exc).__name__}: {str(exc)[:160]}"
        finally:
            slow.append(
                (
                    round(time.perf_counter() - t0, 2),
                    f"{block_fn.fn.__module__}:{block_fn.fn.__name__}:{name}",
                )
            )
    print(f"{called} handlers called; slowest: {sorted(slow, reverse=True)[:3]}")
    assert called > 40
    pending = {n: why for n, why in dead.items() if n.rsplit(".", 1)[0] in ELSEWHERE}
    print("still dead-ending on pages fixed elsewhere:", pending)
    fixed = set(ELSEWHERE) - {n.rsplit(".", 1)[0] for n in pending}
    assert not fixed, (
        f"these answer in place now: remove them from ELSEWHERE in tests/helpers/crawler.py: {fixed}"
    )
    dead = {n: why for n, why in dead.items() if n not in pending}
    assert not dead, "handlers that dead-end on a fresh page:\n" + "\n".join(
        f"- {k}: {v}" for k, v in dead.items()
    )
