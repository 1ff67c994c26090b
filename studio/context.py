"""Wiring: one database, the arena service and first-start set-up (migrations, default contestants, prompts)."""

from __future__ import annotations

from dataclasses import dataclass, field

from arena.battles import ArenaLimits, ArenaService
from arena.prompts import ensure_mt_bench
from arena.registry import ensure_defaults
from db.session import Database
from db.settings import Settings, get_settings
from studio.auth import Access


@dataclass
class StudioContext:
    settings: Settings
    db: Database
    arena: ArenaService
    access: Access = field(default_factory=Access)  # login mode and per-user limits (open mode by default)


def build_context(settings: Settings | None = None) -> StudioContext:
    settings = settings or get_settings()
    db = Database(settings.database_url)
    db.migrate()
    with db.session() as s:
        ensure_defaults(s)
        ensure_mt_bench(s)
    limits = ArenaLimits(
        settings.max_prompt_chars, settings.max_turns, settings.answer_timeout_s, settings.max_new_tokens
    )
    try:
        from training.runner import reconcile

        reconcile(db)
    except ImportError:  # training extras absent
        pass
    return StudioContext(settings, db, ArenaService(db, limits), Access.from_settings(settings, db))
