"""Engine and session factory: SQLite (WAL) under the data home by default, PostgreSQL by URL.

``VIBESTUDIO_HOME`` (default ``~/.vibestudio``) holds the SQLite file, models, snapshots and job folders.
``VIBESTUDIO_DATABASE_URL`` points at another database, such as a team's PostgreSQL.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.orm import Session, sessionmaker

_MIGRATIONS = Path(__file__).parent / "migrations"
# The PostgreSQL advisory-lock key that serialises start-up work (migrations, first-start defaults) across every
# process on one database: a stable 32-bit number derived from a name, so all versions of the studio agree.
STARTUP_LOCK_KEY = zlib.crc32(b"vibestudio:startup")


def data_home() -> Path:
    """The studio's data directory, created on first use."""
    from vibestudio.common.settings import (
        get_settings,  # here, not at import: pydantic costs a start that needs no settings
    )

    home = get_settings().data_home
    home.mkdir(parents=True, exist_ok=True)
    return home


def default_database_url() -> str:
    from vibestudio.common.settings import get_settings

    return get_settings().database_url or f"sqlite:///{data_home() / 'studio.sqlite'}"


def _normalise_url(url: str) -> str:
    # Plain postgresql:// means psycopg2 to SQLAlchemy; we ship psycopg 3.
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def _sqlite_pragmas(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def make_engine(url: str) -> Engine:
    url = _normalise_url(url)
    if url.startswith("sqlite"):
        path = url.split(":///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_size=10, max_overflow=20, pool_pre_ping=True)


class Database:
    """One engine + session factory. ``session()`` is a transaction: commit on success, rollback on error."""

    def __init__(self, url: str | None = None) -> None:
        self.url = _normalise_url(url or default_database_url())
        self.engine = make_engine(self.url)
        self._factory = sessionmaker(self.engine, expire_on_commit=False)

    @property
    def is_sqlite(self) -> bool:
        return self.url.startswith("sqlite")

    @contextmanager
    def session(self) -> Iterator[Session]:
        s = self._factory()
        try:
            yield s
            s.commit()
        except BaseException:
            s.rollback()
            raise
        finally:
            s.close()

    @contextmanager
    def startup_lock(self) -> Iterator[None]:
        """Hold the database-wide start-up lock: one process at a time migrates and writes first-start defaults.

        PostgreSQL: a session-level advisory lock on its own connection (two app replicas starting on a fresh
        database would otherwise race on ``CREATE TABLE`` and one would crash). SQLite: an exclusive ``flock``
        on a file beside the database (the file may be on a shared disk of one host only, as SQLite itself
        must be). Re-entrant within a process is not needed: callers take it once around their start-up work."""
        if self.is_sqlite:
            path = self.url.split(":///", 1)[-1]
            if not path or path == ":memory:":
                yield
                return
            import fcntl

            with open(f"{path}.startup-lock", "a+b") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(fh, fcntl.LOCK_UN)
            return
        with self.engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": STARTUP_LOCK_KEY})
            conn.commit()
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": STARTUP_LOCK_KEY})
                conn.commit()

    def migrate(self, revision: str = "head") -> None:
        """Bring the schema to ``revision`` with Alembic (idempotent), under the start-up lock.

        The chain is linear (docs/migrations.md): ``head`` is one revision, and a second head is an error
        that tests/db/test_migrations.py catches before it ships."""
        from alembic import command

        with self.startup_lock():
            command.upgrade(alembic_config(self.url), revision)

    def dispose(self) -> None:
        self.engine.dispose()


def alembic_config(url: str):  # type: ignore[no-untyped-def]
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", _normalise_url(url).replace("%", "%%"))
    return cfg


_DEFAULT: Database | None = None


def get_database(url: str | None = None) -> Database:
    """The process-wide database (created and migrated on first call) or a new one for an explicit URL."""
    global _DEFAULT
    if url is not None:
        db = Database(url)
        db.migrate()
        return db
    if _DEFAULT is None or _DEFAULT.url != _normalise_url(default_database_url()):
        _DEFAULT = Database()
        _DEFAULT.migrate()
    return _DEFAULT
