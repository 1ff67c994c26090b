"""Families of checkpoints, rated honestly: common ancestry, the best-of-N selection effect, provisional
ratings, and a removal log.

A contestant's *family* is its root ancestor (follow `parent_id` up). The root's trained descendants are
the family's *variants*. A lab that trains N variants and shows the best one fools itself. Even if all N
were equally good, the best *estimate* leads by chance.

`selection_effect` measures that from the variants' own intervals.
- Under "all equal", each rating is drawn from N(0, se_i), with se from the 95% interval.
- The lead of the maximum over the inverse-variance mean is simulated (seeded).
- The best variant's observed lead is compared with the chance lead's mean and 95th percentile.
The verdict is "lead beyond chance" only when it exceeds that percentile; otherwise "can't tell". A family
with fewer than two rated variants is unmeasurable, with the reason.

A variant is *provisional* until it has `min_votes` rated votes collected after it was published (its
row's `created_at`). These are votes of ended anonymous battles, as the default board counts them. Open,
named, self-play and leaked votes do not count.

Hiding a contestant (`hide`) takes it out of pair sampling, never out of history. Its votes and ratings
stay. `contestant_events` records who hid it, when and why (`removal_log`). Ratings come in as the
leaderboard's model rows (`name`, `rating`, `ci_low`, `ci_high`). This module does not fit anything
itself.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from vibestudio.arena import lifecycle
from vibestudio.arena.battle_end import UNCOUNTED
from vibestudio.arena.registry import RegistryError
from vibestudio.common.stats import Z95
from vibestudio.db.models import Battle, Contestant, ContestantEvent, Vote

DEFAULT_MIN_VOTES = 30


@dataclass
class SelectionEffect:
    n_variants: int
    best: str
    lead: float  # best rating minus the inverse-variance mean of the variants
    chance_mean: float  # expected lead of the best of N equally good variants
    chance_95: float  # 95th percentile of that chance lead
    beyond_chance: float  # lead minus the chance mean
    verdict: str  # "lead beyond chance" or "can't tell"


@dataclass
class FamilyMember:
    name: str
    depth: int  # 0 for the root
    parent: str | None
    rating: float | None
    ci_low: float | None
    ci_high: float | None
    votes_after_publish: int
    provisional: bool
    hidden: bool
    created_at: datetime | None = None


@dataclass
class Family:
    root: str
    members: list[FamilyMember]
    selection: SelectionEffect | None
    reason: str = ""  # why the selection effect is unmeasurable
    log: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def selection_effect(
    ratings: dict[str, tuple[float, float, float]], rounds: int = 20000, seed: int = 0
) -> SelectionEffect | None:
    """`ratings`: name -> (rating, ci_low, ci_high) of each variant. None with fewer than two."""
    if len(ratings) < 2:
        return None
    names = list(ratings)
    r = np.array([ratings[n][0] for n in names], dtype=float)
    se = np.array([max((ratings[n][2] - ratings[n][1]) / (2 * Z95), 1e-9) for n in names])
    w = 1 / se**2
    mean = float((w * r).sum() / w.sum())
    best = int(np.argmax(r))
    rng = np.random.default_rng(seed)
    draws = rng.normal(0.0, se, size=(rounds, len(names)))
    chance = draws.max(axis=1) - (draws * w).sum(axis=1) / w.sum()
    lead = float(r[best] - mean)
    chance_mean, chance_95 = float(chance.mean()), float(np.percentile(chance, 95))
    verdict = "lead beyond chance" if lead > chance_95 else "can't tell"
    return SelectionEffect(len(names), names[best], lead, chance_mean, chance_95, lead - chance_mean, verdict)


def _votes_after_publish(session: Session, ids: list[int]) -> dict[int, int]:
    """Rated votes per contestant since it was published: anonymous battles that have ended, not flagged
    ``revealed_before_vote`` (the leaderboard's default board). An open battle counts nowhere: a count that moved
    after a vote would tell a second tab which two contestants are playing."""
    out = {}
    for cid in ids:
        created = session.scalar(select(Contestant.created_at).where(Contestant.id == cid))
        q = (
            select(func.count(Vote.id))
            .join(Battle, Vote.battle_id == Battle.id)
            .where(or_(Battle.a_id == cid, Battle.b_id == cid))
            .where(Battle.status.not_in(UNCOUNTED))  # still open (or errored): counts nowhere
            .where(Battle.mode == "anonymous")  # named and self-play votes rate nothing
            .where(Vote.revealed_before_vote.is_(False))
        )
        if created is not None:
            q = q.where(Vote.created_at >= created)
        out[cid] = int(session.scalar(q) or 0)
    return out


def families(
    session: Session, models: list[dict[str, Any]], min_votes: int = DEFAULT_MIN_VOTES, seed: int = 0
) -> list[Family]:
    """Every family with at least one variant (and single contestants as one-member families), largest first."""
    rows = session.scalars(select(Contestant)).all()
    by_id = {c.id: c for c in rows}
    rated = {m["name"]: m for m in models}

    def root_and_depth(c: Contestant) -> tuple[Contestant, int]:
        depth, seen = 0, {c.id}
        while c.parent_id in by_id and c.parent_id not in seen:
            c = by_id[c.parent_id]
            seen.add(c.id)
            depth += 1
        return c, depth

    groups: dict[int, list[tuple[Contestant, int]]] = {}
    for c in rows:
        root, depth = root_and_depth(c)
        groups.setdefault(root.id, []).append((c, depth))
    votes = _votes_after_publish(session, [c.id for c in rows])
    logs = removal_log(session)
    out = []
    for root_id, members in groups.items():
        fam_members = []
        for c, depth in sorted(members, key=lambda m: (m[1], m[0].id)):
            m = rated.get(c.public_name) or {}
            fam_members.append(
                FamilyMember(
                    c.public_name,
                    depth,
                    by_id[c.parent_id].public_name if c.parent_id in by_id else None,
                    m.get("rating"),
                    m.get("ci_low"),
                    m.get("ci_high"),
                    votes[c.id],
                    depth > 0 and votes[c.id] < min_votes,
                    not c.active,
                    c.created_at,
                )
            )
        variants = {
            f.name: (f.rating, f.ci_low, f.ci_high)
            for f in fam_members
            if f.depth > 0 and None not in (f.rating, f.ci_low, f.ci_high)
        }
        sel = selection_effect(variants, seed=seed)  # type: ignore[arg-type]
        n_variants = sum(f.depth > 0 for f in fam_members)
        reason = ""
        if sel is None:
            reason = (
                "a family with one member: no variants were tried"
                if n_variants == 0
                else f"{len(variants)} of {n_variants} variant(s) rated with an interval; need 2"
            )
        names = {f.name for f in fam_members}
        out.append(
            Family(
                by_id[root_id].public_name,
                fam_members,
                sel,
                reason,
                [e for e in logs if e["contestant"] in names],
            )
        )
    return sorted(out, key=lambda f: (-len(f.members), f.root))


def hide(session: Session, name: str, by_user: str, reason: str, restore: bool = False) -> dict[str, Any]:
    """Hide a contestant (or restore it) through `arena.lifecycle` and log who did it; its votes and ratings
    stay. A restore returns it to the state it had (a held checkpoint comes back held)."""
    if not by_user.strip():
        raise RegistryError("say who is hiding the contestant (by_user)")
    try:
        if restore:
            done = lifecycle.restore(session, name, reason, by=by_user)
        else:
            done = lifecycle.hide(session, name, reason, by=by_user)
    except lifecycle.LifecycleError as exc:
        raise RegistryError(str(exc)) from exc
    return {
        "contestant": done.contestant,
        "action": done.action,
        "by": done.by,
        "reason": done.reason,
        "state": done.to_state,
    }


def removal_log(session: Session) -> list[dict[str, Any]]:
    """Every person's hide / restore / hold / release, oldest first: contestant, action, by whom, why, when."""
    q = (
        select(ContestantEvent, Contestant.public_name)
        .join(Contestant, ContestantEvent.contestant_id == Contestant.id)
        .where(ContestantEvent.action.in_(lifecycle.PERSON_ACTIONS))
        .order_by(ContestantEvent.created_at, ContestantEvent.id)
    )
    return [
        {
            "contestant": name,
            "action": e.action,
            "by": e.by_user,
            "reason": e.reason,
            "at": e.created_at.isoformat(timespec="seconds"),
        }
        for e, name in session.execute(q)
    ]
