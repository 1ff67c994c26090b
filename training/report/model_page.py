"""Everything the studio knows about one contestant, gathered for its model page and
``vibestudio models show``.

``model_page(db, name)`` returns plain data:
- identity and engine;
- the family tree: ancestors, children, siblings. For trained ones it adds the snapshot with its pair
  count and sources, and the job with its config.
- ratings raw, with style and with vibe control: rating, interval, rank, votes;
- the arena head-to-head against the parent: wins / losses / ties with a Wilson interval;
- the vibe profile of its arena answers;
- the checkpoint report: drift with intervals, discovered phrases, judge-described differences, evals vs
  parent, degeneration, verdict;
- the report's prediction of its win rate against the parent, scored once it has enough votes;
- its lifecycle state (pending / released / held / hidden), with who put it there and why;
- training curves from ``job_metrics``;
- speed and price.
Every number carries its sample size; what is missing says why.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import select

from vibestudio.arena import lifecycle
from vibestudio.arena.registry import ContestantInfo, get_contestant, to_info
from vibestudio.common.stats import wilson
from vibestudio.db.models import Contestant, DatasetSnapshot, Job, JobMetric
from vibestudio.db.session import Database
from vibestudio.standings import goldilocks
from vibestudio.standings.leaderboard import LeaderboardService, standard_options, vibe_profile
from vibestudio.standings.records import battle_records
from vibestudio.standings.words import counted
from vibestudio.training.report import verdict as verdicts
from vibestudio.training.report.steps import load_report
from vibestudio.training.report.track_record import child_record

CURVES = (
    "loss",
    "rewards/margins",
    "rewards/accuracies",
    "kl",
    "reward",
    "rewards/chosen",
    "rewards/rejected",
)


def _node(info: ContestantInfo) -> dict[str, Any]:
    return {
        "id": info.id,
        "name": info.public_name,
        "engine": info.engine,
        "active": info.active,
        "state": info.state,
    }


def _snapshot(s: Any, snapshot_hash: str | None) -> dict[str, Any] | None:
    if not snapshot_hash:
        return None
    snap = s.scalar(select(DatasetSnapshot).where(DatasetSnapshot.hash == snapshot_hash))
    if snap is None:
        return {"hash": snapshot_hash, "missing": "the snapshot row is gone"}
    sources: Counter[str] = Counter()
    try:
        from vibestudio.annotation.snapshots import load_snapshot

        for row in load_snapshot(snap.path, snap.hash, provenance=True):
            sources[str((row.get("provenance") or {}).get("source", "unknown"))] += 1
    except Exception as exc:  # the file moved or changed: say so, keep the rest of the page
        sources[f"(file unreadable: {type(exc).__name__})"] += 1
    return {
        "hash": snap.hash,
        "n_pairs": snap.n_pairs,
        "filter": dict(snap.filter or {}),
        "sources": dict(sources),
        "n_votes": len(snap.source_vote_ids or []),
    }


def family(db: Database, info: ContestantInfo) -> dict[str, Any]:
    """Ancestors (newest first), children and siblings, with snapshot, job and config for this contestant."""
    with db.session() as s:
        rows = {r.id: to_info(r) for r in s.scalars(select(Contestant))}
        ancestors, seen, pid = [], set(), info.parent_id
        while pid is not None and pid in rows and pid not in seen:
            seen.add(pid)
            ancestors.append(_node(rows[pid]))
            pid = rows[pid].parent_id
        children = [_node(r) for r in rows.values() if r.parent_id == info.id]
        siblings = [
            _node(r)
            for r in rows.values()
            if info.parent_id is not None and r.parent_id == info.parent_id and r.id != info.id
        ]
        job = s.get(Job, info.job_id) if info.job_id else None
        job_view = (
            {
                "id": job.id,
                "kind": job.kind,
                "status": job.status,
                "config": dict(job.config or {}),
                "started_at": job.started_at.isoformat(timespec="seconds") if job.started_at else None,
                "ended_at": job.ended_at.isoformat(timespec="seconds") if job.ended_at else None,
            }
            if job
            else None
        )
        return {
            "parent_missing": info.parent_id is not None and info.parent_id not in rows,
            "ancestors": ancestors,
            "children": children,
            "siblings": siblings,
            "snapshot": _snapshot(s, info.snapshot_hash),
            "job": job_view,
        }


def ratings(service: LeaderboardService, name: str) -> dict[str, Any]:
    """Raw, style-controlled and vibe-controlled rating of one model, read from the board every view shows
    (`standard_options`: the Leaderboard tab's and the decision card's fit); "missing" says why when it is
    unrated or its interval can't be told."""
    out: dict[str, Any] = {}
    for label, opts in (
        ("raw", standard_options()),
        ("style", standard_options(style_control=True)),
        ("vibe", standard_options(vibe_control=True)),
    ):
        try:
            board = service.board(opts)
        except Exception as exc:  # a board that cannot be fitted yet (too few votes): say so
            out[label] = {"missing": f"{type(exc).__name__}: {exc}"}
            continue
        row = next((m for m in board["models"] if m["name"] == name), None)
        row = dict(row) if row else None  # a copy: the board's rows are the service's memoised object
        if row and row.get("cant_tell"):
            row["missing"] = row["cant_tell"]
        out[label] = row or {"missing": f"unrated ({counted(board.get('n_votes', 0), 'vote')} on this board)"}
        if row:
            row["of"] = len(board["models"])
    return out


def head_to_head(db: Database, name: str, other: str | None) -> dict[str, Any] | None:
    """Anonymous-arena votes between ``name`` and ``other``: wins, losses, ties and a Wilson interval."""
    if other is None:
        return None
    with db.session() as s:
        recs = [
            r for r in battle_records(s, with_text=False) if {r["model_a"], r["model_b"]} == {name, other}
        ]
    wins = sum(1 for r in recs if r["winner"] == ("model_a" if r["model_a"] == name else "model_b"))
    losses = sum(1 for r in recs if r["winner"] == ("model_b" if r["model_a"] == name else "model_a"))
    ties = len(recs) - wins - losses
    score = wins + 0.5 * ties
    ci = wilson(score, len(recs))
    return {
        "against": other,
        "n": len(recs),
        "wins": wins,
        "losses": losses,
        "ties": ties,
        "score": score / len(recs) if recs else None,
        "ci": list(ci) if ci else None,
    }


def curves(db: Database, job_id: int | None) -> dict[str, list[tuple[int, float]]]:
    if job_id is None:
        return {}
    with db.session() as s:
        q = (
            select(JobMetric.name, JobMetric.step, JobMetric.value)
            .where(JobMetric.job_id == job_id, JobMetric.name.in_(CURVES))
            .order_by(JobMetric.step, JobMetric.id)
        )
        out: dict[str, list[tuple[int, float]]] = {}
        for name, step, value in s.execute(q):
            out.setdefault(name, []).append((int(step), float(value)))
        return out


def speed_and_price(db: Database, info: ContestantInfo) -> dict[str, Any]:
    with db.session() as s:
        speed = goldilocks.speed_stats(s).get(info.id, {})
    return {
        **speed,
        "price_per_1k": goldilocks.cost_per_1k(goldilocks.load_prices(), info.public_name, info.engine),
    }


def model_page(
    db: Database, contestant: int | str, service: LeaderboardService | None = None
) -> dict[str, Any]:
    """All of the above for one contestant, as plain data."""
    with db.session() as s:
        info = get_contestant(s, contestant)
        parent = (
            get_contestant(s, info.parent_id)
            if info.parent_id and s.get(Contestant, info.parent_id)
            else None
        )
    report = load_report(db, info.id)
    status = verdicts.current(db).get(info.id)
    with db.session() as s:
        state_line = lifecycle.describe(s, info.id)
    with db.session() as s:
        profile = vibe_profile(s, info.public_name)
    return {
        "contestant": {
            **{k: v for k, v in info.as_dict().items() if k != "created_at"},
            "created_at": info.created_at.isoformat(timespec="seconds") if info.created_at else None,
        },
        "parent": parent.public_name if parent else None,
        "family": family(db, info),
        "ratings": ratings(service or LeaderboardService(db), info.public_name),
        "head_to_head": head_to_head(db, info.public_name, parent.public_name if parent else None),
        "vibe_profile": profile,
        "report": report.to_dict() if report else None,
        # the report's prediction before play, scored on the votes since (``training.report.track_record``)
        "track_record": child_record(db, info.public_name, report.to_dict() if report else None),
        "verdict": {
            "verdict": status.verdict if status else None,
            "held": info.state == "held",
            "state": info.state,
            # the state, and who put it there and why ("release by alice (a person)": released by a person)
            "state_line": state_line,
            "badge": status.badge if status else "",
            "reason": status.reason
            if status
            else "no verdict (not a trained checkpoint, or made before verdicts)",
            "history": verdicts.history(db, info.id),
        },
        "fidelity": fidelity_of(db, info.id),
        "curves": curves(db, info.job_id),
        "speed": speed_and_price(db, info),
        "probes": probes(db, info.public_name, parent.public_name if parent else None),
        "identifiability": identifiability(db, info.public_name),
    }


def fidelity_of(db: Database, contestant_id: int) -> dict[str, Any] | None:
    """The form this checkpoint plays as and how much of its training each measured form kept
    (``training.publishing.fidelity``), with the sentence the page shows; None for a contestant that is no checkpoint."""
    from vibestudio.training.publishing import fidelity

    is_child, record, engine = fidelity.record_for(db, contestant_id)
    if not is_child:
        return None
    held = fidelity.problem(is_child, record, engine)
    return {
        **(record or {}),
        "summary": fidelity.summary(record),
        "as_trained": held is None,
        "problem": held,
    }


def identifiability(db: Database, name: str) -> dict[str, Any] | None:
    """How well this contestant's answers alone give it away (`arena.identifiability.compare_openings`), with
    and without its fixed opening side by side; the warning reads the answers as the arena shows them. None when
    it has no answers from ended battles."""
    from vibestudio.arena.identifiability import compare_openings
    from vibestudio.common.settings import get_settings

    with db.session() as s:
        c = compare_openings(s, shown_stripped=get_settings().strip_prefill).get(name)
    return None if c is None else c.as_dict()


def probes(db: Database, name: str, parent: str | None) -> dict[str, Any]:
    """The sycophancy probes stored for this contestant, and the paired change against its parent."""
    from vibestudio.standings.probes import probe_report

    with db.session() as s:
        rep = probe_report(s, name, parent)
    return {**rep.as_dict(), "lines": rep.lines()}
