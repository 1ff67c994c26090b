"""Accounts: argon2 hashes, users and roles, authentication, role checks, the last-admin guard, rate limits."""

from __future__ import annotations

import pytest
from argon2 import PasswordHasher
from sqlalchemy import select

from vibestudio.accounts import (
    AccountError,
    PermissionDenied,
    RateLimited,
    RateLimiter,
    add_user,
    authenticate,
    get_user,
    hash_password,
    list_users,
    login_enabled,
    require_role,
    set_disabled,
    set_password,
    set_role,
    verify_password,
)
from vibestudio.db.models import User

PW = "correct horse battery"


def test_hash_is_argon2id_salted_and_verifies():
    h1, h2 = hash_password(PW), hash_password(PW)
    assert h1.startswith("$argon2id$") and PW not in h1
    assert h1 != h2  # salted
    assert verify_password(h1, PW)
    assert not verify_password(h1, PW + "!")
    assert not verify_password(None, PW)
    assert not verify_password("not-a-hash", PW)


@pytest.mark.parametrize("bad", ["short", "", "x" * 2000])
def test_weak_or_absurd_passwords_are_refused(db, bad):
    with pytest.raises(AccountError, match="password"):
        add_user(db, "alice", bad)
    assert get_user(db, "alice") is None


@pytest.mark.parametrize("bad", ["", "   ", "has space", "x" * 65, "<script>", "a\x00b"])
def test_bad_names_are_refused(db, bad):
    with pytest.raises(AccountError, match="user name"):
        add_user(db, bad, PW)


def test_users_roles_and_authentication(db):
    assert not login_enabled(db)
    admin = add_user(db, "root", PW, "admin")
    assert login_enabled(db)
    add_user(db, "rita", PW, "researcher")
    ann = add_user(db, "ann", PW, "annotator")
    with db.session() as s:
        stored = s.scalar(select(User.password_hash).where(User.name == "ann"))
    assert stored and stored.startswith("$argon2id$") and PW not in stored

    who = authenticate(db, "ann", PW)
    assert who is not None and who.id == ann.id and who.role == "annotator" and who.last_login_at
    assert authenticate(db, "ann", "wrong password") is None
    assert authenticate(db, "nobody", PW) is None
    assert authenticate(db, "", PW) is None
    assert [u.name for u in list_users(db)] == ["ann", "rita", "root"]

    with pytest.raises(AccountError, match="already exists"):
        add_user(db, "ann", PW)
    with pytest.raises(AccountError, match="unknown role"):
        add_user(db, "bob", PW, "superuser")

    set_role(db, "ann", "researcher", by=admin.id)
    assert get_user(db, "ann").role == "researcher"
    set_disabled(db, "ann", True, by=admin.id)
    assert authenticate(db, "ann", PW) is None
    with pytest.raises(PermissionDenied, match="disabled"):
        require_role(db, ann.id, "annotator")
    set_disabled(db, "ann", False, by=admin.id)
    assert authenticate(db, "ann", PW) is not None


def test_require_role_ranks_and_local_operator(db):
    admin = add_user(db, "root", PW, "admin")
    res = add_user(db, "rita", PW, "researcher")
    ann = add_user(db, "ann", PW, "annotator")
    assert require_role(db, None, "admin") is None  # the local operator (CLI, open mode)
    assert require_role(db, admin.id, "researcher").name == "root"
    assert require_role(db, res.id, "researcher").name == "rita"
    assert require_role(db, ann.id, "annotator").name == "ann"
    with pytest.raises(PermissionDenied, match="'annotator'; this needs researcher"):
        require_role(db, ann.id, "researcher")
    with pytest.raises(PermissionDenied, match="needs admin"):
        require_role(db, res.id, "admin")
    with pytest.raises(PermissionDenied):
        require_role(db, 99999, "annotator")


def test_only_admins_manage_users(db):
    add_user(db, "root", PW, "admin")
    res = add_user(db, "rita", PW, "researcher")
    ann = add_user(db, "ann", PW, "annotator")
    for call in (
        lambda: add_user(db, "eve", PW, "admin", by=res.id),
        lambda: list_users(db, by=ann.id),
        lambda: set_role(db, "ann", "admin", by=ann.id),
        lambda: set_disabled(db, "root", True, by=res.id),
        lambda: set_password(db, "root", "a new password", by=ann.id),
    ):
        with pytest.raises(PermissionDenied):
            call()
    assert get_user(db, "eve") is None and get_user(db, "ann").role == "annotator"
    assert not get_user(db, "root").disabled
    set_password(db, "ann", "my own new password", by=ann.id)  # everyone may change their own
    assert authenticate(db, "ann", "my own new password") is not None


def test_last_active_admin_cannot_be_demoted_or_disabled(db):
    root = add_user(db, "root", PW, "admin")
    with pytest.raises(AccountError, match="last active admin"):
        set_role(db, "root", "researcher", by=root.id)
    with pytest.raises(AccountError, match="last active admin"):
        set_disabled(db, "root", True, by=root.id)
    add_user(db, "second", PW, "admin")
    set_role(db, "root", "researcher", by=root.id)
    assert get_user(db, "root").role == "researcher"


def test_name_known_without_password_gets_an_account(db):
    with db.session() as s:  # annotation records annotators by name, without a password
        s.add(User(name="labeller", role="annotator"))
    assert not login_enabled(db)
    info = add_user(db, "labeller", PW, "annotator")
    assert info.has_password and authenticate(db, "labeller", PW) is not None
    with db.session() as s:
        assert len(s.scalars(select(User).where(User.name == "labeller")).all()) == 1


def test_old_hash_parameters_are_upgraded_on_login(db):
    weak = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1).hash(PW)
    with db.session() as s:
        s.add(User(name="old", role="annotator", password_hash=weak))
    assert authenticate(db, "old", PW) is not None
    with db.session() as s:
        new = s.scalar(select(User.password_hash).where(User.name == "old"))
    assert new != weak and verify_password(new, PW)


def test_rate_limiter_bursts_refills_and_keeps_users_apart():
    lim = RateLimiter(per_minute=60, burst=3, what="votes")
    for _ in range(3):
        lim.check("ann", now=100.0)
    with pytest.raises(RateLimited, match="too many votes") as exc:
        lim.check("ann", now=100.0)
    assert 0 < exc.value.retry_after <= 1.0
    lim.check("bob", now=100.0)  # another user has their own bucket
    lim.check("ann", now=101.0)  # one token back after a second at 60/min
    with pytest.raises(RateLimited):
        lim.check("ann", now=101.0)
    off = RateLimiter(per_minute=0)
    for _ in range(1000):
        off.check("ann")
