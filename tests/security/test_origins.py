"""The Origin guard is the outermost layer and compares origins as browsers do (``studio.origins``).

- Origins are ``(scheme, host, port)`` with the scheme's default port when absent, on both sides: a ``Host``
  header without a port (what a reverse proxy sends) means port 80 on http and 443 on https, so a page on another
  port of the same host name is another origin (Hypothesis over origin and host spellings).
- CORS preflights (``OPTIONS`` with ``Access-Control-Request-Method``) from another origin are refused by the
  guard, in front of Gradio's CORS layer, which would answer them with the origin reflected and credentials
  allowed; the app's own page still gets its preflight answered.
"""

from __future__ import annotations

import asyncio
from itertools import product

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.middleware import Middleware

from tests.security.conftest import OTHER_ORIGIN
from vibestudio.studio.origins import OriginGuard, OriginPolicy, wrap

NAMES = ["studio.lan", "localhost", "127.0.0.1", "[::1]", "10.1.2.3"]
PORTS = [80, 443, 7860, 8080, 8443]
DEFAULT = {"http": 80, "https": 443}


def _origin(scheme: str, name: str, port: int, spell: int) -> str:
    """One origin in one of several spellings: the default port written or left out, the host in upper case
    (each names the same origin)."""
    shown = "" if port == DEFAULT[scheme] and spell % 2 == 0 else f":{port}"
    host = name.upper() if spell == 3 and not name.startswith("[") else name
    return f"{scheme}://{host}{shown}"


def _host(name: str, port: int, scheme: str, with_port: bool) -> str:
    return f"{name}:{port}" if with_port or port != DEFAULT[scheme] else name


POLICY = OriginPolicy([], ["studio.lan"])
LOCAL_NAMES = POLICY.hosts  # loopback names and this machine's own, admitted as hosts whatever the list says


def test_the_apps_own_origin_is_admitted_in_every_spelling():
    # the whole grid (800 cases, a few milliseconds): scheme, host, port, Host with or without its port, spelling
    for scheme, name, port, with_port, spell in product(
        ["http", "https"], NAMES, PORTS, [True, False], range(4)
    ):
        host = _host(name, port, scheme, with_port)
        assert POLICY.origin_ok(_origin(scheme, name, port, spell), host, scheme, None), (host, scheme, spell)


def test_another_port_or_scheme_of_the_same_host_name_is_another_origin():
    grid = product(["http", "https"], ["http", "https"], NAMES, PORTS, PORTS, [True, False], range(4))
    for scheme, page_scheme, name, port, page_port, with_port, spell in grid:
        if (page_scheme, page_port) == (scheme, port):
            continue  # the same origin: the test above
        host = _host(name, port, scheme, with_port)
        page = _origin(page_scheme, name, page_port, spell)
        assert not POLICY.origin_ok(page, host, scheme, None), (page, host, scheme)


_LABEL = st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True)


@settings(max_examples=80, deadline=None)
@given(
    labels=st.lists(_LABEL, min_size=1, max_size=3),
    other=st.lists(_LABEL, min_size=1, max_size=3),
    port=st.integers(1, 65535),
    page_port=st.one_of(st.none(), st.integers(1, 65535)),
    scheme=st.sampled_from(["http", "https"]),
)
def test_generated_names_and_ports(labels, other, port, page_port, scheme):
    """Any listed name: its own origin (port written or not) is admitted; another name, or another effective
    port of the same name, is not."""
    name, foreign = ".".join(labels), ".".join(other)
    policy = OriginPolicy([], [name])
    host = f"{name}:{port}"
    written = f"{scheme}://{name}:{port}"
    assert policy.origin_ok(written, host, scheme, None)
    effective = DEFAULT[scheme] if page_port is None else page_port
    page = f"{scheme}://{name}" + ("" if page_port is None else f":{page_port}")
    assert policy.origin_ok(page, host, scheme, None) == (effective == port)
    assert policy.origin_ok(page, name, scheme, None) == (effective == DEFAULT[scheme])  # Host without a port
    if foreign != name:
        assert not policy.origin_ok(f"{scheme}://{foreign}:{port}", host, scheme, None)
        assert not policy.host_ok(f"{foreign}:{port}", scheme) or foreign in LOCAL_NAMES


def test_the_reverse_proxy_gap_is_closed():
    """The documented proxy sends ``Host: studio.lan`` (no port): a page on port 8080 of that name was admitted."""
    assert not POLICY.origin_ok("http://studio.lan:8080", "studio.lan", "http", None)
    assert not POLICY.origin_ok("https://studio.lan", "studio.lan", "http", None)  # another scheme
    assert POLICY.origin_ok("http://studio.lan", "studio.lan", "http", None)
    assert POLICY.origin_ok("https://studio.lan", "studio.lan", "https", None)  # X-Forwarded-Proto applied
    listed = OriginPolicy(["https://studio.lan"])
    assert listed.origin_ok(
        "https://studio.lan", "studio.lan", "http", None
    )  # TLS ended at the proxy: listed
    assert not listed.origin_ok("https://studio.lan:8443", "studio.lan", "http", None)


@settings(max_examples=200, deadline=None)
@given(
    junk=st.sampled_from(
        [
            "null",
            "file://",
            "http://user@studio.lan",
            "http://studio.lan/path",
            "http://studio.lan?x=1",
            "http://studio.lan#f",
            "ftp://studio.lan",
            "http://",
            "http://studio.lan:99999",
            "http://[::1",
            "",
        ]
    ),
    with_port=st.booleans(),
)
def test_what_is_not_an_origin_is_refused(junk, with_port):
    assert not POLICY.origin_ok(junk, "studio.lan:80" if with_port else "studio.lan", "http", None)


@settings(max_examples=200, deadline=None)
@given(
    host=st.sampled_from(["studio.lan/x", "studio.lan@evil.example", "evil.example", " studio.lan", "a b"])
)
def test_malformed_or_unknown_host_headers_are_refused(host):
    assert not POLICY.host_ok(host, "http")


def _cors_app():
    """A Starlette app with a CORS layer added the way Gradio adds its own (``add_middleware``: outermost of the
    app's middleware), which answers every preflight with the origin reflected and credentials allowed."""
    from starlette.applications import Starlette
    from starlette.middleware.cors import CORSMiddleware
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    app = Starlette(routes=[Route("/x", lambda r: PlainTextResponse("ok"), methods=["GET", "POST"])])
    app.add_middleware(CORSMiddleware, allow_origin_regex=".*", allow_credentials=True, allow_methods=["*"])
    return app


def _preflight(app, origin: str) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:7860") as c:
            return await c.options("/x", headers={"Origin": origin, "Access-Control-Request-Method": "POST"})

    return asyncio.run(go())


def test_wrap_puts_the_guard_in_front_of_a_cors_layer_added_later():
    app = _cors_app()
    wrap(app, OriginPolicy())
    r = _preflight(app, OTHER_ORIGIN)
    assert r.status_code == 403 and "access-control-allow-origin" not in r.headers
    assert "VIBESTUDIO_ALLOWED_ORIGINS" in r.json()["detail"] and "evil" not in r.text
    ok = _preflight(app, "http://127.0.0.1:7860")
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == "http://127.0.0.1:7860"
    # a guard given as ordinary middleware sits inside the CORS layer: the preflight never reaches it
    inner = _cors_app()
    inner.user_middleware.append(Middleware(OriginGuard))
    assert _preflight(inner, OTHER_ORIGIN).headers.get("access-control-allow-origin") == OTHER_ORIGIN


def test_the_running_app_refuses_a_foreign_preflight_before_gradios_cors_layer(studio_app):
    r = httpx.options(
        f"{studio_app.url}/gradio_api/queue/join",
        headers={
            "Origin": OTHER_ORIGIN,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert r.status_code == 403, (r.status_code, dict(r.headers))
    assert (
        "access-control-allow-origin" not in r.headers and "access-control-allow-credentials" not in r.headers
    )
    port = studio_app.host.rsplit(":", 1)[1]
    other_port = httpx.options(
        f"{studio_app.url}/gradio_api/queue/join",
        headers={"Origin": f"http://127.0.0.1:{int(port) + 1}", "Access-Control-Request-Method": "POST"},
    )
    assert other_port.status_code == 403
    own = httpx.options(
        f"{studio_app.url}/gradio_api/queue/join",
        headers={"Origin": studio_app.url, "Access-Control-Request-Method": "POST"},
    )
    assert own.status_code == 200 and own.headers.get("access-control-allow-origin") == studio_app.url
