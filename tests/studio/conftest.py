"""Fixtures for the studio's page tests: one built app over a fresh studio, shared by the tests that read its
config or call its handlers (building it costs seconds; the tests do not change what it is built over)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def fresh_app(tmp_path_factory):
    """The Gradio app of a fresh studio (a new SQLite database in its own folder), built once."""
    from vibestudio.common.settings import Settings
    from vibestudio.studio.app import build_app
    from vibestudio.studio.context import build_context

    home = tmp_path_factory.mktemp("fresh-app")
    ctx = build_context(Settings(database_url=f"sqlite:///{home / 's.sqlite'}"))
    return build_app(ctx)
