"""Families section of the Leaderboard: checkpoints grouped by common ancestor.

It shows the best-of-N selection effect, provisional flags and the removal log. Data comes from
``standings.families``, over the board the service computes. It also says whether each family's checkpoint
reports predicted the arena (``training.report.track_record``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gradio as gr
import pandas as pd

from vibestudio.standings.families import DEFAULT_MIN_VOTES, families
from vibestudio.standings.leaderboard import BoardOptions, LeaderboardService
from vibestudio.studio.context import StudioContext
from vibestudio.studio.render import count, literal, to_html
from vibestudio.training.report.track_record import families_md, track_record

COLUMNS = [
    "family",
    "checkpoint",
    "parent",
    "depth",
    "rating",
    "95% interval",
    "votes since publish",
    "status",
]


def _num(x: float | None) -> str:
    return "unrated" if x is None else f"{x:.0f}"


def family_view(
    ctx: StudioContext, service: LeaderboardService, min_votes: int, options: BoardOptions | None = None
) -> tuple[pd.DataFrame, str]:
    """The families over the board drawn with ``options`` (the Leaderboard tab passes its own, so a rating and its
    interval read the same in both places)."""
    board = service.board(options or BoardOptions())
    with ctx.db.session() as s:
        fams = families(s, board.get("models", []), min_votes=min_votes)
    rows: list[dict[str, Any]] = []
    notes = []
    for f in fams:
        for m in f.members:
            status = ", ".join(
                x
                for x, on in (("hidden", m.hidden), ("provisional", m.provisional), ("root", m.depth == 0))
                if on
            )
            interval = "" if m.ci_low is None else f"{m.ci_low:.0f}-{m.ci_high:.0f}"
            rows.append(
                {
                    "family": f.root,
                    "checkpoint": m.name,
                    "parent": m.parent or "",
                    "depth": m.depth,
                    "rating": _num(m.rating),
                    "95% interval": interval,
                    "votes since publish": m.votes_after_publish,
                    "status": status,
                }  # fmt: skip
            )
        if f.selection is not None:
            sel = f.selection
            notes.append(
                f"- **{literal(f.root)}**: best of {count(sel.n_variants, 'variant')} is {literal(sel.best)}, leading the family mean by "
                f"{sel.lead:.0f} points; {sel.n_variants} equally good variants would show the best leading by "
                f"{sel.chance_mean:.0f} on average (95th percentile {sel.chance_95:.0f}): **{sel.verdict}**"
            )
        elif len(f.members) > 1:
            notes.append(f"- **{literal(f.root)}**: selection effect unmeasurable: {literal(f.reason)}")
        for e in f.log:
            notes.append(
                f"- {e['at']}: {literal(e['by'])} did *{literal(e['action'])}* on {literal(e['contestant'])} "
                f"({literal(e['reason'] or '-')})"
            )
    text = to_html("\n".join(notes)) if notes else "No family with two or more rated variants yet."
    # whether the reports' predictions before play came true, per family and overall
    text += to_html(families_md(track_record(ctx.db), literal))
    return pd.DataFrame(rows, columns=COLUMNS), text


def build_section(
    ctx: StudioContext,
    service: LeaderboardService,
    filters: list[Any] | None = None,
    options: Callable[..., BoardOptions] | None = None,
) -> None:
    """The accordion; ``filters`` (the board's option components) and ``options`` (their values -> BoardOptions)
    make the families read the very board the tab shows."""
    with gr.Accordion("Families: checkpoints with a common ancestor", open=False):
        gr.Markdown(
            "Checkpoints trained from one root, with the **selection effect** of showing the best of N variants "
            "(how far the best of N equally good variants would lead by chance, from their intervals). A "
            "checkpoint is *provisional* until it has enough votes collected after it was published; hidden "
            "checkpoints stay listed, and the log says who hid them."
        )
        with gr.Row():
            min_votes = gr.Number(
                DEFAULT_MIN_VOTES, label="Votes after publish before a rating is final", precision=0
            )
            show = gr.Button("Show families", elem_id="families-show")
        table = gr.Dataframe(headers=COLUMNS, interactive=False, elem_id="families-table")
        notes = gr.HTML(elem_id="families-notes")

    def on_show(n, *values):
        o = options(*values) if options is not None and values else None
        return family_view(ctx, service, int(n or DEFAULT_MIN_VOTES), o)

    show.click(on_show, [min_votes, *(filters or [])], [table, notes], api_name="families")
