"""The ``vibestudio`` command line: a thin layer over the same services the web app uses."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from studio.cli_users import users_app

app = typer.Typer(
    help="Vibe Studio: arena, ratings, preference data and fine-tuning in one loop.",
    no_args_is_help=True,
    add_completion=False,
)
models_app = typer.Typer(help="Contestants in the arena.", no_args_is_help=True)
db_app = typer.Typer(help="Database maintenance.", no_args_is_help=True)
app.add_typer(models_app, name="models")
app.add_typer(db_app, name="db")
prompts_app = typer.Typer(help="Prompt sets for the arena.", no_args_is_help=True)
app.add_typer(prompts_app, name="prompts")
app.add_typer(users_app, name="users")


def _fail(msg: str) -> None:
    typer.secho(f"Error: {msg}", fg=typer.colors.RED, err=True)
    raise typer.Exit(1)


def _ctx():  # type: ignore[no-untyped-def]
    from studio.context import build_context

    return build_context()


@app.command()
def serve(
    host: str = typer.Option(None, help="Interface to bind (default 127.0.0.1)."),
    port: int = typer.Option(None, help="Port (default 7860)."),
) -> None:
    """Serve the studio web app."""
    from studio.app import serve as run
    from studio.auth import AuthConfigError

    typer.echo("Preparing the studio (database, default contestants, prompt sets)...")
    try:
        run(host, port, block=True)
    except AuthConfigError as exc:
        _fail(str(exc))


@db_app.command("migrate")
def db_migrate() -> None:
    """Create or upgrade the database schema to the latest migration."""
    from db.session import Database

    db = Database()
    db.migrate()
    typer.echo(f"Database at head: {db.url}")


@db_app.command("backup")
def db_backup(target: Path = typer.Argument(..., help="Backup file to write.")) -> None:
    """Consistent backup of the database (SQLite online backup; PostgreSQL through pg_dump)."""
    from db.backup import BackupError, backup
    from db.session import Database

    db = Database()
    try:
        backup(db.url, target)
    except BackupError as exc:
        _fail(str(exc))
    typer.echo(f"Backed up {db.url} to {target}")


@db_app.command("restore")
def db_restore(source: Path = typer.Argument(..., help="Backup file to restore (SQLite).")) -> None:
    """Replace the SQLite database with a backup (checked before anything is overwritten)."""
    from db.backup import BackupError, integrity_check, restore
    from db.session import Database

    db = Database()
    try:
        restore(db.url, source)
    except BackupError as exc:
        _fail(str(exc))
    db.migrate()
    typer.echo(f"Restored {source} into {db.url}; integrity: {integrity_check(db.url)}")


@models_app.command("list")
def models_list(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List contestants with their engine, persona and lineage."""
    from arena.registry import list_contestants

    ctx = _ctx()
    with ctx.db.session() as s:
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
        typer.echo(f"{c.id:>4}  {c.public_name:<28} {c.engine:<13} {c.description[:50]}{lineage}")


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
    from arena.personas import PersonaError, add_personas, load_persona_file, spec_from_mapping

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
            _fail("give --yaml FILE or --name NAME")
            return
        from db.session import Database

        db = Database()  # no default contestants are seeded: these personas may be the whole arena
        db.migrate()
        with db.session() as s:
            ids = add_personas(s, specs, source)
    except PersonaError as exc:
        _fail(str(exc))
        return
    for cid, spec in zip(ids, specs, strict=True):
        typer.echo(f"{cid:>4}  {spec.public_name}  ({spec.engine})")


@app.command()
def battle(
    prompt: list[str] = typer.Option(
        None, "--prompt", help="A turn to send (repeatable); asked when absent."
    ),
    vote: list[str] = typer.Option(
        None, "--vote", help="Vote per turn: left, right, tie, both_good, both_bad or skip (repeatable)."
    ),
    named: str = typer.Option(
        None, help="LEFT,RIGHT contestant names: a named battle (left out of ratings)."
    ),
) -> None:
    """Play a battle in the terminal: each turn streams to both models, you vote, then both are revealed."""
    from arena.battles import BattleError
    from arena.registry import RegistryError, get_contestant

    ctx = _ctx()
    svc = ctx.arena
    prompts, votes = list(prompt or []), list(vote or [])
    try:
        if named:
            left, _, right = named.partition(",")
            with ctx.db.session() as s:
                pair = (get_contestant(s, left.strip()).id, get_contestant(s, right.strip()).id)
            view = svc.start_battle(pair=pair, mode="named")
        else:
            view = svc.start_battle()
        i = 0
        while True:
            text = (
                prompts[i]
                if i < len(prompts)
                else (None if prompts else typer.prompt("You (empty to end)", ""))
            )
            if not text:
                break
            last = list(svc.generate_turn(view.battle_id, text))[-1]
            if last.error:
                _fail(last.error)
                return
            typer.echo(f"\n--- Model A ---\n{last.left}\n--- Model B ---\n{last.right}\n")
            choice = votes[i] if i < len(votes) else (None if votes else typer.prompt("Vote", "skip"))
            if choice and choice != "skip":
                svc.record_vote(view.battle_id, choice)
                typer.echo(f"Vote on turn {i + 1} saved.")
            i += 1
        r = svc.reveal(view.battle_id)
    except (BattleError, RegistryError) as exc:
        _fail(str(exc))
        return
    note = " (an answer named a model before the vote: not rated)" if r.revealed_before_vote else ""
    typer.echo(f"Model A was {r.left_name} · Model B was {r.right_name}{note}")


@prompts_app.command("import")
def prompts_import(
    file: Path = typer.Argument(
        ...,
        help="JSONL, JSON or CSV in the MT-Bench layout (turns, category, question_id) or Arena-Hard's "
        "(v0.1: question_id, category, cluster, turns; v2.0: uid, category, subcategory, prompt).",
    ),
    name: str = typer.Option(None, "--name", help="Prompt set name (default: the file name without suffix)."),
) -> None:
    """Import a prompt set; every row is checked before anything is written."""
    from arena.prompts import PromptImportError, import_prompt_set

    try:
        data = file.read_bytes()
    except OSError as exc:
        _fail(f"{file}: {exc}")
        return
    ctx = _ctx()
    try:
        with ctx.db.session() as s:
            n = import_prompt_set(s, name or file.stem, file.name, data, str(file))
    except PromptImportError as exc:
        _fail(str(exc))
        return
    typer.echo(f"Imported {n} prompts into set {name or file.stem!r}.")


@prompts_app.command("list")
def prompts_list() -> None:
    """List prompt sets."""
    from arena.prompts import list_sets

    ctx = _ctx()
    with ctx.db.session() as s:
        for set_name in list_sets(s):
            typer.echo(set_name)


@app.command()
def export(
    out: Path = typer.Option(None, help="Also copy the snapshot JSONL here."),
    include_named: bool = typer.Option(False, help="Include named-mode battles."),
    min_pairs: int = typer.Option(1, help="Fail when fewer pairs result."),
    fmt: str = typer.Option(
        None,
        "--format",
        help="Export annotation labels instead: trl, kto, fastchat, alpaca_eval, ultrafeedback or helpsteer2 "
        "(to --out: .jsonl, .json, .parquet, or a directory for datasets.save_to_disk).",
    ),
    queue: list[str] = typer.Option(None, help="With --format: only these queues (repeat)."),
    source: str = typer.Option(None, help="With --format: label kinds, e.g. human,import,argilla,judge."),
    aggregate: str = typer.Option(
        "each", help="With --format: one row per label (each) or per item (majority)."
    ),
    conversational: bool = typer.Option(False, help="With --format trl/kto: message lists instead of text."),
    file_format: str = typer.Option(
        None, help="With --format: jsonl, json, parquet or datasets (default: from --out)."
    ),
    snapshot: bool = typer.Option(False, help="With --format: freeze labels as a hashed training snapshot."),
) -> None:
    """Freeze the current decisive votes into a hashed preference snapshot (TRL conversational rows);
    with --format, export annotation labels (with provenance) instead."""
    from annotation.snapshots import SnapshotError, snapshot_from_votes

    if fmt or snapshot:
        from studio.annotate_cli import export_labels

        export_labels(
            fmt or "trl", out, queue, source, aggregate, conversational, file_format, snapshot, min_pairs
        )
        return
    ctx = _ctx()
    try:
        with ctx.db.session() as s:
            snap = snapshot_from_votes(s, include_named=include_named, min_pairs=min_pairs)
    except SnapshotError as exc:
        _fail(str(exc))
        return
    if out:
        out.write_bytes(Path(snap.path).read_bytes())
    typer.echo(
        json.dumps(
            {
                "id": snap.id,
                "hash": snap.hash,
                "n_pairs": snap.n_pairs,
                "path": snap.path,
                "created": snap.created,
                "skipped": snap.skipped,
            }
        )
    )


ratings_app = typer.Typer(
    help="Ratings (Bradley-Terry with CIs, tie models, Elo) from a battles file or the studio database; "
    "'predict' compares the methods on held-out votes, 'annotators' checks for rigged votes, 'methods' shows "
    "how much the tie models change the board.",
    invoke_without_command=True,
)
app.add_typer(ratings_app, name="ratings")

_BATTLES_HELP = (
    "Battles file (FastChat layout, JSON, JSONL or Parquet); without it the studio database is used."
)


def _battles_file(battles: Path | None, with_text: bool) -> Path:
    """The given file, or the studio database's rated votes written to a temporary JSONL file."""
    if battles is not None:
        return battles
    import tempfile

    from standings.records import annotated_records

    ctx = _ctx()
    with ctx.db.session() as s:
        records = annotated_records(s, with_text=with_text)
    if not records:
        _fail(f"no rated votes in {ctx.db.url}")
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")
    return Path(fh.name)


@ratings_app.callback()
def ratings(
    ctx: typer.Context,
    battles: Path = typer.Option(None, help=_BATTLES_HELP),
    style_control: bool = typer.Option(False, "--style-control", help="Control for length and markdown."),
    vibe_control: bool = typer.Option(
        False, "--vibe-control", help="Also control for emoji, flattery, hedging..."
    ),
    bootstrap: int = typer.Option(100, help="Bootstrap rounds for confidence intervals (0: sandwich)."),
    ci: str = typer.Option(
        None, help="Intervals: 'bootstrap' or 'sandwich' (default: bootstrap unless --bootstrap 0)."
    ),
    method: str = typer.Option(
        "bt", help="'bt' (ties half a win), 'rao-kupper' or 'davidson' (ties modelled)."
    ),
    robust: bool = typer.Option(False, "--robust", help="Down-weight annotators whose votes look rigged."),
    baseline: str = typer.Option(None, help="Add win rate and LC win rate against this model."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    skip_bad: bool = typer.Option(False, help="Skip bad rows (listed) instead of failing."),
) -> None:
    """Ratings (Bradley-Terry with CIs, Elo) from a battles file or the studio database."""
    if ctx.invoked_subcommand is not None:
        return
    from arena.ratings import RatingsInputError, ratings_report

    if ci not in (None, "bootstrap", "sandwich"):
        _fail(f"--ci must be 'bootstrap' or 'sandwich', got {ci!r}")
    path = _battles_file(battles, style_control or vibe_control)
    try:
        out = ratings_report(
            path,
            style_control=style_control,
            vibe_control=vibe_control,
            bootstrap=bootstrap,
            ci=ci,
            method=method,
            robust=robust,
            baseline=baseline,
            as_json=as_json,
            skip_bad=skip_bad,
        )
    except (RatingsInputError, OSError, ValueError) as exc:
        _fail(str(exc))
        return
    typer.echo(out)


def _load(battles: Path | None, with_text: bool, skip_bad: bool):  # type: ignore[no-untyped-def]
    from arena.ratings import RatingsInputError, load_battles_file

    try:
        records, _ = load_battles_file(_battles_file(battles, with_text), skip_bad=skip_bad)
    except (RatingsInputError, OSError) as exc:
        _fail(str(exc))
    return records


@ratings_app.command("predict")
def ratings_predict(
    battles: Path = typer.Option(None, help=_BATTLES_HELP),
    split: str = typer.Option(
        "both", help="'time' (fit on earlier votes, score later ones), 'random' or 'both'."
    ),
    test_fraction: float = typer.Option(0.2, help="Share of votes held out."),
    rounds: int = typer.Option(200, help="Bootstrap rounds over held-out votes for the intervals."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    skip_bad: bool = typer.Option(False, help="Skip bad rows instead of failing."),
) -> None:
    """Which method predicts held-out votes best: log-loss and Brier score with intervals per method."""
    from arena.ratings import format_predictive, predictive_check
    from arena.ratings._predict import best_board_method

    if split not in ("time", "random", "both"):
        _fail(f"--split must be 'time', 'random' or 'both', got {split!r}")
    records = _load(battles, True, skip_bad)
    splits = ["time", "random"] if split == "both" else [split]
    try:
        checks = [
            predictive_check(records, split=sp, test_fraction=test_fraction, rounds=rounds) for sp in splits
        ]
    except ValueError as exc:
        _fail(str(exc))
        return
    if as_json:
        typer.echo(
            json.dumps(
                {"checks": [c.to_dict() for c in checks], "best_board_method": best_board_method(checks)},
                indent=2,
            )
        )
        return
    typer.echo(format_predictive(checks))
    best = best_board_method(checks)
    typer.echo(f"\nBest board method: {best}" if best else "\nNo board method could be scored.")


@ratings_app.command("annotators")
def ratings_annotators(
    battles: Path = typer.Option(None, help=_BATTLES_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    skip_bad: bool = typer.Option(False, help="Skip bad rows instead of failing."),
) -> None:
    """Per-annotator diagnostics (agreement, identity-following, speed) and flags; nothing is deleted."""
    from arena.ratings import annotator_diagnostics, format_annotators

    report = annotator_diagnostics(_load(battles, False, skip_bad))
    typer.echo(json.dumps(report.to_dict(), indent=2) if as_json else format_annotators(report))


@ratings_app.command("methods")
def ratings_methods(
    battles: Path = typer.Option(None, help=_BATTLES_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    skip_bad: bool = typer.Option(False, help="Skip bad rows instead of failing."),
) -> None:
    """How much the tie models (Rao-Kupper, Davidson) change the board against Bradley-Terry."""
    from arena.ratings import method_changes

    out = method_changes(_load(battles, False, skip_bad))
    if as_json:
        typer.echo(json.dumps(out, indent=2))
        return
    methods = ["bt", *out["summary"]]
    typer.echo(f"{'model':<24}" + "".join(f"{m:>18}" for m in methods))
    for row in out["models"]:
        cells = "".join(f"{row[m]['rating']:>11.1f} (#{row[m]['rank']:<3})" for m in methods)
        typer.echo(f"{row['name']:<24}{cells}")
    for meth, s in out["summary"].items():
        ties = ", ".join(f"{k} {v['p_equal']:.3f}" for k, v in s["tie_parameters"].items())
        typer.echo(
            f"\n{meth}: largest rating change {s['max_rating_change']:.1f} points, largest rank change "
            f"{s['max_rank_change']}; tie probability between equal models: {ties or 'n/a'}"
        )
    for w in out["warnings"]:
        typer.echo(f"warning: {w}")


evals_app = typer.Typer(help="The verifiable eval set (format and arithmetic checks).", no_args_is_help=True)
app.add_typer(evals_app, name="evals")


@evals_app.command("run")
def evals_run(
    contestant: list[str] = typer.Option(
        None, help="Contestant to evaluate (repeatable; default: every active one)."
    ),
    limit: int = typer.Option(None, help="Only the first N items."),
    max_tokens: int = typer.Option(None, help="Cap each answer at this many tokens (quick runs)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON summary per contestant."),
) -> None:
    """Ask contestants the eval set, check and store the answers (they feed the Goldilocks board)."""
    from tqdm import tqdm

    from standings.evals import EvalError, run_evals
    from arena.registry import list_contestants

    ctx = _ctx()
    if not contestant:
        with ctx.db.session() as s:
            contestant = [c.public_name for c in list_contestants(s)]
    for name in contestant:
        bar = tqdm(desc=name, unit="item", disable=as_json)

        def report(done: int, total: int, item: str, bar=bar) -> None:  # type: ignore[no-untyped-def]
            bar.total, bar.n = total, done
            bar.set_postfix_str(item, refresh=True)

        try:
            run = run_evals(ctx.db, name, limit=limit, progress=report, max_tokens=max_tokens)
        except EvalError as exc:
            bar.close()
            _fail(str(exc))
            return
        bar.close()
        s = run.summary()
        if as_json:
            typer.echo(json.dumps(s))
            continue
        score = "n/a" if s["score"] is None else f"{100 * s['score']:.0f}%"
        typer.echo(f"{name}: {s['passed']}/{s['answered']} passed ({score}) in {s['seconds']:.0f} s")
        if s["stopped"]:
            typer.secho(f"  stopped early: {s['stopped']}", fg=typer.colors.YELLOW)


@evals_app.command("scores")
def evals_scores(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Each contestant's latest eval score (share of passed items) on the current eval set."""
    from standings.evals import eval_scores

    ctx = _ctx()
    with ctx.db.session() as s:
        scores = eval_scores(s)
    if as_json:
        typer.echo(json.dumps(scores, indent=2))
        return
    if not scores:
        typer.echo("No eval results yet: run `vibestudio evals run`.")
    for name, v in scores.items():
        cats = ", ".join(f"{c} {100 * x:.0f}%" for c, x in v["by_category"].items())
        typer.echo(
            f"{name}: {100 * v['score']:.0f}% of {v['answered']} ({cats}); last run {v['last_run_at']}"
        )


from studio.annotate_cli import register as _register_annotation  # noqa: E402  (annotation commands)
from studio.cli_train import register as _register_training  # noqa: E402  (train and jobs commands)

_register_annotation(app)
_register_training(app)

from studio.probes_cli import register as _register_probes  # noqa: E402  (sycophancy probe commands)

_register_probes(app)

from studio.cli_train import train_app as _train_app  # noqa: E402
from studio.health_cli import register as _register_health  # noqa: E402  (train health)

_register_health(_train_app)

from studio.families_cli import register as _register_families  # noqa: E402  (families, hide / restore)

_register_families(app, models_app)

from studio.models_cli import register as _register_models  # noqa: E402  (model page, drift, verdicts)

_register_models(app, models_app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
