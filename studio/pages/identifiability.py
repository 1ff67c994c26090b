"""Identifiability section of the Leaderboard: per contestant, how well its answers alone give it away
(`arena.identifiability`: a held-out classifier over character n-grams, AUC and top-1 rate with intervals), with
and without the personas' fixed openings; and the warning lines the board's summary shows for recognisable ones."""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from arena.identifiability import RECOGNISABLE_AUC, IdentifiabilityReport, contestant_identifiability
from studio.context import StudioContext
from studio.render import count, literal, to_html

COLUMNS = ["contestant", "answers", "others", "AUC", "95% interval", "top-1", "chance", "verdict"]


def report(ctx: StudioContext, strip_prefill: bool = False) -> IdentifiabilityReport:
    with ctx.db.session() as s:
        return contestant_identifiability(s, strip_prefill=strip_prefill)


def warnings(ctx: StudioContext) -> list[str]:
    """One line per contestant whose votes are not blind in practice (its answers give it away)."""
    return report(ctx).warnings()


def table(rep: IdentifiabilityReport) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for c in rep.contestants:
        rows.append(
            {
                "contestant": c.name,
                "answers": c.n_answers,
                "others": c.n_others,
                "AUC": "" if c.auc is None else f"{c.auc:.2f}",
                "95% interval": "" if c.auc_ci is None else f"{c.auc_ci[0]:.2f}-{c.auc_ci[1]:.2f}",
                "top-1": "" if c.top1 is None else f"{c.top1:.0%}",
                "chance": "" if c.chance is None else f"{c.chance:.0%}",
                "verdict": c.verdict if c.auc is not None else f"can't tell: {c.reason}",
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def build_section(ctx: StudioContext) -> None:
    """The "Identifiability" tab (inside the Leaderboard's tabs)."""
    with gr.Tab("Identifiability"):
        gr.Markdown(
            "Can a voter tell who wrote an answer without its name? A classifier learns each contestant's "
            "answers from ended battles and is tested on prompts it never saw. **AUC**: how often one of its "
            "answers scores above another contestant's (0.5 = blind); **top-1**: share of its answers "
            f"attributed to it. *Recognisable* (interval above {RECOGNISABLE_AUC}): votes on it are not blind "
            "in practice. Tick the box to measure without the personas' fixed answer openings."
        )
        with gr.Row():
            strip = gr.Checkbox(False, label="Without the fixed openings (prefills)", elem_id="ident-strip")
            go_btn = gr.Button("Measure identifiability", elem_id="ident-measure")
        out_table = gr.Dataframe(headers=COLUMNS, interactive=False, elem_id="ident-table")
        notes = gr.HTML(elem_id="ident-notes")

    def on_measure(strip_prefill: bool):
        rep = report(ctx, bool(strip_prefill))
        lines = [f"{count(rep.n_answers, 'answer')}; {literal(rep.method)}, {count(rep.folds, 'fold')}."]
        lines += [f"⚠️ {literal(w)}" for w in rep.warnings()]
        lines += [literal(n) for n in rep.notes]
        return table(rep), to_html("\n\n".join(lines))

    go_btn.click(on_measure, [strip], [out_table, notes], api_name="identifiability")
