"""Backup and restore of the SQLite database through the CLI, with the app's data intact."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from vibestudio.db.backup import BackupError, integrity_check, restore
from vibestudio.db.models import User
from vibestudio.db.session import Database
from vibestudio.studio.cli import app


def test_backup_then_restore_roundtrip(tmp_path, monkeypatch):
    monkeypatch.setenv("VIBESTUDIO_HOME", str(tmp_path / "home"))
    db = Database()
    db.migrate()
    with db.session() as s:
        s.add(User(name="ada", role="admin"))
    runner = CliRunner()
    out = runner.invoke(app, ["db", "backup", str(tmp_path / "b.sqlite")])
    assert out.exit_code == 0, out.output
    with db.session() as s:
        s.add(User(name="later", role="annotator"))
    out = runner.invoke(app, ["db", "restore", str(tmp_path / "b.sqlite")])
    assert out.exit_code == 0, out.output
    assert "integrity: ok" in out.output
    with db.session() as s:
        assert s.scalar(select(func.count(User.id))) == 1
    assert integrity_check(db.url) == "ok"


def test_restore_refuses_a_file_that_is_not_a_backup(tmp_path):
    bad = tmp_path / "junk.sqlite"
    bad.write_bytes(b"not a database at all" * 100)
    with pytest.raises(BackupError, match="not a studio database backup"):
        restore(f"sqlite:///{tmp_path / 'x.sqlite'}", bad)
