"""``vibestudio db migrate|backup|restore``: database maintenance."""

from __future__ import annotations

from pathlib import Path

import typer

from studio.cli._common import fail, open_db

db_app = typer.Typer(help="Database maintenance.", no_args_is_help=True)


@db_app.command("migrate")
def db_migrate() -> None:
    """Create or upgrade the database schema to the latest migration."""
    db = open_db(seed=False)
    typer.echo(f"Database at head: {db.url}")


@db_app.command("backup")
def db_backup(target: Path = typer.Argument(..., help="Backup file to write.")) -> None:
    """Consistent backup of the database (SQLite online backup; PostgreSQL through pg_dump)."""
    from db.backup import BackupError, backup

    db = open_db(seed=False, migrate=False)
    try:
        backup(db.url, target)
    except BackupError as exc:
        fail(str(exc))
    typer.echo(f"Backed up {db.url} to {target}")


@db_app.command("restore")
def db_restore(source: Path = typer.Argument(..., help="Backup file to restore (SQLite).")) -> None:
    """Replace the SQLite database with a backup (checked before anything is overwritten)."""
    from db.backup import BackupError, integrity_check, restore

    db = open_db(seed=False, migrate=False)
    try:
        restore(db.url, source)
    except BackupError as exc:
        fail(str(exc))
    db.migrate()
    typer.echo(f"Restored {source} into {db.url}; integrity: {integrity_check(db.url)}")


def register(root: typer.Typer) -> None:
    root.add_typer(db_app, name="db")
