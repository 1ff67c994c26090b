"""Persistence for Vibe Studio: SQLAlchemy models, engine/session factory and Alembic migrations.

This package knows tables and connections, and holds the one reader of untrusted files (``db.files``) because
every layer above reads them; it imports nothing from arena, annotation, training or studio.
"""

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
