"""Databases for tests: SQLite in a folder, or PostgreSQL on the server named by ``VIBESTUDIO_TEST_PG_URL`` (unset:
PostgreSQL tests skip) in one fresh schema per use."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from vibestudio.db.session import Database

PG_URL = os.environ.get("VIBESTUDIO_TEST_PG_URL")


@contextmanager
def pg_schema(base_url: str) -> Iterator[str]:
    """A fresh PostgreSQL schema for one test; yields a URL whose connections use it, drops it afterwards."""
    from sqlalchemy import create_engine, text

    from vibestudio.db.session import Database

    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(Database(base_url).url)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        yield f"{base_url}{'&' if '?' in base_url else '?'}options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


#: Parameters of a database fixture: SQLite always, PostgreSQL with ``-m postgres``.
KINDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
#: One kind for a slow test whose subject is not the store (a training run, two processes): PostgreSQL where the
#: run has one (the team setup, and what CI provides), else SQLite. Use it as
#: ``@pytest.mark.parametrize("db", ONE_KIND, indirect=True)``; the store itself is checked on both kinds by the
#: default and PostgreSQL lanes, so the slow lane pays for each training run once.
ONE_KIND = [pytest.param("postgres", marks=pytest.mark.postgres)] if PG_URL else ["sqlite"]


@contextmanager
def migrated_database(kind: str, folder: Path) -> Iterator[Database]:
    """A migrated database of ``kind`` (``sqlite`` in ``folder``, or ``postgres``), disposed of afterwards."""
    from vibestudio.db.session import Database

    if kind == "sqlite":
        database = Database(f"sqlite:///{folder / 'test.sqlite'}")
        database.migrate()
        try:
            yield database
        finally:
            database.dispose()
        return
    if not PG_URL:
        pytest.skip("VIBESTUDIO_TEST_PG_URL not set")
    with pg_schema(PG_URL) as url:
        database = Database(url)
        database.migrate()
        try:
            yield database
        finally:
            database.dispose()
