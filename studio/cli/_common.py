"""What every ``vibestudio`` command shares: the one way to open the database, and the one error exit.

The exit is ``fail``, or ``failing_on`` around a block whose known errors are the message. It is kept free
of heavy imports (SQLAlchemy, the arena, training), so ``vibestudio --help`` stays fast. Each helper
imports what it needs when it runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import typer

if TYPE_CHECKING:
    from vibestudio.db.session import Database
    from vibestudio.studio.context import StudioContext


def group(**options: Any) -> typer.Typer:
    """A ``typer.Typer`` for a command group (and the root), drawing its help with click's plain formatter.

    Typer's rich help imports rich and markdown-it to draw a page: about two thirds of what ``vibestudio --help``
    cost, twice a bare ``import typer`` (``benchmarks/startup.py``; the performance lane keeps the ratio). Plain
    help reads the same in a terminal, a pipe and ``docs/cli.md``."""
    return typer.Typer(rich_markup_mode=None, **options)


def fail(msg: str) -> NoReturn:
    """Print ``Error: MSG`` in red on stderr and exit with status 1."""
    typer.secho(f"Error: {msg}", fg=typer.colors.RED, err=True)
    raise typer.Exit(1)


@contextmanager
def failing_on(*errors: type[Exception]) -> Iterator[None]:
    """Run the block; one of ``errors`` raised in it exits through ``fail`` with its message."""
    try:
        yield
    except errors as exc:
        fail(str(exc))


def open_context() -> StudioContext:
    """The studio as the web app builds it: database migrated, default contestants and prompt sets in place,
    training jobs reconciled, and the arena service (for commands that play battles)."""
    from vibestudio.studio.auth import AuthConfigError
    from vibestudio.studio.context import build_context

    with failing_on(AuthConfigError):  # e.g. VIBESTUDIO_AUTH=proxy without the proxy's addresses
        return build_context()


def open_db(*, seed: bool = True, migrate: bool = True) -> Database:
    """The studio database at the configured URL (``VIBESTUDIO_DATABASE_URL``, else SQLite under the data home).

    ``seed``: also set it up as the web app does (see ``open_context``); off for commands that must add no rows of
    their own (``users``, ``models add``, ``db``). ``migrate``: bring the schema to head first; off only where the
    file must be seen as it is (``db backup``, ``db restore``).
    """
    if seed:
        return open_context().db
    from vibestudio.db.session import Database

    db = Database()
    if migrate:
        db.migrate()
    return db


def echo_json(data: Any, indent: int | None = 2) -> None:
    """Print ``data`` as JSON (values JSON does not know, such as datetimes, as strings)."""
    typer.echo(json.dumps(data, indent=indent, default=str))


def progress_bar(  # type: ignore[no-untyped-def]
    desc: str, unit: str = "step", disable: bool = False, total: int | None = 0
):
    """A tqdm bar and a ``progress(done, total, note)`` callback that moves it (services report through it)."""
    from tqdm import tqdm

    bar = tqdm(total=total, desc=desc, unit=unit, disable=disable)

    def progress(done: int, total: int, note: str) -> None:
        bar.total, bar.n = total, done
        bar.set_postfix_str(note, refresh=True)

    return bar, progress


def yaml_value(flag: str, text: str) -> Any:
    """``text`` of the option ``flag`` read as YAML; a value that does not parse is refused on one line, naming
    the flag and where in the value the problem is (``training.jobs.config.yaml_syntax``)."""
    import yaml

    try:
        return yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError):
        from vibestudio.training.jobs.config import yaml_syntax

        given = f"{flag}{text}" if flag.endswith("=") else f"{flag} {text}"
        fail(f"{given}: not valid YAML ({yaml_syntax(text, one_line=True)[1]})")
