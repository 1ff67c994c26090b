"""A task file under the minimum (#35): the Data tab's import answers in place, naming the minimum, and leaves the
task-set table as it was (no red badge over it, no toast)."""

from __future__ import annotations

import json

import gradio as gr

from vibestudio.training.tasks.store import MIN_TASKS


def _import_fn(demo: gr.Blocks):  # type: ignore[no-untyped-def]
    for block_fn in demo.fns.values():
        if any(
            getattr(demo.blocks.get(i), "elem_id", None) == "data-task-import" for i, _ in block_fn.targets
        ):
            return block_fn
    raise AssertionError("no handler on the Import tasks button")


def test_too_few_tasks_answer_in_place(fresh_app, tmp_path):
    path = tmp_path / "few.jsonl"
    path.write_text(
        "".join(json.dumps({"prompt": f"What is {k} + 1?", "answer": str(k + 1)}) + "\n" for k in range(3))
    )
    block_fn = _import_fn(fresh_app)
    status, table = block_fn.fn("few", str(path), gr.Request(username=None))
    assert "⚠️" in status and str(MIN_TASKS) in status, (
        status
    )  # the reason, with the minimum, beside the button
    assert table == gr.skip(), table  # the task-set table is left as it was
