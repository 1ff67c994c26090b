"""``vibestudio users ...``: accounts from the command line. The CLI is the local operator, with admin
rights.

Passwords are read from a hidden prompt or, for scripts, one line on stdin (``--password-stdin``). There
is no ``--password`` option, so a password never lands in shell history or the process list.
"""

import json
import sys

import typer

from vibestudio.studio.cli._common import fail, group, open_db

#: The roles `accounts.ROLES` defines, spelled here for the help text so that `vibestudio --help` does not
#: import the accounts code (SQLAlchemy, argon2); tests/test_ratings_cli.py keeps the two equal.
ROLES = ("annotator", "researcher", "admin")

users_app = group(
    help="User accounts and roles (admin, researcher, annotator). Adding the first user turns login on.",
    no_args_is_help=True,
)


def _password(from_stdin: bool) -> str:
    if from_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    return str(typer.prompt("Password", hide_input=True, confirmation_prompt=True))


@users_app.command("add")
def users_add(
    name: str = typer.Argument(..., help="Login name (letters, digits, . _ @ -)."),
    role: str = typer.Option("annotator", help=f"One of: {', '.join(ROLES)}."),
    password_stdin: bool = typer.Option(False, "--password-stdin", help="Read the password from stdin."),
) -> None:
    """Create a user who can log in."""
    from vibestudio.accounts import AccountError, add_user

    try:
        u = add_user(open_db(seed=False), name, _password(password_stdin), role)
    except AccountError as exc:
        fail(str(exc))
    typer.echo(f"Added {u.name} ({u.role}). Login is required from the next server start.")


@users_app.command("list")
def users_list(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List users with their role and status."""
    from vibestudio.accounts import list_users

    users = list_users(open_db(seed=False))
    if as_json:
        rows = [
            {"name": u.name, "role": u.role, "disabled": u.disabled, "has_password": u.has_password}
            for u in users
        ]
        typer.echo(json.dumps(rows, indent=2))
        return
    for u in users:
        status = "disabled" if u.disabled else ("active" if u.has_password else "no password")
        typer.echo(f"{u.name:<32} {u.role:<11} {status}")


@users_app.command("set-role")
def users_set_role(
    name: str = typer.Argument(...), role: str = typer.Argument(..., help=", ".join(ROLES))
) -> None:
    """Change a user's role (the last active admin cannot be demoted)."""
    from vibestudio.accounts import AccountError, set_role

    try:
        u = set_role(open_db(seed=False), name, role)
    except AccountError as exc:
        fail(str(exc))
    typer.echo(f"{u.name} is now {u.role}.")


@users_app.command("disable")
def users_disable(
    name: str = typer.Argument(...),
    enable: bool = typer.Option(False, "--enable", help="Enable the account again instead."),
) -> None:
    """Disable a user: no login, and every request of an open session is refused."""
    from vibestudio.accounts import AccountError, set_disabled

    try:
        u = set_disabled(open_db(seed=False), name, not enable)
    except AccountError as exc:
        fail(str(exc))
    typer.echo(f"{u.name} is {'disabled' if u.disabled else 'enabled'}.")


@users_app.command("passwd")
def users_passwd(
    name: str = typer.Argument(...),
    password_stdin: bool = typer.Option(False, "--password-stdin", help="Read the password from stdin."),
) -> None:
    """Set a new password for a user."""
    from vibestudio.accounts import AccountError, set_password

    try:
        u = set_password(open_db(seed=False), name, _password(password_stdin))
    except AccountError as exc:
        fail(str(exc))
    typer.echo(f"New password set for {u.name}.")
