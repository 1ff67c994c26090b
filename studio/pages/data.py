"""Data tab: what has been collected, prompt-set import, frozen preference snapshots, and task sets.

Snapshots are for training. Task sets have checkable answers for RLVR (``training.tasks``): import a file,
see each set's train / held-out split.

A frozen snapshot's line says how many of its pairs are on-policy for a model: both answers its own, as
self-play battles give (`arena.self_play`). They are counted by `training.objectives.pairmix`, as the
Train tab counts them for a job's parent.

While the tab is open, a timer re-reads the counts, the snapshots and the task sets. It redraws only what
changed since the page last drew, so votes cast in other browsers show up without a reload.
"""

from __future__ import annotations

from pathlib import Path

import gradio as gr
import pandas as pd

from vibestudio.accounts import PermissionDenied
from vibestudio.annotation.snapshots import (
    SnapshotError,
    collected,
    list_snapshots,
    load_snapshot,
    skip_reason_text,
    snapshot_from_votes,
)
from vibestudio.arena.prompts import PromptImportError, import_prompt_set
from vibestudio.studio.context import StudioContext
from vibestudio.studio.errors import refuse, require, user_error, wire
from vibestudio.studio.render import count, literal, to_html
from vibestudio.studio.uploads import discard_upload
from vibestudio.training.objectives.pairmix import pair_mix


def _counts(ctx: StudioContext) -> str:
    with ctx.db.session() as s:
        c = collected(s)
    skipped = skip_reason_text(c.skipped)
    return (
        f"{count(c.battles, 'ended battle', bold=True)} · {count(c.votes, 'vote', bold=True)} · "
        f"{count(c.pairs, 'preference pair', bold=True)} a snapshot would freeze now, from the "
        f"{count(c.read, 'vote')} it reads (anonymous and self-play, not revealed before voting)"
        + (f"; not read: {c.unread} (named mode, or a model named before the vote)" if c.unread else "")
        + (f"; left out: {literal(skipped)}" if skipped else "")
    )


def _on_policy(path: str, digest: str) -> str:
    """The snapshot's on-policy pairs per model that wrote both answers of some pair ("" when none did)."""
    rows = load_snapshot(path, digest, provenance=True)
    provenance = [r["provenance"] for r in rows]
    models = sorted(
        {p["chosen_model"] for p in provenance if p.get("chosen_model") == p.get("rejected_model")} - {None}
    )
    if not models:
        return ""
    counts = ", ".join(f"**{literal(m)}** {pair_mix(rows, m)['on']}" for m in models)
    return f" · on-policy pairs (both answers by one model): {counts} of {len(rows)}"


def _snapshots(ctx: StudioContext) -> pd.DataFrame:
    with ctx.db.session() as s:
        snaps = list_snapshots(s)
    return pd.DataFrame(
        [
            {
                "id": x["id"],
                "hash": x["hash"][:16],
                "rows": x["rows"],
                "created": str(x["created_at"])[:19],
            }
            for x in snaps
        ],
        columns=SNAPSHOT_COLUMNS,
    )


SNAPSHOT_COLUMNS = ["id", "hash", "rows", "created"]
#: How often the open tab re-reads what was collected (seconds).
REFRESH_SECONDS = 10.0


def _fill(ctx: StudioContext) -> tuple[str, pd.DataFrame, pd.DataFrame]:
    """What the tab shows: the counts, the snapshots and the task sets."""
    return _counts(ctx), _snapshots(ctx), _task_sets(ctx)


def _drawn(values: tuple[str, pd.DataFrame, pd.DataFrame]) -> str:
    """A key of what was drawn: the timer redraws only when it changes."""
    text, snaps, tasks = values
    return "\n".join([text, snaps.to_csv(index=False), tasks.to_csv(index=False)])


def build(ctx: StudioContext, demo: gr.Blocks, timer: gr.Timer | None = None) -> None:
    counts = gr.Markdown(elem_id="data-counts")
    gr.Markdown(
        "### Preference snapshots\nFreeze the current decisive votes into a hashed, read-only "
        "dataset (TRL conversational preference rows). Training jobs only read frozen snapshots."
    )
    freeze = gr.Button("Freeze snapshot from votes", elem_id="data-freeze")
    result = gr.Markdown(elem_id="data-snapshot-result")
    table = gr.Dataframe(headers=SNAPSHOT_COLUMNS, interactive=False, elem_id="data-snapshots")
    gr.Markdown(
        "### Import a prompt set\nJSONL, JSON or CSV in the MT-Bench layout (`turns`, `category`, "
        "optional `question_id`) or Arena-Hard's (v0.1: `question_id`, `category`, `cluster`, `turns`; "
        "v2.0: `uid`, `category`, `subcategory`, `prompt`). Every row is checked before anything is written."
    )
    with gr.Row():
        set_name = gr.Textbox(label="Prompt set name", elem_id="data-prompt-set-name")
        upload = gr.File(label="File", file_types=[".jsonl", ".csv", ".json"], elem_id="data-prompt-file")
    do_import = gr.Button("Import", elem_id="data-prompt-import")
    import_result = gr.HTML(elem_id="data-prompt-import-result")

    def on_freeze(request: gr.Request):
        try:
            with ctx.db.session() as s:
                snap = snapshot_from_votes(s, user_id=ctx.access.user_id(request))
        except (SnapshotError, PermissionDenied) as exc:
            raise user_error(exc) from exc
        verb = "Created" if snap.created else "Already frozen:"
        skipped = literal(skip_reason_text(snap.skipped))  # each reason in words, not its stored key
        text = f"{verb} snapshot **{snap.id}** · hash `{snap.hash[:16]}` · {count(snap.n_pairs, snap.unit, bold=True)}"
        text += _on_policy(snap.path, snap.hash)
        return text + (f" (left out: {skipped})" if skipped else ""), _snapshots(ctx), _counts(ctx)

    def on_import(name: str, file: str | None, request: gr.Request):
        try:
            require(ctx, request, "researcher")  # refused: the upload is still discarded (finally)
            if not name or not name.strip():
                raise refuse("Give the prompt set a name.")
            if not file:
                raise refuse("Choose a file to import.")
            path = Path(file)
            with ctx.db.session() as s:
                uid = ctx.access.user_id(request)
                n = import_prompt_set(s, name.strip(), path.name, path.read_bytes(), user_id=uid)
        except (PromptImportError, PermissionDenied) as exc:
            raise user_error(exc) from exc
        finally:
            discard_upload(file)  # read once; the user's file does not stay in the upload cache
        return to_html(f"Imported {count(n, 'prompt', bold=True)} into **{literal(name.strip())}**.")

    # a refusal (no decisive votes yet, no file, a file that does not parse) answers under its button
    wire(freeze.click, on_freeze, None, [result, table, counts], result, api_name="data_freeze")
    wire(
        do_import.click,
        on_import,
        [set_name, upload],
        [import_result],
        import_result,
        api_name="data_import_prompts",
    )
    task_table = _task_section(ctx)
    seen = gr.State("")  # what this page last drew

    def on_load():
        values = _fill(ctx)
        return (*values, _drawn(values))

    demo.load(on_load, None, [counts, table, task_table, seen], api_visibility="private")
    if timer is None:
        return

    def on_tick(drawn: str):
        values = _fill(ctx)
        key = _drawn(values)
        if key == drawn:
            return gr.skip(), gr.skip(), gr.skip(), drawn
        return (*values, key)

    timer.tick(
        on_tick, [seen], [counts, table, task_table, seen], show_progress="hidden", api_visibility="private"
    )


TASK_COLUMNS = ["name", "tasks", "train", "held-out", "source", "hash", "created"]


def _task_sets(ctx: StudioContext) -> pd.DataFrame:
    from vibestudio.training.tasks import list_task_sets

    cols = TASK_COLUMNS
    rows = [
        [t.name, t.n_tasks, t.n_train, t.n_heldout, t.source, t.hash[:12], t.created_at]
        for t in list_task_sets(ctx.db)
    ]
    return pd.DataFrame(rows, columns=cols)


def _task_section(ctx: StudioContext) -> gr.Dataframe:
    """Task sets (RLVR): the list with counts and split, and an import (``vibestudio tasks import`` does the same)."""
    from vibestudio.training.tasks import TaskError, import_task_file
    from vibestudio.training.tasks.store import MIN_TASKS

    gr.Markdown(
        "### Task sets (RLVR)\nPrompts with checkable answers for GRPO: JSONL / JSON / Parquet / Arrow with `prompt` + "
        "`answer`, GSM8K's `question` + `#### N`, MATH's `\\boxed{}` or `choices` + a letter. Every row is checked "
        f"first; a set needs at least {MIN_TASKS} usable tasks with some in each split: each task is held out or not "
        "by its content hash, and jobs never train on held-out tasks. "
        "Generate fresh ones with `vibestudio tasks generate`."
    )
    with gr.Row():
        name = gr.Textbox(label="Task set name", elem_id="data-task-set-name")
        upload = gr.File(
            label="File", file_types=[".jsonl", ".json", ".parquet", ".arrow"], elem_id="data-task-file"
        )
    do_import = gr.Button("Import tasks", elem_id="data-task-import")
    result = gr.HTML(elem_id="data-task-import-result")
    table = gr.Dataframe(headers=TASK_COLUMNS, interactive=False, elem_id="data-task-sets")

    def on_import(set_name: str, file: str | None, request: gr.Request):
        try:
            require(ctx, request, "researcher")  # the role before any work on the upload
            if not set_name or not set_name.strip():
                raise refuse("Give the task set a name.")
            if not file:
                raise refuse("Choose a file to import.")
            done = import_task_file(ctx.db, file, set_name.strip(), user_id=ctx.access.user_id(request))
        except (TaskError, PermissionDenied) as exc:
            raise user_error(exc) from exc
        finally:
            discard_upload(file)  # read once; the user's file does not stay in the upload cache
        return to_html(literal(done.summary())), _task_sets(ctx)

    wire(do_import.click, on_import, [name, upload], [result, table], result, api_name="data_import_tasks")
    return table
