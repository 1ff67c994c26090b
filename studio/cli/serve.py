"""``vibestudio serve``: the studio web app."""

import typer

from vibestudio.studio.cli._common import fail


def serve(
    host: str = typer.Option(None, help="Interface to bind (default 127.0.0.1)."),
    port: int = typer.Option(None, help="Port (default 7860)."),
) -> None:
    """Serve the studio web app."""
    from vibestudio.db.backup import hold_serving_lock
    from vibestudio.db.session import default_database_url
    from vibestudio.studio.app import serve as run
    from vibestudio.studio.auth import AuthConfigError

    typer.echo("Preparing the studio (database, default contestants, prompt sets)...")
    lock = hold_serving_lock(default_database_url())  # `db restore` refuses while this process holds it
    try:
        run(host, port, block=True)
    except AuthConfigError as exc:
        fail(str(exc))
    finally:
        if lock is not None:
            lock.close()


def register(root: typer.Typer) -> None:
    root.command("serve")(serve)
