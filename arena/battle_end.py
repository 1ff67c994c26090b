"""How battles end: on reveal, on a new round, or after an idle timeout. Then their votes count.

Some battles are never revealed: a closed tab, an API client that only votes. They must not stay open
forever. Open battles count nowhere: a count that moves during a battle would tell another tab who plays.
So their votes would never count. Every battle therefore records how it ended (``ended_reason``, one of
`END_REASONS`). It also records its last activity (``active_at``): its start, each turn begun or stored,
each vote.

``end_idle`` ends every open battle idle for at least the timeout (``VIBESTUDIO_BATTLE_IDLE_MINUTES``). A
timeout of 0 turns the idle end off. The reason is ``voted`` when it has votes (they count from then on),
else ``abandoned``. The studio runs it at start-up, with reason ``sweep``, for battles a previous run left
open. Then it runs on a timer in the app process (`IdleSweeper`, reason ``idle``). So a battle ends within
a sweep interval (at most a minute) of its timeout. Battles being answered in this process are skipped.

**Clocks.** ``active_at`` is written and compared by the *database's* clock (`db_now`), never a host's. So
replicas with skewed clocks agree, and a host's clock change moves nothing. The sweeper catches a forward
jump of the database's own clock. Between two sweeps, the database clock may not run ahead of the
sweeper's monotonic clock by more than `JUMP_TOLERANCE_S`. When it does, the open battles' activity stamps
move forward by the jump before anything is judged idle. So no fresh battle ends early. A backward jump
can only delay an end.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import exists, func, select, text, update
from sqlalchemy.orm import Session

from vibestudio.db.models import Battle, Vote, utcnow
from vibestudio.db.session import Database

log = logging.getLogger(__name__)

#: How a battle ended: revealed (the user asked who was who), new_round (the user moved on), idle (no activity for
#: the timeout, found by the running app), sweep (found idle at start-up), ended (an explicit end without a reveal,
#: e.g. through the API), error (an engine failed; never rated).
END_REASONS = ("revealed", "new_round", "idle", "sweep", "ended", "error")
#: The reasons that mean "ended without a reveal" (the models stayed anonymous to the voter).
UNREVEALED = ("new_round", "idle", "sweep", "ended")
#: Battle statuses whose turns and votes count nowhere (boards, matrices, profiles, families, speed): still open, or
#: errored. Every reader of votes or answers filters on it (`standings.records` re-exports it).
UNCOUNTED = ("open", "errored")
#: Seconds the database clock may run ahead of the sweeper's monotonic clock between two sweeps before it counts
#: as a clock jump.
JUMP_TOLERANCE_S = 60.0


def db_now(session: Session) -> datetime:
    """The database server's current time (UTC, naive, as every timestamp column holds it)."""
    dialect = session.get_bind().dialect.name
    if dialect == "sqlite":  # the embedded database: its clock is this host's
        value = session.scalar(text("SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')"))
        return datetime.fromisoformat(str(value))
    if dialect == "postgresql":
        value = session.scalar(text("SELECT timezone('UTC', clock_timestamp())"))
        if isinstance(value, datetime):
            return value.replace(tzinfo=None)
    return utcnow()


def touch(session: Session, battle: Battle) -> None:
    """Record activity on ``battle`` now (by the database's clock)."""
    battle.active_at = db_now(session)


def close(session: Session, battle: Battle, reason: str) -> bool:
    """End an open battle: ``voted`` when it has votes, else ``abandoned``; False when it had ended already."""
    if reason not in END_REASONS:
        raise ValueError(f"unknown end reason {reason!r}; expected one of {', '.join(END_REASONS)}")
    if battle.status != "open":
        return False
    has_votes = session.scalar(select(Vote.id).where(Vote.battle_id == battle.id).limit(1)) is not None
    battle.status = "voted" if has_votes else "abandoned"
    battle.ended_at = utcnow()
    battle.ended_reason = reason
    return True


def end_idle(
    db: Database, idle_minutes: float, reason: str = "idle", skip: Collection[int] = ()
) -> list[int]:
    """End every open battle with no activity for ``idle_minutes`` (by the database's clock), except ``skip``;
    returns the ids ended. Each battle is ended by one conditional update, so two processes sweeping at once
    end it once, and a vote or turn that lands first keeps it open."""
    if reason not in ("idle", "sweep"):
        raise ValueError(f"an idle end's reason is 'idle' or 'sweep', got {reason!r}")
    if idle_minutes <= 0:
        return []
    ended: list[int] = []
    with db.session() as s:
        cutoff = db_now(s) - timedelta(minutes=idle_minutes)
        last = func.coalesce(Battle.active_at, Battle.created_at)  # rows written before 0011 have no stamp
        stale = (Battle.status == "open") & (last <= cutoff)
        ids = [i for i in s.scalars(select(Battle.id).where(stale)) if i not in skip]
        now = utcnow()
        for battle_id in ids:
            has_votes = exists().where(Vote.battle_id == battle_id)
            for status, cond in (("voted", has_votes), ("abandoned", ~has_votes)):
                res: Any = s.execute(
                    update(Battle)
                    .where(Battle.id == battle_id, stale, cond)
                    .values(status=status, ended_at=now, ended_reason=reason)
                    .execution_options(synchronize_session=False)
                )
                if res.rowcount:
                    ended.append(battle_id)
    return ended


def shift_open(db: Database, seconds: float, stamped_before: datetime) -> int:
    """Move the activity stamps of open battles stamped before ``stamped_before`` forward by ``seconds`` (after a
    forward clock jump); returns how many moved."""
    with db.session() as s:
        rows = list(
            s.scalars(select(Battle).where(Battle.status == "open", Battle.active_at <= stamped_before))
        )
        for b in rows:
            if b.active_at is not None:
                b.active_at = b.active_at + timedelta(seconds=seconds)
        return len(rows)


class IdleSweeper:
    """Ends idle battles on a timer in a daemon thread (`end_idle` every ``interval_s``), guarding against jumps of
    the database clock (see the module docstring). ``minutes`` is read on every sweep, so a changed setting applies
    at the next one; ``skip`` returns the battles being answered now."""

    def __init__(
        self,
        db: Database,
        minutes: Callable[[], float],
        skip: Callable[[], Collection[int]] = lambda: (),
        interval_s: float | None = None,
    ) -> None:
        self.db = db
        self.minutes = minutes
        self.skip = skip
        self.interval_s = interval_s
        self.ended = 0  # battles this sweeper ended
        self.jumps: list[float] = []  # clock jumps seen (seconds)
        self._last: tuple[datetime, float] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def interval(self) -> float:
        """Seconds between sweeps: a tenth of the timeout, between 0.5 s and 60 s."""
        if self.interval_s is not None:
            return self.interval_s
        return min(60.0, max(0.5, self.minutes() * 6.0))

    def sweep(self) -> list[int]:
        """One sweep: check the database clock against the monotonic one, then end what is idle."""
        minutes = self.minutes()
        with self.db.session() as s:
            now = db_now(s)
        mono = time.monotonic()
        if self._last is not None:
            prev_now, prev_mono = self._last
            elapsed = mono - prev_mono
            jump = (now - prev_now).total_seconds() - elapsed
            if jump > JUMP_TOLERANCE_S:
                moved = shift_open(self.db, jump, prev_now + timedelta(seconds=elapsed + JUMP_TOLERANCE_S))
                self.jumps.append(jump)
                log.warning(
                    "the database clock jumped %.0f s ahead; moved %d open battles' activity", jump, moved
                )
        self._last = (now, mono)
        ended = end_idle(self.db, minutes, "idle", set(self.skip()))
        self.ended += len(ended)
        return ended

    def start(self) -> IdleSweeper:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="battle-idle-sweeper", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval()):
            try:
                self.sweep()
            except Exception:  # a failed sweep (database away) is retried at the next tick
                log.exception("idle battle sweep failed")


class Ended(NamedTuple):
    """Battles that ended, of every mode, and their votes; the newest vote tells one state from another."""

    battles: int
    votes: int
    last_vote_id: int  # 0: no vote
    last_vote_at: str  # "" when no vote; with the id, a restored database does not read as the same state


def ended_counts(session: Session) -> Ended:
    """Battles that ended (open and errored ones count nowhere) and the votes cast in them."""
    ended = Battle.status.not_in(UNCOUNTED)
    battles = session.scalar(select(func.count(Battle.id)).where(ended)) or 0
    votes, last_id, last_at = session.execute(
        select(func.count(Vote.id), func.max(Vote.id), func.max(Vote.created_at))
        .join(Battle, Vote.battle_id == Battle.id)
        .where(ended)
    ).one()
    return Ended(int(battles), int(votes or 0), int(last_id or 0), str(last_at or ""))
