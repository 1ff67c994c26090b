"""The Arena page's battle panes carry no control that erases, edits or re-runs an answer, a vote on panes that
were altered in the browser (or are blank) is refused, and every refusal on the page (vote or reveal with no
battle, a turn already voted, a bad turn pick, no prompt to rank) answers in the status line: no exception (Gradio's
red Error badge) and no traceback in the log.

The handlers run in process on a real database, with ``FakeOpenAI`` contestants (scripted answers at the HTTP
edge); the browser side is `tests/e2e/test_arena_flows.py`.
"""

from __future__ import annotations

import logging
import random

import gradio as gr
import pytest

from tests.helpers.fake_openai import FakeOpenAI, register_http
from vibestudio.arena.battles import ArenaService
from vibestudio.common.settings import Settings
from vibestudio.studio.context import StudioContext
from vibestudio.studio.pages import arena as page

PANE_EVENTS = {"clear", "edit", "retry", "undo", "like", "change", "select", "option_select", "copy"}


@pytest.fixture
def fake():
    f = FakeOpenAI()
    yield f
    f.close()


@pytest.fixture
def ctx(db, fake):
    for name in ("pa", "pb"):
        register_http(db, fake, name, "fixed")
    return StudioContext(Settings(), db, ArenaService(db, rng=random.Random(0)))


def test_the_panes_have_no_control_that_erases_or_edits_an_answer(ctx):
    with gr.Blocks() as demo:
        page.build(ctx)
    config = demo.get_config_file()
    panes = {
        c["id"]: c["props"]
        for c in config["components"]
        if c.get("props", {}).get("elem_id") in ("chat-left", "chat-right")
    }
    assert len(panes) == 2
    for props in panes.values():
        assert props["buttons"] == [] and props.get("editable") is None and not props.get("feedback_options")
        assert "vs-battle-pane" in props["elem_classes"]
        assert not props.get("_retryable") and not props.get("_undoable")
    # nothing listens to a pane's own events (a trash icon's clear, an edit, a retry)
    targets = {(t[0], t[1]) for d in config["dependencies"] for t in d["targets"]}
    assert not {(i, e) for i, e in targets if i in panes and e in PANE_EVENTS}
    # the trash icon a Chatbot always shows (no parameter turns it off) is hidden by the page's style
    assert ".vs-battle-pane .icon-button-wrapper.top-panel {display: none" in page.CSS


def _request():
    return None  # the open mode: the local operator, no login


def _vote(ctx, battle_id, turn=None, chat_l=None, chat_r=None, choice="left"):
    return page._vote_handler(ctx, choice)(_request(), battle_id, *[None] * 6, turn, chat_l, chat_r)


def _status(out) -> str:
    return str(out[0])


def _no_traceback(caplog) -> None:
    assert not [r for r in caplog.records if r.exc_info], "a user's mistake left a traceback in the log"


def test_votes_and_reveals_that_cannot_be_taken_answer_in_the_status_line(ctx, caplog):
    caplog.set_level(logging.INFO, logger="studio")
    out = _vote(ctx, None)
    assert "no battle to vote on" in _status(out) and len(out) == 1 + 7 + page.RUBRIC_FIELDS + 1
    assert all(u.get("interactive") is False for u in out[1:6])  # the votes stay off
    rev = page._end_handlers(ctx).on_reveal(None)
    assert "no battle to reveal" in str(rev[3])
    bid = ctx.arena.start_battle().battle_id
    list(ctx.arena.generate_turn(bid, "hi"))
    assert "saved" in _status(_vote(ctx, bid, turn=0))
    again = _vote(ctx, bid, turn=0)
    assert "already has a vote" in _status(again) and again[-1] == gr.update()
    assert "pick the turn" in _status(_vote(ctx, bid, turn="two")).lower()
    with gr.Blocks() as demo:  # named mode's "which model for this prompt?" with no prompt typed
        page._for_prompt_box(ctx)
    on_rank = next(f.fn for f in demo.fns.values() if f.name == "on_rank")
    assert "type a prompt" in str(on_rank("")[0]).lower()
    _no_traceback(caplog)


def _panes(ctx, bid):
    """The two panes as the page sent them: the prompt, then each answer as the display path renders it."""
    n, (left, right) = ctx.arena.shown_answers(bid)
    user = {"role": "user", "content": "hi"}
    return (
        [user, {"role": "assistant", "content": page._pane(left, None)}],
        [user, {"role": "assistant", "content": page._pane(right, None, cut=True)}],
    )


def test_a_vote_on_panes_altered_in_the_browser_is_refused(ctx, caplog):
    caplog.set_level(logging.INFO, logger="studio")
    bid = ctx.arena.start_battle().battle_id
    list(ctx.arena.generate_turn(bid, "hi"))
    left, right = _panes(ctx, bid)
    # Gradio sends a message's text back as a list of parts: the check reads either form
    parts = [left[0], {"role": "assistant", "content": [{"type": "text", "text": left[1]["content"]}]}]
    cleared = _vote(ctx, bid, chat_l=[], chat_r=right)  # the trash icon emptied the left pane
    edited = _vote(ctx, bid, chat_l=left, chat_r=[right[0], {"role": "assistant", "content": "Edited."}])
    blank = _vote(ctx, bid, chat_l=left, chat_r=[right[0], {"role": "assistant", "content": " "}])
    for out in (cleared, edited, blank):
        assert "not the ones the models gave" in _status(out)
    assert ctx.arena.battle_view(bid).voted_turns == []  # nothing was stored
    assert "saved" in _status(_vote(ctx, bid, chat_l=parts, chat_r=right))  # as sent, cut note and all
    _no_traceback(caplog)


def test_a_turn_with_an_empty_pane_leaves_the_votes_off(ctx):
    from vibestudio.arena.battles import TurnUpdate
    from vibestudio.db.models import Turn

    bid = ctx.arena.start_battle().battle_id
    with ctx.db.session() as s:  # stored as the stream left it: one side said nothing
        s.add(Turn(battle_id=bid, idx=0, user_msg="hi", answer_a="An answer.", answer_b=""))
    done = TurnUpdate("An answer.", "", done=True, turn_idx=0)
    chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": ""}]
    (out,) = list(page._stream(ctx, iter([done]), list(chat), list(chat), bid, None, ("Model A", "Model B")))
    assert "empty answer" in str(out[4])
    assert all(u.get("interactive") is False for u in out[6:11])  # the five votes
    assert out[-1].get("choices") == []  # the picker lists no turn


def test_the_pane_check_reads_hostile_answers_as_gradio_sends_them_back(ctx):
    """Escaped markup must compare as text once: a check that unescaped twice refused every vote on an answer
    that shows ``<script>`` as text (seen with the hostile-text browser test)."""
    from tests.e2e.test_xss import PAYLOAD
    from vibestudio.db.models import Turn

    bid = ctx.arena.start_battle().battle_id

    with ctx.db.session() as s:
        s.add(Turn(battle_id=bid, idx=0, user_msg="hi", answer_a=PAYLOAD, answer_b=PAYLOAD + " x"))
    pane = gr.Chatbot(render_markdown=False, sanitize_html=True, **page.PANE_CONTROLS_OFF)
    _, (left, right) = ctx.arena.shown_answers(bid, 0)
    sent = [
        pane.preprocess(
            pane.postprocess([{"role": "user", "content": "hi"}, {"role": "assistant", "content": m}])
        )
        for m in (page._pane(left, None, cut=True), page._pane(right, None))
    ]  # the server's message, as Gradio sends it to the page and the page sends it back
    page._check_panes(ctx.arena, bid, 0, *sent)  # accepted: no BattleError
