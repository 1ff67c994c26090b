"""One lifecycle per contestant, stored once (``contestants.state``) and logged (``contestant_events``).

States::

    pending   published, its checkpoint report running: never drawn for an anonymous battle; researchers may
              play it in named mode or self-play to inspect it, annotators may not
    released  plays anonymously: its verdict said pass or watch, or a person let it in (with a reason)
    held      out of anonymous battles: its verdict held it (regress; unknown, a failed or skipped report by
              default; the rules file decides), a person held it, or the sweep found its report gone
    hidden    a person retired it (named mode and self-play refuse it too); ``restore`` brings it back to the
              state it had, so a restore never lets a held checkpoint play (and a pending one whose report
              job ended meanwhile without a verdict comes back held, with why: never pending for good)

Every change goes through ``change``, a compare-and-set UPDATE on the state. So two processes cannot both
move it. Each change writes one event: action, from and to state, who, why and when. Who is a user's name,
or ``rules``, ``publish`` or ``sweep``. Events are ordered by id, not by clock, so a clock jump cannot
reorder them. Votes and ratings stay whatever the state. There is no other switch: ``Contestant.active``
is read-only (``state == released``).

``WAYS_OUT`` lists a person's actions out of each state; every state has one.

A verdict (``apply_verdict``) moves a pending contestant to released or held. It also holds a released one
when probes are stored later, unless a person released it over the same reasons. It releases one the rules
(or the sweep) held, once a verdict no longer holds it. A person's hold is only undone by a person.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from vibestudio.db.models import Contestant, ContestantEvent, Job, User, VerdictEvent

STATES = ("pending", "released", "held", "hidden")
BADGES = {
    "pending": "⏳ pending (report running)",
    "released": "▶️ released",
    "held": "⛔ held",
    "hidden": "🙈 hidden",
}
#: Actions a person takes (the rest are the system's: publish, verdict, sweep, migrate).
PERSON_ACTIONS = ("release", "hold", "hide", "restore")
#: States a researcher (not an annotator) may still play in named mode or self-play, to inspect them.
INSPECT_STATES = ("pending", "held")
#: A person's ways out of each state: no state is a dead end (a pending one also leaves by its verdict, or is
#: held with the reason when its report job ends without one, ``training.jobs.pending``).
WAYS_OUT = {
    "pending": ("release", "hold", "hide"),
    "released": ("hold", "hide"),
    "held": ("release", "hide"),
    "hidden": ("restore",),
}


class LifecycleError(ValueError):
    """A state change that is not allowed (the message says the current state and what to do instead)."""


@dataclass
class Change:
    contestant: str
    action: str
    from_state: str | None
    to_state: str
    by: str
    reason: str
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _row(session: Session, ident: int | str) -> Contestant:
    col = Contestant.id if isinstance(ident, int) else Contestant.public_name
    row = session.scalar(select(Contestant).where(col == ident))
    if row is None:
        raise LifecycleError(f"no contestant {ident!r}")
    return row


def badge(state: str) -> str:
    return BADGES.get(state, state)


def change(
    session: Session,
    ident: int | str,
    to_state: str,
    *,
    action: str,
    by: str,
    reason: str,
    user_id: int | None = None,
    details: dict[str, Any] | None = None,
    allowed_from: tuple[str, ...] | None = None,
) -> Change:
    """Move a contestant to ``to_state`` and log it, in the caller's transaction. ``allowed_from`` limits the
    states it may come from (LifecycleError otherwise); the UPDATE only applies to the state read, so a
    concurrent change makes this one fail instead of overwriting it."""
    if to_state not in STATES:
        raise LifecycleError(f"unknown state {to_state!r}; expected one of {', '.join(STATES)}")
    row = _row(session, ident)
    session.refresh(row)
    before = row.state
    if allowed_from is not None and before not in allowed_from:
        raise LifecycleError(f"{row.public_name} is {before}; {action} needs it {' or '.join(allowed_from)}")
    done = session.execute(
        update(Contestant)
        .where(Contestant.id == row.id, Contestant.state == before)
        .values(state=to_state)
        .execution_options(synchronize_session=False)
    )
    if int(getattr(done, "rowcount", 0)) != 1:
        raise LifecycleError(f"{row.public_name} changed state while this {action} ran; try again")
    session.add(
        ContestantEvent(
            contestant_id=row.id,
            action=action,
            by_user=by,
            reason=reason,
            from_state=before,
            to_state=to_state,
            user_id=user_id,
            details=dict(details or {}),
        )
    )
    session.flush()
    session.refresh(row)
    return Change(row.public_name, action, before, to_state, by, reason, dict(details or {}))


def _who(session: Session, user_id: int | None, by: str | None) -> str:
    if by and by.strip():
        return by.strip()
    if user_id is not None:
        name = session.scalar(select(User.name).where(User.id == user_id))
        if name:
            return str(name)
    return "local operator"


def _reason(reason: str, what: str) -> str:
    if not (reason or "").strip():
        raise LifecycleError(f"say why (a reason is logged with the {what})")
    return reason.strip()


def _events(session: Session, cid: int) -> list[ContestantEvent]:
    return list(
        session.scalars(
            select(ContestantEvent).where(ContestantEvent.contestant_id == cid).order_by(ContestantEvent.id)
        )
    )


def _last_verdict(session: Session, cid: int) -> VerdictEvent | None:
    q = select(VerdictEvent).where(VerdictEvent.contestant_id == cid, VerdictEvent.action == "verdict")
    return session.scalars(q.order_by(VerdictEvent.id.desc()).limit(1)).first()


# ---- a person's decisions ----------------------------------------------------------------------------------
def release(
    session: Session, ident: int | str, reason: str, user_id: int | None = None, by: str | None = None
) -> Change:
    """A person lets a held (or pending) contestant play anonymously; the reasons of the verdict it overrides
    are kept, so a re-evaluation giving the same reasons does not hold it again."""
    row = _row(session, ident)
    why = _reason(reason, "release")
    if row.state == "hidden":
        raise LifecycleError(f"{row.public_name} is hidden: restore it first (`vibestudio models restore`)")
    if row.state == "released":
        raise LifecycleError(f"{row.public_name} is already released")
    last = _last_verdict(session, row.id)
    overrode = list(last.reason.split("; ")) if last is not None and last.held and last.reason else []
    return change(
        session,
        row.id,
        "released",
        action="release",
        by=_who(session, user_id, by),
        reason=why,
        user_id=user_id,
        details={"overrode": overrode, "verdict": last.verdict if last else None},
        allowed_from=("pending", "held"),
    )


def hold(
    session: Session, ident: int | str, reason: str, user_id: int | None = None, by: str | None = None
) -> Change:
    """A person keeps a contestant out of anonymous battles; only a person's release lets it back. On one the
    rules or the sweep held, it makes the hold the person's (a later passing verdict no longer releases it)."""
    row = _row(session, ident)
    why = _reason(reason, "hold")
    if row.state == "hidden":
        raise LifecycleError(f"{row.public_name} is hidden: restore it first")
    if row.state == "held":
        into_hold = next((e for e in reversed(_events(session, row.id)) if e.to_state == "held"), None)
        if into_hold is None or into_hold.action in PERSON_ACTIONS:
            who = f" by {into_hold.by_user}" if into_hold is not None else ""
            raise LifecycleError(f"{row.public_name} is already held{who}")
        # held by the rules or the sweep: the person's hold makes it theirs (no later verdict releases it)
    return change(
        session,
        row.id,
        "held",
        action="hold",
        by=_who(session, user_id, by),
        reason=why,
        user_id=user_id,
        allowed_from=("pending", "released", "held"),
    )


def hide(
    session: Session, ident: int | str, reason: str, user_id: int | None = None, by: str | None = None
) -> Change:
    """A person retires a contestant from every battle (its votes and ratings stay)."""
    row = _row(session, ident)
    why = _reason(reason, "hide")
    if row.state == "hidden":
        raise LifecycleError(f"{row.public_name} is already hidden")
    return change(
        session, row.id, "hidden", action="hide", by=_who(session, user_id, by), reason=why, user_id=user_id
    )


def restore_target(session: Session, row: Contestant) -> tuple[str, str]:
    """The state a hidden contestant returns to, and why: the state it was hidden from, unless a verdict was
    recorded while it was hidden (then that verdict's hold decides; a person's hold still stands)."""
    events = _events(session, row.id)
    at = max((i for i, e in enumerate(events) if e.action == "hide"), default=None)
    before = (events[at].from_state if at is not None else None) or "released"
    since = [e for e in events[at + 1 :] if e.action == "verdict"] if at is not None else []
    if before == "held":
        into_hold = next((e for e in reversed(events[:at]) if e.to_state == "held"), None) if at else None
        by_person = into_hold is not None and into_hold.action in PERSON_ACTIONS
        if by_person or not since or (since[-1].details or {}).get("hold", True):
            return "held", "it was held when it was hidden: a researcher's release lets it play"
    if since:
        d = since[-1].details or {}
        verdict = d.get("verdict", "?")
        if d.get("hold"):
            return "held", f"the verdict recorded while it was hidden ({verdict}) holds it"
        return "released", f"the verdict recorded while it was hidden ({verdict}) releases it"
    if before == "pending":
        job_id, status, _ = report_job(session, row.id)
        if status in ACTIVE_JOB:
            return "pending", "its report has not recorded a verdict yet"
        what = f"job {job_id} is {status}" if job_id and status else "no job runs its report"
        return "held", f"its report ended without a verdict while it was hidden ({what}): rerun the report"
    return before, f"it was {before} when it was hidden"


#: Job statuses with a verdict still to come from them.
ACTIVE_JOB = ("queued", "running")


def report_job(session: Session, contestant_id: int) -> tuple[int | None, str | None, str | None]:
    """(job id, status, error) of the job that records this contestant's verdict: the report job of its newest
    publish event, else the training job that published it (its job process runs the report before it ends)."""
    event = session.scalar(
        select(ContestantEvent)
        .where(ContestantEvent.contestant_id == contestant_id, ContestantEvent.action == "publish")
        .order_by(ContestantEvent.id.desc())
        .limit(1)
    )
    job_id = (event.details or {}).get("report_job") if event is not None else None
    if job_id is None:
        job_id = session.scalar(select(Contestant.job_id).where(Contestant.id == contestant_id))
    job = session.get(Job, job_id) if job_id else None
    if job is None:
        return job_id, None, None
    return job.id, job.status, job.error


def restore(
    session: Session, ident: int | str, reason: str = "", user_id: int | None = None, by: str | None = None
) -> Change:
    """Bring a hidden contestant back to the state it had (never past its verdict: a held one comes back
    held). Refused for a contestant that is not hidden, with what to do instead."""
    row = _row(session, ident)
    if row.state == "held":
        raise LifecycleError(
            f"{row.public_name} is held, not hidden: a researcher lets it play with "
            f"`vibestudio models release {row.public_name} --reason ...` (logged)"
        )
    if row.state != "hidden":
        raise LifecycleError(f"{row.public_name} is {row.state}, not hidden: nothing to restore")
    target, why = restore_target(session, row)
    return change(
        session,
        row.id,
        target,
        action="restore",
        by=_who(session, user_id, by),
        reason=(reason or "").strip() or why,
        user_id=user_id,
        details={"why": why},
        allowed_from=("hidden",),
    )


# ---- the system's changes ----------------------------------------------------------------------------------
def apply_verdict(
    session: Session,
    contestant_id: int,
    verdict: str,
    hold_it: bool,
    reasons: list[str],
    *,
    by: str = "rules",
    user_id: int | None = None,
) -> Change | None:
    """What a recorded verdict does to the state (see the module docstring); None when nothing changes.
    ``by`` names who ran the report ("rules" for an automatic verdict, else e.g. "rita (rules)")."""
    row = _row(session, contestant_id)
    state = row.state
    why = f"verdict {verdict}: " + ("; ".join(reasons) or "no rule matched")
    if state == "pending":
        return change(
            session,
            row.id,
            "held" if hold_it else "released",
            action="verdict",
            by=by,
            user_id=user_id,
            reason=why,
        )
    events = _events(session, row.id)
    if state == "hidden":  # logged, so a restore knows what the verdict said (events are ordered by id)
        return change(
            session,
            row.id,
            "hidden",
            action="verdict",
            by=by,
            user_id=user_id,
            reason=why,
            details={"verdict": verdict, "hold": hold_it},
        )
    if state == "released" and hold_it:
        last_release = next((e for e in reversed(events) if e.action == "release"), None)
        if last_release is not None and set(reasons) <= set(
            (last_release.details or {}).get("overrode") or []
        ):
            return None  # a person already let it in over exactly these reasons
        return change(session, row.id, "held", action="verdict", by=by, user_id=user_id, reason=why)
    if state == "held" and not hold_it:
        into_hold = next((e for e in reversed(events) if e.to_state == "held"), None)
        if into_hold is not None and into_hold.action in ("verdict", "sweep", "migrate"):
            return change(session, row.id, "released", action="verdict", by=by, user_id=user_id, reason=why)
    return None


def published(session: Session, contestant_id: int, reason: str, details: dict[str, Any]) -> Change:
    """Log a checkpoint's publication (it was registered pending), or put a republished one back to pending
    when the sweep had held it for want of a verdict."""
    row = _row(session, contestant_id)
    if row.state == "pending" and not _events(session, row.id):
        session.add(
            ContestantEvent(
                contestant_id=row.id,
                action="publish",
                by_user="publish",
                reason=reason,
                from_state=None,
                to_state="pending",
                details=dict(details),
            )
        )
        session.flush()
        return Change(row.public_name, "publish", None, "pending", "publish", reason, dict(details))
    return change(
        session,
        row.id,
        "pending",
        action="publish",
        by="publish",
        reason=reason,
        details=details,
        allowed_from=("pending", "held"),
    )


def without_verdict(session: Session, contestant_id: int) -> bool:
    """True when the contestant is held by the sweep (no verdict since): a republish may retry its report."""
    events = _events(session, contestant_id)
    into_hold = next((e for e in reversed(events) if e.to_state == "held"), None)
    return into_hold is not None and into_hold.action == "sweep"


# ---- reading -----------------------------------------------------------------------------------------------
def state_of(session: Session, ident: int | str) -> str:
    return _row(session, ident).state


def may_play(session: Session, contestant_id: int, mode: str, user_id: int | None) -> str | None:
    """Why ``contestant_id`` may not play in a ``mode`` battle for ``user_id`` (None: the local operator);
    None when it may. Anonymous battles take released contestants only; named mode and self-play also take
    pending and held ones for researchers (to inspect them), never for annotators."""
    from vibestudio.accounts import RANK

    row = session.get(Contestant, contestant_id)
    if row is None:
        return f"contestant {contestant_id} does not exist"
    if row.state == "released":
        return None
    if mode not in ("named", "self_play") or row.state not in INSPECT_STATES:
        return f"contestant {contestant_id} is {row.state}, not released: it cannot play in a {mode} battle"
    user = session.get(User, user_id) if user_id is not None else None
    if user_id is None or (
        user is not None and not user.disabled and RANK.get(user.role, -1) >= RANK["researcher"]
    ):
        return None
    return f"contestant {contestant_id} is {row.state} (not released): only researchers may play it, in named mode"


def playable(session: Session, user_id: int | None, mode: str = "named") -> list[str]:
    """Names this user may choose for a ``mode`` battle (released ones, and for researchers pending and held
    ones to inspect), by id."""
    rows = session.scalars(select(Contestant).where(Contestant.state != "hidden").order_by(Contestant.id))
    return [r.public_name for r in rows if may_play(session, r.id, mode, user_id) is None]


def history(session: Session, ident: int | str) -> list[dict[str, Any]]:
    """Every state change of one contestant, oldest first: action, from, to, by whom, why, when."""
    row = _row(session, ident)
    return [
        {
            "action": e.action,
            "from": e.from_state,
            "to": e.to_state,
            "by": e.by_user,
            "reason": e.reason,
            "details": dict(e.details or {}),
            "at": e.created_at.isoformat(timespec="seconds"),
        }
        for e in _events(session, row.id)
    ]


def last_change(session: Session, ident: int | str) -> dict[str, Any] | None:
    h = history(session, ident)
    return h[-1] if h else None


def describe(session: Session, ident: int | str) -> str:
    """One line for pages and the CLI: the state, and who put it there and why."""
    row = _row(session, ident)
    last = last_change(session, row.id)
    text = badge(row.state)
    if last is None:
        return text
    if last["action"] in PERSON_ACTIONS:
        what = f"{last['action']} by {last['by']} (a person)"
    else:  # the system's actor is named for its action ("publish by publish" said nothing)
        what = SYSTEM_WORDS.get(last["action"], last["action"])
        if last["by"] not in (last["action"], "rules", "sweep"):
            what += f" (by {last['by']})"
    return f"{text}: {what}, {last['at']}: {last['reason']}"


#: The system's actions in words for ``describe`` (who did it is the action itself, or the rules).
SYSTEM_WORDS = {
    "publish": "published",
    "verdict": "verdict recorded by the rules",
    "sweep": "held: no verdict is coming",
    "migrate": "set when the lifecycle was introduced",
}
