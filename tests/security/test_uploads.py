"""Uploads live only as long as their request (``studio.uploads``): Gradio's upload cache is a folder of the
serving process's own, outside the data home; a sweep at start removes the folders of processes that are gone
(never a live one's); an upload no handler took leaves after ``UPLOAD_TTL_S``; a handler that refuses still
removes the file it was given."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from vibestudio.studio import uploads


def test_a_dead_processs_folder_is_swept_at_start_and_a_live_ones_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADIO_TEMP_DIR", os.environ.get("GRADIO_TEMP_DIR", str(tmp_path)))  # put back after
    dead = tmp_path / f"{uploads.PREFIX}deadbeef"
    (dead / "abc").mkdir(parents=True)
    (dead / "abc" / "left-behind.jsonl").write_text("{}")
    (dead / ".lock").touch()  # nobody holds it: its process is gone
    live = tmp_path / f"{uploads.PREFIX}alive000"
    (live / "def").mkdir(parents=True)
    (live / "def" / "in-use.jsonl").write_text("{}")
    with open(live / ".lock", "a+b") as held:  # another server on this host, serving now
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        folder = uploads.claim_upload_folder(tmp_path)
        try:
            assert not dead.exists() and (live / "def" / "in-use.jsonl").exists()
            assert os.environ["GRADIO_TEMP_DIR"] == str(folder) and folder.parent == tmp_path
            assert uploads.claim_upload_folder(tmp_path) == folder  # once per process
            assert uploads.sweep_leftovers(tmp_path) == 0  # its own folder is held: never swept
        finally:
            uploads.release_upload_folder(folder)
    assert not folder.exists()


def test_an_upload_no_handler_took_leaves_after_the_ttl(tmp_path):
    old = tmp_path / "h1" / "old.jsonl"
    new = tmp_path / "h2" / "new.jsonl"
    for f in (old, new):
        f.parent.mkdir()
        f.write_text("{}")
    (tmp_path / ".lock").touch()
    stale = time.time() - uploads.UPLOAD_TTL_S - 5
    os.utime(old, (stale, stale))
    assert uploads.sweep_stale(tmp_path) == 1
    assert not old.exists() and not old.parent.exists() and new.exists() and (tmp_path / ".lock").exists()


def test_the_served_apps_uploads_live_outside_the_data_home_and_leave_on_refusal(studio_app):
    from vibestudio.db.session import data_home

    folder = uploads.upload_folder()
    assert folder.name.startswith(uploads.PREFIX) and (folder / ".lock").exists()
    assert studio_app.home not in folder.parents and data_home() not in folder.parents
    # an annotator's upload, handed to a researcher's import: refused, and the file is gone
    ann = studio_app.http("ann")
    r = ann.post("/gradio_api/upload", files={"files": ("prefs.jsonl", b'{"prompt": "p"}\n')})
    assert r.status_code == 200
    [path] = r.json()
    assert folder in Path(path).parents
    i = studio_app.fn_index("queue_import")
    data = studio_app.inputs_for(i)
    data[0] = {"path": path, "meta": {"_type": "gradio.FileData"}, "orig_name": "prefs.jsonl"}
    res = studio_app.call(ann, i, data)
    assert not res.ok and "researcher" in (res.error or "")
    assert not os.path.exists(path)
