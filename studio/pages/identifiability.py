"""Identifiability section of the Leaderboard: per contestant, how well its answers alone give it away.

The measure is `arena.identifiability`: a held-out classifier over character n-grams, with AUC and top-1
rate and their intervals. It is shown with and without the personas' fixed openings, side by side. The
difference is what the opening alone gives away. It also gives the warning lines of the board's summary.
They name contestants recognisable as the arena shows their answers.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from vibestudio.arena.identifiability import (
    RECOGNISABLE_AUC,
    ContestantIdentifiability,
    OpeningsReport,
    compare_openings,
)
from vibestudio.studio.context import StudioContext
from vibestudio.studio.render import count, literal, to_html

COLUMNS = [
    "contestant",
    "answers",
    "AUC with opening",
    "95% with",
    "AUC without opening",
    "95% without",
    "opening gives away",
    "shown",
    "verdict as shown",
]


def report(ctx: StudioContext) -> OpeningsReport:
    """Both measures; ``shown`` follows the arena's own setting (`ArenaLimits.strip_prefill`)."""
    with ctx.db.session() as s:
        return compare_openings(s, shown_stripped=ctx.arena.limits.strip_prefill)


def warnings(ctx: StudioContext) -> list[str]:
    """One line per contestant whose votes are not blind in practice (its answers, as shown, give it away)."""
    return report(ctx).warnings()


def _auc(c: ContestantIdentifiability) -> tuple[str, str]:
    if c.auc is None or c.auc_ci is None:
        return f"can't tell: {c.reason}", ""
    return f"{c.auc:.2f}", f"{c.auc_ci[0]:.2f}-{c.auc_ci[1]:.2f}"


def table(rep: OpeningsReport) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for c in rep.contestants:
        with_auc, with_ci = _auc(c.with_opening)
        without_auc, without_ci = _auc(c.without_opening)
        gap = c.gives_away
        shown = c.shown
        rows.append(
            {
                "contestant": c.name,
                "answers": c.with_opening.n_answers,
                "AUC with opening": with_auc,
                "95% with": with_ci,
                "AUC without opening": without_auc if c.has_opening else "(no fixed opening)",
                "95% without": without_ci if c.has_opening else "",
                "opening gives away": "" if gap is None or not c.has_opening else f"{gap:+.2f}",
                "shown": "without opening" if c.shown_stripped else "with opening",
                "verdict as shown": shown.verdict if shown.auc is not None else f"can't tell: {shown.reason}",
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def build_section(ctx: StudioContext) -> None:
    """The "Identifiability" tab (inside the Leaderboard's tabs)."""
    with gr.Tab("Identifiability"):
        gr.Markdown(
            "Can a voter tell who wrote an answer without its name? A classifier learns each contestant's "
            "answers from ended battles and is tested on prompts it never saw. **AUC**: how often one of its "
            "answers scores above another contestant's (0.5 = blind), measured with and without the persona's "
            "fixed answer opening (its prefill); the difference is what the opening alone gives away. "
            f"*Recognisable* (interval above {RECOGNISABLE_AUC}): votes on it are not blind in practice. The "
            "arena hides the openings unless `VIBESTUDIO_STRIP_PREFILL=0`; the verdict reads the answers as shown."
        )
        go_btn = gr.Button("Measure identifiability", elem_id="ident-measure")
        out_table = gr.Dataframe(headers=COLUMNS, interactive=False, elem_id="ident-table")
        notes = gr.HTML(elem_id="ident-notes")

    def on_measure():
        rep = report(ctx)
        lines = [f"{count(rep.n_answers, 'answer')}; {literal(rep.method)}, {count(rep.folds, 'fold')}."]
        lines += [f"⚠️ {literal(w)}" for w in rep.warnings()]
        lines += [literal(n) for n in rep.notes]
        return table(rep), to_html("\n\n".join(lines))

    go_btn.click(on_measure, [], [out_table, notes], api_name="identifiability")
