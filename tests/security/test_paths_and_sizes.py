"""Names that become paths, sizes after decompression, role before work, and the database CLI, attacked
in-process: a queue name cannot hold a path, an export stays in the data home whatever the names, a path never
leaves its root (``..``, absolute parts, symlinks), a ``.gz`` is measured by what it expands to, a persona upload
from a low role is refused before it is parsed, the database password is never printed and a restore refuses
while a server holds the database."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from vibestudio.accounts import PermissionDenied, add_user
from vibestudio.annotation.formats import import_file
from vibestudio.annotation.queues import QueueError, create_queue
from vibestudio.arena.personas import import_persona_file
from vibestudio.common.files import read_records
from vibestudio.common.paths import OutsideRoot, UnsafeName, check_safe_name, file_stem, under
from vibestudio.db.backup import BackupError, being_served, hold_serving_lock, restore, shown_url
from vibestudio.db.models import AnnotationQueue, Contestant, QueueItem

HOSTILE_NAMES = [
    "../../escape",
    "/etc/cron.d/x",
    "..",
    ".hidden",
    "-rf",
    "a/b",
    "a\\b",
    "C:evil",
    "x\x00y",
    "x\ny",
    "\u202ertl",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_queue_name_cannot_hold_a_path(db, name):
    with db.session() as s, pytest.raises(QueueError) as err:
        create_queue(s, name)
    assert name.strip() not in str(err.value) or len(name.strip()) < 3
    with db.session() as s:
        assert s.scalar(select(func.count(AnnotationQueue.id))) == 0


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_any_name_becomes_a_stem_that_stays_in_its_folder(tmp_path, name):
    stem = file_stem(name)
    assert "/" not in stem and "\\" not in stem and not stem.startswith(".")
    assert under(tmp_path, stem + ".jsonl").parent == tmp_path.resolve()


def test_good_names_pass():
    for name in ("mtb-again", "import-trl-my prefs (1)", "Queue for Ana", "日本語", "v1.2"):
        assert check_safe_name(name) == name
    with pytest.raises(UnsafeName):
        check_safe_name("x" * 129)


def test_a_path_never_leaves_its_root(tmp_path):
    root = tmp_path / "home" / "exports"
    root.mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root / "link").symlink_to(tmp_path / "outside")
    for parts in (["../x"], ["/etc/passwd"], ["a", "../../x"], ["link", "file"], [".."]):
        with pytest.raises(OutsideRoot):
            under(root, *parts)
    assert under(root, "a", "b.jsonl") == root.resolve() / "a" / "b.jsonl"


def test_an_import_into_a_hostile_queue_name_writes_nothing(db, tmp_path):
    prefs = tmp_path / "prefs.jsonl"
    prefs.write_text('{"prompt": "Say hi.", "chosen": "Hi!", "rejected": "No."}\n')
    with db.session() as s, pytest.raises(QueueError):
        import_file(s, prefs, "trl", "../../outside")
    with db.session() as s:
        assert s.scalar(select(func.count(QueueItem.id))) == 0
        assert s.scalar(select(func.count(AnnotationQueue.id))) == 0


def test_a_web_queue_cannot_read_a_rubric_file(db, tmp_path, monkeypatch):
    """Over the web a queue's rubric is a name; a path (an existence oracle, a file read) is refused before
    anything is read. The operator's CLI may still give a path (``rubric_paths=True``)."""
    import vibestudio.annotation.rubrics as rubrics
    from vibestudio.annotation.onpolicy import OnPolicySpec, generate_queue

    reads = []
    monkeypatch.setattr(rubrics, "read_yaml", lambda p: reads.append(p) or (None, None))
    for rubric in (str(tmp_path / "secret.yaml"), "../../etc/x", "/etc/hostname"):
        spec = OnPolicySpec(queue="q", prompt_set="none", policy="none", rubric=rubric)
        with pytest.raises(QueueError, match="by its name"):
            generate_queue(db, spec)
    assert reads == []


# --- sizes after decompression --------------------------------------------------------------------------------


def _bomb(path: Path, mb: int) -> Path:
    """A gzip file of a few KB that expands to ``mb`` MB of JSON lines."""
    line = (json.dumps({"prompt": "p", "chosen": "a" * 1000, "rejected": "b"}) + "\n").encode()
    with gzip.open(path, "wb", compresslevel=9) as fh:
        for _ in range(mb * 2**20 // len(line) + 1):
            fh.write(line)
    return path


def test_a_gz_is_measured_by_what_it_expands_to(tmp_path, monkeypatch):
    bomb = _bomb(tmp_path / "bomb.jsonl.gz", 3)
    assert bomb.stat().st_size < 100_000
    monkeypatch.setenv("VIBESTUDIO_MAX_IMPORT_MB", "1")
    records, errors = read_records(bomb)
    assert records == [] and "after decompression" in errors[0].message
    monkeypatch.setenv("VIBESTUDIO_MAX_IMPORT_MB", "8")
    records, errors = read_records(bomb)
    assert errors == [] and len(records) > 1000


def test_a_gz_json_array_is_capped_too(tmp_path, monkeypatch):
    path = tmp_path / "array.json.gz"
    with gzip.open(path, "wb") as fh:
        fh.write(b"[" + b" " * (3 * 2**20) + b"]")
    monkeypatch.setenv("VIBESTUDIO_MAX_IMPORT_MB", "1")
    records, errors = read_records(path)
    assert records == [] and "after decompression" in errors[0].message


def test_a_parquet_file_is_measured_uncompressed(tmp_path, monkeypatch):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"prompt": ["p" * 10_000] * 300}), path, compression="zstd")
    assert path.stat().st_size < 200_000
    monkeypatch.setenv("VIBESTUDIO_MAX_IMPORT_MB", "1")
    records, errors = read_records(path)
    assert records == [] and "after decompression" in errors[0].message


# --- role before work -----------------------------------------------------------------------------------------


def test_a_persona_upload_from_a_low_role_is_refused_before_it_is_read(db, tmp_path, monkeypatch):
    ann = add_user(db, "ann", "a long test password", "annotator")
    broken = tmp_path / "personas.yaml"
    broken.write_text("personas: [name: : : {\n")  # a syntax error: reading it would say so
    reads = []
    import vibestudio.arena.personas as personas

    real = personas.read_yaml
    monkeypatch.setattr(personas, "read_yaml", lambda p: reads.append(p) or real(p))
    with db.session() as s, pytest.raises(PermissionDenied):
        import_persona_file(s, broken, user_id=ann.id)
    assert reads == []
    with db.session() as s:
        assert s.scalar(select(func.count(Contestant.id))) == 0


def test_persona_upload_errors_name_the_upload_not_the_server_path(db, tmp_path):
    rita = add_user(db, "rita", "a long test password", "researcher")
    bad = tmp_path / "deep" / "server" / "path" / "p.yaml"
    bad.parent.mkdir(parents=True)
    bad.write_text("name: x\nengine: nope\n")
    with db.session() as s, pytest.raises(ValueError) as err:
        import_persona_file(s, bad, "upload", user_id=rita.id)
    assert str(tmp_path) not in str(err.value) and "upload" in str(err.value)


# --- the database CLI ------------------------------------------------------------------------------------------


def test_a_database_password_is_never_shown():
    assert shown_url("postgresql://vs:hunter2@db:5432/studio") == "postgresql://vs:***@db:5432/studio"
    assert "hunter2" not in shown_url("postgresql+psycopg://vs:hunter2@db/studio")
    assert "hunter2" not in shown_url("not a url://vs:hunter2@db")


def test_db_commands_print_no_password(monkeypatch, tmp_path):
    import vibestudio.studio.cli.database as database
    from vibestudio.studio.cli import app

    class Fake:
        url = "postgresql://vs:hunter2@127.0.0.1:1/studio"

        def migrate(self):
            pass

    monkeypatch.setattr(database, "open_db", lambda **kw: Fake())
    monkeypatch.setattr("vibestudio.db.backup.backup", lambda url, target: target)
    for args in (["db", "migrate"], ["db", "backup", str(tmp_path / "b")]):
        out = CliRunner().invoke(app, args)
        assert out.exit_code == 0, out.output
        assert "hunter2" not in out.output and "***" in out.output


def test_restore_refuses_while_the_database_is_served(tmp_path):
    from vibestudio.db.backup import backup
    from vibestudio.db.session import Database

    url = f"sqlite:///{tmp_path / 'studio.sqlite'}"
    db = Database(url)
    db.migrate()
    backup(url, tmp_path / "copy.sqlite")
    lock = hold_serving_lock(url)
    try:
        assert being_served(url)
        with pytest.raises(BackupError, match="being served"):
            restore(url, tmp_path / "copy.sqlite")
        restore(url, tmp_path / "copy.sqlite", force=True)
    finally:
        assert lock is not None
        lock.close()
    assert not being_served(url)
    restore(url, tmp_path / "copy.sqlite")
    db.dispose()
