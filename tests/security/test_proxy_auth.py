"""``VIBESTUDIO_AUTH=proxy`` against a real ``vibestudio serve`` process over HTTP: the user comes from the trusted
header only when the TCP peer is one of the proxy's addresses; the same header from any other address is refused
with a message and logged; roles follow the groups header; a spoofed ``X-Forwarded-For`` does not make a peer a
proxy, and a real proxy's ``X-Forwarded-For`` does not hide it (``studio.auth.SessionGuard``)."""

from __future__ import annotations

import httpx
import pytest

from tests.helpers.servers import start_server, stop_server
from vibestudio.accounts import get_user
from vibestudio.db.session import Database

PROXY = "127.0.0.1"  # the authenticating proxy's address, in VIBESTUDIO_PROXY_ADDRESSES
OTHER = "127.0.0.2"  # another host on the network: loopback too on Linux, but not the proxy


def _from(address: str, url: str) -> httpx.Client:
    return httpx.Client(
        base_url=url,
        transport=httpx.HTTPTransport(local_address=address),
        timeout=30,
        headers={"Origin": url},
    )


@pytest.fixture(scope="module")
def proxied(tmp_path_factory):
    home = tmp_path_factory.mktemp("proxy-home")
    env = {
        "VIBESTUDIO_AUTH": "proxy",
        "VIBESTUDIO_PROXY_ADDRESSES": f"{PROXY}/32,10.9.0.0/16",
        "VIBESTUDIO_PROXY_ROLES": "admin=studio-admins;researcher=ml,data",
    }
    proc, url = start_server(home, env, ready=(401,))
    try:
        yield url, home, Database(f"sqlite:///{home / 'studio.sqlite'}")
    finally:
        stop_server(proc)


def test_the_proxys_user_is_signed_in_and_created_as_annotator(proxied):
    url, _home, db = proxied
    with _from(PROXY, url) as c:
        r = c.get("/config", headers={"X-Forwarded-User": "newcomer@example.org"})
    assert r.status_code == 200 and r.json()["username"] == "newcomer@example.org"
    user = get_user(db, "newcomer@example.org")
    assert user is not None and user.role == "annotator" and not user.has_password


def test_the_header_from_another_address_is_refused_and_logged(proxied):
    url, home, db = proxied
    with _from(OTHER, url) as c:
        r = c.get(
            "/config", headers={"X-Forwarded-User": "mallory-admin", "X-Forwarded-Groups": "studio-admins"}
        )
        # claiming to be the proxy in X-Forwarded-For changes nothing: the TCP peer decides
        r2 = c.get("/config", headers={"X-Forwarded-User": "mallory-admin", "X-Forwarded-For": PROXY})
        r3 = c.post("/gradio_api/queue/join", json={}, headers={"X-Forwarded-User": "mallory-admin"})
    for resp in (r, r2, r3):
        assert resp.status_code == 403, resp.text
        assert "VIBESTUDIO_PROXY_ADDRESSES" in resp.text and OTHER in resp.text
    assert get_user(db, "mallory-admin") is None  # nothing was created for the spoofed name
    log = (home / "server.log").read_text()
    assert f"refused a X-Forwarded-User header from {OTHER}" in log


def test_no_header_is_not_signed_in(proxied):
    url, _home, _db = proxied
    with _from(PROXY, url) as c:
        r = c.get("/config")
    with _from(OTHER, url) as c:
        r2 = c.get("/config")
    assert r.status_code == 401 and r2.status_code == 401
    assert "authenticating proxy" in r.text


def test_a_real_proxys_forwarded_for_does_not_hide_it(proxied):
    """A proxy on this host sets X-Forwarded-For to its user's address; the studio still sees the proxy (uvicorn's
    own X-Forwarded-For rewrite is off in proxy mode)."""
    url, _home, _db = proxied
    with _from(PROXY, url) as c:
        r = c.get("/config", headers={"X-Forwarded-User": "behind-nginx", "X-Forwarded-For": "203.0.113.9"})
    assert r.status_code == 200 and r.json()["username"] == "behind-nginx"


def test_roles_follow_the_groups_and_hold_in_the_services(proxied):
    from gradio_client import Client

    url, _home, db = proxied

    def client(name: str, groups: str) -> Client:
        return Client(
            url,
            headers={"X-Forwarded-User": name, "X-Forwarded-Groups": groups},
            verbose=False,
            download_files=False,
        )

    boss = client("boss", "staff, studio-admins")
    users = boss.predict(api_name="/admin_users")
    assert "boss" in str(users)
    assert get_user(db, "boss").role == "admin"
    assert client("rita", "data").predict is not None and get_user(db, "rita").role == "researcher"
    plain = client("ann", "staff")
    with pytest.raises(Exception, match="admin"):
        plain.predict(api_name="/admin_users")  # an annotator is refused by the service's role check
    assert get_user(db, "ann").role == "annotator"
    # the groups are the truth: the admin who leaves the group is an annotator at the next request
    client("boss", "staff")
    assert get_user(db, "boss").role == "annotator"


def test_a_disabled_user_is_refused_whatever_the_proxy_says(proxied):
    from vibestudio.accounts import set_disabled

    url, _home, db = proxied
    with _from(PROXY, url) as c:
        assert c.get("/config", headers={"X-Forwarded-User": "leaver"}).status_code == 200
        set_disabled(db, "leaver", True)
        r = c.get("/config", headers={"X-Forwarded-User": "leaver"})
    assert r.status_code == 403 and "disabled" in r.text


def test_a_name_the_studio_does_not_accept_is_refused(proxied):
    url, _home, db = proxied
    with _from(PROXY, url) as c:
        r = c.get("/config", headers={"X-Forwarded-User": "two words"})
    assert r.status_code == 403 and "user name" in r.text


def test_restore_refuses_while_this_server_serves_the_database(proxied):
    """``vibestudio serve`` holds the database's serving lock for its life (the one subprocess server of the
    suite serves this check too)."""
    import os
    import subprocess
    import sys

    from vibestudio.db.backup import backup

    _url, home, db = proxied
    copy = home / "copy.sqlite"
    backup(db.url, copy)
    env = {**os.environ, "VIBESTUDIO_HOME": str(home)}
    env.pop("VIBESTUDIO_DATABASE_URL", None)
    out = subprocess.run(
        [sys.executable, "-m", "vibestudio.studio.cli", "db", "restore", str(copy)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0 and "being served" in out.stdout + out.stderr
