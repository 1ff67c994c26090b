"""Cross-site requests and DNS rebinding against the running app: another origin's page, a rebound host name, the
session cookie's attributes. Guards: ``studio.origins.OriginGuard`` and ``studio.auth.SessionGuard``."""

from __future__ import annotations

import httpx

from tests.security.conftest import OTHER_ORIGIN, PW


def _vote_fn(app) -> int:
    deps = app.dependencies()
    return next(i for i, d in enumerate(deps) if d.get("api_name") == "arena_random_prompt")


def test_another_origin_cannot_join_the_queue_as_the_signed_in_user(studio_app):
    # a page on evil.example runs fetch(..., {credentials: "include"}): the browser sends the session cookie and
    # Origin: https://evil.example. Without the guard Gradio answers and reflects the origin with credentials.
    browser = studio_app.http("root")
    cookies = browser.cookies
    evil = httpx.Client(
        base_url=studio_app.url, cookies=cookies, headers={"Origin": OTHER_ORIGIN}, timeout=30
    )
    before = studio_app.counts()
    r = evil.post(
        "/gradio_api/queue/join",
        json={"data": [], "fn_index": _vote_fn(studio_app), "session_hash": "x1", "event_data": None},
    )
    assert r.status_code == 403, r.text
    assert "another origin" in r.json()["detail"] and "evil" not in r.text
    assert "access-control-allow-origin" not in {k.lower() for k in r.headers}
    # reading is refused too (a page could otherwise read answers or the config with the user's cookie)
    assert evil.get("/config").status_code == 403
    assert evil.get("/gradio_api/queue/data", params={"session_hash": "x1"}).status_code == 403
    # a preflight never tells another origin it may send credentials
    pre = evil.options(
        "/gradio_api/queue/join",
        headers={"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"},
    )
    assert pre.headers.get("access-control-allow-origin") not in (OTHER_ORIGIN, "*") or pre.status_code >= 400
    # the same request from the app's own page works
    own = studio_app.call(studio_app.http("root", origin=studio_app.url), _vote_fn(studio_app))
    assert own.ok, own.error
    assert studio_app.counts() == before


def test_null_and_cross_site_fetches_are_refused(studio_app):
    c = studio_app.http("ann")
    assert c.get("/config", headers={"Origin": "null"}).status_code == 403
    assert c.get("/config", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert (
        c.get("/config", headers={"Origin": f"http://{studio_app.host.split(':')[0]}:1"}).status_code == 403
    )
    assert c.get("/config", headers={"Sec-Fetch-Site": "same-origin"}).status_code == 200
    assert c.get("/config").status_code == 200  # a script, no Origin: allowed (it holds its own login)


def test_login_from_another_origin_is_refused(studio_app):
    r = httpx.post(
        f"{studio_app.url}/login", data={"username": "root", "password": PW}, headers={"Origin": OTHER_ORIGIN}
    )
    assert r.status_code == 403 and "set-cookie" not in {k.lower() for k in r.headers}


def test_unknown_host_names_are_refused(studio_app):
    # DNS rebinding: attacker.example resolves to this server, so its page is "same-origin" with it
    port = studio_app.host.rsplit(":", 1)[1]
    rebound = f"attacker.example:{port}"
    r = httpx.get(f"{studio_app.url}/", headers={"Host": rebound})
    assert r.status_code == 421 and "VIBESTUDIO_ALLOWED_HOSTS" in r.text and "attacker" not in r.text
    r = httpx.post(
        f"{studio_app.url}/login",
        data={"username": "root", "password": PW},
        headers={"Host": rebound, "Origin": f"http://{rebound}"},
    )
    assert r.status_code == 421
    for ok_host in (f"localhost:{port}", f"127.0.0.1:{port}"):
        assert httpx.get(f"{studio_app.url}/", headers={"Host": ok_host}).status_code in (200, 401, 302)


def test_operator_listed_origin_and_host_are_admitted():
    from vibestudio.studio.origins import OriginPolicy

    p = OriginPolicy(["https://studio.example.org"], ["studio.lan"])
    assert p.host_ok("studio.example.org", "http") and p.host_ok("studio.lan:7860", "http")
    assert p.host_ok("10.1.2.3:7860", "http") and p.host_ok("[::1]:7860", "http")
    assert not p.host_ok("evil.example", "http") and not p.host_ok("", "http")
    # TLS ended at a proxy: Origin https://studio.example.org, Host studio.example.org (no port)
    assert p.origin_ok("https://studio.example.org", "studio.example.org", "http", None)
    assert p.origin_ok("https://studio.example.org", "127.0.0.1:7860", "http", None)  # listed
    assert not p.origin_ok("https://studio.example.org.evil.example", "127.0.0.1:7860", "http", None)
    assert not p.origin_ok("http://127.0.0.1:9999", "127.0.0.1:7860", "http", None)


def test_session_cookie_is_samesite_lax_and_httponly(studio_app):
    r = httpx.post(
        f"{studio_app.url}/login",
        data={"username": "ann", "password": PW},
        headers={"Origin": studio_app.url},
    )
    assert r.status_code == 200
    cookies = [v for k, v in r.headers.multi_items() if k.lower() == "set-cookie"]
    session = [c for c in cookies if c.startswith("access-token")]
    assert session, cookies
    for c in session:
        attrs = {a.strip().split("=")[0].lower(): a.strip() for a in c.split(";")[1:]}
        assert attrs.get("samesite", "").lower() == "samesite=lax", c
        assert "httponly" in attrs, c
        assert "secure" not in attrs, c  # plain http here: Secure only when the request came over https


def test_cookie_rewrite_adds_secure_over_https():
    from vibestudio.studio.auth import _secure_cookie

    raw = b"access-token-x=abc; HttpOnly; Path=/; SameSite=none; Secure"
    assert _secure_cookie(raw, https=True) == b"access-token-x=abc; Path=/; HttpOnly; SameSite=Lax; Secure"
    assert _secure_cookie(raw, https=False) == b"access-token-x=abc; Path=/; HttpOnly; SameSite=Lax"


def test_open_mode_gets_the_same_origin_and_host_policy(tmp_path):
    """The open single-user mode has no login, so the policy is all that stands between a page elsewhere (or a
    rebound name) and the local operator's studio: the app the server runs has it outermost whatever the mode."""
    import asyncio

    from vibestudio.common.settings import Settings
    from vibestudio.studio.app import server_app
    from vibestudio.studio.auth import Access

    class Ctx:
        settings = Settings(home=tmp_path)
        access = Access()  # the open mode
        db = None

    app = server_app(Ctx(), "127.0.0.1")  # type: ignore[arg-type]

    async def run(headers: dict[str, str]) -> int:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:7860") as c:
            return (await c.post("/gradio_api/queue/join", headers=headers)).status_code

    assert asyncio.run(run({})) not in (403, 421)
    assert asyncio.run(run({"Origin": OTHER_ORIGIN})) == 403
    assert asyncio.run(run({"Host": "rebound.attacker.example:7860"})) == 421
