"""Label tab: an annotator works through a queue, one pair at a time, with the rubric beside the answers.

Keys: 1 = A better, 2 = B better, 3 = tie, 4 = both good, 5 = both bad, S = skip, N = next / start (ignored
while typing in a text box). With sign-in on, the annotator name is the signed-in user. The per-prompt
checklist (written by a judge model or by hand) is shown above the answers and can be edited here. The page holds only the assignment id; the order, the left/right layout and the
verdicts live in the database (``annotation.labelling``), and no model names ever reach the page.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from accounts import PermissionDenied
from annotation.labelling import LabelError, LabelTask, next_task, queue_progress, skip_task, submit_label
from annotation.queues import QueueError, edit_checklist, get_queue, list_queues
from annotation.rubrics import Criterion, rubric_from_dict
from common import outcomes
from studio.context import StudioContext
from studio.errors import refuse, require, user_error, wire
from studio.render import CUT_NOTE, count, literal, to_html

MAX_CRITERIA = 8
CHOICES = list(
    zip(
        ("1 · A is better", "2 · B is better", "3 · Tie", "4 · Both good", "5 · Both bad"),
        outcomes.CHOICES,
        strict=True,
    )
)
KEYS_JS = """
if (!window.__vibeLabelKeys) {
  window.__vibeLabelKeys = true;
  const map = {"1": "label-choice-left", "2": "label-choice-right", "3": "label-choice-tie",
               "4": "label-choice-both_good", "5": "label-choice-both_bad", "s": "label-skip", "n": "label-start"};
  document.addEventListener("keydown", (e) => {
    const t = e.target;
    const typing = t && (t.tagName === "TEXTAREA" || t.isContentEditable ||
      (t.tagName === "INPUT" && !["radio", "checkbox", "button"].includes(t.type)));
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    const id = map[(e.key || "").toLowerCase()];
    const btn = id && document.getElementById(id);
    if (!btn || btn.offsetParent === null || btn.disabled) return;
    e.preventDefault();
    btn.click();
  });
}
"""


def _prompt_md(task: LabelTask) -> str:
    """The conversation as the display path's HTML, one block per message (the text cannot reach the labels)."""
    parts = []
    for m in task.prompt:
        who = {"user": "User", "assistant": "Assistant", "system": "System"}.get(m["role"])
        parts.append(to_html(f"**{who or literal(m['role'])}:**"))
        parts.append(to_html(m["content"], strict=m["role"] != "assistant"))
    return "".join(parts)


def _checklist_html(lines: list[str]) -> str:
    """A checklist as the display path's HTML (each line a Markdown literal: its text shows, never acts)."""
    if not lines:
        return ""
    return to_html("**Checklist for this prompt:**\n" + "\n".join(f"- {literal(x)}" for x in lines))


def _criterion_md(c: Criterion) -> str:
    anchors = "; ".join(f"**{literal(k)}** {literal(v)}" for k, v in c.anchors.items())
    return to_html(f"**{literal(c.name)}** — {literal(c.description)}") + (
        to_html(anchors) if anchors else ""
    )


def _answer_html(title: str, text: str, cut: bool) -> str:
    """One answer under its heading, with the cut-off note when it stopped at its length limit (as in the Arena)."""
    return to_html(f"**{title}**") + to_html(text) + (to_html(CUT_NOTE) if cut else "")


def _progress_md(ctx: StudioContext, queue: str, annotator: str, task: LabelTask | None) -> str:
    with ctx.db.session() as s:
        p = queue_progress(s, queue)
    mine = next((a for a in p.annotators if a.annotator == annotator), None)
    done = mine.done if mine else 0
    left = (task.remaining + 1) if task else 0
    return to_html(
        f"**{literal(annotator)}**: {done} done · {left} left for you · queue {p.labels}/{count(p.target, 'label')} "
        f"({p.items_complete}/{count(p.n_items, 'item')} complete)"
    )


def build(ctx: StudioContext, demo: gr.Blocks) -> None:
    assignment = gr.State(None)  # the current assignment id
    item = gr.State(None)  # its item id (for the checklist editor)
    gr.HTML("", js_on_load=KEYS_JS, elem_id="label-keys", visible=True)
    with gr.Row():
        annotator = gr.Textbox(label="Annotator name", scale=2, elem_id="label-annotator")
        queue = gr.Dropdown([], label="Queue", scale=2, elem_id="label-queue", allow_custom_value=True)
        start = gr.Button("Start / next (N)", variant="primary", scale=1, elem_id="label-start")
    progress = gr.HTML("", elem_id="label-progress")
    with gr.Row():
        with gr.Column(scale=3):
            prompt = gr.HTML(
                to_html("Enter your name, pick a queue and press **Start**."), elem_id="label-prompt"
            )
            checklist = gr.HTML("", elem_id="label-checklist")
            with gr.Row():
                left = gr.HTML("", label="Answer A", elem_id="label-left", container=True)
                right = gr.HTML("", label="Answer B", elem_id="label-right", container=True)
            with gr.Row():
                buttons = [
                    gr.Button(text, elem_id=f"label-choice-{c}", interactive=False) for text, c in CHOICES
                ]
                skip = gr.Button("S · Skip", elem_id="label-skip", interactive=False)
            reason = gr.Textbox(label="Why? (optional)", lines=2, elem_id="label-reason")
            with gr.Accordion("Edit this prompt's checklist (one line each)", open=False):
                checklist_edit = gr.Textbox(lines=3, show_label=False, elem_id="label-checklist-edit")
                save_checklist = gr.Button("Save checklist", size="sm", elem_id="label-checklist-save")
                checklist_note = gr.HTML("", elem_id="label-checklist-note")
        with gr.Column(scale=2), gr.Accordion("Rubric", open=True):
            rubric_title = gr.HTML("", elem_id="label-rubric-title")
            crit_md, crit_a, crit_b = [], [], []
            for i in range(MAX_CRITERIA):
                crit_md.append(gr.HTML("", visible=False))
                with gr.Row():
                    crit_a.append(gr.Radio([], label="A", visible=False, elem_id=f"label-crit-{i}-a"))
                    crit_b.append(gr.Radio([], label="B", visible=False, elem_id=f"label-crit-{i}-b"))

    shown = [prompt, checklist, left, right, *buttons, skip, reason, rubric_title, *crit_md, *crit_a, *crit_b]

    def view(task: LabelTask | None, queue_name: str, who: str) -> list[Any]:
        if task is None:
            off = [gr.update(interactive=False)] * (len(buttons) + 1)
            blank = [gr.update(visible=False, value=None)] * (2 * MAX_CRITERIA)
            return [
                None,
                _progress_md(ctx, queue_name, who, None),
                to_html("🎉 Nothing left for you in this queue."),
                "",
                "",
                "",
                *off,
                "",
                "",
                *[gr.update(visible=False)] * MAX_CRITERIA,
                *blank,
                None,
                "",
            ]
        rubric = rubric_from_dict(task.rubric, queue_name) if task.rubric else None
        crits = list(rubric.criteria[:MAX_CRITERIA]) if rubric else []
        if task.single:
            labels = ["1 · Good", "2 · Bad"]
            btns = [gr.update(value=labels[i], interactive=True, visible=True) for i in range(2)]
            btns += [gr.update(interactive=False, visible=False)] * (len(buttons) - 2)
        else:
            btns = [gr.update(value=t, interactive=True, visible=True) for t, _ in CHOICES]
        md = [gr.update(value=_criterion_md(c), visible=True) for c in crits]
        md += [gr.update(value="", visible=False)] * (MAX_CRITERIA - len(crits))
        ra = [gr.update(choices=c.level_names, value=None, visible=True) for c in crits]
        ra += [gr.update(visible=False, value=None)] * (MAX_CRITERIA - len(crits))
        rb = [gr.update(choices=c.level_names, value=None, visible=not task.single) for c in crits]
        rb += [gr.update(visible=False, value=None)] * (MAX_CRITERIA - len(crits))
        check = _checklist_html(task.checklist)
        title = to_html(
            f"### {literal(rubric.name)} v{literal(rubric.version)}\n\n{literal(rubric.description)}"
            if rubric
            else "_No rubric on this queue._"
        )
        return [
            task.assignment_id,
            _progress_md(ctx, queue_name, who, task),
            _prompt_md(task),
            check,
            gr.update(value=_answer_html("Answer" if task.single else "Answer A", task.left, task.left_cut)),
            gr.update(value=_answer_html("Answer B", task.right, task.right_cut), visible=not task.single),
            *btns,
            gr.update(interactive=True),
            "",
            title,
            *md,
            *ra,
            *rb,
            task.item_id,
            "\n".join(task.checklist),
        ]

    def _next(queue_name: str | None, who: str) -> list[Any]:
        if not queue_name:
            raise refuse("Pick a queue first (the Annotate tab makes one).")
        try:
            with ctx.db.session() as s:
                task = next_task(s, queue_name, who)
        except (LabelError, QueueError) as exc:
            raise user_error(exc) from exc
        return view(task, queue_name, who.strip())

    def _who(typed: str, request: gr.Request) -> str:
        """The annotator: the signed-in user when login is on (typing another name changes nothing)."""
        try:
            ctx.access.user_id(request)
        except PermissionDenied as exc:
            raise user_error(exc) from exc
        return (request.username or "") if ctx.access.required else typed

    def on_start(queue_name: str | None, who: str, request: gr.Request) -> list[Any]:
        return _next(queue_name, _who(who, request))

    def make_submit(choice: str):
        def on_submit(
            request: gr.Request, assignment_id: int | None, queue_name: str, who: str, why: str, *scores: Any
        ) -> list[Any]:
            if assignment_id is None:
                raise refuse("Press Start first.")
            who = _who(who, request)
            try:
                with ctx.db.session() as s:
                    rubric = get_queue(s, queue_name).rubric_obj
                    crits = list(rubric.criteria[:MAX_CRITERIA]) if rubric else []
                    picked: dict[str, dict[str, Any]] = {}
                    for i, c in enumerate(crits):
                        a, b = scores[i], scores[MAX_CRITERIA + i]
                        if a is not None or b is not None:
                            picked[c.name] = {"left": a, "right": b}
                    submit_label(s, assignment_id, who, choice, picked or None, why)
            except (LabelError, QueueError) as exc:
                raise user_error(exc) from exc
            return _next(queue_name, who)

        return on_submit

    def on_skip(assignment_id: int | None, queue_name: str, who: str, request: gr.Request) -> list[Any]:
        if assignment_id is None:
            raise refuse("Press Start first.")
        who = _who(who, request)
        try:
            with ctx.db.session() as s:
                skip_task(s, assignment_id, who.strip())
        except LabelError as exc:
            raise user_error(exc) from exc
        return _next(queue_name, who)

    def refresh_queues(current: str | None):
        with ctx.db.session() as s:
            names = [q.name for q in list_queues(s)]
        value = current if current in names else (names[0] if names else None)
        return gr.update(choices=names, value=value)

    def on_save_checklist(item_id: int | None, text: str, request: gr.Request) -> tuple[str, str]:
        require(ctx, request, "researcher")
        if item_id is None:
            raise refuse("Press Start first.")
        try:
            uid = ctx.access.user_id(request)
            with ctx.db.session() as s:
                lines = edit_checklist(s, item_id, (text or "").splitlines(), user_id=uid)
        except (QueueError, PermissionDenied) as exc:
            raise user_error(exc) from exc
        return _checklist_html(lines), to_html(
            f"Saved: {len(lines)} {'line' if len(lines) == 1 else 'lines'}."
        )

    def fill_user(request: gr.Request):
        name = getattr(request, "username", None)
        return gr.update(value=name, interactive=False) if name else gr.update()

    outs = [assignment, progress, *shown, item, checklist_edit]
    wire(
        save_checklist.click,
        on_save_checklist,
        [item, checklist_edit],
        [checklist, checklist_note],
        checklist_note,
        api_visibility="private",
    )
    demo.load(fill_user, None, [annotator], api_visibility="private")
    # a refusal (no queue, no name, Start not pressed) answers in the progress line under the Start button
    wire(start.click, on_start, [queue, annotator], outs, progress, api_name="label_next")
    for btn, (_, choice) in zip(buttons, CHOICES, strict=True):
        wire(
            btn.click,
            make_submit(choice),
            [assignment, queue, annotator, reason, *crit_a, *crit_b],
            outs,
            progress,
            api_name=f"label_{choice}",
        )
    wire(skip.click, on_skip, [assignment, queue, annotator], outs, progress, api_name="label_skip")
    demo.load(refresh_queues, [queue], [queue], api_visibility="private")
    queue.focus(refresh_queues, [queue], [queue], api_visibility="private")
