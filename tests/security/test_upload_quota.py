"""One user's share of uploads (``studio.gate.UploadQuota``), against the running app over HTTP as an attacker
would: a signed-in user who keeps uploading is refused with 429 once past the bytes they may have waiting (or
send an hour), before the body is read and before anything is stored; another user still uploads."""

from __future__ import annotations

import os
import socket
import time

import pytest

from vibestudio.studio import uploads
from vibestudio.studio.gate import MIB, RequestGate, UploadQuota


def _gate(studio_app) -> RequestGate:
    """The running app's ``RequestGate`` (the middleware stack Starlette built for it)."""
    app = studio_app.demo.server_app
    node = app.middleware_stack
    for _ in range(20):
        if isinstance(node, RequestGate):
            return node
        node = getattr(node, "app", None)
    raise AssertionError("no RequestGate in the app's middleware")


@pytest.fixture
def small_quota(studio_app):
    studio_app.http("ann").get("/config")  # the middleware stack is built on the first request
    gate = _gate(studio_app)
    before = gate.uploads
    gate.uploads = UploadQuota(per_hour=8 * MIB, held=3 * MIB)
    try:
        yield gate.uploads
    finally:
        gate.uploads = before


def _files() -> set[str]:
    return {str(p) for p in uploads.upload_folder().rglob("*") if p.is_file() and p.name != ".lock"}


def test_a_user_past_the_upload_quota_is_refused_before_the_body_is_read(studio_app, small_quota):
    ann = studio_app.http("ann")
    before = _files()
    for i in range(2):  # 2 x 1.2 MiB fit in 3 MiB held
        r = ann.post("/gradio_api/upload", files={"files": ("a.bin", bytes([i]) * (MIB + MIB // 5))})
        assert r.status_code == 200, r.text
    r = ann.post("/gradio_api/upload", files={"files": ("b.bin", b"y" * (MIB + MIB // 5))})
    assert r.status_code == 429 and "VIBESTUDIO_UPLOAD_MB_HELD" in r.json()["detail"]
    assert int(r.headers["retry-after"]) >= 1
    assert len(_files() - before) == 2  # the refused one was not stored
    # refused before the body is read: a 2 MB Content-Length with only 1 KiB sent gets its answer at once
    cookie = "; ".join(f"{k}={v}" for k, v in ann.cookies.items())
    host, port = studio_app.host.split(":")
    head = (
        f"POST /gradio_api/upload HTTP/1.1\r\nHost: {studio_app.host}\r\nCookie: {cookie}\r\n"
        "Content-Type: multipart/form-data; boundary=xx\r\nContent-Length: 2000000\r\n\r\n"
    )
    t0 = time.perf_counter()
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(head.encode() + b"--xx\r\n" + b"z" * 1024)
        answer = s.recv(4096)
    assert answer.startswith(b"HTTP/1.1 429") and time.perf_counter() - t0 < 3
    # another user's share is their own
    rex = studio_app.http("rex")
    r = rex.post("/gradio_api/upload", files={"files": ("c.bin", b"c" * MIB)})
    assert r.status_code == 200, r.text
    for path in _files() - before:
        uploads.discard_upload(path)


def test_a_chunked_upload_is_charged_as_it_streams(studio_app, small_quota):
    rita = studio_app.http("rita")
    before = _files()

    def body():
        yield b'--xx\r\nContent-Disposition: form-data; name="files"; filename="d.bin"\r\n\r\n'
        for _ in range(5):
            yield b"d" * MIB
        yield b"\r\n--xx--\r\n"

    r = rita.post(
        "/gradio_api/upload",
        content=body(),
        headers={"Content-Type": "multipart/form-data; boundary=xx"},
    )
    assert r.status_code == 429 and "VIBESTUDIO_UPLOAD_MB_HELD" in r.json()["detail"]
    # no upload was stored; what the form parser had spooled (at most the quota and one piece) is a temporary
    # file that the stale sweep removes
    partial = _files() - before
    assert not any(f.endswith("d.bin") for f in partial)
    assert sum(os.path.getsize(f) for f in partial) <= 4 * MIB
    for f in partial:
        os.unlink(f)


def test_upload_quota_unit():
    q = UploadQuota(per_hour=10, held=6, held_s=60)
    assert q.take("u", 5, now=0) is None
    refusal = q.take("u", 2, now=1)
    assert refusal and "HELD" in refusal and "try again in 59 s" in refusal
    assert q.take("u", 2, now=61) is None  # the first has expired from the held window
    assert q.take("u", 3, now=62) is None
    refusal = q.take("u", 1, now=63)  # 11 bytes in the hour
    assert refusal and "PER_HOUR" in refusal
    assert q.take("v", 6, now=63) is None  # each user their own
    assert UploadQuota(0, 0).take("u", 10**12) is None
