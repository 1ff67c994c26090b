"""``vibestudio models ...`` and ``vibestudio drift``: the arena's contestants and what is known about each.

- ``models list|add`` manage contestants (personas from YAML or flags).
- ``models show`` is the model page: lineage, ratings, report, verdict, lifecycle state.
- ``models hold|release`` keep a checkpoint out of anonymous battles or let it in: a researcher's logged
  decision.
- ``models hide|restore`` retire one and bring it back to the state it had. A held checkpoint comes back
  held.
- ``models log`` prints its lifecycle.
- ``models track-record`` scores every report's prediction on the votes since: hit or miss, calibration.
- ``models export`` writes one for deployment: its GGUF, or HF weights with the LoRA merged in.
- ``drift`` compares a checkpoint with its parent. ``--record`` saves the report and records its verdict.

A thin layer over ``arena.registry``, ``arena.personas``, ``standings.families``,
``training.report.model_page``, ``training.report.steps``, ``training.report.verdict`` and
``training.publishing.model_export``.
"""

import json
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer

from vibestudio.studio.cli._common import fail, failing_on, group, open_db
from vibestudio.training.report.minimums import DEFAULT_PROMPTS
from vibestudio.training.report.options import DEFAULTS as REPORT
from vibestudio.training.report.options import report_bounds, report_help, report_problem

models_app = group(help="Contestants in the arena.", no_args_is_help=True)


@models_app.command("list")
def models_list(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List contestants with their lifecycle state, engine, persona and lineage."""
    from vibestudio.arena.registry import list_contestants

    with open_db().session() as s:
        items = list_contestants(s, active_only=False)
    if as_json:
        typer.echo(json.dumps([c.as_dict() for c in items], default=str, indent=2))
        return
    for c in items:
        lineage = (
            f" parent={c.parent_id} job={c.job_id} snapshot={(c.snapshot_hash or '')[:12]}"
            if c.parent_id
            else ""
        )
        typer.echo(
            f"{c.id:>4}  {c.public_name:<28} {c.state:<9} {c.engine:<13} {c.description[:50]}{lineage}"
        )


@models_app.command("add")
def models_add(
    yaml_file: Path = typer.Option(
        None, "--yaml", help="Personas YAML file (one, a list, or {personas: [...]})."
    ),
    name: str = typer.Option(None, help="Public name of a single persona (instead of --yaml)."),
    engine: str = typer.Option("llama_cpp", help="llama_cpp | transformers | openai | vllm."),
    model: str = typer.Option(None, help="Model reference (default: the embedded SmolLM2 GGUF)."),
    system_prompt: str = typer.Option("", help="System prompt."),
    prefill: str = typer.Option("", help="Opening of every answer, continued by the model."),
    temperature: float = typer.Option(None, help="Sampling temperature."),
    max_tokens: int = typer.Option(None, help="Answer length cap in tokens."),
    alias: list[str] = typer.Option(None, "--alias", help="A name answers must not say (repeatable)."),
    base_url: str = typer.Option(None, help="Server root for openai/vllm engines."),
    api_key_env: str = typer.Option(None, help="Environment variable holding the API key (never stored)."),
) -> None:
    """Add personas as arena contestants, from a YAML file or from flags; all or nothing."""
    from vibestudio.arena.personas import PersonaError, add_personas, load_persona_file, spec_from_mapping

    try:
        if yaml_file is not None:
            specs, source = load_persona_file(yaml_file), str(yaml_file)
        elif name:
            data: dict = {"name": name, "engine": engine, "system_prompt": system_prompt, "prefill": prefill}
            data["model"] = model
            data["aliases"] = list(alias or [])
            sampling = {
                k: v for k, v in (("temperature", temperature), ("max_tokens", max_tokens)) if v is not None
            }
            data["sampling"] = sampling
            cfg = {k: v for k, v in (("base_url", base_url), ("api_key_env", api_key_env)) if v}
            if cfg:
                data["engine_config"] = cfg
            specs, source = [spec_from_mapping(data, "command line")], "command line"
        else:
            fail("give --yaml FILE or --name NAME")
        db = open_db(seed=False)  # no default contestants are seeded: these personas may be the whole arena
        with db.session() as s:
            ids = add_personas(s, specs, source)
    except PersonaError as exc:
        fail(str(exc))
    for cid, spec in zip(ids, specs, strict=True):
        typer.echo(f"{cid:>4}  {spec.public_name}  ({spec.engine})")


@models_app.command("hide")
def models_hide(
    name: str = typer.Argument(..., help="Contestant to hide (taken out of pair sampling; history stays)."),
    by: str = typer.Option(..., help="Who hides it (recorded in the removal log)."),
    reason: str = typer.Option(..., help="Why (recorded in the removal log)."),
) -> None:
    """Hide a contestant: out of pair sampling, kept on record with its votes, logged with who and why."""
    _hide(name, by, reason, restore=False)


@models_app.command("restore")
def models_restore(
    name: str = typer.Argument(..., help="Contestant to bring back into pair sampling."),
    by: str = typer.Option(..., help="Who restores it."),
    reason: str = typer.Option("", help="Why."),
) -> None:
    """Bring a hidden contestant back to the state it had (logged); a held one comes back held."""
    _hide(name, by, reason, restore=True)


def _hide(name: str, by: str, reason: str, restore: bool) -> None:
    from vibestudio.arena.registry import RegistryError
    from vibestudio.standings.families import hide

    with failing_on(RegistryError), open_db().session() as s:
        event = hide(s, name, by, reason, restore=restore)
    typer.echo(f"{event['contestant']}: {event['action']} by {event['by']} (logged); now {event['state']}")


@models_app.command("export")
def models_export(
    name: str = typer.Argument(..., help="Contestant name or id."),
    out_dir: Path = typer.Argument(..., help="Folder to write into (created when missing)."),
    fmt: str = typer.Option(
        ..., "--format", help="gguf (one file for llama.cpp) | merged (an HF checkpoint, LoRA merged in)."
    ),
) -> None:
    """Export a model for deployment: its GGUF file, or its HF weights with any LoRA merged in."""
    from vibestudio.arena.registry import RegistryError
    from vibestudio.training.publishing.gguf_export import ConversionError
    from vibestudio.training.publishing.model_export import export

    with failing_on(RegistryError, ConversionError, OSError):
        done = export(open_db(), int(name) if name.isdigit() else name, fmt, out_dir)
    typer.echo(
        f"{done.name}: {done.format} written to {done.path} in {done.seconds:.1f} s (from {done.source})"
    )


class Gate(StrEnum):
    """The mildest verdict a CI gate stops on."""

    watch = "watch"
    unknown = "unknown"
    regress = "regress"


FAIL_ON_HELP = (
    "A CI gate: exit with status 3 when the verdict is this or worse (regress; unknown = unknown or regress; "
    "watch = anything but pass). No verdict counts as unknown."
)


def _gate(verdict_name: str | None, fail_on: Gate | None) -> None:
    """Exit with the gate's status when ``fail_on`` blocks ``verdict_name`` (after the output is printed)."""
    from vibestudio.training.report.verdict import GATE_EXIT, VerdictError, blocks

    if fail_on is None:
        return
    try:
        blocked = blocks(verdict_name, fail_on.value)
    except VerdictError as exc:
        fail(str(exc))
    if blocked:
        typer.secho(
            f"Gate: the verdict is {verdict_name or 'none yet (unknown)'}, and --fail-on {fail_on.value} blocks it.",
            fg=typer.colors.RED,
            err=True,
        )
        raise typer.Exit(GATE_EXIT)


@models_app.command("show")
def models_show(
    name: str = typer.Argument(..., help="Contestant name or id."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    fail_on: Gate | None = typer.Option(None, "--fail-on", help=FAIL_ON_HELP),
) -> None:
    """Everything about one model: lineage, ratings, head-to-head vs parent, report, evals, verdict, speed."""
    from vibestudio.arena.registry import RegistryError
    from vibestudio.training.report.model_page import model_page
    from vibestudio.training.report.text import fidelity_md, lineage_md, ratings_md, report_md
    from vibestudio.training.report.track_record import record_md

    db = open_db()
    try:
        page = model_page(db, int(name) if name.isdigit() else name)
    except RegistryError as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(page, indent=2, default=str, ensure_ascii=False))
        _gate(page["verdict"]["verdict"], fail_on)
        return
    v = page["verdict"]
    typer.echo(f"# {page['contestant']['public_name']}  {v['badge'] or '(no verdict)'}")
    typer.echo(v["state_line"])
    typer.echo(lineage_md(page))
    if page["fidelity"]:
        typer.echo(fidelity_md(page))
    typer.echo(ratings_md(page))
    typer.echo(report_md(page["report"]) if page["report"] else "No checkpoint report (not a trained child).")
    if page["track_record"]:
        typer.echo(record_md(page["track_record"]))
    ident = page["identifiability"]
    typer.echo(f"Identifiability: {ident['line'] if ident else 'no answers from ended battles (can’t tell)'}")
    if ident and ident["warning"]:
        typer.echo(f"  warning: {ident['warning']}")
    _gate(v["verdict"], fail_on)


def _report_option(name: str, help: str | None = None) -> Any:
    """``vibestudio drift``'s option for report setting ``name``: the job config's default and bounds, its help
    unless ``help`` words it for this command, and a check of the bounds as the options are read (before any
    model loads). The report is this command's point, so a setting's "off" value (0 prompts) is refused."""
    shown = getattr(REPORT, name)
    rule = report_bounds(name, required=True)
    tail = f"[default: {shown!r}" + (f"; {rule}]" if rule else "]")

    def check(value: int) -> int:
        problem = report_problem(name, value, required=True)
        if problem:
            raise typer.BadParameter(problem)
        return value

    return typer.Option(shown, help=f"{help or report_help(name)} {tail}", show_default=False, callback=check)


#: drift's own words for settings whose job-config help speaks of training (bounds and defaults stay theirs).
_PROMPTS_HELP = (
    "Held-out prompts both models answer for the drift measures (the bound is the fewest they need; the pool "
    f"holds the {DEFAULT_PROMPTS} MT-Bench first turns less any in the child's training snapshot)."
)
_SEED_HELP = (
    "Random seed for the held-out prompts and eval items drawn and for sampling (the job's seed by default, so "
    "this report matches the one made after training and reuses its cached answers)."
)


def drift_cmd(
    child: str = typer.Argument(..., help="The checkpoint (contestant name or id)."),
    against: str = typer.Option(
        None, "--against", help="Compare with this contestant instead of the parent."
    ),
    prompts: int = _report_option("drift_prompts", _PROMPTS_HELP),
    max_tokens: int = _report_option("drift_max_tokens"),
    eval_items: int = _report_option("eval_items"),
    judge: str = typer.Option(
        None, help="A judge contestant: a position-swapped head-to-head, and the differences it describes."
    ),
    describe_axes: int = _report_option("describe_axes"),
    describe_prompts: int = _report_option("describe_prompts"),
    seed: int = _report_option("seed", _SEED_HELP),
    rules: str = typer.Option(None, "--rules", help="A verdict rules YAML file (default: the built-in one)."),
    record: bool = typer.Option(
        False,
        "--record",
        help="Save the report as the checkpoint's report and record its verdict (which releases or holds it). "
        "Without it nothing is saved or recorded.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    fail_on: Gate | None = typer.Option(None, "--fail-on", help=FAIL_ON_HELP),
) -> None:
    """Compare a checkpoint with its parent (or --against) under the same conditions, and give a verdict."""
    from vibestudio.arena.registry import RegistryError
    from vibestudio.training.report import verdict
    from vibestudio.training.report.steps import drift_report, report_folder, save_report
    from vibestudio.training.report.text import UNRECORDED, report_md

    db = open_db()

    def ident(x: str) -> int | str:
        return int(x) if x.isdigit() else x

    if record and against:  # refused before minutes of answers, not after
        fail("--record saves a checkpoint's report against its parent; drop --against to record")
    if record:
        from vibestudio.arena.registry import get_contestant

        try:
            with db.session() as s:
                info = get_contestant(s, ident(child))
        except RegistryError as exc:
            fail(str(exc))
        if info.parent_id is None:
            fail(
                f"--record gates a trained checkpoint against its parent, and {info.public_name} has none (a base "
                "model is not gated): drop --record to read the comparison (--against NAME compares it with another)"
            )
    try:
        report = drift_report(
            db,
            ident(child),
            against=ident(against) if against else None,
            n_prompts=prompts,
            max_tokens=max_tokens,
            eval_items=eval_items,
            judge=judge,
            describe_axes=describe_axes,
            describe_prompts=describe_prompts,
            seed=seed,
            rules_path=rules,
            progress=lambda msg: typer.echo(msg, err=True) if not as_json else None,
        )
    except (RegistryError, verdict.VerdictError) as exc:
        fail(str(exc))
    note = "Nothing was saved or recorded (add --record to save the report and record its verdict)."
    state = UNRECORDED
    if record:
        path = save_report(report, report_folder(db, report.contestant_id))
        done = verdict.record_verdict(
            db,
            report.contestant_id,
            verdict.Verdict(**report.verdict),
            str(path),
            report=report,
            by=verdict.LOCAL_OPERATOR,
        )
        state = done.state
        note = f"Saved the report to {path} and recorded the verdict {report.verdict_name}: {report.contestant} is {done.state}."
        if done.kept_held:
            note += f" It is still held: {done.kept_held.removeprefix('kept held: ')}."
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        typer.echo(note, err=True)
    else:
        typer.echo(report_md(report.to_dict(), state=state))
        typer.echo(note)
    _gate(report.verdict_name, fail_on)


@models_app.command("release")
def models_release(
    name: str = typer.Argument(..., help="Contestant name."),
    reason: str = typer.Option(..., "--reason", help="Why it may play (logged)."),
) -> None:
    """Let a held checkpoint into anonymous battles (who and why are logged)."""
    from vibestudio.arena.registry import RegistryError
    from vibestudio.training.report.verdict import VerdictError, release

    try:
        release(open_db(), name, None, reason)
    except (RegistryError, VerdictError) as exc:
        fail(str(exc))
    typer.echo(f"{name} is released by a person (you): it may play in anonymous battles; logged.")


@models_app.command("hold")
def models_hold(
    name: str = typer.Argument(..., help="Contestant name."),
    reason: str = typer.Option(..., "--reason", help="Why it is held (logged)."),
) -> None:
    """Hold a contestant out of anonymous battles (who and why are logged)."""
    from vibestudio.arena.registry import RegistryError
    from vibestudio.training.report.verdict import VerdictError, hold

    try:
        hold(open_db(), name, None, reason)
    except (RegistryError, VerdictError) as exc:
        fail(str(exc))
    typer.echo(f"{name} is held out of anonymous battles; logged.")


@models_app.command("log")
def models_log(
    name: str = typer.Argument(..., help="Contestant name or id."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """The contestant's lifecycle: every verdict and state change, who made it, why and when."""
    from vibestudio.arena.registry import RegistryError
    from vibestudio.training.report.verdict import history

    try:
        rows = history(open_db(), int(name) if name.isdigit() else name)
    except RegistryError as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(rows, indent=2, default=str, ensure_ascii=False))
        return
    for h in rows:
        move = (
            f"{h.get('from') or '-'} -> {h['to']}" if h.get("kind") == "state" else f"verdict {h['verdict']}"
        )
        typer.echo(f"{h['at']}  {h['action']:<8} {move:<22} by {h['by']}: {h['reason']}")


@models_app.command("identifiability")
def models_identifiability(
    strip_prefill: bool = typer.Option(
        False,
        "--strip-prefill",
        help="Only the measure without the personas' fixed openings (default: with and without, side by side).",
    ),
    limit: int = typer.Option(300, min=1, help="Latest answers per contestant."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """How well each contestant's answers alone give it away (held-out classifier: AUC and top-1 with 95%
    intervals), with and without its fixed opening side by side (the difference is what the opening gives away);
    'recognisable' means votes on it are not blind in practice."""
    from vibestudio.arena.identifiability import compare_openings, contestant_identifiability
    from vibestudio.common.settings import get_settings

    with open_db().session() as s:
        if strip_prefill:
            rep = contestant_identifiability(s, limit=limit, strip_prefill=True)
        else:
            both = compare_openings(s, shown_stripped=get_settings().strip_prefill, limit=limit)
    if strip_prefill:
        if as_json:
            typer.echo(json.dumps(rep.as_dict(), indent=2, ensure_ascii=False))
            return
        typer.echo(f"{rep.n_answers} answers from ended battles, without their fixed openings; {rep.method}.")
        lines, notes = [c.line() for c in rep.contestants], rep.notes
    else:
        if as_json:
            typer.echo(json.dumps(both.as_dict(), indent=2, ensure_ascii=False))
            return
        shown = "without" if both.shown_stripped else "with"
        typer.echo(
            f"{both.n_answers} answers from ended battles, measured with and without their fixed openings (the "
            f"arena shows them {shown}); {both.method}, {both.folds} folds."
        )
        lines, notes = [c.line() for c in both.contestants], both.notes
        lines += [f"warning: {w}" for w in both.warnings()]
    for line in lines:
        typer.echo(f"  {line}")
    for note in notes:
        typer.echo(f"  note: {note}")


@models_app.command("track-record")
def models_track_record(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Does the report predict the arena? Each child's predicted win rate against its parent, the observed one
    once it has enough votes (hit or miss, Brier score), and the calibration overall and per family."""
    from vibestudio.standings.track_record import table_md
    from vibestudio.training.report.track_record import families_md, track_record

    record = track_record(open_db())
    if as_json:
        typer.echo(json.dumps(record.as_dict(), indent=2, ensure_ascii=False))
        return
    typer.echo(table_md(record))
    typer.echo(families_md(record))
