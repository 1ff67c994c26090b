"""``vibestudio ratings [predict|annotators|methods|judges|kinds|for-prompt]``: ratings from a battles file
or the studio database.

A thin layer over ``standings.ratings`` (pure statistics). With ``--battles FILE`` nothing but the file is
read. The database (SQLAlchemy) is opened only when no file is given. On the studio database the board is
the one every view shows: ``standings.leaderboard.standard_options`` through the leaderboard service, as
changed by the options given. So a model's rating and interval here are the Leaderboard tab's, the
decision card's and the model page's.
"""

import json
from pathlib import Path
from typing import Any

import typer

from vibestudio.studio.cli._common import fail, group, open_db

ratings_app = group(
    help="Ratings (Bradley-Terry with CIs, tie models, Elo) from a battles file or the studio database; "
    "'predict' compares the methods on held-out votes, 'annotators' checks for rigged votes, 'methods' shows "
    "how much the tie models change the board.",
    invoke_without_command=True,
)

_BATTLES_HELP = (
    "Battles file (FastChat layout, JSON, JSONL or Parquet); without it the studio database is used."
)


def _battles_file(battles: Path | None, with_text: bool) -> Path:
    """The given file, or the studio database's rated votes written to a temporary JSONL file."""
    if battles is not None:
        return battles
    import tempfile

    from vibestudio.standings.records import annotated_records

    db = open_db()
    with db.session() as s:
        records = annotated_records(s, with_text=with_text)
    if not records:
        fail(f"no rated votes in {db.url}")
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
    bootstrap: int = typer.Option(
        None,
        help="Bootstrap rounds for confidence intervals (0: sandwich; default 100 for a file, the leaderboard's "
        "setting on the studio database).",
    ),
    ci: str = typer.Option(
        None, help="Intervals: 'bootstrap' or 'sandwich' (default: bootstrap unless --bootstrap 0)."
    ),
    method: str = typer.Option(
        None,
        help="'bt' (ties half a win), 'rao-kupper' or 'davidson' (ties modelled), or 'auto' (the best predictor "
        "of held-out votes; the studio database only). Default: bt for a file, the Leaderboard's auto on the "
        "studio database.",
    ),
    robust: bool = typer.Option(False, "--robust", help="Down-weight annotators whose votes look rigged."),
    baseline: str = typer.Option(None, help="Add win rate and LC win rate against this model."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    skip_bad: bool = typer.Option(False, help="Skip bad rows (listed) instead of failing."),
    flip: bool = typer.Option(
        True, "--flip/--no-flip", help="Votes-to-flip per adjacent pair (JSON: top-level 'votes_to_flip')."
    ),
) -> None:
    """Ratings (Bradley-Terry with CIs, Elo) from a battles file or the studio database."""
    if ctx.invoked_subcommand is not None:
        return
    from vibestudio.standings.ratings import RatingsInputError, ratings_report

    if ci not in (None, "bootstrap", "sandwich"):
        fail(f"--ci must be 'bootstrap' or 'sandwich', got {ci!r}")
    if battles is None and not robust and baseline is None:
        typer.echo(_studio_board(style_control, vibe_control, bootstrap, ci, method, as_json, flip))
        return
    bootstrap = 100 if bootstrap is None else bootstrap
    method = method or "bt"
    # LC win rates need the answers' lengths: read the texts for --baseline too
    path = _battles_file(battles, style_control or vibe_control or baseline is not None)
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
            votes_to_flip=flip,
        )
    except (RatingsInputError, OSError, ValueError) as exc:
        fail(str(exc))
    typer.echo(out)


def _studio_board(
    style_control: bool,
    vibe_control: bool,
    bootstrap: int | None,
    ci: str | None,
    method: str | None,
    as_json: bool,
    flip: bool,
) -> str:
    """The studio database's board through the leaderboard service: the options every view shows unless given."""
    from vibestudio.standings.leaderboard import LeaderboardService, standard_options
    from vibestudio.standings.ratings import Leaderboard, format_board

    changes: dict[str, Any] = {"style_control": style_control, "vibe_control": vibe_control}
    if method is not None:
        changes["method"] = method
    if bootstrap is not None:
        changes.update(bootstrap=max(bootstrap, 2), ci_method="bootstrap" if bootstrap > 0 else "sandwich")
    if ci is not None:
        changes["ci_method"] = ci
    db = open_db()
    service = LeaderboardService(db)
    try:
        options = standard_options(**changes)
        board = service.board(options)
    except ValueError as exc:
        fail(str(exc))
    if not board["models"]:
        fail(f"no rated votes in {db.url}")
    flips = service.votes_to_flip(options, refresh=False) if flip else None
    if as_json:
        if flips is not None:
            board = {**board, "votes_to_flip": flips["votes_to_flip"]}
        return json.dumps({k: v for k, v in board.items() if k != "refresh"}, indent=2, default=str)
    text = format_board(Leaderboard.from_dict(board))
    if flips is not None:
        text += "\n\nVotes to flip (plain Bradley-Terry order; each count checked by refitting without those votes):"
        text += f"\n  {flips['headline']}"
    return text


def _load(battles: Path | None, with_text: bool, skip_bad: bool) -> Any:
    """The battle records of the file (or the database), or the error exit with the file's first bad row."""
    from vibestudio.standings.ratings import RatingsInputError, load_battles_file

    try:
        records, _ = load_battles_file(_battles_file(battles, with_text), skip_bad=skip_bad)
    except (RatingsInputError, OSError) as exc:
        fail(str(exc))
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
    from vibestudio.standings.ratings import format_predictive, predictive_check
    from vibestudio.standings.ratings._predict import best_board_method

    if split not in ("time", "random", "both"):
        fail(f"--split must be 'time', 'random' or 'both', got {split!r}")
    records = _load(battles, True, skip_bad)
    splits = ["time", "random"] if split == "both" else [split]
    try:
        checks = [
            predictive_check(records, split=sp, test_fraction=test_fraction, rounds=rounds) for sp in splits
        ]
    except ValueError as exc:
        fail(str(exc))
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
    from vibestudio.standings.ratings import annotator_diagnostics, format_annotators

    report = annotator_diagnostics(_load(battles, False, skip_bad))
    typer.echo(json.dumps(report.to_dict(), indent=2) if as_json else format_annotators(report))


@ratings_app.command("methods")
def ratings_methods(
    battles: Path = typer.Option(None, help=_BATTLES_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    skip_bad: bool = typer.Option(False, help="Skip bad rows instead of failing."),
) -> None:
    """How much the tie models (Rao-Kupper, Davidson) change the board against Bradley-Terry."""
    from vibestudio.standings.ratings import method_changes

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


@ratings_app.command("judges")
def ratings_judges(
    judge: list[str] = typer.Option(
        None,
        help="A judge's name as in the votes' 'judge' field (repeatable); from the studio database: every judge "
        "with labels unless named.",
    ),
    battles: Path = typer.Option(None, help=_BATTLES_HELP),
    source: str = typer.Option(
        "pooled",
        help="Board on 'human' votes only, 'judge' votes only, or 'pooled' (judge weight as chosen).",
    ),
    by_vibe: bool = typer.Option(
        False, "--by-vibe", help="Also the exchange rate per vibe (votes whose answers differ in it)."
    ),
    rounds: int = typer.Option(30, help="Bootstrap rounds for the exchange rate's interval."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    skip_bad: bool = typer.Option(False, help="Skip bad rows instead of failing."),
) -> None:
    """What a judge vote is worth: one human vote ~ k judge votes (weight chosen by held-out human votes), and the
    board human-only, judge-only or pooled. Without --battles: the arena's human votes pooled with the judge and
    annotator labels on the studio's annotation queues."""
    from vibestudio.standings.judge_worth import JudgeError, judge_report

    if source not in ("human", "judge", "pooled"):
        fail(f"--source must be 'human', 'judge' or 'pooled', got {source!r}")
    records: Any = None
    if battles is not None:
        records = _load(battles, by_vibe, skip_bad)
        if not judge:
            fail("--judge is needed with --battles: name the judge(s) as in the votes' 'judge' field")
    try:
        if records is None:
            db = open_db()
            out = judge_report(db, judges=judge or None, source=source, rounds=rounds, by_vibe=by_vibe)
        else:
            out = judge_report(
                None, records=records, judges=judge, source=source, rounds=rounds, by_vibe=by_vibe
            )
    except (JudgeError, ValueError) as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(out, indent=2))
        return
    for line in out["sentences"]:
        typer.echo(line)
    for line in out.get("vibe_sentences", []):
        typer.echo(line)
    for row in (out.get("by_vibe") or {}).get("rows", []):
        w = row["worth"]
        if w is None and not row["n_judge"]:
            continue
        rate = w["sentence"] if w else f"{row['judge']}: can't tell ({row['note']})"
        typer.echo(f"  [{row['vibe']}] {rate}")
    weight = f" (judge weight {out['judge_weight']:.3g})" if source == "pooled" else ""
    typer.echo(f"\nBoard on {source} votes{weight}:")
    typer.echo(_board_lines(out["board"]))


def _ci(m: dict[str, Any]) -> str:
    """A row's interval, 20 characters wide; "can't tell" when the board could not bound it (reason below)."""
    if m.get("cant_tell") or m.get("ci_low") is None or m.get("ci_high") is None:
        return f"{'can’t tell':>20}"
    return f"   [{m['ci_low']:>7.1f}, {m['ci_high']:>7.1f}]"


def _cant_tell_lines(models: list[dict[str, Any]]) -> list[str]:
    return [f"can't tell {m['name']}'s interval: {m['cant_tell']}" for m in models if m.get("cant_tell")]


def _board_lines(board: dict[str, Any]) -> str:
    lines = [f"{'#':>3} {'model':<28}{'rating':>8}{'95% CI':>20}{'votes':>8}"]
    for m in board["models"]:
        lines.append(
            f"{m['rank']:>3} {m['name']:<28}{m['rating']:>8.1f}{_ci(m)}{m.get('n_votes', m['n_battles']):>8}"
        )
    lines += _cant_tell_lines(board["models"])
    return "\n".join(lines + [f"warning: {w}" for w in board.get("warnings", [])])


@ratings_app.command("for-prompt")
def ratings_for_prompt(
    text: str = typer.Argument(..., help="The prompt to rank the models for."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Which model for this prompt: the prompt-conditioned board (per-kind offsets shrunk to the global board) at
    the prompt's kind probabilities from the studio's prompt classifier, with 95% intervals."""
    from vibestudio.standings.leaderboard import LeaderboardService

    db = open_db()
    try:
        out = LeaderboardService(db).for_prompt(text)
    except ValueError as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(out, indent=2))
        return
    kinds = ", ".join(f"{k} {p:.2f}" for k, p in list(out["kinds"].items())[:3]) or "unknown"
    typer.echo(f"Prompt kind: {kinds} (shrinkage {out['board']['shrink']:g})")
    for k, m in enumerate(out["models"], 1):
        typer.echo(
            f"{k:>3} {m['name']:<28}{m['rating']:>8.1f}{_ci(m)}  rank {m['rank_low']}-{m['rank_high']}"
        )
    for line in _cant_tell_lines(out["models"]):
        typer.echo(line)
    for note in out["notes"]:
        typer.echo(f"note: {note}")


@ratings_app.command("kinds")
def ratings_kinds(
    text: list[str] = typer.Option(None, "--text", help="A prompt to classify (repeatable)."),
    folds: int = typer.Option(5, help="Folds for the held-out accuracy."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Prompts by kind: the category classifier trained on the studio's labelled prompt sets, its held-out
    accuracy, and categories for the given prompts and for typed battle prompts."""
    from vibestudio.standings.prompt_kinds import classify, kinds_report, typed_prompt_kinds

    db = open_db()
    with db.session() as s:
        report = kinds_report(s, folds=folds)
        given = classify(s, list(text or []))
        typed = typed_prompt_kinds(s)
    from vibestudio.standings.leaderboard import LeaderboardService

    coverage = LeaderboardService(db).category_coverage()
    counts: dict[str, int] = {}
    for v in typed.values():
        counts[v["category"]] = counts.get(v["category"], 0) + 1
    if as_json:
        out = {
            "report": report.to_dict(),
            "classified": given,
            "typed_battles": len(typed),
            "typed_by_kind": counts,
            "coverage": coverage,
        }
        typer.echo(json.dumps(out, indent=2))
        return
    typer.echo(report.sentence())
    for c in given:
        kind = (
            "can't tell (no labelled prompts)"
            if c["category"] is None
            else f"{c['category']} (p={c['p']:.2f})"
        )
        typer.echo(f"  {c['text'][:60]!r}: {kind}")
    by = coverage["by_source"]
    share = coverage["typed_covered"]
    typer.echo(
        f"rated votes by category source: {by['set']} from a prompt set, {by['labelled']} labelled, "
        f"{by['predicted']} predicted, {by['none']} none"
        + (f" ({100 * share:.0f}% of typed-prompt votes have a category)" if share is not None else "")
    )
    if typed:
        shown = ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        typer.echo(f"typed battle prompts ({len(typed)}): {shown}")
