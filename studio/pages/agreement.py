"""Agreement tab: how far annotators agree on a queue, per criterion and per pair, and how an AI judge
behaves.

It shows:
- Krippendorff's alpha on the verdicts and on each rubric criterion, at the level its scale fits;
- Cohen's kappa per annotator pair, and Fleiss' kappa;
- each annotator's agreement with the others' majority;
- for a judge, its position, length and own-family preference, and its agreement with human labels;
- per vibe feature (length, markdown, flattery...), whether the judge is more swayed by it than people
  are.
Computation lives in ``annotation.agreement_report``, ``annotation.judges`` and
``annotation.vibe_agreement``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import gradio as gr
import pandas as pd

from vibestudio.annotation.agreement_report import agreement_report
from vibestudio.annotation.judges import JudgeError, bias_report, judge_names
from vibestudio.annotation.queues import LABEL_KINDS, QueueError, list_queues
from vibestudio.annotation.vibe_agreement import VibeAgreementError, vibe_agreement
from vibestudio.studio.context import StudioContext
from vibestudio.studio.errors import refuse, user_error, wire
from vibestudio.studio.render import count, literal, to_html


def _r(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(x, 3)


def _fmt(x: float | None) -> str:
    v = _r(x)
    return "n/a" if v is None else f"{v:.3f}"


VIBE_COLUMNS = ["feature", "items differing", "judge picks more", "people pick more", "disagree", "judge − people",
                "95% interval", "verdict"]  # fmt: skip


def _share(k: int, n: int) -> str:
    return f"{k}/{n} ({100 * k / n:.0f}%)" if n else "no evidence (0)"


def _vibe_row(c) -> list:  # type: ignore[no-untyped-def]
    interval = "" if c.low is None else f"{100 * c.low:+.0f} to {100 * c.high:+.0f} pts"
    diff = "" if c.difference is None else f"{100 * c.difference:+.0f} pts (n={c.paired_n})"
    return [c.feature, c.items, _share(c.judge_more, c.judge_n), _share(c.people_more, c.people_n),
            f"{c.disagree}/{c.paired_n}", diff, interval, c.verdict]  # fmt: skip


# ---- the page's sections: each builds its components and returns them by name --------------------------------
CRITERIA_COLUMNS = ["criterion", "level", "alpha", "units"]
PAIR_COLUMNS = ["a", "b", "kappa", "agree", "n"]
MAJORITY_COLUMNS = ["annotator", "labels", "agrees with majority", "of", "rate"]


class _QueueRow(NamedTuple):
    queue: Any
    kinds: Any
    interval: Any
    compute: Any


def _queue_row() -> _QueueRow:
    """The queue, which labels count, how numeric scales are read, and Compute."""
    with gr.Row():
        queue = gr.Dropdown([], label="Queue", elem_id="agreement-queue", scale=2, allow_custom_value=True)
        kinds = gr.CheckboxGroup(list(LABEL_KINDS), value=["human", "import"], label="Labels from", scale=2)
        interval = gr.Checkbox(False, label="Numeric scales as interval (default: ordinal)", scale=1)
        compute = gr.Button("Compute agreement", variant="primary", elem_id="agreement-compute", scale=1)
    return _QueueRow(queue, kinds, interval, compute)


class _Report(NamedTuple):
    summary: Any
    criteria: Any
    pairs: Any
    majority: Any


def _report() -> _Report:
    """The summary line (where refusals answer), alpha per criterion, kappa per pair, agreement with the majority."""
    summary = gr.HTML(elem_id="agreement-summary")
    criteria = gr.Dataframe(headers=CRITERIA_COLUMNS, interactive=False, elem_id="agreement-criteria")
    with gr.Row():
        pairs = gr.Dataframe(headers=PAIR_COLUMNS, interactive=False, elem_id="agreement-pairs")
        majority = gr.Dataframe(headers=MAJORITY_COLUMNS, interactive=False, elem_id="agreement-majority")
    return _Report(summary, criteria, pairs, majority)


class _BiasRow(NamedTuple):
    judge: Any
    family: Any
    run: Any
    report: Any


def _bias_row() -> _BiasRow:
    gr.Markdown("### AI judge bias")
    with gr.Row():
        judge = gr.Dropdown([], label="Judge", elem_id="agreement-judge", scale=2, allow_custom_value=True)
        family = gr.Textbox(label="Judge's model family (optional)", scale=1)
        run = gr.Button("Bias report", elem_id="agreement-bias-run", scale=1)
    report = gr.HTML(elem_id="agreement-bias")
    return _BiasRow(judge, family, run, report)


class _VibesPart(NamedTuple):
    run: Any
    note: Any
    table: Any


def _vibes_part() -> _VibesPart:
    gr.Markdown(
        "### Judge against people, by vibe\nOn items whose two answers differ in a feature: how often the judge "
        "and the people's majority picked the answer with *more* of it, with the evidence count per cell, and "
        "the paired difference (judge − people) with a 95% bootstrap interval."
    )
    run = gr.Button("Compare by vibe", elem_id="agreement-vibes-run")
    note = gr.HTML(elem_id="agreement-vibes-note")
    table = gr.Dataframe(headers=VIBE_COLUMNS, interactive=False, elem_id="agreement-vibes")
    return _VibesPart(run, note, table)


def build(ctx: StudioContext, demo: gr.Blocks) -> None:
    """Lay out the tab section by section, then wire its events (``_wire``)."""
    _wire(ctx, demo, _queue_row(), _report(), _bias_row(), _vibes_part())


def _wire(ctx: StudioContext, demo: gr.Blocks, q: _QueueRow, r: _Report, b: _BiasRow, v: _VibesPart) -> None:
    """The tab's events, in the order the app has always registered them. Refusals (nothing picked, no labels yet)
    answer in the text under each button; the tables stay as they were."""
    judging = _judge_handlers(ctx)
    outs = [r.summary, r.criteria, r.pairs, r.majority, b.judge]
    wire(
        q.compute.click,
        _compute_handler(ctx),
        [q.queue, q.kinds, q.interval],
        outs,
        r.summary,
        api_name="agreement",
    )
    wire(
        b.run.click,
        judging.on_bias,
        [q.queue, b.judge, b.family],
        [b.report],
        b.report,
        api_name="judge_bias",
    )
    wire(v.run.click, judging.on_vibes, [q.queue, b.judge], [v.note, v.table], v.note, api_name="judge_vibes")
    refresh = _queues_handler(ctx)
    demo.load(refresh, [q.queue], [q.queue], api_visibility="private")
    q.queue.focus(refresh, [q.queue], [q.queue], api_visibility="private")


# ---- the handlers -----------------------------------------------------------------------------------------------
def _compute_handler(ctx: StudioContext) -> Callable[..., Any]:
    """Agreement on a queue (``annotation.agreement_report``); the judge picker gets the queue's judges."""

    def on_compute(queue_name: str | None, chosen: list[str], as_interval: bool):  # type: ignore[no-untyped-def]
        if not queue_name:
            raise refuse("Pick a queue first (the Annotate tab makes one).")
        if not chosen:
            raise refuse("Pick at least one kind of label.")
        try:
            with ctx.db.session() as s:
                rep = agreement_report(s, queue_name, tuple(chosen), as_interval)
        except QueueError as exc:
            raise user_error(exc) from exc
        text = to_html(
            f"{count(rep.n_labels, 'label', bold=True)} on {count(rep.n_items, 'item', bold=True)} by "
            f"{count(len(rep.annotators), 'annotator', bold=True)} · "
            f"verdict alpha (nominal) **{_fmt(rep.outcome_alpha)}** · with the three ties merged "
            f"**{_fmt(rep.outcome_alpha_merged)}** · Fleiss' kappa **{_fmt(rep.fleiss)}** "
            f"({count(rep.fleiss_items, 'item')} with 2+ labels)"
        )
        crit = pd.DataFrame(
            [[c.criterion, c.level, _r(c.alpha), c.n_units] for c in rep.criteria], columns=CRITERIA_COLUMNS
        )
        pr = pd.DataFrame(
            [[p.a, p.b, _r(p.kappa), _r(p.percent), p.n] for p in rep.pairs], columns=PAIR_COLUMNS
        )
        mj = pd.DataFrame(
            [[m.annotator, m.n_labels, m.agree, m.n, _r(m.rate)] for m in rep.majority],
            columns=MAJORITY_COLUMNS,
        )
        judges = judge_names(ctx.db, queue_name)
        return text, crit, pr, mj, gr.update(choices=judges, value=judges[0] if judges else None)

    return on_compute


class _JudgeHandlers(NamedTuple):
    on_bias: Callable[..., Any]
    on_vibes: Callable[..., Any]


def _judge_handlers(ctx: StudioContext) -> _JudgeHandlers:
    """A judge's bias report (``annotation.judges``) and its agreement with people by vibe."""

    def on_bias(queue_name: str | None, judge_name: str | None, fam: str):  # type: ignore[no-untyped-def]
        if not queue_name or not judge_name:
            raise refuse("Pick a queue and a judge first (run a judge on the Annotate tab).")
        try:
            rep = bias_report(ctx.db, queue_name, judge_name, fam.strip() or None)
        except (JudgeError, QueueError) as exc:
            raise user_error(exc) from exc
        return to_html(
            f"**{literal(rep.judge)}** on **{literal(rep.queue)}**: {count(rep.n_items, 'item')}, "
            f"verdicts {literal(rep.outcomes)}\n\n"
            f"| measure | judge | humans on the same items |\n|---|---|---|\n"
            f"| consistent when the answers swap places | {rep.consistency} | |\n"
            f"| picks the answer shown first (0.50 = unbiased) | {rep.first_position} | |\n"
            f"| picks the longer answer | {rep.longer} | {rep.human_longer} |\n"
            f"| picks its own family ({literal(rep.judge_family or 'unknown')}) | {rep.own_family} | {rep.human_own_family} |\n"
            f"| agrees with the human majority | {rep.human_agreement} (kappa {_fmt(rep.human_kappa)}) | |"
        )

    def on_vibes(queue_name: str | None, judge_name: str | None):  # type: ignore[no-untyped-def]
        if not queue_name or not judge_name:
            raise refuse("Pick a queue and a judge first (run a judge on the Annotate tab).")
        try:
            rep = vibe_agreement(ctx.db, queue_name, judge_name)
        except (VibeAgreementError, QueueError) as exc:
            raise user_error(exc) from exc
        n = len(rep.cells)
        note = to_html(f"{n} {'feature' if n == 1 else 'features'} compared.")
        return note, pd.DataFrame([_vibe_row(c) for c in rep.cells], columns=VIBE_COLUMNS)

    return _JudgeHandlers(on_bias, on_vibes)


def _queues_handler(ctx: StudioContext) -> Callable[..., Any]:
    """The queue picker's choices, keeping the picked queue while it exists."""

    def refresh(current: str | None):  # type: ignore[no-untyped-def]
        with ctx.db.session() as s:
            names = [q.name for q in list_queues(s)]
        return gr.update(choices=names, value=current if current in names else (names[0] if names else None))

    return refresh
