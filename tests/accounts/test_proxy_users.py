"""Proxy sign-in rules without a server (``accounts.proxy``, ``studio.auth.ProxyPolicy``): settings that cannot
work are refused with the setting named; names become users once; groups map to roles; peers are checked by
address and range."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from vibestudio.accounts import AccountError, get_user
from vibestudio.accounts.proxy import parse_role_groups, proxy_user, role_from_groups
from vibestudio.db.session import Database
from vibestudio.studio.auth import AuthConfigError, ProxyPolicy


def _settings(**kw):
    base = dict(
        proxy_addresses="10.0.0.10, 10.1.0.0/16, ::1",
        proxy_user_header="X-Forwarded-User",
        proxy_groups_header="X-Forwarded-Groups",
        proxy_roles=None,
        proxy_default_role="annotator",
    )
    return SimpleNamespace(**{**base, **kw})


def test_the_policy_refuses_settings_that_cannot_work():
    with pytest.raises(AuthConfigError, match="needs VIBESTUDIO_PROXY_ADDRESSES"):
        ProxyPolicy.from_settings(_settings(proxy_addresses=None))
    with pytest.raises(AuthConfigError, match="'10.0.0.300' is not an address"):
        ProxyPolicy.from_settings(_settings(proxy_addresses="10.0.0.300"))
    with pytest.raises(AuthConfigError, match="unknown role 'boss'"):
        ProxyPolicy.from_settings(_settings(proxy_roles="boss=staff"))
    with pytest.raises(AuthConfigError, match="expected ROLE=GROUP"):
        ProxyPolicy.from_settings(_settings(proxy_roles="admin"))
    with pytest.raises(AuthConfigError, match="unknown role"):
        ProxyPolicy.from_settings(_settings(proxy_default_role="root"))


def test_peers_are_checked_by_address_and_range():
    policy = ProxyPolicy.from_settings(_settings())
    assert policy.trusts("10.0.0.10") and policy.trusts("10.1.255.3") and policy.trusts("::1")
    assert policy.trusts("::ffff:10.0.0.10")  # an IPv4 peer seen on an IPv6 socket
    for peer in ("10.0.0.11", "127.0.0.1", "10.2.0.1", "?", "", "proxy.internal", "10.0.0.10:80"):
        assert not policy.trusts(peer), peer


def test_groups_map_to_the_highest_role():
    roles = parse_role_groups("admin=studio-admins; researcher=ml,data")
    assert roles == {"admin": ("studio-admins",), "researcher": ("ml", "data")}
    assert role_from_groups(["staff", " data"], roles, "annotator") == "researcher"
    assert role_from_groups(["ml", "studio-admins"], roles, "annotator") == "admin"
    assert role_from_groups([], roles, "annotator") == "annotator"


def test_a_name_becomes_one_user_even_when_two_processes_see_it_at_once(db):
    with pytest.raises(AccountError, match="user name"):
        proxy_user(db, "two words")
    got = []
    barrier = threading.Barrier(4)

    def sign_in() -> None:
        own = Database(db.url)
        barrier.wait()
        got.append(proxy_user(own, "first@example.org").id)
        own.dispose()

    threads = [threading.Thread(target=sign_in) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(got) == 4 and len(set(got)) == 1
    u = get_user(db, "first@example.org")
    assert u.role == "annotator" and not u.has_password
    roles = parse_role_groups("admin=ops")
    assert proxy_user(db, "first@example.org", ["ops"], role_groups=roles).role == "admin"
    assert proxy_user(db, "first@example.org", [], role_groups=roles).role == "annotator"
