"""``vibestudio db migrate|backup|restore``: database maintenance."""

from pathlib import Path

import typer

from vibestudio.studio.cli._common import failing_on, group, open_db

db_app = group(help="Database maintenance.", no_args_is_help=True)


@db_app.command("migrate")
def db_migrate() -> None:
    """Create or upgrade the database schema to the latest migration."""
    from vibestudio.db.backup import shown_url

    db = open_db(seed=False)
    typer.echo(f"Database at head: {shown_url(db.url)}")


@db_app.command("backup")
def db_backup(target: Path = typer.Argument(..., help="Backup file to write.")) -> None:
    """Consistent backup of the database (SQLite online backup; PostgreSQL through pg_dump)."""
    from vibestudio.db.backup import BackupError, backup, shown_url

    db = open_db(seed=False, migrate=False)
    with failing_on(BackupError):
        backup(db.url, target)
    typer.echo(f"Backed up {shown_url(db.url)} to {target}")


@db_app.command("restore")
def db_restore(
    source: Path = typer.Argument(..., help="Backup file to restore (SQLite)."),
    force: bool = typer.Option(False, "--force", help="Restore even while a server serves the database."),
) -> None:
    """Replace the SQLite database with a backup (checked before anything is overwritten); refused while a
    server serves the database unless --force."""
    from vibestudio.db.backup import BackupError, integrity_check, restore, shown_url

    db = open_db(seed=False, migrate=False)
    with failing_on(BackupError):
        restore(db.url, source, force=force)
    db.migrate()
    typer.echo(f"Restored {source} into {shown_url(db.url)}; integrity: {integrity_check(db.url)}")


def register(root: typer.Typer) -> None:
    root.add_typer(db_app, name="db")
