"""Persistence for Vibe Studio: SQLAlchemy models, engine/session factory and Alembic migrations.

This package knows tables and connections, and holds the one reader of untrusted files (``common.files``) because
every layer above reads them; it imports nothing from arena, annotation, training or studio.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if (
    TYPE_CHECKING
):  # the names below load SQLAlchemy; they are imported when first used (``common.files`` needs none)
    from db.models import (
        Base,
        Battle,
        Checkpoint,
        Contestant,
        DatasetSnapshot,
        Job,
        JobMetric,
        Judgement,
        Prompt,
        PromptSet,
        QueueItem,
        RubricScore,
        Turn,
        User,
        Vote,
    )
    from db.session import Database, data_home, default_database_url, get_database

_SESSION = {"Database", "data_home", "default_database_url", "get_database"}


def __getattr__(name: str) -> Any:
    """Load ``db.models`` or ``db.session`` on first use, so that ``common.files`` alone stays light to import."""
    if name in _SESSION:
        return getattr(import_module("db.session"), name)
    if name in __all__:
        return getattr(import_module("db.models"), name)
    raise AttributeError(f"module 'db' has no attribute {name!r}")


__all__ = [
    "Base",
    "Battle",
    "Checkpoint",
    "Contestant",
    "Database",
    "DatasetSnapshot",
    "Job",
    "JobMetric",
    "Judgement",
    "Prompt",
    "PromptSet",
    "QueueItem",
    "RubricScore",
    "Turn",
    "User",
    "Vote",
    "data_home",
    "default_database_url",
    "get_database",
]
