"""Migrations: a blank database migrated to head matches the models (SQLite always, PostgreSQL when set)."""

from __future__ import annotations

import os
import uuid

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from tests.helpers.postgres import PG_URL, pg_schema
from vibestudio.db.models import Base
from vibestudio.db.session import Database, alembic_config


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


def _script():
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config("sqlite://"))


def test_one_head_and_a_linear_chain_after_the_merge():
    script = _script()
    assert len(script.get_heads()) == 1, (
        f"two heads: {script.get_heads()} (a new migration must revise the head)"
    )
    # From the merge on, every revision has exactly one parent and exactly one child, except the head.
    chain = []
    rev = script.get_revision(script.get_current_head())
    while rev.revision != "0009_merge_fan":
        assert isinstance(rev.down_revision, str), (
            f"{rev.revision} revises {rev.down_revision}: one parent only"
        )
        chain.append(rev.revision)
        rev = script.get_revision(rev.down_revision)
    for r in chain:
        assert len(script.get_revision(r).nextrev) <= 1


def test_migration_files_have_unique_numbers():
    from collections import Counter
    from pathlib import Path

    versions = Path(_script().versions)
    numbers = Counter(p.name.split("_", 1)[0] for p in versions.glob("*.py"))
    dup = sorted(n for n, c in numbers.items() if c > 1)
    assert not dup, f"duplicate migration numbers: {dup}"


def _legacy_heads() -> tuple[str, ...]:
    """The early fan (0002-0008, each revising 0001) that 0009_merge_fan joins: a database made before the merge
    is stamped at all of them at once."""
    return tuple(_script().get_revision("0009_merge_fan").down_revision)


def _upgrade_from_the_legacy_heads(url: str) -> None:
    """Build a database the way today's main did (every branch of the fan applied), then migrate it to head."""
    cfg = alembic_config(url)
    for head in _legacy_heads():
        command.upgrade(cfg, head)
    db = Database(url)
    try:
        with db.engine.connect() as conn:
            stamped = {r[0] for r in conn.execute(text("SELECT version_num FROM alembic_version"))}
        assert stamped == set(_legacy_heads())
        db.migrate()
        with db.engine.connect() as conn:
            stamped_now = [r[0] for r in conn.execute(text("SELECT version_num FROM alembic_version"))]
        assert stamped_now == [_script().get_current_head()]
        assert _diff(db) == []
    finally:
        db.dispose()


def test_sqlite_database_at_the_legacy_heads_upgrades_to_head(tmp_path):
    _upgrade_from_the_legacy_heads(f"sqlite:///{tmp_path / 'legacy.sqlite'}")


@pytest.mark.postgres
def test_postgres_database_at_the_legacy_heads_upgrades_to_head():
    if not PG_URL:
        pytest.skip("VIBESTUDIO_TEST_PG_URL not set")
    with pg_schema(PG_URL) as url:
        _upgrade_from_the_legacy_heads(url)
