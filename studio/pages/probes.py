"""Probes tab: run the sycophancy probes on a contestant (optionally against its parent) and read the
results.

Below them, run the verifiable evals (``studio.pages.evals``). Thin: the handlers call
``standings.probes`` and turn its plain report into a table. The table gives rates with 95% intervals and
n, and unmeasurable counts with reasons. Beside it is the paired difference against the other contestant.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from vibestudio.accounts import PermissionDenied
from vibestudio.arena.registry import list_contestants
from vibestudio.standings.probes import HEADLINE, PROBES, ProbeError, ProbeReport, probe_report, run_probe
from vibestudio.studio.context import StudioContext
from vibestudio.studio.errors import refuse, user_error, wire
from vibestudio.studio.pages import evals
from vibestudio.studio.render import literal, to_html
from vibestudio.training.report.job import after_probes

NONE = "(none)"
COLUMNS = ["contestant", "probe", "measure", "rate", "95% interval", "n", "unmeasurable"]


def _names(ctx: StudioContext) -> tuple[list[str], dict[str, str]]:
    """Contestant names, and each one's parent name (the default to compare against)."""
    with ctx.db.session() as s:
        infos = list_contestants(s, active_only=False)
    by_id = {c.id: c.public_name for c in infos}
    parents = {c.public_name: by_id[c.parent_id] for c in infos if c.parent_id in by_id}
    return [c.public_name for c in infos], parents


def _table(report: ProbeReport, other: ProbeReport | None) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for rep in [report, *([other] if other else [])]:
        for probe, score in rep.scores.items():
            if score is None:
                rows.append({"contestant": rep.contestant, "probe": probe, "measure": "not run yet"})
                continue
            for m in HEADLINE[probe]:
                r = score.rates[m]
                rows.append(
                    {
                        "contestant": rep.contestant,
                        "probe": probe,
                        "measure": m,
                        "rate": "can't tell" if r.value is None else f"{100 * r.value:.0f}%",
                        "95% interval": ""
                        if r.low is None
                        else f"{100 * r.low:.0f}-{100 * (r.high or 0):.0f}%",
                        "n": r.n,
                        "unmeasurable": score.unmeasurable,
                    }
                )
    return pd.DataFrame(rows, columns=COLUMNS)


def _summary(report: ProbeReport) -> str:
    lines = []
    for probe, score in report.scores.items():
        if score is not None and score.unmeasurable:
            why = "; ".join(f"{r}: {n}" for r, n in score.unmeasurable_reasons.items())
            lines.append(f"- **{probe}**: {score.unmeasurable} of {score.measurements} unmeasurable ({why})")
    for cmp in report.comparisons.values():
        lines.append(f"- {cmp.text()}")
    return to_html("\n".join(lines)) if lines else "No comparison: choose a contestant to compare against."


def build(ctx: StudioContext, demo: gr.Blocks) -> None:
    gr.Markdown(
        "Does a model give up a right answer when the user pushes back, or adopt the user's stated view? "
        "**Pushback**: right-to-wrong (*regressive*) flips after “Are you sure?” with and without a fake "
        "citation. **Views**: how often the answer moves to a view the user states in a biography or belief. "
        "Answers with no final answer are *unmeasurable* and left out of the rates (count and reasons shown)."
    )
    names, parents = _names(ctx)
    with gr.Row():
        who = gr.Dropdown(names, value=names[0] if names else None, label="Contestant", elem_id="probes-who")
        against = gr.Dropdown([NONE, *names], value=NONE, label="Compare against", elem_id="probes-against")
    with gr.Row():
        which = gr.CheckboxGroup(list(PROBES), value=list(PROBES), label="Probes")
        limit = gr.Number(20, label="Items per probe (empty = all)", precision=0, elem_id="probes-limit")
    with gr.Row():
        run = gr.Button("Run probes", variant="primary", elem_id="probes-run")
        show = gr.Button("Show stored results", elem_id="probes-show")
    table = gr.Dataframe(headers=COLUMNS, interactive=False, label="Probe rates", elem_id="probes-table")
    summary = gr.HTML(elem_id="probes-summary")

    def report(name: str, other: str | None) -> tuple[pd.DataFrame, str]:
        other = None if other in (None, "", NONE) else other
        with ctx.db.session() as s:
            rep = probe_report(s, name, other)
            rep_other = probe_report(s, other) if other else None
        return _table(rep, rep_other), _summary(rep)

    def on_show(name, other):
        if not name:
            raise refuse("Choose a contestant first.")
        try:
            return report(name, other)
        except ProbeError as exc:
            raise user_error(exc) from exc

    def on_run(name, other, probes, n, request: gr.Request, progress=gr.Progress()):
        if not name:
            raise refuse("Choose a contestant first.")
        if not probes:
            raise refuse("Choose at least one probe.")
        targets = [name, *([other] if other not in (None, "", NONE) else [])]
        notes: list[str] = []  # said under the table, not in toasts that follow the user to other tabs
        try:
            uid = ctx.access.user_id(request)
            for probe in probes:
                for target in targets:

                    def tick(done: int, total: int, item: str, probe=probe, target=target) -> None:
                        progress((done, total), desc=f"{probe} · {target}")

                    result = run_probe(
                        ctx.db, probe, target, limit=int(n) if n else None, progress=tick, user_id=uid
                    )
                    if result.stopped:
                        notes.append(f"⚠️ {probe} on {target} stopped early: {result.stopped}")
            for target in targets:  # stored probes re-decide the verdicts (and apply a hold)
                for who, state in after_probes(ctx.db, target, user_id=uid):
                    notes.append(f"Verdict decided again with the stored probes: {who} is now {state}.")
            rates, text = report(name, other)
        except (ProbeError, PermissionDenied) as exc:
            raise user_error(exc) from exc
        return rates, text + "".join(to_html(literal(note)) for note in notes)

    def default_against(name):
        return gr.update(value=parents.get(name, NONE))

    who.change(default_against, [who], [against], api_visibility="private")
    # a refusal (nothing chosen, nothing stored yet) answers in the summary under the table
    # the progress (probe, contestant, items done) shows over the table only: over the short summary line as
    # well, its bar was drawn across its own text
    wire(
        run.click,
        on_run,
        [who, against, which, limit],
        [table, summary],
        summary,
        api_name="probes_run",
        show_progress_on=[table],
    )
    wire(show.click, on_show, [who, against], [table, summary], summary, api_name="probes_show")

    def refresh():
        nonlocal parents
        new_names, parents = _names(ctx)
        return gr.update(choices=new_names), gr.update(choices=[NONE, *new_names])

    demo.load(refresh, None, [who, against], api_visibility="private")
    evals.build_section(ctx, demo)
