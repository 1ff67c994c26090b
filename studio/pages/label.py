"""Label tab: an annotator works through a queue, one pair at a time, with the rubric beside the answers.

Keys: 1 = A better, 2 = B better, 3 = tie, 4 = both good, 5 = both bad, S = skip, N = next / start. They
are ignored while typing in a text box. With sign-in on, the annotator name is the signed-in user.

The per-prompt checklist, written by a judge model or by hand, is shown above the answers. It can be
edited here. The page holds only the assignment id. The order, the left/right layout and the verdicts live
in the database (``annotation.labelling``). No model names ever reach the page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import gradio as gr

from vibestudio.accounts import PermissionDenied
from vibestudio.annotation.labelling import (
    LabelError,
    LabelTask,
    next_task,
    queue_progress,
    skip_task,
    submit_label,
)
from vibestudio.annotation.queues import QueueError, edit_checklist, get_queue, list_queues
from vibestudio.annotation.rubrics import Criterion, rubric_from_dict
from vibestudio.common import outcomes
from vibestudio.studio import roles
from vibestudio.studio.context import StudioContext
from vibestudio.studio.errors import refuse, require, user_error, wire
from vibestudio.studio.render import CUT_NOTE, count, literal, to_html

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


# ---- the page's sections: each builds its components and returns them by name --------------------------------
class _StartRow(NamedTuple):
    annotator: Any
    queue: Any
    start: Any
    progress: Any


def _start_row() -> _StartRow:
    """Who labels, which queue, Start / next, and the progress line (where refusals answer)."""
    with gr.Row():
        annotator = gr.Textbox(label="Annotator name", scale=2, elem_id="label-annotator")
        queue = gr.Dropdown([], label="Queue", scale=2, elem_id="label-queue", allow_custom_value=True)
        start = gr.Button("Start / next (N)", variant="primary", scale=1, elem_id="label-start")
    progress = gr.HTML("", elem_id="label-progress")
    return _StartRow(annotator, queue, start, progress)


class _TaskColumn(NamedTuple):
    prompt: Any
    checklist: Any
    left: Any
    right: Any
    buttons: list[Any]  # one per CHOICES entry, in order
    skip: Any
    reason: Any
    checklist_edit: Any
    save_checklist: Any
    checklist_note: Any


def _task_column() -> _TaskColumn:
    """The prompt, its checklist, the two answers, the verdict buttons, the reason and the checklist editor."""
    with gr.Column(scale=3):
        prompt = gr.HTML(
            to_html("Enter your name, pick a queue and press **Start**."), elem_id="label-prompt"
        )
        checklist = gr.HTML("", elem_id="label-checklist")
        with gr.Row():
            left = gr.HTML("", label="Answer A", elem_id="label-left", container=True)
            right = gr.HTML("", label="Answer B", elem_id="label-right", container=True)
        with gr.Row():
            buttons = [gr.Button(text, elem_id=f"label-choice-{c}", interactive=False) for text, c in CHOICES]
            skip = gr.Button("S · Skip", elem_id="label-skip", interactive=False)
        reason = gr.Textbox(label="Why? (optional)", lines=2, elem_id="label-reason")
        with gr.Accordion("Edit this prompt's checklist (one line each)", open=False) as editor:
            roles.restrict(editor, "researcher")  # shown to researchers only (the save checks the role again)
            checklist_edit = gr.Textbox(lines=3, show_label=False, elem_id="label-checklist-edit")
            save_checklist = gr.Button("Save checklist", size="sm", elem_id="label-checklist-save")
            checklist_note = gr.HTML("", elem_id="label-checklist-note")
    return _TaskColumn(
        prompt, checklist, left, right, buttons, skip, reason, checklist_edit, save_checklist, checklist_note
    )


class _RubricColumn(NamedTuple):
    title: Any
    texts: list[Any]  # one per criterion slot (MAX_CRITERIA)
    scores_a: list[Any]
    scores_b: list[Any]


def _rubric_column() -> _RubricColumn:
    """The queue's rubric: a title and MAX_CRITERIA criterion slots, each with a score radio per answer."""
    with gr.Column(scale=2), gr.Accordion("Rubric", open=True):
        title = gr.HTML("", elem_id="label-rubric-title")
        texts, scores_a, scores_b = [], [], []
        for i in range(MAX_CRITERIA):
            texts.append(gr.HTML("", visible=False))
            with gr.Row():
                scores_a.append(gr.Radio([], label="A", visible=False, elem_id=f"label-crit-{i}-a"))
                scores_b.append(gr.Radio([], label="B", visible=False, elem_id=f"label-crit-{i}-b"))
    return _RubricColumn(title, texts, scores_a, scores_b)


@dataclass
class _LabelPage:
    """Every component the tab's events read or write, by section."""

    assignment: Any  # gr.State: the current assignment id
    item: Any  # gr.State: its item id (for the checklist editor)
    start: _StartRow
    task: _TaskColumn
    rubric: _RubricColumn

    @property
    def outputs(self) -> list[Any]:
        """What Start, a verdict and Skip write (``_task_view``'s order)."""
        t, r = self.task, self.rubric
        shown = [t.prompt, t.checklist, t.left, t.right, *t.buttons, t.skip, t.reason, r.title]
        shown += [*r.texts, *r.scores_a, *r.scores_b]
        return [self.assignment, self.start.progress, *shown, self.item, t.checklist_edit]


def build(ctx: StudioContext, demo: gr.Blocks) -> None:
    """Lay out the tab section by section, then wire its events (``_wire``)."""
    assignment = gr.State(None)
    item = gr.State(None)
    gr.HTML("", js_on_load=KEYS_JS, elem_id="label-keys", visible=True)
    start = _start_row()
    with gr.Row():
        task = _task_column()
        rubric = _rubric_column()
    _wire(ctx, demo, _LabelPage(assignment, item, start, task, rubric))


def _wire(ctx: StudioContext, demo: gr.Blocks, p: _LabelPage) -> None:
    """The tab's events, in the order the app has always registered them: the checklist's save, the signed-in
    name, Start, the verdicts, Skip and the queue picker's refresh. A refusal (no queue, no name, Start not
    pressed) answers in the progress line under the Start button."""
    s, t = p.start, p.task
    labelling = _label_handlers(ctx)
    wire(
        t.save_checklist.click,
        _checklist_handler(ctx),
        [p.item, t.checklist_edit],
        [t.checklist, t.checklist_note],
        t.checklist_note,
        api_visibility="private",
    )
    demo.load(fill_user, None, [s.annotator], api_visibility="private")
    outs = p.outputs
    wire(s.start.click, labelling.on_start, [s.queue, s.annotator], outs, s.progress, api_name="label_next")
    scores = [*p.rubric.scores_a, *p.rubric.scores_b]
    for btn, (_, choice) in zip(t.buttons, CHOICES, strict=True):
        wire(
            btn.click,
            labelling.make_submit(choice),
            [p.assignment, s.queue, s.annotator, t.reason, *scores],
            outs,
            s.progress,
            api_name=f"label_{choice}",
        )
    skip_ins = [p.assignment, s.queue, s.annotator]
    wire(t.skip.click, labelling.on_skip, skip_ins, outs, s.progress, api_name="label_skip")
    refresh_queues = _queues_handler(ctx)
    demo.load(refresh_queues, [s.queue], [s.queue], api_visibility="private")
    s.queue.focus(refresh_queues, [s.queue], [s.queue], api_visibility="private")


# ---- what the handlers send back --------------------------------------------------------------------------------
N_BUTTONS = len(CHOICES)


def _task_view(ctx: StudioContext, task: LabelTask | None, queue_name: str, who: str) -> list[Any]:
    """One update of ``_LabelPage.outputs`` for ``task`` (None: the queue has nothing left for ``who``)."""
    if task is None:
        off = [gr.update(interactive=False)] * (N_BUTTONS + 1)
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
        btns += [gr.update(interactive=False, visible=False)] * (N_BUTTONS - 2)
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


# ---- the handlers -----------------------------------------------------------------------------------------------
class _LabelHandlers(NamedTuple):
    on_start: Callable[..., Any]
    make_submit: Callable[[str], Callable[..., Any]]
    on_skip: Callable[..., Any]


def _label_handlers(ctx: StudioContext) -> _LabelHandlers:
    """Start / next, a verdict (one handler per choice) and Skip; each answers with the next task."""

    def _next(queue_name: str | None, who: str) -> list[Any]:
        if not queue_name:
            raise refuse("Pick a queue first (the Annotate tab makes one).")
        try:
            with ctx.db.session() as s:
                task = next_task(s, queue_name, who)
        except (LabelError, QueueError) as exc:
            raise user_error(exc) from exc
        return _task_view(ctx, task, queue_name, who.strip())

    def _who(typed: str, request: gr.Request) -> str:
        """The annotator: the signed-in user when login is on (typing another name changes nothing)."""
        try:
            ctx.access.user_id(request)
        except PermissionDenied as exc:
            raise user_error(exc) from exc
        return (request.username or "") if ctx.access.required else typed

    def on_start(queue_name: str | None, who: str, request: gr.Request) -> list[Any]:
        return _next(queue_name, _who(who, request))

    def make_submit(choice: str):  # type: ignore[no-untyped-def]
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

    return _LabelHandlers(on_start, make_submit, on_skip)


def _queues_handler(ctx: StudioContext) -> Callable[..., Any]:
    """The queue picker's choices, keeping the picked queue while it exists."""

    def refresh_queues(current: str | None):  # type: ignore[no-untyped-def]
        with ctx.db.session() as s:
            names = [q.name for q in list_queues(s)]
        value = current if current in names else (names[0] if names else None)
        return gr.update(choices=names, value=value)

    return refresh_queues


def _checklist_handler(ctx: StudioContext) -> Callable[..., Any]:
    """Save the edited checklist of the item on screen (researchers)."""

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

    return on_save_checklist


def fill_user(request: gr.Request):  # type: ignore[no-untyped-def]
    """With sign-in on, the annotator box shows the signed-in name and cannot be changed."""
    name = getattr(request, "username", None)
    return gr.update(value=name, interactive=False) if name else gr.update()
