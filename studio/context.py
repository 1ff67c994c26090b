"""Wiring: one database, the arena service, and the leaderboard service they share.

It also runs first-start set-up: migrations, default contestants, prompts, and the start-up sweep of idle
battles. It owns the idle-battle timer of the app process.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vibestudio.arena.battle_end import IdleSweeper
from vibestudio.arena.battles import ArenaLimits, ArenaService
from vibestudio.arena.prompts import ensure_mt_bench
from vibestudio.arena.registry import ensure_defaults
from vibestudio.arena.sampling import SamplerInputs
from vibestudio.common.settings import Settings, get_settings
from vibestudio.db.session import Database
from vibestudio.studio.auth import Access

if TYPE_CHECKING:
    from vibestudio.standings.leaderboard import LeaderboardService


@dataclass
class StudioContext:
    settings: Settings
    db: Database
    arena: ArenaService
    access: Access = field(default_factory=Access)  # login mode and per-user limits (open mode by default)
    _leaderboard: LeaderboardService | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _sweeper: IdleSweeper | None = field(default=None, init=False, repr=False)

    @property
    def leaderboard(self) -> LeaderboardService:
        """The studio's one leaderboard service (vote cache and fitted boards): the Leaderboard and Models tabs
        read it, and the arena's active sampler draws with its ratings. Built on first use, so commands that never
        rate do not import the ratings stack."""
        with self._lock:
            if self._leaderboard is None:
                from vibestudio.standings.leaderboard import LeaderboardService

                self._leaderboard = LeaderboardService(self.db)
            return self._leaderboard

    def start_idle_sweeper(self) -> IdleSweeper:
        """End idle battles on a timer in this process (`arena.battle_end.IdleSweeper`); once per context."""
        with self._lock:
            if self._sweeper is None:
                self._sweeper = IdleSweeper(
                    self.db, lambda: self.arena.limits.idle_minutes, self.arena.answering_ids
                ).start()
            return self._sweeper

    def sampler_inputs(self) -> SamplerInputs:
        """The arena's rating source (`arena.sampling.RatingSource`): the shared leaderboard's current ratings."""
        return self.leaderboard.sampler_inputs()


def build_context(settings: Settings | None = None) -> StudioContext:
    settings = settings or get_settings()
    db = Database(settings.database_url)
    db.migrate()
    # First-start defaults under the same database-wide lock as migrations: two replicas starting together on a
    # fresh database register the default contestants and prompt set once, not twice.
    with db.startup_lock(), db.session() as s:
        ensure_defaults(s)
        ensure_mt_bench(s)
    limits = ArenaLimits(
        settings.max_prompt_chars,
        settings.max_turns,
        settings.answer_timeout_s,
        settings.max_new_tokens,
        idle_minutes=settings.battle_idle_minutes,
        strip_prefill=settings.strip_prefill,
        blind_max_tokens=settings.blind_max_tokens,
        turns_in_flight_per_user=settings.turns_in_flight,
    )
    try:
        from vibestudio.training.jobs.ray_watch import watch
        from vibestudio.training.jobs.runner import reconcile

        reconcile(db)
        watch(db)  # with VIBESTUDIO_JOBS=ray: hand queued jobs to Ray, notice the ones it lost
    except ImportError:  # training extras absent
        pass
    ctx = StudioContext(settings, db, ArenaService(db, limits), Access.from_settings(settings, db))
    ctx.arena.end_idle_battles("sweep")  # battles an earlier run left open and idle end now, and count
    ctx.arena.ratings = ctx.sampler_inputs  # one ratings cache for the sampler and the leaderboard
    return ctx
