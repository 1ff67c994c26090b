"""Annotate tab: make queues (on-policy generation with a progress bar, or an import), run AI judges, export.

Each handler converts inputs, calls one ``annotation`` service and maps its plain result to text. Long
work (generation, judging) reports through ``gr.Progress``. Exports are written under the data home, each
in a folder with a random name. They are offered as a link to the checked download route
(``studio.downloads``), never through Gradio's file route.
"""

from __future__ import annotations

import html
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import gradio as gr
import pandas as pd

from vibestudio.accounts import PermissionDenied
from vibestudio.annotation.formats import (
    EXPORT_FORMATS,
    FORMATS,
    ExportSpec,
    ImportValidationError,
    export_file,
    import_file,
    snapshot_from_labels,
)
from vibestudio.annotation.judges import JudgeError, JudgeSpec, generate_checklists, run_judge
from vibestudio.annotation.labelling import queue_progress
from vibestudio.annotation.onpolicy import OnPolicySpec, generate_queue
from vibestudio.annotation.queues import LABEL_KINDS, QueueError, list_queues
from vibestudio.annotation.rubrics import RubricError, list_rubrics
from vibestudio.annotation.snapshots import SnapshotError, skip_reason_text
from vibestudio.arena.prompts import list_sets
from vibestudio.arena.registry import RegistryError, list_contestants
from vibestudio.common.paths import file_stem, under
from vibestudio.studio.context import StudioContext
from vibestudio.studio.downloads import ExportRefused, downloads_dir, new_folder, offer
from vibestudio.studio.errors import refuse, require, user_error, wire
from vibestudio.studio.render import count, error_text, literal, to_html
from vibestudio.studio.uploads import discard_upload

QUEUE_COLUMNS = ["queue", "kind", "status", "items", "overlap", "labelled", "all labels", "source"]
FILE_FORMATS = {"JSONL": ".jsonl", "JSON": ".json", "Parquet": ".parquet", "datasets (zip)": ""}


def export_dir() -> Path:
    """Where the Annotate tab writes exports: a folder per export under the data home's ``exports``, served only
    by the checked download route (``studio.downloads``: the researcher who exported it, or an admin)."""
    return downloads_dir()


def download_link(url: str, name: str) -> str:
    """A link to an offered download (``studio.downloads``): the route checks the role and the owner again."""
    return f'<a href="{html.escape(url)}" download="{html.escape(name)}">Download {html.escape(name)}</a>'


def _progress_cb(progress: gr.Progress):
    def cb(done: int, total: int, note: str) -> None:
        progress((done, total) if total else 0, desc=note)

    return cb


def _table(ctx: StudioContext) -> pd.DataFrame:
    rows = []
    with ctx.db.session() as s:
        for q in list_queues(s):
            p = queue_progress(s, q.name)
            rows.append(
                [
                    q.name,
                    q.kind,
                    q.status,
                    q.n_items,
                    q.overlap,
                    f"{p.labels}/{p.target}",
                    q.n_labels,
                    q.source,
                ]
            )
    return pd.DataFrame(rows, columns=QUEUE_COLUMNS)


def _choices(ctx: StudioContext) -> tuple[list[str], list[str], list[str], list[str]]:
    with ctx.db.session() as s:
        sets = list_sets(s)
        people = [c.public_name for c in list_contestants(s)]
        queues = [q.name for q in list_queues(s)]
    return sets, people, queues, [r.name for r in list_rubrics()]


# ---- the page's sections: each builds its components and returns them by name --------------------------------
class _Board(NamedTuple):
    table: Any
    refresh: Any


def _board() -> _Board:
    """The queues table and its Refresh button."""
    table = gr.Dataframe(headers=QUEUE_COLUMNS, interactive=False, elem_id="queues-table")
    refresh = gr.Button("Refresh", elem_id="queues-refresh")
    return _Board(table, refresh)


class _CreateForm(NamedTuple):
    name: Any
    prompt_set: Any
    policy: Any
    opponent: Any
    k: Any
    temps: Any
    max_prompts: Any
    max_tokens: Any
    overlap: Any
    rubric: Any
    button: Any
    status: Any

    @property
    def inputs(self) -> list[Any]:
        """What ``on_create`` reads, in its order: every field before the button."""
        return list(self[:10])


def _create_form() -> _CreateForm:
    """A new on-policy queue: prompts, a policy (and an opponent), k answers each, the rubric."""
    with gr.Accordion("New on-policy queue", open=True):
        with gr.Row():
            name = gr.Textbox(label="Queue name", elem_id="queues-name")
            prompt_set = gr.Dropdown([], label="Prompt set", allow_custom_value=True)
            policy = gr.Dropdown([], label="Policy", allow_custom_value=True)
            opponent = gr.Dropdown([], label="Against (optional)", value=None, allow_custom_value=True)
        with gr.Row():
            k = gr.Slider(2, 6, value=2, step=1, label="Answers per prompt (k)")
            temps = gr.Textbox(label="Temperatures (comma-separated, optional)", placeholder="0.7, 1.0")
            max_prompts = gr.Number(
                value=10, precision=0, label="Prompts (0 = all)", elem_id="queues-max-prompts"
            )
            max_tokens = gr.Number(
                value=256, precision=0, label="Max tokens per answer", elem_id="queues-max-tokens"
            )
            overlap = gr.Number(value=1, precision=0, label="Annotators per item")
            rubric = gr.Dropdown([], label="Rubric", allow_custom_value=True)
        create = gr.Button("Generate queue", variant="primary", elem_id="queues-create")
        created = gr.HTML(elem_id="queues-created")
    return _CreateForm(
        name,
        prompt_set,
        policy,
        opponent,
        k,
        temps,
        max_prompts,
        max_tokens,
        overlap,
        rubric,
        create,
        created,
    )


class _ImportForm(NamedTuple):
    upload: Any
    layout: Any
    queue: Any
    skip_bad: Any
    button: Any
    status: Any


def _import_form() -> _ImportForm:
    """Preference data from a file, validated row by row."""
    with gr.Accordion("Import preference data", open=False):
        with gr.Row():
            upload = gr.File(label="File (JSON, JSONL, Parquet, .gz)", elem_id="queues-file")
            layout = gr.Dropdown(["auto", *FORMATS], value="auto", label="Layout")
            queue = gr.Textbox(label="Queue (optional)")
            skip_bad = gr.Checkbox(False, label="Skip bad rows (and list them)")
        button = gr.Button("Validate and import", elem_id="queues-import")
        status = gr.HTML(elem_id="queues-imported")
    return _ImportForm(upload, layout, queue, skip_bad, button, status)


class _JudgeForm(NamedTuple):
    queue: Any
    judge: Any
    absolute: Any
    max_items: Any
    run: Any
    checklists: Any
    status: Any


def _judge_form() -> _JudgeForm:
    """An AI judge over a queue (positions swapped), or a model writing per-prompt checklists."""
    with gr.Accordion("AI judge", open=False):
        with gr.Row():
            queue = gr.Dropdown([], label="Queue", allow_custom_value=True, elem_id="queues-judge-queue")
            judge = gr.Dropdown([], label="Judge (any contestant)", allow_custom_value=True)
            absolute = gr.Checkbox(False, label="Also grade each answer on the rubric")
            max_items = gr.Number(value=20, precision=0, label="Items (0 = all)")
        with gr.Row():
            run = gr.Button("Run judge (positions swapped)", elem_id="queues-judge")
            checklists = gr.Button("Write per-prompt checklists with this model", elem_id="queues-checklists")
        status = gr.HTML(elem_id="queues-judged")
    return _JudgeForm(queue, judge, absolute, max_items, run, checklists, status)


class _ExportForm(NamedTuple):
    queues: Any
    fmt: Any
    file: Any
    kinds: Any
    conversational: Any
    rows_per: Any
    export: Any
    freeze: Any
    status: Any
    download: Any  # a link to the checked download route

    @property
    def inputs(self) -> list[Any]:
        """What ``on_export`` reads, in its order."""
        return [self.queues, self.fmt, self.file, self.kinds, self.conversational, self.rows_per]


def _export_form() -> _ExportForm:
    """Labels out as a file (a format and a file kind), or frozen as a training snapshot."""
    with gr.Accordion("Export labels", open=False):
        with gr.Row():
            queues = gr.Dropdown([], multiselect=True, label="Queues (none = all)", allow_custom_value=True)
            fmt = gr.Dropdown(list(EXPORT_FORMATS), value="trl", label="Format")
            file = gr.Dropdown(list(FILE_FORMATS), value="JSONL", label="File")
            kinds = gr.CheckboxGroup(list(LABEL_KINDS), value=list(LABEL_KINDS), label="Labels from")
            conversational = gr.Checkbox(False, label="Conversational (message lists)")
            rows_per = gr.Radio(["each", "majority"], value="each", label="Rows per")
        with gr.Row():
            export = gr.Button("Export", elem_id="queues-export")
            freeze = gr.Button("Freeze as training snapshot", elem_id="queues-freeze")
        status = gr.HTML(elem_id="queues-exported")
        download = gr.HTML(elem_id="queues-download")
    return _ExportForm(queues, fmt, file, kinds, conversational, rows_per, export, freeze, status, download)


@dataclass
class _QueuesPage:
    """Every component the tab's events read or write, by section."""

    board: _Board
    create: _CreateForm
    imports: _ImportForm
    judge: _JudgeForm
    export: _ExportForm

    @property
    def pickers(self) -> list[Any]:
        """The pickers a refresh fills, in ``on_refresh``'s order (it reads the first six)."""
        c, j = self.create, self.judge
        return [c.prompt_set, c.policy, c.opponent, c.rubric, j.queue, j.judge, self.export.queues]


def build(ctx: StudioContext, demo: gr.Blocks) -> None:
    """Lay out the tab section by section, then wire its events (``_wire``)."""
    page = _QueuesPage(_board(), _create_form(), _import_form(), _judge_form(), _export_form())
    _wire(ctx, demo, page)


def _wire(ctx: StudioContext, demo: gr.Blocks, p: _QueuesPage) -> None:
    """The tab's events, in the order the app has always registered them: Refresh and the page load, then each
    action, whose refusal (nothing picked, an unknown name, nothing labelled yet) answers in the text under it."""
    table, pickers = p.board.table, p.pickers
    on_refresh = _refresh_handler(ctx)
    p.board.refresh.click(on_refresh, pickers[:6], [table, *pickers], api_visibility="private")
    demo.load(on_refresh, pickers[:6], [table, *pickers], api_visibility="private")
    c, i, j, e = p.create, p.imports, p.judge, p.export
    wire(c.button.click, _create_handler(ctx), c.inputs, [c.status, table], c.status, api_name="queue_create")
    wire(
        i.button.click,
        _import_handler(ctx),
        [i.upload, i.layout, i.queue, i.skip_bad],
        [i.status, table],
        i.status,
        api_name="queue_import",
    )
    judging = _judge_handlers(ctx)
    judge_ins = [j.queue, j.judge, j.absolute, j.max_items]
    wire(j.run.click, judging.on_judge, judge_ins, [j.status, table], j.status, api_name="judge_run")
    wire(
        j.checklists.click,
        judging.on_checklists,
        [j.queue, j.judge],
        [j.status, table],
        j.status,
        api_name="queue_checklists",
    )
    exporting = _export_handlers(ctx)
    export_outs = [e.status, e.download]
    wire(e.export.click, exporting.on_export, e.inputs, export_outs, e.status, api_name="labels_export")
    wire(
        e.freeze.click,
        exporting.on_freeze,
        [e.queues, e.kinds, e.rows_per],
        export_outs,
        e.status,
        api_name="labels_freeze",
    )


# ---- the handlers -----------------------------------------------------------------------------------------------
def _refresh_handler(ctx: StudioContext) -> Callable[..., Any]:
    """The table and every picker, each keeping its value where it still exists."""

    def on_refresh(*current: Any):
        sets, people, queues, rubrics = _choices(ctx)
        return (
            _table(ctx),
            gr.update(choices=sets, value=current[0] or (sets[0] if sets else None)),
            gr.update(choices=people, value=current[1] or (people[0] if people else None)),
            gr.update(choices=[None, *people], value=current[2]),
            gr.update(choices=rubrics, value=current[3] or ("default" if "default" in rubrics else None)),
            gr.update(
                choices=queues, value=current[4] if current[4] in queues else (queues[0] if queues else None)
            ),
            gr.update(choices=people, value=current[5] or (people[0] if people else None)),
            gr.update(choices=queues),
        )

    return on_refresh


def _create_handler(ctx: StudioContext) -> Callable[..., Any]:
    """Generate an on-policy queue (``annotation.onpolicy``), with a progress bar."""

    def on_create(
        qname,
        pset,
        pol,
        opp,
        kk,
        temps_text,
        n_prompts,
        n_tokens,
        n_overlap,
        rub,
        request: gr.Request,
        progress=gr.Progress(),
    ):
        require(ctx, request, "researcher")
        try:
            temperatures = [float(t) for t in (temps_text or "").replace(" ", "").split(",") if t]
        except ValueError as exc:
            raise refuse("Temperatures must be numbers separated by commas.") from exc
        if not qname or not pset or not pol:
            raise refuse("Give the queue a name, a prompt set and a policy.")
        spec = OnPolicySpec(
            queue=qname.strip(),
            prompt_set=pset,
            policy=pol,
            k=int(kk),
            opponent=opp or None,
            temperatures=temperatures,
            max_prompts=int(n_prompts) or None,
            max_tokens=int(n_tokens) or None,
            overlap=max(1, int(n_overlap or 1)),
            rubric=rub or None,
        )
        try:
            res = generate_queue(ctx.db, spec, _progress_cb(progress), user_id=ctx.access.user_id(request))
        except (QueueError, RubricError, RegistryError, PermissionDenied) as exc:
            raise user_error(exc) from exc
        errs = "".join(f"\n- ⚠️ {literal(e)}" for e in res.errors[:10])
        return to_html(
            f"Queue **{literal(res.queue)}**: {count(res.n_items, 'pair')} from {count(res.n_prompts, 'prompt')} "
            f"({count(res.tokens, 'token')} in {res.seconds:.1f} s, {res.tokens_per_s:.1f} tok/s; "
            f"{count(res.resumed, 'prompt')} already done, {count(res.identical, 'identical pair')} dropped){errs}"
        ), _table(ctx)

    return on_create


def _import_handler(ctx: StudioContext) -> Callable[..., Any]:
    """Validate and import a preference file; a file with bad rows is listed, row by row, in place."""

    def on_import(file: str | None, layout: str, qname: str, skip: bool, request: gr.Request):
        try:
            require(ctx, request, "researcher")  # refused: the upload is still discarded (finally)
            if not file:
                raise refuse("Choose a file.")
            with ctx.db.session() as s:
                uid = ctx.access.user_id(request)
                rep = import_file(s, file, layout, qname.strip() or None, skip_bad=skip, user_id=uid)
        except ImportValidationError as exc:
            lines = "\n".join(f"- {literal(line)}" for line in exc.report.lines(30))
            summary = literal(exc.report.summary())
            return to_html(f"❌ {summary}. Fix the rows or tick *Skip bad rows*.\n\n{lines}"), _table(ctx)
        except (QueueError, RubricError, PermissionDenied) as exc:
            raise user_error(exc) from exc
        finally:
            discard_upload(file)  # read once; the user's file does not stay in the upload cache
        skipped = "\n".join(f"- skipped {literal(line)}" for line in rep.lines(30)) if rep.skipped else ""
        return to_html(f"✅ {literal(rep.summary())}\n\n{skipped}"), _table(ctx)

    return on_import


class _JudgeHandlers(NamedTuple):
    on_judge: Callable[..., Any]
    on_checklists: Callable[..., Any]


def _judge_handlers(ctx: StudioContext) -> _JudgeHandlers:
    """Run a judge over a queue (``annotation.judges.run_judge``) or write its checklists."""

    def on_judge(
        qname: str | None,
        judge_name: str | None,
        grade: bool,
        n: float,
        request: gr.Request,
        progress=gr.Progress(),
    ):
        require(ctx, request, "researcher")
        if not qname or not judge_name:
            raise refuse("Pick a queue and a judge.")
        spec = JudgeSpec(judge_name, qname, absolute=grade, max_items=int(n or 0) or None)
        try:
            res = run_judge(ctx.db, spec, _progress_cb(progress), user_id=ctx.access.user_id(request))
        except (JudgeError, QueueError, RegistryError, RubricError, PermissionDenied) as exc:
            raise user_error(exc) from exc
        return to_html(
            f"**{literal(res.judge)}** judged {count(res.n_items, 'item')} in {res.seconds:.1f} s: {literal(res.verdicts)} "
            f"(scores: {res.n_scores}, unparsed scores: {res.unparsed_scores}). "
            "See the Agreement tab for its bias report."
        ), _table(ctx)

    def on_checklists(qname: str | None, judge_name: str | None, request: gr.Request, progress=gr.Progress()):
        require(ctx, request, "researcher")
        if not qname or not judge_name:
            raise refuse("Pick a queue and a model.")
        try:
            uid = ctx.access.user_id(request)
            out = generate_checklists(ctx.db, qname, judge_name, progress=_progress_cb(progress), user_id=uid)
        except (QueueError, RegistryError, PermissionDenied) as exc:
            raise user_error(exc) from exc
        return to_html(
            f"Checklists written for {count(len(out), 'prompt', bold=True)} (edit them on the Label tab)."
        ), _table(ctx)

    return _JudgeHandlers(on_judge, on_checklists)


class _ExportHandlers(NamedTuple):
    on_export: Callable[..., Any]
    on_freeze: Callable[..., Any]


def _spec(queues, fmt_name, kinds, conv, agg) -> ExportSpec:  # type: ignore[no-untyped-def]
    return ExportSpec(fmt_name, bool(conv), list(queues or []) or None, tuple(kinds or LABEL_KINDS), agg)


def _export_handlers(ctx: StudioContext) -> _ExportHandlers:
    """Export labels as a file offered through the checked download route, or freeze them as a snapshot."""

    def on_export(queues, fmt_name, file_kind, kinds, conv, agg, request: gr.Request):
        stem = f"{file_stem('-'.join(queues or ['all']))}-{file_stem(str(fmt_name), 20)}{'-conv' if conv else ''}"
        suffix = FILE_FORMATS.get(file_kind)
        if suffix is None:
            raise refuse("Pick a file kind.")
        uid = require(ctx, request, "researcher")  # the role before a folder is made for the file
        try:
            token, folder = new_folder(uid)  # a random name: the export's URL cannot be guessed
        except ExportRefused as exc:  # the user's share of exports is full
            return to_html(f"⚠️ Not exported: {literal(str(exc))}"), ""
        out = under(folder, stem + suffix)
        try:
            with ctx.db.session() as s:
                res = export_file(s, _spec(queues, fmt_name, kinds, conv, agg), out, user_id=uid)
        except QueueError as exc:  # nothing to export yet: say so and what to do, no red error and no toast
            shutil.rmtree(folder, ignore_errors=True)
            text = error_text(exc)
            return to_html(
                f"⚠️ Not exported: {literal(html.unescape(text))}. Label some items in the Label tab (or import "
                "labelled preference data above), then export again."
            ), ""
        except PermissionDenied as exc:
            shutil.rmtree(folder, ignore_errors=True)
            raise user_error(exc) from exc
        try:  # only its exporter (or an admin) may download it
            got = offer(Path(res.path), uid, "researcher", token)
        except ExportRefused as exc:  # it brought the user past their share: removed
            return to_html(f"⚠️ Not exported: {literal(str(exc))}"), ""
        skipped = skip_reason_text(res.skipped)
        text = f"{count(res.n_rows, 'row', bold=True)} → {literal(got.name)}" + (
            f" (left out: {literal(skipped)})" if skipped else ""
        )
        return to_html(text), download_link(got.url, got.name)

    def on_freeze(queues, kinds, agg, request: gr.Request):
        try:
            with ctx.db.session() as s:
                uid = ctx.access.user_id(request)
                snap = snapshot_from_labels(s, _spec(queues, "trl", kinds, True, agg), user_id=uid)
        except (QueueError, SnapshotError, PermissionDenied) as exc:
            raise user_error(exc) from exc
        verb = "Created" if snap.created else "Already frozen:"
        return to_html(
            f"{verb} snapshot **{snap.id}** · hash `{snap.hash[:16]}` · {count(snap.n_pairs, 'pair', bold=True)}"
        ), ""

    return _ExportHandlers(on_export, on_freeze)
