"""Files several app processes write on one data home: whole files or nothing, one writer at a time where it
matters (``common.filelocks``), the vote cache's saved rows, and one snapshot row for one content hash."""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path

from sqlalchemy import func, select

from vibestudio.common.filelocks import atomic_write_bytes, file_lock
from vibestudio.db.models import DatasetSnapshot

SIZE = 512 * 1024


def _writer(target: str, k: int, rounds: int) -> None:
    for _ in range(rounds):
        atomic_write_bytes(Path(target), bytes([k]) * SIZE)


def test_racing_processes_write_whole_files_only(tmp_path):
    target = tmp_path / "shared.bin"
    atomic_write_bytes(target, b"\0" * SIZE)
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(target), k, 40)) for k in (1, 2, 3, 4)]
    for p in procs:
        p.start()
    seen = set()
    while any(p.is_alive() for p in procs):
        data = target.read_bytes()
        assert len(data) == SIZE and data == bytes([data[0]]) * SIZE, "a reader saw a half-written file"
        seen.add(data[0])
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    assert len(seen) >= 2  # the reader did see several writers' files
    assert [p.name for p in tmp_path.iterdir()] == ["shared.bin"]  # no temporary file left behind


def _hold(path: str, started, hold_s: float) -> None:
    with file_lock(Path(path)):
        started.set()
        time.sleep(hold_s)


def test_the_file_lock_makes_another_process_wait(tmp_path):
    ctx = multiprocessing.get_context("fork")
    started = ctx.Event()
    p = ctx.Process(target=_hold, args=(str(tmp_path / "x.lock"), started, 3.0))
    p.start()
    assert started.wait(30)
    t0 = time.perf_counter()
    with file_lock(tmp_path / "x.lock"):
        waited = time.perf_counter() - t0
    p.join(10)
    assert waited > 1.0  # the holder keeps it 3 s after saying so: a scheduler's pause cannot eat 2 s of that


def test_two_vote_caches_on_one_folder_save_and_load_whole(db, tmp_path):
    """Two caches (two app processes) on one database and one data home: one keeps saving while the other keeps
    loading; every load gets a consistent header and rows (the old code shared one temporary file name)."""
    from tests.helpers.standings import register_contestants, write_battles
    from vibestudio.standings.vote_cache import VoteCache

    ids = register_contestants(db)
    write_battles(db, ids, 300)
    folder = tmp_path / "cache"
    writer, reader = VoteCache(db, folder), VoteCache(db, folder)
    writer.refresh()
    errors: list[str] = []
    stop = threading.Event()

    def keep_saving() -> None:
        try:
            while not stop.is_set():
                writer.save()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))

    t = threading.Thread(target=keep_saving)
    t.start()
    try:
        for _ in range(20):
            reader.loaded = False
            reader._load_saved()
            if reader.n != writer.n:
                errors.append(f"loaded {reader.n} rows, saved {writer.n}")
    finally:
        stop.set()
        t.join(30)
    assert errors == []
    assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_the_same_snapshot_frozen_twice_at_once_is_one_row(db, tmp_path, monkeypatch):
    from tests.helpers.training import pair_rows
    from vibestudio.annotation.snapshots import write_snapshot
    from vibestudio.db.session import Database

    monkeypatch.setenv("VIBESTUDIO_HOME", str(tmp_path / "home"))
    rows = pair_rows(6)
    other = Database(db.url)
    results = []
    barrier = threading.Barrier(2)

    def freeze(database) -> None:
        with database.session() as s:
            barrier.wait()
            info = write_snapshot(s, rows, {"source": "race"})
            time.sleep(0.3)  # both have written before either commits
            results.append(info)

    threads = [threading.Thread(target=freeze, args=(d,)) for d in (db, other)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    other.dispose()
    assert len(results) == 2 and len({r.id for r in results}) == 1, results
    assert sorted(r.created for r in results) == [False, True]
    with db.session() as s:
        assert s.scalar(select(func.count(DatasetSnapshot.id))) == 1
