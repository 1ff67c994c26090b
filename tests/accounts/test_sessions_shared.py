"""Sessions every app process accepts (``accounts.sessions`` with a database): a token issued by one process is
valid in another, is stored only as a hash, and ends everywhere on sign-out, a password change or expiry; the
session cookie gets one name on every replica (``studio.auth``)."""

from __future__ import annotations

from sqlalchemy import select

from vibestudio.accounts import add_user, set_password
from vibestudio.accounts.sessions import SessionBook, fingerprint, token_hash
from vibestudio.db.models import WebSession
from vibestudio.db.session import Database
from vibestudio.studio.auth import SHARED_COOKIE_ID, _shared_name

PW = "a long password"


def test_a_session_issued_by_one_process_is_valid_in_another(db):
    add_user(db, "ann", PW, "annotator")
    one, two = SessionBook(12, db=db), SessionBook(12, db=Database(db.url))
    one.issue("tok-1", "ann", fingerprint(db, "ann"))
    one.issue("tok-2", "ann", fingerprint(db, "ann"))
    assert two.get("tok-1").name == "ann"
    assert two.valid("tok-1", fingerprint(db, "ann"))
    with db.session() as s:  # the table holds hashes, never a token
        stored = set(s.scalars(select(WebSession.token_hash)))
    assert stored == {token_hash("tok-1"), token_hash("tok-2")} and "tok-1" not in stored
    two.end_user("ann")  # signing out on one replica: every session of the user ends on all
    assert one.get("tok-1") is None and one.get("tok-2") is None


def test_a_password_change_or_age_ends_it_everywhere(db):
    add_user(db, "bob", PW, "annotator")
    one, two = SessionBook(12, db=db), SessionBook(12, db=Database(db.url))
    one.issue("t", "bob", fingerprint(db, "bob"), now=1000.0)
    assert not two.valid("t", fingerprint(db, "bob"), now=1000.0 + 12 * 3600 + 1)  # expired: and forgotten
    assert one.get("t") is None
    one.issue("u", "bob", fingerprint(db, "bob"))
    set_password(db, "bob", "another long password")
    assert not two.valid("u", fingerprint(db, "bob"))
    assert not one.valid("u", fingerprint(db, "bob"))  # gone for good, even under the old fingerprint


def test_the_cookie_gets_one_name_on_every_replica():
    raw = b"access-token-Zx9q=tok; HttpOnly; Path=/"
    assert _shared_name(raw, "Zx9q") == f"access-token-{SHARED_COOKIE_ID}=tok; HttpOnly; Path=/".encode()
    assert (
        _shared_name(b"access-token-unsecure-Zx9q=tok", "Zx9q")
        == f"access-token-unsecure-{SHARED_COOKIE_ID}=tok".encode()
    )
    assert (
        _shared_name(b"access-token-other=tok", "Zx9q") == b"access-token-other=tok"
    )  # not this process's id
