"""Arena tab: two anonymous answers stream side by side; vote; the contestants are revealed after the vote.

Only the battle id lives in ``gr.State``; names reach the page only in the reveal, after the vote is stored.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from arena.battles import BattleError
from arena.prompts import MT_BENCH, PromptImportError, list_sets, random_prompt
from studio.context import StudioContext

VOTES = [
    ("👈 A is better", "left"),
    ("👉 B is better", "right"),
    ("🤝 Tie", "tie"),
    ("👍 Both good", "both_good"),
    ("👎 Both bad", "both_bad"),
]


def build(ctx: StudioContext) -> None:
    svc = ctx.arena
    battle = gr.State(None)  # battle id, or None before the first prompt
    drawn = gr.State(None)  # (prompt id, category) of a prompt drawn from a set
    gr.Markdown(
        "Ask anything. Two anonymous models answer side by side; vote for the better one to see who they were."
    )
    with gr.Row():
        left = gr.Chatbot(label="Model A", height=380, elem_id="chat-left")
        right = gr.Chatbot(label="Model B", height=380, elem_id="chat-right")
    status = gr.Markdown("", elem_id="arena-status")
    with gr.Row():
        prompt = gr.Textbox(
            placeholder="Type a prompt and press Enter", show_label=False, scale=6, elem_id="arena-prompt"
        )
        send = gr.Button("Send", variant="primary", scale=1, elem_id="arena-send")
    with gr.Row():
        with gr.Column(scale=3):
            with gr.Row():
                vote_buttons = [
                    gr.Button(label, interactive=False, elem_id=f"vote-{choice}") for label, choice in VOTES
                ]
        with gr.Column(scale=2), gr.Row():
            with ctx.db.session() as s:
                sets = list_sets(s)
            prompt_set = gr.Dropdown(
                sets, value=MT_BENCH if MT_BENCH in sets else None, label="Prompt set", scale=2
            )
            draw = gr.Button("🎲 Random prompt", scale=1, elem_id="arena-random")
            new = gr.Button("🆕 New battle", scale=1, elem_id="arena-new")
    reveal = gr.Markdown("", elem_id="arena-reveal")

    def on_draw(set_name: str | None) -> tuple[str, Any]:
        try:
            with ctx.db.session() as s:
                p = random_prompt(s, set_name or MT_BENCH)
        except PromptImportError as exc:
            raise gr.Error(str(exc)) from exc
        return p.turns[0], (p.id, p.category)

    def on_send(msg: str, battle_id: int | None, drawn_prompt: Any, chat_l: list, chat_r: list):
        no_votes = [gr.update(interactive=False)] * len(VOTES)
        try:
            if battle_id is None:
                pid, cat = drawn_prompt or (None, None)
                svc.check_prompt_text(msg)
                battle_id = svc.start_battle(prompt_id=pid, category=cat).battle_id
                chat_l, chat_r = [], []
            svc.check_prompt(battle_id, msg)
        except BattleError as exc:
            raise gr.Error(str(exc)) from exc
        chat_l = [*chat_l, {"role": "user", "content": msg}, {"role": "assistant", "content": ""}]
        chat_r = [*chat_r, {"role": "user", "content": msg}, {"role": "assistant", "content": ""}]
        yield chat_l, chat_r, battle_id, "", "⏳ Both models are answering…", "", *no_votes
        for upd in svc.generate_turn(battle_id, msg):
            chat_l[-1] = {"role": "assistant", "content": upd.left}
            chat_r[-1] = {"role": "assistant", "content": upd.right}
            if upd.done and upd.error:
                yield chat_l, chat_r, None, "", f"⚠️ {upd.error}", "", *no_votes
                return
            if upd.done:
                on = [gr.update(interactive=True)] * len(VOTES)
                yield chat_l, chat_r, battle_id, "", "Vote, or send a follow-up to both models.", "", *on
                return
            yield chat_l, chat_r, battle_id, "", "⏳ Both models are answering…", "", *no_votes

    def make_vote(choice: str):
        def on_vote(battle_id: int | None):
            if battle_id is None:
                raise gr.Error("There is no battle to vote on: send a prompt first.")
            try:
                r = svc.vote(battle_id, choice)
            except BattleError as exc:
                raise gr.Error(str(exc)) from exc
            note = (
                " (an answer named its model before the vote: this vote is not rated)"
                if r.revealed_before_vote
                else ""
            )
            text = (
                f"### Model A was **{r.left_name}** · Model B was **{r.right_name}**{note}\n"
                f"Your vote is saved. Press **New battle** (or send a prompt) for the next round."
            )
            off = [gr.update(interactive=False)] * len(VOTES)
            return None, None, text, "Vote saved.", *off

        return on_vote

    def on_new():
        off = [gr.update(interactive=False)] * len(VOTES)
        return None, None, [], [], "", "", "", *off

    outs = [left, right, battle, prompt, status, reveal, *vote_buttons]
    send.click(on_send, [prompt, battle, drawn, left, right], outs, api_name="arena_send")
    prompt.submit(on_send, [prompt, battle, drawn, left, right], outs, api_visibility="private")
    draw.click(on_draw, [prompt_set], [prompt, drawn], api_name="arena_random_prompt")
    for btn, (_, choice) in zip(vote_buttons, VOTES, strict=True):
        btn.click(
            make_vote(choice),
            [battle],
            [battle, drawn, reveal, status, *vote_buttons],
            api_name=f"arena_vote_{choice}",
        )
    new.click(
        on_new,
        None,
        [battle, drawn, left, right, prompt, reveal, status, *vote_buttons],
        api_name="arena_new",
    )
