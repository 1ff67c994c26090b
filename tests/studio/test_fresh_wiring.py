"""Fresh on sight (#48), in the app's wiring: every page-load event also runs when each tab around its outputs
opens (``studio.fresh``), the arena's intro follows the mode, and a reveal takes a drawn prompt's next turn out
of the prompt box. The browser side is ``tests/e2e/test_fresh_on_sight.py``.
"""

from __future__ import annotations

import random

import gradio as gr
import pytest

from tests.helpers.fake_openai import FakeOpenAI, register_http
from vibestudio.arena.battles import ArenaService
from vibestudio.common.settings import Settings
from vibestudio.studio import fresh
from vibestudio.studio.context import StudioContext
from vibestudio.studio.pages import arena


@pytest.fixture
def app(tmp_path):
    from vibestudio.studio.app import build_app
    from vibestudio.studio.context import build_context

    return build_app(build_context(Settings(database_url=f"sqlite:///{tmp_path / 's.sqlite'}")))


def _name(block) -> str:  # type: ignore[no-untyped-def]
    return getattr(block, "elem_id", None) or getattr(block, "label", None) or type(block).__name__


def test_every_page_load_also_runs_when_a_tab_around_its_outputs_opens(app):
    loads = [fn for fn in app.fns.values() if any(event == "load" for _, event in fn.targets)]
    assert len(loads) >= 12  # every tab fills something on load
    missing = []
    for fn in loads:
        triggers = set(fn.targets)
        select_writes: dict[int, set[int]] = {}
        for other in app.fns.values():
            for block_id, event in other.targets:
                if event == "select" and other is not fn:
                    select_writes.setdefault(block_id, set()).update(o._id for o in other.outputs)
        for out in fn.outputs:
            for tab in fresh.tabs_around(out):
                written = {o._id for o in fn.outputs} <= select_writes.get(tab._id, set())
                if (tab._id, "select") not in triggers and not written:
                    missing.append(f"{fn.name} -> {_name(out)} in tab {tab.label!r}")
    assert not missing, "page loads that do not run when their tab opens:\n" + "\n".join(sorted(set(missing)))


def test_the_train_tab_refreshes_its_choices_on_opening_without_a_second_copy(app):
    train = next(b for b in app.blocks.values() if isinstance(b, gr.Tab) and b.label == "Train")
    on_open = [fn for fn in app.fns.values() if (train._id, "select") in fn.targets]
    names = {fn.name for fn in on_open}
    assert {"on_load", "on_tick", "on_open"} <= names, names  # choices and jobs, the open job, comparisons
    # the same event with one more trigger: the page load's concurrency line is kept
    load = next(fn for fn in on_open if fn.name == "on_load")
    assert any(event == "load" for _, event in load.targets) and load.concurrency_id == "train-load"


def test_tabs_around_lists_the_enclosing_tabs_innermost_first():
    with gr.Blocks():
        with gr.Tabs():
            with gr.Tab("outer") as outer:
                with gr.Tabs():
                    with gr.Tab("inner") as inner:
                        with gr.Accordion("box"):
                            box = gr.Markdown("x")
        loose = gr.Markdown("y")
    assert fresh.tabs_around(box) == [inner, outer]
    assert fresh.tabs_around(loose) == []


@pytest.mark.parametrize("mode", [arena.NAMED, arena.SELF])
def test_the_arena_intro_speaks_of_the_mode_picked(mode):
    anon = arena.intro_for(arena.ANON)
    assert "anonymous" in anon and "Reveal" in anon
    text = arena.intro_for(mode)
    assert "anonymous" not in text.lower() and "see who they were" not in text


@pytest.fixture
def ctx(db):
    fake = FakeOpenAI()
    for name in ("pa", "pb"):
        register_http(db, fake, name, "fixed")
    yield StudioContext(Settings(), db, ArenaService(db, rng=random.Random(0)))
    fake.close()


def test_a_reveal_takes_a_drawn_prompts_next_turn_out_of_the_prompt_box(ctx):
    end = arena._end_handlers(ctx)
    for pid, box in ((7, ""), (None, gr.update())):
        bid = ctx.arena.start_battle().battle_id
        list(ctx.arena.generate_turn(bid, "hi"))
        ctx.arena.record_vote(bid, "left", 0)
        out = end.on_reveal(bid, pid)
        assert "Battle ended" in str(out[3])
        assert out[-1] == box  # a drawn prompt's follow-up leaves; a typed prompt stays
