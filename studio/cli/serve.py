"""``vibestudio serve``: the studio web app."""

from __future__ import annotations

import typer

from studio.cli._common import fail


def serve(
    host: str = typer.Option(None, help="Interface to bind (default 127.0.0.1)."),
    port: int = typer.Option(None, help="Port (default 7860)."),
) -> None:
    """Serve the studio web app."""
    from studio.app import serve as run
    from studio.auth import AuthConfigError

    typer.echo("Preparing the studio (database, default contestants, prompt sets)...")
    try:
        run(host, port, block=True)
    except AuthConfigError as exc:
        fail(str(exc))


def register(root: typer.Typer) -> None:
    root.command("serve")(serve)
