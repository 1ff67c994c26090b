"""Models tab: pick any contestant and see everything the studio knows about it on one page.

The page shows:
- the lineage tree: parent, children, siblings; snapshot, job, config, engine;
- ratings raw and with style and vibe control (intervals, rank);
- the head-to-head against its parent from arena votes, and its vibe profile;
- the checkpoint report: drift with intervals, discovered phrases, judge-described differences, evals vs
  parent, degeneration, verdict;
- the report's prediction against the parent, and its score once the child has enough votes;
- training curves, speed and price.
Researchers can let a held checkpoint into anonymous battles, or hold one, with a reason. They can export
a model for deployment (``export_section``): GGUF, or HF weights with the LoRA merged in.

Data comes from ``training.report.model_page`` and ``training.report.text``. Every model-written string
goes through ``studio.render.literal``, inside Markdown that ``studio.render.to_html`` renders. That is
the one display path for untrusted text.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from vibestudio.accounts import PermissionDenied
from vibestudio.arena.registry import RegistryError, list_contestants
from vibestudio.standings.leaderboard import LeaderboardService
from vibestudio.studio import roles
from vibestudio.studio.context import StudioContext
from vibestudio.studio.errors import require, user_error
from vibestudio.studio.render import counted, literal, to_html
from vibestudio.training.jobs.runner import reconcile
from vibestudio.training.report import verdict as verdicts
from vibestudio.training.report.model_page import model_page
from vibestudio.training.report.text import fidelity_md, lineage_md, ratings_md, report_md
from vibestudio.training.report.track_record import record_md

CURVE_PANELS = (("loss",), ("rewards/margins", "reward"), ("rewards/accuracies",), ("kl",))


def choices(ctx: StudioContext) -> list[str]:
    with ctx.db.session() as s:
        return [c.public_name for c in list_contestants(s, active_only=False)]


def curves_figure(curves: dict[str, list[tuple[int, float]]]) -> go.Figure | None:
    panels = [[n for n in names if curves.get(n)] for names in CURVE_PANELS]
    panels = [p for p in panels if p]
    if not panels:
        return None
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[" / ".join(p) for p in panels])
    for i, names in enumerate(panels, start=1):
        for name in names:
            xs, ys = zip(*curves[name], strict=True)
            fig.add_trace(go.Scatter(x=list(xs), y=list(ys), mode="lines+markers", name=name), row=1, col=i)
    fig.update_layout(height=280, margin={"l": 30, "r": 10, "t": 40, "b": 30}, showlegend=False)
    return fig


def vibe_md(page: dict[str, Any]) -> str:
    prof = page["vibe_profile"]
    if not prof["n_answers"]:
        return "### Vibe profile\nNo arena answers yet (can’t tell)."
    lines = [
        f"### Vibe profile ({prof['n_answers']} arena answers)",
        "| feature | mean | share of answers |",
        "|---|---|---|",
    ]
    for name, f in prof["features"].items():
        lines.append(f"| {name} | {f['mean']:.2f} | {f['rate']:.0%} |")
    return "\n".join(lines)


def identifiability_md(page: dict[str, Any]) -> str:
    """Whether its answers alone give it away (votes on it not blind in practice), with and without its fixed
    opening side by side, or can't tell."""
    ident = page.get("identifiability")
    if not ident:
        return "### Identifiability\nNo answers from ended battles yet (can’t tell)."
    shown = "without" if ident["shown_stripped"] else "with"
    lines = ["### Identifiability", f"- {literal(ident['line'])}"]
    if ident["has_opening"]:
        lines.append(f"- the arena shows its answers {shown} its fixed opening")
    if ident.get("warning"):
        lines.append(f"\n⚠️ {literal(ident['warning'])}")
    return "\n".join(lines)


def probes_md(page: dict[str, Any]) -> str:
    """The sycophancy probes for this model (and against its parent), or how to run them."""
    lines = page.get("probes", {}).get("lines") or []
    head = "### Sycophancy probes" + (f" vs {literal(page['parent'])}" if page.get("parent") else "")
    if not lines or all(
        line.endswith("not run yet on " + page["contestant"]["public_name"]) for line in lines
    ):
        return (
            head + "\nNot run yet (can’t tell): run them from the Probes tab or `vibestudio probes run NAME`."
        )
    return head + "\n" + "\n".join(f"- {literal(line.strip())}" for line in lines)


def flip_md(service: LeaderboardService, name: str) -> str:
    """How fragile the model's place is: the votes that would swap it with its neighbours on the board (#31)."""
    out = service.votes_to_flip(refresh=False)
    lines = []
    for p in out["pairs"]:
        if name not in (p["higher"], p["lower"]):
            continue
        other = p["lower"] if p["higher"] == name else p["higher"]
        where = "above" if p["higher"] == name else "below"
        count = "can’t tell" if p["votes"] is None else f"{p['votes']} of {counted(out['n_votes'], 'vote')}"
        # the neighbour in the point-rating order the votes are counted on, not a rank (the Rating table has it)
        lines.append(f"- next {where} {literal(other)} by point rating: swapped if {count} go")
    if not lines:
        return ""
    head = "\n\n**How fragile its place is** (votes whose removal swaps it with a neighbour, checked by refitting; "
    head += "the votes are listed on the Leaderboard tab, *Votes to flip*):\n"
    return head + "\n".join(lines)


HINT = (
    "Pick a model in the list above to see its lineage, ratings, vibe profile, checkpoint report and (for a "
    "trained checkpoint) its training curves."
)


def no_report_md(page: dict[str, Any]) -> str:
    """Why a model has no checkpoint report: not a trained child, its report still running, or none coming."""
    c, v = page["contestant"], page["verdict"]
    if not c.get("job_id"):
        return "No checkpoint report (not a trained child)."
    if v["state"] == "pending":
        return f"No checkpoint report yet: it is running ({literal(v['state_line'])})."
    return f"No checkpoint report was saved for this trained child: {literal(v['state_line'])}"


def _curves(fig: go.Figure | None) -> Any:
    """The training-curves plot, shown only when there are curves (a base model has none)."""
    return gr.update(value=fig, visible=fig is not None)


#: What of a contestant a page shows a viewer below researcher (``for_annotators``). Not its description: a
#: persona's description says how its answers read ("opens with praise and emoji"), which helps a blind voter tell
#: it in a battle.
PUBLIC_FIELDS = ("id", "public_name", "engine", "state", "parent_id", "job_id", "created_at")
HIDDEN = "shown to researchers"


def for_annotators(page: dict[str, Any]) -> dict[str, Any]:
    """A model page without what is reserved for researchers: the contestant's server paths and engine settings
    (model, adapter, base URL, persona), the job's config, the snapshot, the deployed forms and the training
    curves. The names, ratings, vibe profile, probes and the checkpoint report stay."""
    contestant = {k: v for k, v in page["contestant"].items() if k in PUBLIC_FIELDS}
    contestant["model_ref"] = HIDDEN
    family = {**page["family"], "job": None, "snapshot": None}
    return {**page, "contestant": contestant, "family": family, "curves": {}, "fidelity": None}


def may_see_training(ctx: StudioContext, request: gr.Request | None) -> bool:
    """Whether the viewer holds researcher (the local operator does): the page shows them paths, jobs, curves."""
    from vibestudio.accounts import require_role

    try:
        require_role(ctx.db, ctx.access.user_id(request), "researcher")
    except PermissionDenied:
        return False
    return True


def render(
    ctx: StudioContext, service: LeaderboardService, name: str | None, researcher: bool = True
) -> tuple[Any, ...]:
    """The page's sections for ``name``; ``researcher=False`` shapes it for a lower role (``for_annotators``)."""
    if not name:
        return (to_html(HINT), "", "", "", "", _curves(None))
    try:
        page = model_page(ctx.db, name, service)
    except RegistryError as exc:
        return (to_html(f"⚠️ {literal(str(exc))}"), "", "", "", "", _curves(None))
    if not researcher:
        page = for_annotators(page)
    v = page["verdict"]
    c = page["contestant"]
    head = f"## {literal(c['public_name'])} {v['badge']}\n{literal(c.get('description') or '')}"
    head += f"\n\n**State:** {literal(v['state_line'])}"
    if v["state"] == "held":
        head += "\n\n**Held out of anonymous battles** until a researcher lets it in."
    elif v["state"] == "pending":
        head += "\n\n**Pending:** its checkpoint report is running; it plays in no anonymous battle until its verdict."
    if v["history"]:
        head += "\n\n" + "\n".join(
            f"- {h['at']} {h['action']} ({h['verdict'] or '–'}"
            + (f", {h.get('from') or '–'} → {h['to']}" if h.get("kind") == "state" else "")
            + f") by {literal(h['by'])}: {literal(h['reason'] or '')}"
            for h in v["history"][-6:]
        )
    report = report_md(page["report"], literal) if page["report"] else no_report_md(page)
    if page.get("track_record"):  # the report's prediction, scored on the votes since
        report += "\n\n" + record_md(page["track_record"], literal)
    return (
        to_html(head),
        to_html(lineage_md(page, literal) + "\n\n" + fidelity_md(page, literal)),
        to_html(ratings_md(page, literal) + flip_md(service, c["public_name"])),
        to_html(vibe_md(page) + "\n\n" + identifiability_md(page) + "\n\n" + probes_md(page)),
        to_html(report),
        _curves(curves_figure(page["curves"])),
    )


def build(ctx: StudioContext, demo: gr.Blocks) -> None:
    service = ctx.leaderboard
    names = choices(ctx)
    with gr.Row():
        pick = gr.Dropdown(names, value=None, label="Model", elem_id="models-pick", allow_custom_value=False)
        refresh = gr.Button("Refresh", size="sm", elem_id="models-refresh")
    header = gr.HTML(to_html(HINT), elem_id="models-header")
    with gr.Row():
        lineage = gr.HTML(elem_id="models-lineage")
        rating = gr.HTML(elem_id="models-rating")
    report = gr.HTML(elem_id="models-report")
    curves = gr.Plot(label="Training curves", visible=False, elem_id="models-curves")
    vibe = gr.HTML(elem_id="models-vibe")
    with gr.Accordion("Hold or let into anonymous battles (researchers)", open=False) as decide_box:
        # shown to researchers only (the handlers check the role again)
        roles.restrict(decide_box, "researcher")
        reason = gr.Textbox(label="Why (logged)", elem_id="models-reason")
        with gr.Row():
            let_in = gr.Button("Let it play", elem_id="models-release")
            hold_out = gr.Button("Hold it out", elem_id="models-hold")
        decided = gr.HTML(elem_id="models-decided")
    outputs = [header, lineage, rating, vibe, report, curves]
    export_section(ctx, pick)

    def show(name: str | None, request: gr.Request) -> tuple[Any, ...]:
        return render(ctx, service, name, may_see_training(ctx, request))

    def decide(name: str | None, why: str, active: bool, request: gr.Request) -> tuple[Any, ...]:
        require(ctx, request, "researcher")
        try:
            user = ctx.access.user_id(request)
            if not name:
                raise verdicts.VerdictError("pick a model first")
            (verdicts.release if active else verdicts.hold)(ctx.db, name, user, why or "")
            msg = f"{literal(name)} {'may play' if active else 'is held out'}; reason logged."
        except PermissionDenied as exc:
            raise user_error(exc) from exc
        except (verdicts.VerdictError, RegistryError) as exc:
            msg = f"⚠️ {literal(str(exc))}"
        return (to_html(msg), *show(name, request))

    pick.change(show, pick, outputs, api_name="models_show")

    def on_refresh(name: str | None, request: gr.Request) -> tuple[Any, ...]:
        # fresh state: a job lost or cancelled since holds its pending child before the page reads it
        reconcile(ctx.db, start=False)
        return (gr.update(choices=choices(ctx)), *show(name, request))

    refresh.click(on_refresh, pick, [pick, *outputs], api_visibility="private")

    def on_release(name: str | None, why: str, request: gr.Request) -> tuple[Any, ...]:
        return decide(name, why, True, request)

    def on_hold(name: str | None, why: str, request: gr.Request) -> tuple[Any, ...]:
        return decide(name, why, False, request)

    let_in.click(on_release, [pick, reason], [decided, *outputs], api_name="models_release")
    hold_out.click(on_hold, [pick, reason], [decided, *outputs], api_name="models_hold")

    def on_open(name: str | None, request: gr.Request) -> tuple[Any, ...]:
        # the page load, and each opening of the tab (``studio.fresh``): the list and the picked model as they are now
        return (gr.update(choices=choices(ctx)), *show(name, request))

    demo.load(on_open, pick, [pick, *outputs], api_visibility="private")


def export_section(ctx: StudioContext, pick: gr.Dropdown) -> None:
    """Export the picked model for deployment (researchers): its GGUF file, or its HF weights with the LoRA
    merged in (a zip), written under the data home's exports and offered as a download
    (``training.publishing.model_export.export``, as ``vibestudio models export``)."""
    with gr.Accordion("Export for deployment (researchers)", open=False) as export_box:
        # shown to researchers only (the export checks the role again)
        roles.restrict(export_box, "researcher")
        with gr.Row():
            fmt = gr.Radio(["gguf", "merged"], value="gguf", label="Format", elem_id="models-export-format")
            go_export = gr.Button("Export", elem_id="models-export")
        said = gr.HTML(elem_id="models-exported")
        download = gr.HTML(elem_id="models-export-file")  # a link to the checked download route

    def on_export(name: str | None, how: str, request: gr.Request) -> tuple[Any, Any]:
        import shutil

        from vibestudio.studio.downloads import ExportRefused, downloads_dir, new_folder, offer
        from vibestudio.studio.pages.queues import download_link
        from vibestudio.training.publishing.gguf_export import ConversionError
        from vibestudio.training.publishing.model_export import export

        uid = require(ctx, request, "researcher")
        if not name:
            return to_html("⚠️ Pick a model first, then Export."), ""
        try:
            token, folder = new_folder(uid)  # a random name: the download's URL cannot be guessed
        except ExportRefused as exc:  # the user's share of exports is full
            return to_html(f"⚠️ Not exported: {literal(str(exc))}"), ""
        try:
            done = export(ctx.db, name, how, folder, uid)
        except PermissionDenied as exc:
            shutil.rmtree(folder, ignore_errors=True)
            raise user_error(exc) from exc
        except (ConversionError, RegistryError, OSError) as exc:
            shutil.rmtree(folder, ignore_errors=True)
            return to_html(f"⚠️ Not exported: {literal(str(exc))}"), ""
        try:
            got = offer(done.path, uid, "researcher", token)  # a merged folder is zipped (and removed)
        except ExportRefused as exc:  # it brought the user past their share: removed
            return to_html(f"⚠️ Not exported: {literal(str(exc))}"), ""
        size = (downloads_dir() / got.token / got.name).stat().st_size / 1e6
        msg = f"{literal(done.name)}: {done.format}, {size:.0f} MB, from {literal(done.source)} ({done.seconds:.1f} s)"
        return to_html(msg), download_link(
            got.url, got.name
        )  # only its exporter (or an admin) may download it

    go_export.click(on_export, [pick, fmt], [said, download], api_name="models_export")
    # the export offered is the picked model's: another pick takes the last one's note and link away
    pick.change(_forget_export, None, [said, download], api_visibility="private")


def _forget_export() -> tuple[str, str]:
    """The export note and link, cleared (they were the model picked before)."""
    return "", ""
