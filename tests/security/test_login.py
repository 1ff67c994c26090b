"""Login against the running app: throttled per (name, client) and per client across names, the owner not locked
out, no hashing while throttled, sessions that expire and end on a password change. Guards:
``accounts.throttle.LoginThrottle``, ``accounts.sessions.SessionBook`` through ``studio.auth.SessionGuard``."""

from __future__ import annotations

import time

import httpx

from tests.security.conftest import PW
from vibestudio.accounts.throttle import LoginThrottle


def _login(app, name: str, password: str, client_ip: str | None = None) -> int:
    headers = {"Origin": app.url}
    if client_ip:  # uvicorn takes X-Forwarded-For from a loopback peer: a proxy in front of the studio
        headers["X-Forwarded-For"] = client_ip
    r = httpx.post(f"{app.url}/login", data={"username": name, "password": password}, headers=headers)
    return r.status_code


def test_guessing_one_name_is_slowed_but_the_owner_elsewhere_signs_in(studio_app):
    name = studio_app.user("owner1")
    studio_app.ctx.access.throttle = LoginThrottle(per_minute=100, free=3, base_s=30)
    for _ in range(4):
        assert _login(studio_app, name, "wrong password!", "203.0.113.7") != 200
    # the guesser's address now waits, even with the right password...
    assert _login(studio_app, name, PW, "203.0.113.7") != 200
    # ...and the owner, signing in from their own address, is not locked out
    assert _login(studio_app, name, PW, "198.51.100.20") == 200


def test_spraying_one_password_over_many_names_is_slowed(studio_app):
    studio_app.ctx.access.throttle = LoginThrottle(per_minute=1, burst=5, free=3, base_s=1)
    studio_app.user("sprayed")
    for i in range(5):
        assert _login(studio_app, f"nobody{i}", "Winter2026!", "203.0.113.9") != 200
    # the address spent its budget across names: even a real name with its right password waits
    assert _login(studio_app, "sprayed", PW, "203.0.113.9") != 200
    assert _login(studio_app, "sprayed", PW, "198.51.100.21") == 200


def test_a_throttled_try_costs_no_hash(studio_app, monkeypatch):
    from vibestudio import accounts

    studio_app.ctx.access.throttle = LoginThrottle(per_minute=1, burst=2, free=3, base_s=1)
    for _ in range(2):
        _login(studio_app, "nobody", "wrong password!", "203.0.113.11")
    calls = []
    real = accounts.verify_password
    monkeypatch.setattr(accounts, "verify_password", lambda *a: calls.append(1) or real(*a))
    t0 = time.perf_counter()
    for _ in range(20):
        assert _login(studio_app, "nobody", "wrong password!", "203.0.113.11") != 200
    assert calls == [] and time.perf_counter() - t0 < 10


def test_unknown_names_hash_like_known_ones(monkeypatch, tmp_path):
    from vibestudio import accounts
    from vibestudio.db.session import Database

    seen = []
    real = accounts.PasswordHasher.verify

    def spy(self, h, p):
        seen.append(h)
        return real(self, h, p)

    monkeypatch.setattr(accounts.PasswordHasher, "verify", spy)
    db = Database(f"sqlite:///{tmp_path / 'x.sqlite'}")
    db.migrate()
    assert accounts.authenticate(db, "no-such-user", "whatever password") is None
    assert seen == [accounts._DUMMY_HASH]


def test_a_password_change_ends_the_users_sessions(studio_app):
    from vibestudio.accounts import set_password

    name = studio_app.user("changer", "researcher")
    studio_app.ctx.access.throttle = LoginThrottle()
    c = studio_app.http(name)
    assert c.get("/config").status_code == 200
    set_password(studio_app.db, name, "a brand new password")
    assert c.get("/config").status_code == 401  # the old session no longer acts
    assert studio_app.http(name, password="a brand new password").get("/config").status_code == 200


def test_sessions_expire(studio_app):
    name = studio_app.user("expiring")
    studio_app.ctx.access.throttle = LoginThrottle()
    c = studio_app.http(name)
    assert c.get("/config").status_code == 200
    book = studio_app.ctx.access.sessions
    old = book.max_age_s
    book.max_age_s = 0.5
    try:
        time.sleep(0.7)
        assert c.get("/config").status_code == 401
    finally:
        book.max_age_s = old
    assert studio_app.http(name).get("/config").status_code == 200  # a fresh login works


def test_a_disabled_user_is_signed_out_and_cannot_sign_in(studio_app):
    from vibestudio.accounts import set_disabled

    name = studio_app.user("leaver")
    studio_app.ctx.access.throttle = LoginThrottle()
    c = studio_app.http(name)
    set_disabled(studio_app.db, name, True)
    assert c.get("/config").status_code == 401
    assert _login(studio_app, name, PW) != 200


def test_throttle_unit_rules():
    t = LoginThrottle(per_minute=10, free=3, base_s=2, max_s=60)
    for _ in range(3):
        assert t.wait_s("ann", "a", now=100) == 0
        t.failed("ann", "a", now=100)
    assert t.wait_s("ann", "a", now=100) == 2.0  # 4th try waits 2 s, then 4, 8 ... at most 60
    t.failed("ann", "a", now=102)
    assert t.wait_s("ann", "a", now=102) == 4.0
    assert t.wait_s("ann", "b", now=102) == 0  # another address is not slowed by this one's guesses
    t.succeeded("ann", "a")
    assert t.wait_s("ann", "a", now=102) == 0
