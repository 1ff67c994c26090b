"""Backups and restores: SQLite's online backup, and ``pg_dump`` for PostgreSQL.

A SQLite backup stays consistent while the app writes. For PostgreSQL we run ``pg_dump``/``pg_restore``
with an argument list, never a shell string. The password, if any, comes from the environment (PGPASSWORD
or ~/.pgpass), never from the command line. ``shown_url`` prints a database URL with its password as
``***``.

A restore replaces the database under a server's feet. So a process serving a SQLite database holds a
shared lock on ``<database file>.serving`` while it runs. ``hold_serving_lock`` takes it, called by
``vibestudio serve`` (its embedded worker runs in the same process). The kernel drops the lock when the
process ends, even by SIGKILL. ``restore`` refuses while anyone holds it, unless forced.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import IO

from sqlalchemy.engine import make_url

try:
    import fcntl
except ImportError:  # not on Windows: no serving lock there
    fcntl = None  # type: ignore[assignment]


def shown_url(url: str) -> str:
    """``url`` as it may be printed or logged: any password replaced by ``***``."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL SQLAlchemy parses: hide whatever sits between ``://`` and ``@``
        return re.sub(r"://[^/@]*@", "://***@", url)


def _lock_file(url: str) -> Path | None:
    if not url.startswith("sqlite"):
        return None
    path = make_url(url).database
    if not path or path == ":memory:":
        return None
    return Path(path + ".serving")


def hold_serving_lock(url: str) -> IO[str] | None:
    """Take the shared serving lock of a SQLite database; keep the returned file open while serving."""
    lock = _lock_file(url)
    if lock is None or fcntl is None:
        return None
    lock.parent.mkdir(parents=True, exist_ok=True)
    fh = open(lock, "a+")  # noqa: SIM115 - held for the life of the process
    fcntl.flock(fh.fileno(), fcntl.LOCK_SH)
    return fh


def being_served(url: str) -> bool:
    """Whether a process holds the serving lock of this SQLite database right now."""
    lock = _lock_file(url)
    if lock is None or fcntl is None or not lock.exists():
        return False
    with open(lock, "a+") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    return False


class BackupError(RuntimeError):
    """A backup or restore could not be done; the message says why."""


def _sqlite_path(url: str) -> Path:
    path = make_url(url).database
    if not path or path == ":memory:":
        raise BackupError(f"{shown_url(url)} is not a file database")
    return Path(path)


def integrity_check(url: str) -> str:
    """``ok`` when SQLite's integrity check passes (PostgreSQL: always ``ok``; it checks itself)."""
    if not url.startswith("sqlite"):
        return "ok"
    with sqlite3.connect(_sqlite_path(url)) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def backup(url: str, target: Path) -> Path:
    """Write a consistent copy of the database to ``target`` (a .sqlite file, or a pg_dump custom archive)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if url.startswith("sqlite"):
        src_path = _sqlite_path(url)
        if not src_path.exists():
            raise BackupError(f"database file {src_path} does not exist")
        tmp = target.with_name(target.name + ".partial")
        with sqlite3.connect(src_path) as src, sqlite3.connect(tmp) as dst:
            src.backup(dst)
        with sqlite3.connect(tmp) as conn:
            conn.execute("PRAGMA journal_mode=DELETE")
        tmp.replace(target)
        return target
    if not shutil.which("pg_dump"):
        raise BackupError("pg_dump is not installed; install the PostgreSQL client tools")
    u = make_url(url)
    cmd = ["pg_dump", "--format=custom", f"--file={target}", f"--dbname={u.database}"]
    cmd += [f"--host={u.host}"] if u.host else []
    cmd += [f"--port={u.port}"] if u.port else []
    cmd += [f"--username={u.username}"] if u.username else []
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BackupError(f"pg_dump failed: {proc.stderr.strip()[-500:]}")
    return target


def restore(url: str, source: Path, force: bool = False) -> None:
    """Replace the SQLite database with ``source`` (checked first); PostgreSQL: see the docs (pg_restore).
    Refused while a server or worker serves the database (``being_served``) unless ``force``."""
    if not source.exists():
        raise BackupError(f"backup file {source} does not exist")
    if not url.startswith("sqlite"):
        raise BackupError("restore into PostgreSQL with: pg_restore --clean --if-exists --dbname=DB FILE")
    if not force and being_served(url):
        raise BackupError(
            "the database is being served (a `vibestudio serve` is running on it): stop it first, or pass "
            "--force to restore under it"
        )
    try:
        with sqlite3.connect(source) as conn:
            status = conn.execute("PRAGMA integrity_check").fetchone()[0]
            conn.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"{source} is not a studio database backup: {exc}") from exc
    if status != "ok":
        raise BackupError(f"{source} fails the integrity check: {status}")
    dst = _sqlite_path(url)
    dst.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(source) as src, sqlite3.connect(dst) as out:
        src.backup(out)
