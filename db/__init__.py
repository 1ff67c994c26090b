"""Persistence for Vibe Studio: SQLAlchemy models, the engine and session factory, Alembic migrations (one
chain) and backups.

This package knows tables and connections. It knows nothing about contestants, what votes mean, or pages.
Imports common only. Its settings give the database URL and the data home.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below load SQLAlchemy; they are imported when first used
    from vibestudio.db.models import (
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
    from vibestudio.db.session import Database, data_home, default_database_url, get_database

_SESSION = {"Database", "data_home", "default_database_url", "get_database"}


def __getattr__(name: str) -> Any:
    """Load ``db.models`` or ``db.session`` on first use, so that importing ``db`` alone stays light."""
    if name in _SESSION:
        return getattr(import_module("vibestudio.db.session"), name)
    if name in __all__:
        return getattr(import_module("vibestudio.db.models"), name)
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
