"""Identity before bytes, against the running app over raw HTTP as an attacker would: a request without a session
is refused before its body is read (the server answers while the body is still on its way), on the event queue's
join route and on every other route the app has; the login form takes a small body and a budget per address; a
signed-in user's body is limited too, whether it says its size or streams in chunks. Guard: ``studio.gate``."""

from __future__ import annotations

import re
import socket
import time

import pytest

from vibestudio.studio.gate import LOGIN_BODY_LIMIT, MIB, AddressBudget, is_pre_login, is_side_route

BIG = 50 * MIB  # a Content-Length the attacker announces; only a sliver of it is ever sent


def _raw(app, head: str, body: bytes = b"", more: list[bytes] | None = None, wait: float = 5.0):
    """Send ``head`` (request line and headers, without the blank line) and the first ``body`` bytes, then any
    ``more`` pieces while the server still reads; return ``(status, headers, seconds)`` of the answer, status 0
    when none came within ``wait`` seconds (the server was waiting for the rest of the body)."""
    host, port = app.host.split(":")
    t0 = time.perf_counter()
    with socket.create_connection((host, int(port)), timeout=wait) as s:
        s.sendall(head.encode("latin-1") + b"\r\n\r\n" + body)
        for piece in more or []:
            try:
                s.sendall(piece)
            except OSError:  # the server answered and closed: it read no further
                break
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except (TimeoutError, ConnectionResetError):
            if b"\r\n\r\n" not in data:
                return 0, "", time.perf_counter() - t0
    line, _, rest = data.partition(b"\r\n")
    status = int(line.split()[1]) if line.startswith(b"HTTP/") else 0
    return status, rest.split(b"\r\n\r\n")[0].decode("latin-1").lower(), time.perf_counter() - t0


def _head(app, method: str, path: str, *extra: str, cookie: str | None = None) -> str:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {app.host}", *extra]
    if cookie:
        lines.append(f"Cookie: {cookie}")
    return "\r\n".join(lines)


def _cookie(app, name: str) -> str:
    c = app.http(name)
    return "; ".join(f"{k}={v}" for k, v in c.cookies.items())


def _routes(routes, prefix: str = ""):
    """Every route, those of included routers too (FastAPI keeps an included router as one entry)."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from _routes(inner.routes, prefix + (route.include_context.prefix or ""))
        elif getattr(route, "path", None):
            yield prefix + route.path, getattr(route, "methods", None) or set()


def _paths(app) -> list[tuple[str, str]]:
    """Every (method, path) the running app routes, path parameters filled in."""
    out = []
    for path, methods in _routes(app.demo.server_app.routes):
        for method in sorted(methods):
            if method not in ("HEAD", "OPTIONS"):
                out.append((method, re.sub(r"\{[^}]*\}", "x", path)))
    assert len(out) > 40, out  # Gradio's own routes are there, not only the top-level ones
    return out


def test_a_large_body_without_a_session_is_refused_before_it_is_read(studio_app):
    # the attack: a huge body on the queue's join route, no account. Only 1 KiB of 50 MB is ever sent;
    # an answer at all means the server did not wait for (read, parse) the rest.
    head = _head(
        studio_app,
        "POST",
        "/gradio_api/queue/join",
        f"Content-Length: {BIG}",
        "Content-Type: application/json",
    )
    status, headers, took = _raw(studio_app, head, b'{"data": [' + b"0," * 512)
    assert status == 401 and "connection: close" in headers and took < 3, (status, took)
    # the same body sent in chunks, without a Content-Length
    head = _head(
        studio_app,
        "POST",
        "/gradio_api/queue/join",
        "Transfer-Encoding: chunked",
        "Content-Type: application/json",
    )
    status, _, took = _raw(studio_app, head, b"400\r\n" + b"0," * 512 + b"\r\n")
    assert status == 401 and took < 3, (status, took)


def test_no_route_reads_a_body_from_a_visitor(studio_app):
    # every route the app has, as it is spelled: refused before the body, or (the login form) past its small limit
    seen = []
    for method, path in _paths(studio_app):
        head = _head(studio_app, method, path, f"Content-Length: {BIG}", "Content-Type: application/json")
        status, _, took = _raw(studio_app, head, b"x" * 1024)
        seen.append((method, path, status))
        if is_side_route(path):
            assert status == 404, (method, path, status)
        elif is_pre_login(method, path):
            assert status == 413, (method, path, status)  # a pre-login route takes at most 64 KiB
        else:  # not signed in (the file routes: refused to everyone, one layer further out)
            assert status == (403 if "/file" in path or "/proxy=" in path else 401), (method, path, status)
        assert took < 3, (method, path, took)
    assert ("POST", "/gradio_api/queue/join", 401) in seen and ("POST", "/gradio_api/upload", 401) in seen


def test_the_login_form_takes_a_small_body(studio_app):
    head = _head(studio_app, "POST", "/login", f"Content-Length: {LOGIN_BODY_LIMIT + 1}")
    status, headers, _ = _raw(studio_app, head, b"username=a&password=b")
    assert status == 413 and "connection: close" in headers
    # without a Content-Length the body is counted as it streams: refused once it passes 64 KiB
    head = _head(
        studio_app,
        "POST",
        "/login",
        "Transfer-Encoding: chunked",
        "Content-Type: application/x-www-form-urlencoded",
        "X-Forwarded-For: 203.0.113.61",
    )
    piece = b"4000\r\n" + b"a" * 0x4000 + b"\r\n"  # 16 KiB chunks
    status, headers, _ = _raw(studio_app, head, b"2\r\nx=\r\n", more=[piece] * 8 + [b"0\r\n\r\n"])
    # refused, and the connection is dropped: the server reads no more of a body nobody will parse
    assert status == 413 and "connection: close" in headers
    # a body the route never parses (no form type) is not drained either
    head = _head(studio_app, "POST", "/login", "Transfer-Encoding: chunked", "X-Forwarded-For: 203.0.113.62")
    status, headers, _ = _raw(studio_app, head, b"2\r\nx=\r\n", more=[piece] * 2 + [b"0\r\n\r\n"])
    assert status in (400, 413, 422) and "connection: close" in headers
    assert studio_app.http("ann") is not None  # a real login still passes


def test_each_address_has_a_budget_before_login(studio_app):
    form = b"username=nobody&password=wrong+password&pad=" + b"a" * (60 * 1024)
    statuses = []
    for _ in range(30):
        head = _head(
            studio_app,
            "POST",
            "/login",
            f"Content-Length: {len(form)}",
            "Content-Type: application/x-www-form-urlencoded",
            "X-Forwarded-For: 203.0.113.62",
        )
        status, headers, _ = _raw(studio_app, head, form)
        statuses.append(status)
        if status == 429:
            assert "retry-after" in headers
            break
    assert statuses[-1] == 429 and 10 <= len(statuses) <= 20, statuses  # about 1 MiB a minute
    # another address is not held back by this one
    head = _head(
        studio_app,
        "POST",
        "/login",
        f"Content-Length: {len(form)}",
        "Content-Type: application/x-www-form-urlencoded",
        "X-Forwarded-For: 198.51.100.62",
    )
    assert _raw(studio_app, head, form)[0] not in (0, 413, 429)


def test_a_signed_in_body_has_a_limit_too(studio_app):
    cookie = _cookie(studio_app, "ann")
    limit = int(studio_app.ctx.settings.max_request_mb * MIB)
    head = _head(
        studio_app,
        "POST",
        "/gradio_api/queue/join",
        f"Content-Length: {limit + 1}",
        "Content-Type: application/json",
        cookie=cookie,
    )
    status, headers, took = _raw(studio_app, head, b'{"data": [')
    assert status == 413 and "connection: close" in headers and took < 3
    # streamed without a Content-Length: counted, and refused once past the limit
    head = _head(
        studio_app,
        "POST",
        "/gradio_api/queue/join",
        "Transfer-Encoding: chunked",
        "Content-Type: application/json",
        cookie=cookie,
    )
    piece = b"100000\r\n" + b"0," * (0x100000 // 2) + b"\r\n"  # 1 MiB chunks
    status, _, _ = _raw(studio_app, head, b"", more=[piece] * (limit // MIB + 4), wait=30)
    assert status == 413
    # a request of ordinary size still gets through to its route (here: its own validation)
    head = _head(
        studio_app,
        "POST",
        "/gradio_api/queue/join",
        "Content-Length: 2",
        "Content-Type: application/json",
        cookie=cookie,
    )
    assert _raw(studio_app, head, b"{}")[0] == 422


def test_address_budget_unit():
    budget = AddressBudget(per_minute=60_000, max_addresses=2)
    assert budget.take("a", 50_000, now=0) == 0
    wait = budget.take("a", 20_000, now=0)
    assert wait == pytest.approx(10.0)  # 10_000 missing at 1_000 a second
    assert budget.take("a", 20_000, now=10) == 0  # refilled
    assert budget.take("b", 60_000, now=0) == 0 and budget.take("c", 1, now=0) == 0
    assert "a" not in budget._buckets  # the least recently seen address is forgotten first
    assert AddressBudget(per_minute=0).take("a", 10**9) == 0  # no budget
