"""Arena tab: two anonymous answers stream side by side; vote on any turn; reveal ends the battle.

Any unvoted turn of the open battle can be voted. The "Vote on" picker lists them, the latest first and
selected. So a turn skipped before a follow-up can still get its vote. API clients pass the turn (from 0)
as the vote event's last input, or leave it out for the latest turn.

Only ids live in ``gr.State``: the battle id, the id of a prompt drawn from a set. Everything this page
sends before the reveal comes from identity-free service results (``TurnUpdate``, ``VoteReceipt``,
``BattleError``). Contestant names reach the page in the reveal. In named mode and self-play they arrive
because the user chose them. The names for those modes are loaded only when one is picked. In self-play
(one contestant, two temperatures) the panes carry its name. Which side had which temperature appears only
in the reveal. Handlers convert inputs, call ``ArenaService`` and map the result to outputs; no rules live
here.

Named mode also shows a "which model for this prompt?" box. It ranks a typed prompt on the
prompt-conditioned board (`standings.leaderboard.LeaderboardService.for_prompt`), with intervals. It reads
the board and writes nothing.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import gradio as gr

from vibestudio.accounts import PermissionDenied, RateLimited
from vibestudio.arena import lifecycle
from vibestudio.arena.battles import QUICK_RUBRIC, BattleError, BattleView, Reveal, TurnUpdate
from vibestudio.arena.engines.factory import ENGINE_KINDS
from vibestudio.arena.personas import PersonaError, add_personas, import_persona_file, spec_from_mapping
from vibestudio.arena.prompts import MT_BENCH, PromptImportError, get_prompt, list_sets, random_prompt
from vibestudio.arena.registry import BUILTIN_GGUF, RegistryError, get_contestant
from vibestudio.arena.self_play import SELF_PLAY, default_temperatures
from vibestudio.common import outcomes
from vibestudio.studio import roles
from vibestudio.studio.context import StudioContext
from vibestudio.studio.errors import log, refuse, require, user_error, wire
from vibestudio.studio.render import CUT_NOTE, counted, error_text, literal, to_html
from vibestudio.studio.uploads import discard_upload
from vibestudio.training.report.verdict import badges_by_name

VOTES = list(
    zip(
        ("A is better", "B is better", "Tie", "Both good", "Both bad"),
        outcomes.CHOICES,
        strict=True,
    )
)
ANON, NAMED, SELF = "Anonymous", "Named (pick both models)", "Self-play (one model, two samples)"
SCORES = ["1", "2", "3", "4", "5"]


def _side_note(label: str, text: str, queue: int | None, error: str | None) -> str:
    if error:
        return f"⚠️ {label}: {literal(error)}"
    if queue is not None:
        return f"⏳ {label}: waiting for the engine ({queue} ahead)" if queue else f"⏳ {label}: next in line"
    return f"✍️ {label}: answering" if text else f"⏳ {label}: starting"


def _status(upd: TurnUpdate) -> str:
    return " · ".join(
        (
            _side_note("Model A", upd.left, upd.left_queue, upd.left_error),
            _side_note("Model B", upd.right, upd.right_queue, upd.right_error),
        )
    )


def _pane(text: str, error: str | None, cut: bool = False) -> str:
    """An answer (model output) as the display path's HTML, with the identity-free error kind under it, and a note
    when it stopped at its length limit (so a sentence that ends mid-way is not read as the model's choice)."""
    return (
        to_html(f"{text}")
        + (to_html(CUT_NOTE) if cut else "")
        + (to_html(f"⚠️ *{literal(error)}*") if error else "")
    )


def _reveal_text(r: Reveal) -> str:
    note = (
        "\n\n*An answer named a model before a vote: this battle's votes are not rated.*"
        if r.revealed_before_vote
        else ""
    )
    rows = ["| turn | your vote | A: tokens · TTFT · tok/s | B: tokens · TTFT · tok/s |", "|---|---|---|---|"]

    def stats(s: Any) -> str:
        ttft = f"{s.ttft_s:.2f} s" if s.ttft_s is not None else "–"
        tps = f"{s.tokens_per_s:.1f}" if s.tokens_per_s else "–"
        return f"{s.tokens or 0} · {ttft} · {tps}"

    for t in r.turns:
        vote = {"left": "A", "right": "B"}.get(t.vote or "", (t.vote or "–").replace("_", " "))
        regen = f" (regenerated ×{t.regenerations})" if t.regenerations else ""
        rows.append(f"| {t.idx + 1}{regen} | {vote} | {stats(t.left)} | {stats(t.right)} |")

    def at(sampling: dict | None) -> str:
        return f" at temperature {sampling['temperature']:g}" if sampling else ""

    return (
        f"### Model A was **{literal(r.left_name)}**{at(r.left_sampling)} · "
        f"Model B was **{literal(r.right_name)}**{at(r.right_sampling)}{note}\n\n"
        + "\n".join(rows)
        + "\n\nPress **New round** (or send a prompt) for the next battle."
    )


#: How many updates ``_locked`` returns (a unit test checks it). Calling ``_locked()`` while the page is built
#: creates its eight ``gr.Button``s inside the page: they showed as eight grey "Run" buttons under the arena.
LOCKED_CONTROLS = 8


def _locked():
    """Send, Regenerate, Reveal and the five votes, all off (see ``_lock_while_answering``).

    Gradio transpiles this to JavaScript (``js=True``), so it must stay one literal list of updates, one per
    control in ``_lock_while_answering``'s order.
    """
    return [
        gr.Button(interactive=False),
        gr.Button(interactive=False),
        gr.Button(interactive=False),
        gr.Button(interactive=False),
        gr.Button(interactive=False),
        gr.Button(interactive=False),
        gr.Button(interactive=False),
        gr.Button(interactive=False),
    ]


def _lock_while_answering(triggers: list[Any], controls: list[Any]) -> None:
    """Turn ``controls`` off in the browser the moment one of ``triggers`` (Send, Enter, Regenerate) fires.

    Register this BEFORE the triggers' server handlers: the browser runs a trigger's listeners in order and waits
    on a server listener's request before the next one. The handlers' stream updates turn the controls back on
    once both answers are in, and each handler's ``.failure`` (empty prompt, rate limit, a turn already running)
    sets them from the battle as it stands. Without the lock a vote button stays live from the last answer until
    the server's first update arrives, and a vote cast in that moment is refused. The lock runs as browser
    JavaScript (``js=True``); a Content-Security-Policy without ``unsafe-eval`` would leave only the server's
    first update to do it.
    """
    if (
        len(controls) != LOCKED_CONTROLS
    ):  # never call ``_locked()`` here: its Buttons would render on the page
        raise ValueError(f"_locked() has {LOCKED_CONTROLS} updates for {len(controls)} controls")
    gr.on(triggers, _locked, None, controls, js=True, queue=False, api_visibility="private")


def _turn(value: Any) -> int | None:
    """The picked turn (from 0) as the picker or an API client sends it; None for the latest."""
    if value is None or value == "":
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise BattleError(f"pick the turn to vote on from the list (got {str(value)[:40]!r})") from None


def _labels(view: BattleView) -> tuple[str, str]:
    """The panes' labels: "Model A" / "Model B", the chosen names in named mode, both with the name in self-play."""
    if view.mode == SELF_PLAY:
        return f"Model A · {view.left_name}", f"Model B · {view.right_name}"
    return view.left_name or "Model A", view.right_name or "Model B"


@dataclass
class _SelfPlay:
    """The self-play controls: one contestant, two temperatures (hidden until that mode is picked)."""

    row: Any
    model: Any
    first: Any
    second: Any
    note: Any  # where a name the registry does not know is refused

    @property
    def inputs(self) -> list[Any]:
        return [self.model, self.first, self.second]


def _self_play_controls(ctx: StudioContext) -> _SelfPlay:
    """Build the self-play row; picking a contestant fills in its default temperatures (`arena.self_play`)."""
    with gr.Row(visible=False, elem_id="arena-self-play") as row:
        model = gr.Dropdown([], label="Model (both sides)", scale=2, elem_id="arena-self-play-model")
        first = gr.Number(
            None, label="Temperature 1", minimum=0, maximum=5, step=0.05, elem_id="arena-temp-1"
        )
        second = gr.Number(
            None, label="Temperature 2", minimum=0, maximum=5, step=0.05, elem_id="arena-temp-2"
        )
        gr.Markdown(
            "Each side samples at one of the two temperatures (a coin decides which); the reveal says which. "
            "Votes here make on-policy preference pairs for this model and never change the leaderboard."
        )
        note = gr.HTML("", elem_id="arena-self-play-note")

    def on_model(name: str | None):
        if not name:
            return gr.update(), gr.update(), gr.update()
        try:
            with ctx.db.session() as s:
                own = get_contestant(s, name).sampling.get("temperature")
        except RegistryError as exc:
            raise user_error(exc) from exc
        return (*default_temperatures(own), "")

    # a name the registry does not know (typed by an API client, or gone) answers under the row, not in a toast
    wire(model.change, on_model, [model], [first, second, note], note, api_visibility="private")
    return _SelfPlay(row, model, first, second, note)


# ---- the page's sections: each builds its components and returns them by name --------------------------------
INTRO = (
    "Ask anything. Two anonymous models answer side by side. Vote on each answer (you can keep chatting "
    "with both), then **Reveal** to see who they were."
)
#: What the page says above the arena in each mode: only the anonymous mode hides who answers.
INTROS = {
    ANON: INTRO,
    NAMED: (
        "Pick both models, then ask anything: they answer side by side under the names you picked. Vote on each "
        "answer (you can keep chatting with both), then end the battle (**Reveal / end battle**). Named votes stay "
        "off the boards unless a board is asked to include them."
    ),
    SELF: (
        "Pick one model, then ask anything: it answers twice, once at each temperature. Vote on each pair (you can "
        "keep chatting), then **Reveal / end battle** to see which side had which temperature. These votes make "
        "preference pairs for this model and never change the leaderboard."
    ),
}


def intro_for(mode: str | None) -> str:
    """The intro for ``mode`` (the anonymous one for anything else)."""
    return INTROS.get(mode or ANON, INTRO)


#: The rubric radios: QUICK_RUBRIC's criteria x the two sides, in the order ``on_vote`` reads them.
RUBRIC_FIELDS = 6


class _ModeRow(NamedTuple):
    mode: Any
    pick_left: Any
    pick_right: Any


def _mode_row() -> _ModeRow:
    """The mode radio and the two model pickers of named mode (hidden until it is picked)."""
    with gr.Row():
        mode = gr.Radio([ANON, NAMED, SELF], value=ANON, label="Mode", scale=2, elem_id="arena-mode")
        pick_left = gr.Dropdown([], label="Model A", visible=False, scale=2, elem_id="arena-pick-left")
        pick_right = gr.Dropdown([], label="Model B", visible=False, scale=2, elem_id="arena-pick-right")
    return _ModeRow(mode, pick_left, pick_right)


class _Panes(NamedTuple):
    left: Any
    right: Any
    status: Any


#: The page's style (the app adds it to its own): a Chatbot shows a trash icon ("Clear") in its top corner whenever
#: it holds messages, and no parameter turns it off (gradio 6.31), so the battle panes hide that corner. The other
#: pane controls are off by their parameters (``PANE_CONTROLS_OFF``); a vote on panes that were altered anyway is
#: refused (``_check_panes``).
CSS = ".vs-battle-pane .icon-button-wrapper.top-panel {display: none !important}\n"
#: No pane control can erase, edit, re-run or rate an answer before the vote: no toolbar buttons (share, copy
#: all), no message editing, no like / dislike; retry and undo show only when listened to, and nothing listens.
PANE_CONTROLS_OFF: dict[str, Any] = dict(buttons=[], editable=None, feedback_options=None)


def _answer_panes() -> _Panes:
    """The two answer panes side by side and the status line under them."""
    with gr.Row():
        # messages are the display path's HTML: Gradio must not parse them again (no Markdown, no LaTeX)
        chat = dict(
            height=380,
            render_markdown=False,
            sanitize_html=True,
            latex_delimiters=[],
            allow_tags=False,
            elem_classes=["vs-battle-pane"],
            **PANE_CONTROLS_OFF,
        )
        left = gr.Chatbot(label="Model A", elem_id="chat-left", **chat)  # type: ignore[arg-type]
        right = gr.Chatbot(label="Model B", elem_id="chat-right", **chat)  # type: ignore[arg-type]
    status = gr.HTML("", elem_id="arena-status")
    return _Panes(left, right, status)


class _PromptRow(NamedTuple):
    prompt: Any
    send: Any


def _prompt_row() -> _PromptRow:
    with gr.Row():
        prompt = gr.Textbox(
            placeholder="Type a prompt and press Enter", show_label=False, scale=6, elem_id="arena-prompt"
        )
        send = gr.Button("Send", variant="primary", scale=1, elem_id="arena-send")
    return _PromptRow(prompt, send)


class _VoteRow(NamedTuple):
    turn_pick: Any
    buttons: list[Any]  # one per VOTES entry, in order


def _vote_row() -> _VoteRow:
    """The "Vote on" turn picker and the five vote buttons."""
    with gr.Row():
        # any unvoted turn of the open battle can be voted: the picker lists them, the latest first
        turn_pick = gr.Dropdown(
            [],
            value=None,
            label="Vote on",
            interactive=False,
            allow_custom_value=True,  # API clients send a turn number the picker of their session never listed
            scale=1,
            min_width=120,
            elem_id="arena-vote-turn",
        )
        buttons = [gr.Button(label, interactive=False, elem_id=f"vote-{c}") for label, c in VOTES]
    return _VoteRow(turn_pick, buttons)


def _rubric_box() -> list[Any]:
    """The quick rubric: one 1-5 radio per criterion and side (criterion-major, A before B)."""
    with gr.Accordion(
        "Quick rubric (optional, 1 = poor, 5 = great): scores for the answers on screen, saved with your vote "
        "on them, then cleared",
        open=False,
    ):
        radios = []
        for criterion in QUICK_RUBRIC:
            with gr.Row():
                for side in ("A", "B"):
                    radios.append(
                        gr.Radio(
                            SCORES,
                            value=None,
                            label=f"{criterion.capitalize()} · Model {side}",
                            scale=1,
                            elem_id=f"rubric-{criterion}-{side.lower()}",
                        )
                    )
    if len(radios) != RUBRIC_FIELDS:
        raise ValueError("on_vote takes six rubric scores (three criteria, two sides)")
    return radios


class _ActionRow(NamedTuple):
    regen: Any
    reveal: Any
    new: Any
    prompt_set: Any
    draw: Any


def _action_row(ctx: StudioContext) -> _ActionRow:
    """Regenerate, Reveal, New round, and a random prompt from a set."""
    with gr.Row():
        regen = gr.Button("Regenerate", interactive=False, elem_id="arena-regenerate")
        reveal = gr.Button("Reveal / end battle", interactive=False, elem_id="arena-reveal-btn")
        new = gr.Button("New round", elem_id="arena-new")
        with ctx.db.session() as s:
            sets = list_sets(s)
        prompt_set = gr.Dropdown(
            sets, value=MT_BENCH if MT_BENCH in sets else None, label="Prompt set", scale=2
        )
        draw = gr.Button("Random prompt", elem_id="arena-random")
    return _ActionRow(regen, reveal, new, prompt_set, draw)


@dataclass
class _ArenaPage:
    """Every component the arena's events read or write, by section."""

    battle: Any  # gr.State: battle id, or None before the first prompt
    drawn: Any  # gr.State: id of a prompt drawn from a set
    modes: _ModeRow
    self_play: _SelfPlay
    for_prompt: Any
    panes: _Panes
    prompt: _PromptRow
    votes: _VoteRow
    rubric: list[Any]
    actions: _ActionRow
    reveal: Any

    @property
    def buttons(self) -> list[Any]:
        """The five votes, Regenerate and Reveal: the controls a turn turns on and off."""
        return [*self.votes.buttons, self.actions.regen, self.actions.reveal]

    @property
    def stream_outputs(self) -> list[Any]:
        """What Send and Regenerate write (``_outs``'s order)."""
        p = self.panes
        return [p.left, p.right, self.battle, self.prompt.prompt, p.status, self.reveal, *self.buttons]

    @property
    def send_inputs(self) -> list[Any]:
        m = self.modes
        return [
            self.prompt.prompt,
            self.battle,
            self.drawn,
            m.mode,
            m.pick_left,
            m.pick_right,
            self.panes.left,
            self.panes.right,
            *self.self_play.inputs,
        ]


def build(ctx: StudioContext, demo: gr.Blocks | None = None) -> None:
    """Lay out the tab section by section, then wire its events (``_wire``); with ``demo``, the page load (and
    each opening of the tab, ``studio.fresh``) reads the prompt sets and the names the mode offers again."""
    battle = gr.State(None)
    drawn = gr.State(None)
    intro = gr.Markdown(intro_for(ANON), elem_id="arena-intro")
    modes = _mode_row()
    self_play = _self_play_controls(ctx)
    for_prompt = _for_prompt_box(ctx)
    panes = _answer_panes()
    prompt = _prompt_row()
    votes = _vote_row()
    rubric = _rubric_box()
    actions = _action_row(ctx)
    reveal = gr.HTML("", elem_id="arena-reveal")
    _persona_form(ctx)
    page = _ArenaPage(
        battle, drawn, modes, self_play, for_prompt, panes, prompt, votes, rubric, actions, reveal
    )
    _wire(ctx, page)
    mode_outs = [modes.pick_left, modes.pick_right, self_play.row, self_play.model, for_prompt]
    modes.mode.change(intro_for, [modes.mode], [intro], api_visibility="private", show_progress="hidden")
    if demo is not None:
        demo.load(
            _open_handler(ctx), [modes.mode], [actions.prompt_set, *mode_outs], api_visibility="private"
        )


def _open_handler(ctx: StudioContext) -> Callable[..., Any]:
    """The tab's load and opening: the prompt sets as they are now, and the names the picked mode offers."""
    on_mode = _mode_handler(ctx)

    def on_open(m: str, request: gr.Request) -> tuple[Any, ...]:
        with ctx.db.session() as s:
            sets = list_sets(s)
        return (gr.update(choices=sets), *on_mode(m, request))

    return on_open


def _wire(ctx: StudioContext, p: _ArenaPage) -> None:
    """The page's events, in the order the app has always registered them (API clients and the tests address
    the private ones by index): the client-side lock, Send / Enter / Regenerate with their failure handlers, the
    rubric's clear, the mode, the random prompt, the five votes, Reveal and New round."""
    turns = _turn_handlers(ctx)
    buttons, send, regen = p.buttons, p.prompt.send, p.actions.regen
    stream_outs = [*p.stream_outputs, send, p.votes.turn_pick]
    new_round = p.actions.new.click
    # New round locks them too, until its answer is in: a prompt typed and sent while it still ran on a busy server
    # was cleared, or its answer was overwritten, by the new round's late update (the turn's status never came).
    _lock_while_answering([send.click, p.prompt.prompt.submit, regen.click, new_round], [*buttons, send])
    # and it clears the prompt in the browser at once, so the late update leaves alone what was typed after it
    gr.on([new_round], None, None, [p.prompt.prompt], js="() => ''", queue=False, api_visibility="private")
    runs = (
        send.click(turns.on_send, p.send_inputs, stream_outs, api_name="arena_send"),
        p.prompt.prompt.submit(turns.on_send, p.send_inputs, stream_outs, api_visibility="private"),
        regen.click(
            turns.on_regenerate,
            [p.battle, p.drawn, p.panes.left, p.panes.right],
            stream_outs,
            api_name="arena_regenerate",
        ),
    )
    for run in runs:
        run.failure(turns.on_settle, [p.battle], [*buttons, send], api_visibility="private")
    # Scores belong to the answers they were given for: a new turn, a regenerated one, a reveal or a new round
    # clears them in the browser at once (the vote clears them with its answer), so none rides on a later vote.
    gr.on(
        [send.click, p.prompt.prompt.submit, regen.click, p.actions.reveal.click, p.actions.new.click],
        None,
        None,
        p.rubric,
        js=f"() => {json.dumps([None] * len(p.rubric))}",  # browser only: no server call, no wait
        queue=False,
        api_visibility="private",
    )
    p.modes.mode.change(
        _mode_handler(ctx),
        [p.modes.mode],
        [p.modes.pick_left, p.modes.pick_right, p.self_play.row, p.self_play.model, p.for_prompt],
        api_visibility="private",
    )
    # a prompt set that cannot be drawn from (unknown, empty) answers in the status line, not in a toast
    draw_outs = [p.prompt.prompt, p.drawn, p.panes.status]
    wire(
        p.actions.draw.click,
        _draw_handler(ctx),
        [p.actions.prompt_set],
        draw_outs,
        p.panes.status,
        api_name="arena_random_prompt",
    )
    for btn, (_, choice) in zip(p.votes.buttons, VOTES, strict=True):
        btn.click(
            _vote_handler(ctx, choice),
            [p.battle, *p.rubric, p.votes.turn_pick, p.panes.left, p.panes.right],
            [p.panes.status, *buttons, *p.rubric, p.votes.turn_pick],
            api_name=f"arena_vote_{choice}",
        )
    end = _end_handlers(ctx)
    p.actions.reveal.click(
        end.on_reveal,
        [p.battle, p.drawn],
        [p.battle, p.drawn, p.reveal, p.panes.status, *buttons, p.votes.turn_pick, p.prompt.prompt],
        api_name="arena_reveal",
    )
    p.actions.new.click(
        end.on_new,
        [p.battle],
        [p.battle, p.drawn, p.panes.left, p.panes.right, p.reveal, p.panes.status]
        + [*buttons, p.votes.turn_pick, send],
        api_name="arena_new",
    ).failure(turns.on_settle, [p.battle], [*buttons, send], api_visibility="private")


# ---- what the handlers send back --------------------------------------------------------------------------------
def _no_pick() -> Any:
    """A fresh update each time (Gradio pops ``value`` from an update it applies)."""
    return gr.update(choices=[], value=None, interactive=False)


def _turn_picker(view: BattleView | None) -> Any:
    """The turn picker for ``view``: the turns that can take a vote, the latest selected (none once it has
    ended); a turn with an empty answer is not listed."""
    todo = view.votable_turns if view is not None else []
    if not todo:
        return _no_pick()
    return gr.update(
        choices=[(f"Turn {i + 1}", i) for i in reversed(todo)], value=todo[-1], interactive=len(todo) > 1
    )


def _clear_rubric() -> list[dict[str, Any]]:
    """One fresh update per field: Gradio pops ``value`` from an update it applies, so one dict repeated
    six times cleared only the first field, and the other scores stayed on screen for the next vote."""
    return [gr.update(value=None) for _ in range(RUBRIC_FIELDS)]


def _votes_off() -> list[Any]:
    return [gr.update(interactive=False)] * len(VOTES)


def _outs(
    chat_l: Any,
    chat_r: Any,
    battle_id: int | None,
    prompt_value: Any,
    status_text: str,
    votes: bool,
    regen_on: bool,
    reveal_on: bool,
    busy: bool = False,
    pick: Any = None,
) -> tuple[Any, ...]:
    """One update of Send / Regenerate's outputs (``_ArenaPage.stream_outputs``, Send, the turn picker)."""
    flags = [gr.update(interactive=votes)] * len(VOTES)
    return (
        chat_l,
        chat_r,
        battle_id,
        prompt_value,
        to_html(status_text),
        "",
        *flags,
        gr.update(interactive=regen_on),
        gr.update(interactive=reveal_on),
        gr.update(interactive=not busy),  # Send: off while both answers stream
        gr.update() if pick is None else pick,
    )


def _settle(ctx: StudioContext, battle_id: int | None) -> list[Any]:
    """After a refused Send / Regenerate: the controls as the battle stands (a running turn keeps them), Send."""
    if battle_id is not None and ctx.arena.is_answering(battle_id):
        return [gr.update()] * (len(VOTES) + 3)
    return [*_controls(ctx, battle_id), gr.update(interactive=True)]


def _controls(ctx: StudioContext, battle_id: int | None) -> list[Any]:
    """The five votes, Regenerate and Reveal as the battle stands: votes while a turn with two answers awaits
    one, Regenerate while the last turn has none, Reveal once a turn has one (a running turn keeps them)."""
    svc = ctx.arena
    if battle_id is not None and svc.is_answering(battle_id):
        return [gr.update()] * (len(VOTES) + 2)
    votes = regen_on = reveal_on = False
    if battle_id is not None:
        try:
            view = svc.battle_view(battle_id)
        except BattleError:
            view = None
        if view is not None and view.status == "open" and view.n_turns:
            votes = bool(view.votable_turns)
            regen_on = view.n_turns - 1 not in view.voted_turns
            reveal_on = bool(view.voted_turns)
    flags = [gr.update(interactive=votes)] * len(VOTES)
    return [*flags, gr.update(interactive=regen_on), gr.update(interactive=reveal_on)]


def _said(exc: BaseException | str) -> str:
    """A refusal a person can act on, for the status line: the reason and what to do (safe text,
    ``studio.render.error_text``), logged in one line (a user's mistake leaves no traceback in the log)."""
    text = error_text(exc) or "that did not work"
    text = text[:1].upper() + text[1:]
    if isinstance(exc, BaseException):
        log.info("refused in the arena: %r", exc)
    return to_html(f"⚠️ {literal(html.unescape(text))}.")


def _refused(ctx: StudioContext, battle_id: int | None, exc: BaseException | str) -> tuple[Any, ...]:
    """A Send / Regenerate a person can fix (empty prompt, no models chosen, a limit): the reason and what to do
    in the status line (no toast: it would follow the user to other tabs), the controls as the battle stands;
    nothing turns red, and the next good action overwrites the status."""
    return (
        gr.update(),
        gr.update(),
        battle_id,
        gr.update(),
        _said(exc),
        gr.update(),
        *_settle(ctx, battle_id),
        gr.update(),  # the turn picker keeps its turns: a refused request changed none
    )


# ---- starting and streaming a turn ------------------------------------------------------------------------------
def _start(
    ctx: StudioContext, m: str, a: str | None, b: str | None, pid: int | None, uid: int | None, sp: tuple
) -> BattleView:
    """Open the battle the mode asks for: anonymous, named (both picked), or self-play (one model)."""
    svc = ctx.arena
    if m == SELF:
        name, t1, t2 = sp
        if not name:
            raise BattleError("self-play: choose the model first")
        temps = None if t1 is None and t2 is None else (t1, t2)
        return svc.start_self_play(name, temps, user_id=uid, prompt_id=pid)
    if m != NAMED:
        return svc.start_battle(user_id=uid, prompt_id=pid)
    if not a or not b:
        raise BattleError("named mode: choose both models first")
    try:
        with ctx.db.session() as s:
            pair = (get_contestant(s, a).id, get_contestant(s, b).id)
    except RegistryError as exc:
        raise BattleError(str(exc)) from exc
    return svc.start_battle(user_id=uid, prompt_id=pid, pair=pair, mode="named")


def _follow_up(ctx: StudioContext, pid: int | None, n_turns: int) -> str:
    """The next turn of a multi-turn prompt drawn from a set, if any."""
    if pid is None:
        return ""
    with ctx.db.session() as s:
        p = get_prompt(s, pid)
    return p.turns[n_turns] if n_turns < len(p.turns) else ""


def _stream(
    ctx: StudioContext,
    updates: Iterator[TurnUpdate],
    chat_l: list,
    chat_r: list,
    battle_id: int,
    pid: int | None,
    labels: tuple[str, str],
) -> Iterator[tuple[Any, ...]]:
    """The panes and controls for each update of a turn, until both answers are in (or it failed)."""
    try:
        for upd in updates:
            chat_l[-1] = {"role": "assistant", "content": _pane(upd.left, upd.left_error, upd.left_cut)}
            chat_r[-1] = {"role": "assistant", "content": _pane(upd.right, upd.right_error, upd.right_cut)}
            cl, cr = gr.update(value=chat_l, label=labels[0]), gr.update(value=chat_r, label=labels[1])
            if upd.done and upd.error:
                status = f"⚠️ {literal(upd.error)}"
                yield _outs(cl, cr, None, gr.update(), status, False, False, False, pick=_no_pick())
                return
            if upd.done:
                n = (upd.turn_idx or 0) + 1
                done_msg = (  # names the turn, so a reader (or a test) can tell this step's end from the last
                    f"Turn {n} {'regenerated' if upd.regenerated else 'answered'}: vote on it, send a "
                    "follow-up to both models, or regenerate."
                )
                nxt = _follow_up(ctx, pid, n)
                view = ctx.arena.battle_view(battle_id)
                voted = bool(view.voted_turns)
                pick = _turn_picker(view)
                if upd.turn_idx in view.blank_turns:  # an empty pane takes no vote
                    done_msg = (
                        f"Turn {n} {'regenerated' if upd.regenerated else 'answered'}, but a model gave an empty "
                        "answer, so there is nothing to compare: regenerate it or press New round."
                    )
                votes = bool(view.votable_turns)
                yield _outs(cl, cr, battle_id, nxt or gr.update(), done_msg, votes, True, voted, pick=pick)
                return
            yield _outs(cl, cr, battle_id, gr.update(), _status(upd), False, False, False, busy=True)
    except BattleError as exc:  # e.g. a turn of this battle already running in another tab
        yield _refused(ctx, battle_id, exc)


# ---- the handlers -----------------------------------------------------------------------------------------------
class _TurnHandlers(NamedTuple):
    on_send: Callable[..., Any]
    on_regenerate: Callable[..., Any]
    on_settle: Callable[..., Any]


def _turn_handlers(ctx: StudioContext) -> _TurnHandlers:
    """Send (and Enter), Regenerate, and their failure handler."""
    svc = ctx.arena

    # the self-play inputs default to None, so API clients that send the first four inputs keep working
    def on_send(
        request: gr.Request, msg, battle_id, pid, m, a, b, chat_l, chat_r, sp_model=None, t1=None, t2=None
    ):
        try:
            uid = ctx.access.user_id(request)
            # the user's turns in flight (across battles and tabs): before a battle is opened or a token spent
            svc.check_turn_slot(uid)
            ctx.access.limit("prompts", uid)
            if battle_id is None:
                svc.check_prompt_text(msg)
                view = _start(ctx, m, a, b, pid, uid, (sp_model, t1, t2))
                battle_id, chat_l, chat_r = view.battle_id, [], []
            view = svc.battle_view(battle_id)
            svc.check_prompt(battle_id, msg)
        except (BattleError, PermissionDenied, RateLimited) as exc:
            yield _refused(ctx, battle_id, exc)
            return
        labels = _labels(view)
        shown = to_html(msg, strict=True)  # the prompt: zero-width and bidi characters shown, not obeyed
        chat_l = [*chat_l, {"role": "user", "content": shown}, {"role": "assistant", "content": ""}]
        chat_r = [*chat_r, {"role": "user", "content": shown}, {"role": "assistant", "content": ""}]
        cl, cr = gr.update(value=chat_l, label=labels[0]), gr.update(value=chat_r, label=labels[1])
        yield _outs(cl, cr, battle_id, "", "⏳ Both models are answering…", False, False, False, busy=True)
        yield from _stream(ctx, svc.generate_turn(battle_id, msg), chat_l, chat_r, battle_id, pid, labels)

    def on_regenerate(battle_id, pid, chat_l, chat_r, request: gr.Request):
        if battle_id is None:
            yield _refused(ctx, battle_id, "there is nothing to regenerate: send a prompt first")
            return
        try:
            ctx.access.limit("prompts", ctx.access.user_id(request))
            view = svc.battle_view(battle_id)
            updates = svc.regenerate(battle_id)
            first = next(updates)
        except (BattleError, StopIteration, PermissionDenied, RateLimited) as exc:
            yield _refused(ctx, battle_id, exc if str(exc) else "nothing to regenerate")
            return
        labels = _labels(view)

        def chained():
            yield first
            yield from updates

        yield from _stream(ctx, chained(), list(chat_l), list(chat_r), battle_id, pid, labels)

    def on_settle(battle_id: int | None):
        return _settle(ctx, battle_id)

    return _TurnHandlers(on_send, on_regenerate, on_settle)


def _mode_handler(ctx: StudioContext) -> Callable[..., Any]:
    """Picking a mode shows its controls; named mode and self-play load the names the user may pick."""

    def on_mode(m: str, request: gr.Request):
        if m not in (NAMED, SELF):
            hide = gr.update(visible=False)
            return hide, hide, hide, gr.update(), gr.update(visible=False)
        try:
            uid = ctx.access.user_id(request)
        except PermissionDenied as exc:
            raise user_error(exc) from exc
        with ctx.db.session() as s:  # researchers may also pick pending and held checkpoints, to inspect them
            names = lifecycle.playable(s, uid, "named" if m == NAMED else "self_play")
        # the verdict and lifecycle state of trained checkpoints, next to their names
        badges = badges_by_name(ctx.db)
        labelled = [(f"{n} {badges[n]}" if n in badges else n, n) for n in names]
        named = gr.update(choices=labelled, visible=m == NAMED)
        return (
            named,
            named,
            gr.update(visible=m == SELF),
            gr.update(choices=labelled),
            gr.update(visible=m == NAMED),
        )

    return on_mode


def _draw_handler(ctx: StudioContext) -> Callable[..., Any]:
    def on_draw(set_name: str | None):
        try:
            with ctx.db.session() as s:
                p = random_prompt(s, set_name or MT_BENCH)
        except PromptImportError as exc:
            raise user_error(exc) from exc
        return p.turns[0], p.id, gr.update()  # the status line keeps what it says about the battle

    return on_draw


def _rubric_scores(scores: tuple[str | None, ...]) -> dict[str, dict[str, float]] | None:
    """The six rubric radios (criterion-major, left before right) as {criterion: {side: score}}; None if empty."""
    rubric: dict[str, dict[str, float]] = {}
    for i, criterion in enumerate(QUICK_RUBRIC):
        for j, side in enumerate(("left", "right")):
            value = scores[2 * i + j]
            if value:
                rubric.setdefault(criterion, {})[side] = float(value)
    return rubric or None


def _vote_handler(ctx: StudioContext, choice: str) -> Callable[..., Any]:
    """The handler of one vote button. A vote it cannot take (no battle, a turn already voted, an empty answer,
    answers on screen that are not the ones the server sent) is answered in the status line: the controls as the
    battle stands, the rubric scores kept for the next try."""
    svc = ctx.arena

    # the six rubric radios (QUICK_RUBRIC x left/right), then the turn picker and the two panes; they default to
    # None (the latest turn, no pane check), so API clients that send only the rubric keep working
    def on_vote(
        request: gr.Request,
        battle_id: int | None,
        s0: str | None,
        s1: str | None,
        s2: str | None,
        s3: str | None,
        s4: str | None,
        s5: str | None,
        turn: Any = None,
        chat_l: Any = None,
        chat_r: Any = None,
    ):
        rubric = _rubric_scores((s0, s1, s2, s3, s4, s5))
        try:
            if battle_id is None:
                raise BattleError("there is no battle to vote on: send a prompt first")
            uid = ctx.access.user_id(request)
            ctx.access.limit("votes", uid)
            idx = _turn(turn)
            _check_panes(svc, battle_id, idx, chat_l, chat_r)
            r = svc.record_vote(battle_id, choice, turn_idx=idx, user_id=uid, rubric=rubric)
            view = svc.battle_view(battle_id)
        except (BattleError, PermissionDenied, RateLimited) as exc:
            return (
                _said(exc),
                *_controls(ctx, battle_id),
                *[gr.update() for _ in range(RUBRIC_FIELDS)],  # the scores stay for the next try
                gr.update(),
            )
        todo = view.votable_turns
        more = f" Turn {', '.join(str(i + 1) for i in todo)} can still be voted." if todo else ""
        msg = (
            f"✅ Vote on turn {r.turn_idx + 1} saved.{more} Send a follow-up to both models, "
            "or press **Reveal / end battle**."
        )
        last_open = view.n_turns - 1 in todo  # only the last turn can be regenerated, before its vote
        return (
            to_html(msg),
            *[gr.update(interactive=bool(todo))] * len(VOTES),
            gr.update(interactive=last_open),
            gr.update(interactive=True),
            *_clear_rubric(),
            _turn_picker(view),
        )

    return on_vote


def _pane_text(message: Any) -> str:
    """The visible text of one Chatbot message as the browser sends it back (a string, or a list of parts)."""
    content = message.get("content") if isinstance(message, dict) else message
    text = html.unescape(_TAGS.sub(" ", _raw(content)))  # tags out first, then entities: once, never twice
    return " ".join(text.split())


def _raw(content: Any) -> str:
    """A message's content as one HTML string (Gradio sends text back as a list of ``{"text": ...}`` parts)."""
    if isinstance(content, list | tuple):
        return "".join(_raw(c) for c in content)
    if isinstance(content, dict):
        return str(content.get("text") or content.get("value") or "")
    return str(content or "")


_TAGS = re.compile(r"<[^>]*>")
_CUT_TEXT = _pane_text({"content": to_html(CUT_NOTE)})


def _check_panes(svc: Any, battle_id: int, idx: int | None, chat_l: Any, chat_r: Any) -> None:
    """Refuse a vote whose turn, as the browser shows it, is blank or not what the server sent (an answer
    erased or edited in the page). The server holds the answers; two empty panes are not checked: that is what an
    API client sends (it has no panes; Gradio fills the inputs it left out with a pane's empty default), and a page
    can only send it once both panes were emptied. The service refuses an empty stored answer itself."""
    if not chat_l and not chat_r:
        return
    shown = svc.shown_answers(battle_id, idx)
    if shown is None:  # no such turn: the service says so
        return
    n, answers = shown
    for pane, answer in zip((chat_l, chat_r), answers, strict=True):
        messages = list(pane or []) if isinstance(pane, list | tuple) else []
        on_screen = _pane_text(messages[2 * n + 1]) if len(messages) > 2 * n + 1 else ""
        expected = _pane_text({"content": to_html(answer)})
        if not on_screen or on_screen not in (expected, f"{expected} {_CUT_TEXT}".strip()):
            raise BattleError(
                f"the answers of turn {n + 1} on screen are not the ones the models gave (a pane was cleared "
                "or edited): press New round, or send a follow-up to see both answers again"
            )


class _EndHandlers(NamedTuple):
    on_reveal: Callable[..., Any]
    on_new: Callable[..., Any]


def _end_handlers(ctx: StudioContext) -> _EndHandlers:
    """Reveal (ends the battle, shows who was who) and New round (ends it unrevealed, clears the page)."""
    svc = ctx.arena

    def on_reveal(battle_id: int | None, pid: int | None = None):
        try:
            if battle_id is None:
                raise BattleError("there is no battle to reveal: send a prompt first")
            r = svc.reveal(battle_id)
        except BattleError as exc:
            return (
                battle_id,
                gr.update(),
                gr.update(),
                _said(exc),
                *_controls(ctx, battle_id),
                gr.update(),
                gr.update(),
            )
        return (
            None,
            None,
            to_html(_reveal_text(r)),
            to_html("Battle ended."),
            *_votes_off(),
            gr.update(interactive=False),
            gr.update(interactive=False),
            _no_pick(),
            # a drawn prompt's next turn belongs to the battle that just ended: Send must not open a new battle
            # with it and no context, so it leaves the box with the battle
            "" if pid is not None else gr.update(),
        )

    def on_new(battle_id: int | None):
        if battle_id is not None:
            try:
                svc.end_battle(battle_id, "new_round")
            except BattleError:
                pass
        return (
            None,
            None,
            gr.update(value=[], label="Model A"),
            gr.update(value=[], label="Model B"),
            "",
            "",
            *_votes_off(),
            gr.update(interactive=False),
            gr.update(interactive=False),
            _no_pick(),
            gr.update(interactive=True),  # Send, which the lock turned off at the click
        )

    return _EndHandlers(on_reveal, on_new)


FOR_PROMPT_COLUMNS = ["#", "name", "rating", "low", "high", "rank range"]


def for_prompt_view(out: dict[str, Any]) -> tuple[str, list[list[Any]]]:
    """The prompt-conditioned board as display-path HTML (kinds, notes) and table rows."""
    kinds = ", ".join(f"{literal(k)} {p:.0%}" for k, p in list(out["kinds"].items())[:3]) or "unknown"
    text = (
        f"Prompt kind: {kinds}. Ratings for this kind of prompt (per-kind offsets shrunk to the global board, "
        f"shrinkage {out['board']['shrink']:g}, {counted(out['board']['n_votes'], 'vote')}), 95% intervals."
    )
    text += "".join(f"\n\n- {literal(n)}" for n in out["notes"])
    rows = [
        [k, m["name"], round(m["rating"], 1),
         *(("can't tell", m["cant_tell"]) if m.get("cant_tell") else (round(m["ci_low"], 1), round(m["ci_high"], 1))),
         f"{m['rank_low']}-{m['rank_high']}"]
        for k, m in enumerate(out["models"], 1)
    ]  # fmt: skip
    return to_html(text), rows


def _for_prompt_box(ctx: StudioContext) -> Any:
    """Named mode's "which model for this prompt?" box: the prompt-conditioned board for a typed prompt."""
    with gr.Column(visible=False, elem_id="arena-for-prompt") as box:
        with gr.Row():
            text = gr.Textbox(
                label="Which model for this prompt? (the ranking for prompts of its kind)",
                scale=5,
                elem_id="arena-for-prompt-text",
            )
            button = gr.Button("Rank the models", scale=1, elem_id="arena-for-prompt-run")
        summary = gr.HTML(elem_id="arena-for-prompt-summary")
        table = gr.Dataframe(headers=FOR_PROMPT_COLUMNS, interactive=False, elem_id="arena-for-prompt-table")

    def on_rank(prompt_text: str | None):  # type: ignore[no-untyped-def]
        try:
            out = ctx.leaderboard.for_prompt(prompt_text or "")
        except ValueError as exc:  # e.g. no prompt typed: said in place, the table as it was
            return _said(exc), gr.update()
        html_text, rows = for_prompt_view(out)
        return html_text, rows

    button.click(on_rank, [text], [summary, table], api_name="arena_for_prompt")
    return box


def _persona_form(ctx: StudioContext) -> None:
    """A small form (and a YAML upload) that adds personas as contestants."""
    with gr.Accordion("Add a persona (model + system prompt + decoding)", open=False) as box:
        roles.restrict(box, "researcher")  # shown to researchers only (the handlers check the role again)
        with gr.Row():
            name = gr.Textbox(label="Name (shown after the vote)", elem_id="persona-name")
            engine = gr.Dropdown(list(ENGINE_KINDS), value="llama_cpp", label="Engine")
            model = gr.Textbox(BUILTIN_GGUF, label="Model", elem_id="persona-model")
        system_prompt = gr.Textbox(label="System prompt", lines=2, elem_id="persona-system")
        prefill = gr.Textbox(label="Answer opening (prefill, optional)", elem_id="persona-prefill")
        with gr.Row():
            temperature = gr.Slider(0.0, 2.0, value=0.7, step=0.05, label="Temperature")
            max_tokens = gr.Number(200, label="Max tokens", precision=0)
            aliases = gr.Textbox(label="Aliases (comma-separated names answers must not say)")
        with gr.Row():
            base_url = gr.Textbox(label="Base URL (HTTP engines)", placeholder="http://127.0.0.1:8000/v1")
            key_env = gr.Textbox(
                label="API key environment variable (HTTP engines)", placeholder="OPENAI_API_KEY"
            )
        add = gr.Button("Add persona", elem_id="persona-add")
        with gr.Row():
            upload = gr.File(
                label="…or a personas YAML file", file_types=[".yaml", ".yml"], elem_id="persona-file"
            )
            add_yaml = gr.Button("Import YAML", elem_id="persona-import")
        result = gr.HTML(elem_id="persona-result")

    def on_add(n, e, m, sp, pf, t, mt, al, url, env, request: gr.Request):
        require(ctx, request, "researcher")
        data: dict[str, Any] = {
            "name": n,
            "engine": e,
            "model": m,
            "system_prompt": sp,
            "prefill": pf,
            "sampling": {"temperature": float(t), "max_tokens": int(mt or 0)},
            "aliases": [a.strip() for a in (al or "").split(",") if a.strip()],
        }
        if e in ("openai", "vllm"):
            data["engine_config"] = {k: v for k, v in (("base_url", url), ("api_key_env", env)) if v}
        try:
            spec = spec_from_mapping(data, "form")
            with ctx.db.session() as s:
                add_personas(s, [spec], "form", user_id=ctx.access.user_id(request))
        except (PersonaError, PermissionDenied) as exc:
            raise user_error(exc) from exc
        return to_html(f"✅ Added **{literal(spec.public_name)}**: it can be drawn in the next battle.")

    def on_yaml(file: Any, request: gr.Request):
        path = None if file is None else (file if isinstance(file, str) else file.name)
        try:
            require(ctx, request, "researcher")  # refused: the upload is still discarded (finally)
            if path is None:
                raise refuse("Choose a YAML file first, then Import YAML.")
            with ctx.db.session() as s:  # the service checks the role before it reads the file
                specs = import_persona_file(s, path, user_id=ctx.access.user_id(request))
        except (PersonaError, PermissionDenied) as exc:
            raise user_error(exc) from exc
        finally:
            discard_upload(path)
        return to_html(
            f"✅ Added {len(specs)} persona(s): " + ", ".join(f"**{literal(x.public_name)}**" for x in specs)
        )

    wire(  # a form or file the user can fix answers in place, under the buttons; a role denial stays an error
        add.click,
        on_add,
        [name, engine, model, system_prompt, prefill, temperature, max_tokens, aliases, base_url, key_env],
        [result],
        result,
        api_name="arena_add_persona",
    )
    wire(add_yaml.click, on_yaml, [upload], [result], result, api_name="arena_import_personas")
