"""Exports expire and each user has a share (``studio.downloads``: ``sweep_expired``, ``make_room``), against the
running app over HTTP as a researcher filling the disk with exports would: past ``VIBESTUDIO_EXPORT_MB_PER_USER``
an export is refused with a clear message (and one that brings its user past it is removed); another user still
exports; a download older than ``VIBESTUDIO_EXPORT_HOURS`` is removed on the next export and at start-up."""

from __future__ import annotations

import json
import os
import re
import secrets
import time

from tests.security.test_stores import _labels, _uid
from vibestudio.studio import downloads

MIB = 1024 * 1024


def _plant(owner_id: int | None, size: int, age_s: float = 0.0) -> str:
    """A download of ``size`` bytes (sparse) owned by ``owner_id``, made ``age_s`` ago; returns its token."""
    token = secrets.token_urlsafe(16)
    folder = downloads.downloads_dir() / token
    folder.mkdir()
    f = folder / "big.gguf"
    with open(f, "wb") as fh:
        fh.truncate(size)
    record = {"owner_id": owner_id, "role": "researcher", "name": f.name, "created": time.time() - age_s}
    (folder / downloads.RECORD).write_text(json.dumps(record))
    return token


def _export(app, who: str, queue: str) -> tuple[str, str]:
    return app.client(who).predict(
        [queue], "trl", "JSONL", ["import"], False, "each", api_name="/labels_export"
    )


def _tokens() -> set[str]:
    return {p.name for p in downloads.downloads_dir().iterdir()}


def test_a_user_past_their_export_share_is_refused(studio_app, tmp_path, monkeypatch):
    monkeypatch.setenv("VIBESTUDIO_EXPORT_MB_PER_USER", "2")
    _labels(studio_app, tmp_path, "sec-share")
    rita = _uid(studio_app, "rita")
    _plant(rita, 3 * MIB)
    before = _tokens()
    said, link = _export(studio_app, "rita", "sec-share")
    assert "Not exported" in said and "VIBESTUDIO_EXPORT_MB_PER_USER" in said and not link
    assert _tokens() == before  # no folder made
    # another researcher's share is their own
    said, link = _export(studio_app, "rex", "sec-share")
    assert re.search(r'href="/studio/download/', link or ""), said


def test_an_export_that_passes_the_share_is_removed(studio_app, tmp_path, monkeypatch):
    monkeypatch.setenv("VIBESTUDIO_EXPORT_MB_PER_USER", "1")
    _labels(studio_app, tmp_path, "sec-share2")
    _plant(_uid(studio_app, "rita"), MIB - 10)  # under the share by 10 bytes
    before = _tokens()
    said, link = _export(studio_app, "rita", "sec-share2")
    assert "Not exported" in said and "VIBESTUDIO_EXPORT_MB_PER_USER" in said and not link
    assert _tokens() == before  # the export that passed it was removed


def test_expired_downloads_are_removed_on_export_and_at_start(studio_app, tmp_path, monkeypatch):
    monkeypatch.setenv("VIBESTUDIO_EXPORT_HOURS", "24")
    _labels(studio_app, tmp_path, "sec-old")
    rex = _uid(studio_app, "rex")
    old = _plant(rex, 1000, age_s=25 * 3600)
    fresh = _plant(rex, 1000, age_s=3600)
    assert studio_app.http("rex").get(f"/studio/download/{old}/big.gguf").status_code == 200
    said, link = _export(studio_app, "rita", "sec-old")  # anyone's new export sweeps
    assert link, said
    assert old not in _tokens() and fresh in _tokens()
    assert studio_app.http("rex").get(f"/studio/download/{old}/big.gguf").status_code == 404
    # at start-up (the route is installed when the app is built)
    older = _plant(rex, 1000, age_s=30 * 3600)
    os.utime(downloads.downloads_dir() / older, (0, 0))

    class App:
        def add_route(self, *a, **k):
            pass

    downloads.install(App(), studio_app.ctx)
    assert older not in _tokens() and fresh in _tokens()
