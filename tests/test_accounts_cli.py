"""``vibestudio users ...`` and the login-mode decision (open on loopback, login once a user exists)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from vibestudio.accounts import add_user, authenticate, get_user
from vibestudio.db.session import Database
from vibestudio.studio.auth import Access, AuthConfigError, check_serving, is_loopback, login_required
from vibestudio.studio.cli import app

PW = "a long cli password"


def _run(*args: str, stdin: str | None = None):
    return CliRunner().invoke(app, list(args), input=stdin)


def test_users_add_list_set_role_disable():
    r = _run("users", "add", "root", "--role", "admin", "--password-stdin", stdin=PW + "\n")
    assert r.exit_code == 0, r.output
    assert PW not in r.output
    assert _run("users", "add", "ann", "--password-stdin", stdin=PW + "\n").exit_code == 0
    db = Database()
    assert authenticate(db, "root", PW).role == "admin"
    assert get_user(db, "ann").role == "annotator"

    listed = json.loads(_run("users", "list", "--json").output)
    assert [(u["name"], u["role"], u["disabled"]) for u in listed] == [
        ("ann", "annotator", False),
        ("root", "admin", False),
    ]
    assert _run("users", "set-role", "ann", "researcher").exit_code == 0
    assert get_user(db, "ann").role == "researcher"
    assert _run("users", "disable", "ann").exit_code == 0
    assert authenticate(db, "ann", PW) is None
    assert _run("users", "disable", "ann", "--enable").exit_code == 0
    assert authenticate(db, "ann", PW) is not None
    assert _run("users", "passwd", "ann", "--password-stdin", stdin="another password\n").exit_code == 0
    assert authenticate(db, "ann", "another password") is not None


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (("users", "add", "x", "--password-stdin"), "short\n", "at least 8"),
        (("users", "add", "x", "--role", "boss", "--password-stdin"), PW + "\n", "unknown role"),
        (("users", "set-role", "nobody", "admin"), None, "no user named"),
        (("users", "set-role", "root", "annotator"), None, "last active admin"),
        (("users", "disable", "root"), None, "last active admin"),
    ],
)
def test_users_errors_are_clear(args, stdin, message):
    _run("users", "add", "root", "--role", "admin", "--password-stdin", stdin=PW + "\n")
    r = _run(*args, stdin=stdin)
    assert r.exit_code == 1 and message in r.output


def test_login_mode(db):
    assert not login_required("auto", db)  # no users: the open single-user mode
    check_serving("auto", False, "127.0.0.1")
    with pytest.raises(AuthConfigError, match="refusing to serve the open single-user mode"):
        check_serving("auto", False, "0.0.0.0")
    check_serving("off", False, "0.0.0.0")  # asked for explicitly
    with pytest.raises(AuthConfigError, match="no enabled user has a password"):
        check_serving("on", login_required("on", db), "127.0.0.1")
    with pytest.raises(AuthConfigError, match="expected one of"):
        login_required("maybe", db)
    add_user(db, "root", PW, "admin")
    assert login_required("auto", db) and login_required("on", db) and not login_required("off", db)
    check_serving("auto", True, "0.0.0.0")
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("") and not is_loopback("example.org")


def test_login_check_throttles_repeated_failures(db):
    from vibestudio.accounts.throttle import LoginThrottle

    add_user(db, "ann", PW, "annotator")
    access = Access(db, True, throttle=LoginThrottle(per_minute=100, free=3, base_s=60))
    assert access.check_login("ann", PW, "10.0.0.1")
    for _ in range(4):
        assert not access.check_login("ann", "wrong password", "10.0.0.1")
    assert not access.check_login("ann", PW, "10.0.0.1")  # throttled: even the right password waits here
    assert access.check_login("ann", PW, "10.0.0.2")  # the owner elsewhere is not locked out
    assert access.user_id(type("Req", (), {"username": "ann"})()) == get_user(db, "ann").id
    open_mode = Access()
    assert open_mode.user_id(None) is None and open_mode.gradio_auth() is None


def test_per_user_limits_in_login_mode(db):
    from vibestudio.accounts import RateLimited, RateLimiter

    access = Access(db, True, prompts=RateLimiter(2, what="prompts"), votes=RateLimiter(60, what="votes"))
    access.limit("prompts", 1)
    access.limit("prompts", 1)
    with pytest.raises(RateLimited, match="too many prompts"):
        access.limit("prompts", 1)
    access.limit("prompts", 2)  # another user
    access.limit("votes", 1)  # another kind
    for _ in range(100):
        access.limit("prompts", None)  # the local operator (open mode) is not limited
