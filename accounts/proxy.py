"""Users signed in by an authenticating proxy (``VIBESTUDIO_AUTH=proxy``). The name and groups in a trusted
header become a studio user and a role.

A name seen for the first time becomes a user with the default role. It gets no password, so it cannot
sign in any other way. A group-to-role map may be configured (``admin=studio-admins;researcher=ml,data``).
Then the groups are the truth. At each request the user's role becomes the highest role its groups map to.
With no matching group, it gets the default role. Without a map the role is the studio's own
(``vibestudio users set-role``, the Admin tab). A disabled user stays disabled whatever the proxy says.

Which addresses may set the header is the web layer's business (``studio.auth``). This module trusts its
caller.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from vibestudio.accounts import RANK, ROLES, AccountError, UserInfo, _info, check_name, check_role
from vibestudio.db.models import User
from vibestudio.db.session import Database


def parse_role_groups(spec: str | None) -> dict[str, tuple[str, ...]]:
    """``"admin=studio-admins;researcher=ml,data"`` -> {"admin": ("studio-admins",), "researcher": ("ml", "data")}.

    Raises ``AccountError`` naming the bad part."""
    out: dict[str, tuple[str, ...]] = {}
    for part in (spec or "").split(";"):
        if not part.strip():
            continue
        role, eq, groups = part.partition("=")
        if not eq:
            raise AccountError(f"proxy role map part {part.strip()!r}: expected ROLE=GROUP[,GROUP...]")
        role = check_role(role.strip())
        names = tuple(g.strip() for g in groups.split(",") if g.strip())
        if not names:
            raise AccountError(f"proxy role map part {part.strip()!r}: no group named for {role}")
        out[role] = names
    return out


def role_from_groups(groups: list[str], role_groups: dict[str, tuple[str, ...]], default: str) -> str:
    """The highest role whose groups meet ``groups``; ``default`` when none does."""
    have = {g.strip() for g in groups if g.strip()}
    for role in reversed(ROLES):
        if have & set(role_groups.get(role, ())):
            return role
    return default


def proxy_user(
    db: Database,
    name: str,
    groups: list[str] | None = None,
    default_role: str = "annotator",
    role_groups: dict[str, tuple[str, ...]] | None = None,
) -> UserInfo:
    """The user the proxy named, created on first sight; its role synced from ``groups`` when a map is given.

    Raises ``AccountError`` for a name the studio does not accept (it says which rule)."""
    name = check_name(name)
    default_role = check_role(default_role)
    want = role_from_groups(groups or [], role_groups, default_role) if role_groups else None
    for _ in range(2):  # two processes seeing a new name at once: the loser reads the winner's row
        try:
            with db.session() as s:
                u = s.scalar(select(User).where(User.name == name))
                if u is None:
                    u = User(name=name, role=want or default_role, disabled=False)
                    s.add(u)
                    s.flush()
                elif want is not None and u.role != want and RANK.get(u.role, -1) >= 0:
                    u.role = want
                return _info(u)
        except IntegrityError:
            continue
    raise AccountError(f"could not record the proxy user {name!r}")
