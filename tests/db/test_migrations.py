"""Migrations: a blank database migrated to head matches the models (SQLite always, PostgreSQL when set)."""

from __future__ import annotations

import os
import uuid

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from db.models import Base
from db.session import Database, alembic_config


def _diff(db: Database) -> list:
    with db.engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        return compare_metadata(ctx, Base.metadata)


def test_sqlite_blank_to_head_matches_models(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'blank.sqlite'}")
    db.migrate()
    assert _diff(db) == []
    tables = set(inspect(db.engine).get_table_names())
    assert {"contestants", "battles", "turns", "votes", "jobs", "dataset_snapshots"} <= tables
    with db.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1


def test_sqlite_downgrade_and_upgrade_again(tmp_path):
    url = f"sqlite:///{tmp_path / 'roundtrip.sqlite'}"
    db = Database(url)
    db.migrate()
    command.downgrade(alembic_config(url), "base")
    assert set(inspect(db.engine).get_table_names()) <= {"alembic_version"}
    db.migrate()
    assert _diff(db) == []


def test_database_lives_under_vibestudio_home(monkeypatch, tmp_path):
    monkeypatch.setenv("VIBESTUDIO_HOME", str(tmp_path / "vh"))
    db = Database()
    assert db.url == f"sqlite:///{tmp_path / 'vh' / 'studio.sqlite'}"
    db.migrate()
    assert (tmp_path / "vh" / "studio.sqlite").exists()


@pytest.mark.postgres
def test_postgres_blank_to_head_matches_models():
    base_url = os.environ.get("VIBESTUDIO_TEST_PG_URL")
    if not base_url:
        pytest.skip("VIBESTUDIO_TEST_PG_URL not set")
    schema = f"t_{uuid.uuid4().hex[:10]}"
    admin = create_engine(Database(base_url).url)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        sep = "&" if "?" in base_url else "?"
        url = f"{base_url}{sep}options=-csearch_path%3D{schema}"
        db = Database(url)
        db.migrate()
        assert _diff(db) == []
        command.downgrade(alembic_config(url), "base")
        db.migrate()
        assert _diff(db) == []
        db.dispose()
    finally:
        with admin.begin() as conn:
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()
