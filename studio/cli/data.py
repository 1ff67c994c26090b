"""``vibestudio import`` and ``vibestudio export``: preference data in and out of the studio.

``import`` validates every row of a file before writing anything. It reads FastChat, AlpacaEval,
UltraFeedback, HelpSteer2 and TRL. ``export`` freezes the decisive votes into a hashed preference
snapshot. With ``--format`` it writes annotation labels (with provenance) in a training or third-party
layout instead.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from vibestudio.studio.cli._common import fail, open_db

if TYPE_CHECKING:
    from vibestudio.annotation.unpaired import ScoreRule


def import_cmd(
    file: Path = typer.Argument(..., help="JSON, JSONL, Parquet (optionally .gz) file to import."),
    fmt: str = typer.Option(
        "auto", "--format", help="fastchat, alpaca_eval, ultrafeedback, helpsteer2, trl or auto."
    ),
    queue: str = typer.Option(None, help="Queue to import into (default: import-FORMAT-FILESTEM)."),
    skip_bad: bool = typer.Option(False, "--skip-bad", help="Import the good rows and list the bad ones."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Validate only; write nothing."),
    encoding: str = typer.Option(None, help="File encoding when not UTF-8 (e.g. cp1252, latin-1, utf-16)."),
    max_line_mb: float = typer.Option(16, help="Longest JSONL line accepted, in MB."),
    rubric: str = typer.Option(None, help="Rubric for a new queue (name or YAML path)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Import preference data; every row is validated before anything is written (one transaction)."""
    from vibestudio.annotation.formats import ImportValidationError, import_file
    from vibestudio.annotation.queues import QueueError
    from vibestudio.annotation.rubrics import RubricError

    db = open_db()
    try:
        with db.session() as s:
            report = import_file(
                s,
                file,
                fmt,
                queue,
                skip_bad=skip_bad,
                dry_run=dry_run,
                encoding=encoding,
                max_line_bytes=int(max_line_mb * 2**20),
                rubric=rubric,
            )
    except ImportValidationError as exc:
        if as_json:
            typer.echo(json.dumps(exc.report.as_dict(), indent=2))
            raise typer.Exit(1) from exc
        fail(f"{exc}\nNothing was written. Fix the rows, or pass --skip-bad to import the others.")
    except (QueueError, RubricError, OSError) as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(report.as_dict(), indent=2))
        return
    typer.echo(report.summary())
    for line in report.lines():
        typer.echo(f"  skipped: {line}")


def export(
    out: Path = typer.Option(None, help="Also copy the snapshot JSONL here."),
    include_named: bool = typer.Option(False, help="Include named-mode battles."),
    self_play: bool = typer.Option(
        True, "--self-play/--no-self-play", help="Include self-play battles (on-policy pairs)."
    ),
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
    snapshot: bool = typer.Option(
        False,
        help="With --format: freeze labels as a hashed training snapshot (--format kto: unpaired rows a KTO job "
        "trains on).",
    ),
    score_criterion: str = typer.Option(
        None, help="With --format kto: label answers by this rubric criterion's scores (human or judge)."
    ),
    desirable_threshold: float = typer.Option(
        None, help="With --score-criterion: scores at or above this are desirable (default: mid-scale)."
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Print the pairs a snapshot would freeze now and why votes are left out; write nothing.",
    ),
) -> None:
    """Freeze the current decisive votes into a hashed preference snapshot (TRL conversational rows);
    with --format, export annotation labels (with provenance) instead."""
    from vibestudio.annotation.snapshots import SnapshotError, collected, snapshot_from_votes

    if dry_run and (fmt or snapshot):
        fail(
            "--dry-run counts the pairs a vote snapshot would freeze; it does not take --format or --snapshot"
        )
    if dry_run:  # the Data tab's counts (``annotation.snapshots.collected``), under these filters
        with open_db().session() as s:
            counts = collected(s, include_named=include_named, include_self_play=self_play)
        typer.echo(json.dumps({**asdict(counts), "unread": counts.unread}))  # votes a snapshot does not read
        return

    if fmt or snapshot:
        from vibestudio.annotation.unpaired import score_rule

        if (score_criterion or desirable_threshold is not None) and fmt != "kto":
            fail("--score-criterion and --desirable-threshold need --format kto")
        try:
            rule = score_rule(score_criterion or "", desirable_threshold)
        except ValueError as exc:
            fail(str(exc))
        export_labels(
            fmt or "trl",
            out,
            queue,
            source,
            aggregate,
            conversational,
            file_format,
            snapshot,
            min_pairs,
            rule,
        )
        return
    try:
        with open_db().session() as s:
            snap = snapshot_from_votes(
                s, include_named=include_named, min_pairs=min_pairs, include_self_play=self_play
            )
    except SnapshotError as exc:
        fail(str(exc))
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


def export_labels(
    fmt: str,
    out: Path | None,
    queues: list[str] | None,
    source: str | None,
    aggregate: str,
    conversational: bool,
    file_format: str | None,
    snapshot: bool,
    min_rows: int,
    rule: ScoreRule | None = None,
) -> None:
    """``vibestudio export --format ...``: labels to TRL / KTO / third-party layouts, or a frozen snapshot."""
    from vibestudio.annotation.formats import ExportSpec, export_file, snapshot_from_labels
    from vibestudio.annotation.queues import LABEL_KINDS, QueueError
    from vibestudio.annotation.snapshots import SnapshotError

    kinds = tuple(k.strip() for k in source.split(",")) if source else LABEL_KINDS
    spec = ExportSpec(fmt, conversational, queues or None, kinds, aggregate, rule)
    db = open_db()
    try:
        with db.session() as s:
            if snapshot:
                snap = snapshot_from_labels(s, spec, min_pairs=min_rows)
                info: dict[str, Any] = {
                    "snapshot_id": snap.id,
                    "hash": snap.hash,
                    "n_pairs": snap.n_pairs,
                    "path": snap.path,
                    "created": snap.created,
                    "skipped": snap.skipped,
                }
            else:
                if out is None:
                    fail("--out is required with --format (a .jsonl, .json or .parquet file, or a directory)")
                res = export_file(s, spec, out, file_format, min_rows=min_rows)
                info = {
                    "path": res.path,
                    "format": res.fmt,
                    "file_format": res.file_format,
                    "rows": res.n_rows,
                    "skipped": res.skipped,
                    "sha256": res.sha256,
                }
    except (QueueError, SnapshotError, OSError) as exc:
        fail(str(exc))
    typer.echo(json.dumps(info))
