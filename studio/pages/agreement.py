"""Agreement tab: how far annotators agree on a queue, per criterion and per pair, and how an AI judge behaves.

Krippendorff's alpha on the verdicts and on each rubric criterion (at the level its scale fits), Cohen's kappa
per annotator pair, Fleiss' kappa, each annotator's agreement with the others' majority; for a judge its
position, length and own-family preference and its agreement with human labels. Computation lives in
``annotation.agreement_report`` and ``annotation.judges``.
"""

from __future__ import annotations

import math

import gradio as gr
import pandas as pd

from annotation.agreement_report import agreement_report
from annotation.judges import JudgeError, bias_report, judge_names
from annotation.queues import LABEL_KINDS, QueueError, list_queues
from studio.context import StudioContext
from studio.errors import user_error
from studio.render import literal, to_html


def _r(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(x, 3)


def _fmt(x: float | None) -> str:
    v = _r(x)
    return "n/a" if v is None else f"{v:.3f}"


def build(ctx: StudioContext, demo: gr.Blocks) -> None:
    with gr.Row():
        queue = gr.Dropdown([], label="Queue", elem_id="agreement-queue", scale=2, allow_custom_value=True)
        kinds = gr.CheckboxGroup(list(LABEL_KINDS), value=["human", "import"], label="Labels from", scale=2)
        interval = gr.Checkbox(False, label="Numeric scales as interval (default: ordinal)", scale=1)
        compute = gr.Button("Compute agreement", variant="primary", elem_id="agreement-compute", scale=1)
    summary = gr.HTML(elem_id="agreement-summary")
    criteria = gr.Dataframe(
        headers=["criterion", "level", "alpha", "units"], interactive=False, elem_id="agreement-criteria"
    )
    with gr.Row():
        pairs = gr.Dataframe(
            headers=["a", "b", "kappa", "agree", "n"], interactive=False, elem_id="agreement-pairs"
        )
        majority = gr.Dataframe(
            headers=["annotator", "labels", "agrees with majority", "of", "rate"],
            interactive=False,
            elem_id="agreement-majority",
        )
    gr.Markdown("### AI judge bias")
    with gr.Row():
        judge = gr.Dropdown([], label="Judge", elem_id="agreement-judge", scale=2, allow_custom_value=True)
        family = gr.Textbox(label="Judge's model family (optional)", scale=1)
        run_bias = gr.Button("Bias report", elem_id="agreement-bias-run", scale=1)
    bias = gr.HTML(elem_id="agreement-bias")

    def on_compute(queue_name: str | None, chosen: list[str], as_interval: bool):
        if not queue_name:
            raise gr.Error("Pick a queue.")
        if not chosen:
            raise gr.Error("Pick at least one kind of label.")
        try:
            with ctx.db.session() as s:
                rep = agreement_report(s, queue_name, tuple(chosen), as_interval)
        except QueueError as exc:
            raise user_error(exc) from exc
        text = to_html(
            f"**{rep.n_labels}** labels on **{rep.n_items}** items by **{len(rep.annotators)}** annotators · "
            f"verdict alpha (nominal) **{_fmt(rep.outcome_alpha)}** · with the three ties merged "
            f"**{_fmt(rep.outcome_alpha_merged)}** · Fleiss' kappa **{_fmt(rep.fleiss)}** "
            f"({rep.fleiss_items} items with 2+ labels)"
        )
        crit = pd.DataFrame(
            [[c.criterion, c.level, _r(c.alpha), c.n_units] for c in rep.criteria],
            columns=["criterion", "level", "alpha", "units"],
        )
        pr = pd.DataFrame(
            [[p.a, p.b, _r(p.kappa), _r(p.percent), p.n] for p in rep.pairs],
            columns=["a", "b", "kappa", "agree", "n"],
        )
        mj = pd.DataFrame(
            [[m.annotator, m.n_labels, m.agree, m.n, _r(m.rate)] for m in rep.majority],
            columns=["annotator", "labels", "agrees with majority", "of", "rate"],
        )
        judges = judge_names(ctx.db, queue_name)
        return text, crit, pr, mj, gr.update(choices=judges, value=judges[0] if judges else None)

    def on_bias(queue_name: str | None, judge_name: str | None, fam: str):
        if not queue_name or not judge_name:
            raise gr.Error("Pick a queue and a judge (run a judge on the Annotate tab first).")
        try:
            rep = bias_report(ctx.db, queue_name, judge_name, fam.strip() or None)
        except (JudgeError, QueueError) as exc:
            raise user_error(exc) from exc
        return to_html(
            f"**{literal(rep.judge)}** on **{literal(rep.queue)}**: {rep.n_items} items, "
            f"verdicts {literal(rep.outcomes)}\n\n"
            f"| measure | judge | humans on the same items |\n|---|---|---|\n"
            f"| consistent when the answers swap places | {rep.consistency} | |\n"
            f"| picks the answer shown first (0.50 = unbiased) | {rep.first_position} | |\n"
            f"| picks the longer answer | {rep.longer} | {rep.human_longer} |\n"
            f"| picks its own family ({literal(rep.judge_family or 'unknown')}) | {rep.own_family} | {rep.human_own_family} |\n"
            f"| agrees with the human majority | {rep.human_agreement} (kappa {_fmt(rep.human_kappa)}) | |"
        )

    def refresh(current: str | None):
        with ctx.db.session() as s:
            names = [q.name for q in list_queues(s)]
        return gr.update(choices=names, value=current if current in names else (names[0] if names else None))

    compute.click(
        on_compute,
        [queue, kinds, interval],
        [summary, criteria, pairs, majority, judge],
        api_name="agreement",
    )
    run_bias.click(on_bias, [queue, judge, family], [bias], api_name="judge_bias")
    demo.load(refresh, [queue], [queue], api_visibility="private")
    queue.focus(refresh, [queue], [queue], api_visibility="private")
