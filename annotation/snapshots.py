"""Frozen preference snapshots: votes -> TRL conversational preference rows -> a hashed, read-only JSONL
file.

A row is ``{"prompt": [...messages], "chosen": [assistant msg], "rejected": [assistant msg], "provenance":
{...}}``. The hash is the SHA-256 of the file's bytes, so the same votes always give the same snapshot.
- Only decisive votes (A or B better) make pairs.
- For a later turn, the pair is kept only when both sides saw the same history (the same earlier answers).
  Otherwise chosen and rejected would not share a prompt.
- Two identical answers make no pair: there is nothing to prefer.

Self-play votes (`arena.self_play`: one contestant sampled twice) are included by default. Their rows name
that contestant as both ``chosen_model`` and ``rejected_model``: on-policy for it
(`training.objectives.pairmix`). They add ``provenance.self_play`` =
``{"policy", "chosen_sampling", "rejected_sampling"}``. That is the sampling that wrote each answer: the
contestant's own, with the battle's temperature and seed on top.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from vibestudio.accounts import require_role
from vibestudio.annotation.unpaired import ScoreRule, coverage, is_unpaired, unpaired_rows
from vibestudio.arena.battle_end import ended_counts
from vibestudio.arena.self_play import SELF_PLAY
from vibestudio.common.filelocks import atomic_write_bytes
from vibestudio.common.files import records_from_bytes
from vibestudio.common.outcomes import FASTCHAT_WINNERS
from vibestudio.db.models import DatasetSnapshot, RubricScore
from vibestudio.db.session import data_home
from vibestudio.standings.records import battle_records
from vibestudio.standings.words import counted

DECISIVE = FASTCHAT_WINNERS[:2]  # model_a, model_b: the votes that make a preference pair


class SnapshotError(ValueError):
    """A snapshot cannot be made or used (too few pairs, empty answers, missing file...)."""


@dataclass
class SnapshotInfo:
    id: int
    hash: str
    n_pairs: int  # rows: preference pairs, or single answers in an unpaired (KTO) snapshot; see `unit`
    path: str
    created: bool
    skipped: dict[str, int]
    unit: str = "pair"  # what one row is: "pair", or "single answer" (``row_unit``)

    @property
    def rows(self) -> str:
        """The row count named for what it counts ("8 pairs", "8 single answers")."""
        return counted(self.n_pairs, self.unit)


def row_unit(filt: dict[str, Any] | None) -> str:
    """What one row of a snapshot with this filter is: a preference pair, or a single answer (KTO's layout)."""
    return "single answer" if (filt or {}).get("layout") == "unpaired" else "pair"


def preference_pairs(records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Turn FastChat-layout records (with conversations) into TRL conversational preference rows."""
    rows: list[dict[str, Any]] = []
    skipped = {"not_decisive": 0, "diverged_history": 0, "empty_answer": 0, "same_answer": 0}
    for r in records:
        if r["winner"] not in DECISIVE:
            skipped["not_decisive"] += 1
            continue
        conv_a, conv_b = r["conversation_a"], r["conversation_b"]
        if conv_a[:-1] != conv_b[:-1]:
            skipped["diverged_history"] += 1
            continue
        ans_a, ans_b = conv_a[-1]["content"], conv_b[-1]["content"]
        if not ans_a.strip() or not ans_b.strip():
            skipped["empty_answer"] += 1
            continue
        if ans_a == ans_b:
            skipped["same_answer"] += 1
            continue
        win_a = r["winner"] == DECISIVE[0]
        provenance = {
            "source": "arena_vote",
            "vote_id": r.get("vote_id"),
            "battle_id": r.get("battle_id"),
            "turn": r.get("turn"),
            "chosen_model": r["model_a"] if win_a else r["model_b"],
            "rejected_model": r["model_b"] if win_a else r["model_a"],
            "tstamp": r.get("tstamp"),
        }
        if r.get("mode") == SELF_PLAY:
            provenance["self_play"] = {
                "policy": r["model_a"],
                "chosen_sampling": r["sampling_a"] if win_a else r["sampling_b"],
                "rejected_sampling": r["sampling_b"] if win_a else r["sampling_a"],
            }
        rows.append(
            {
                "prompt": conv_a[:-1],
                "chosen": [{"role": "assistant", "content": ans_a if win_a else ans_b}],
                "rejected": [{"role": "assistant", "content": ans_b if win_a else ans_a}],
                "provenance": provenance,
            }
        )
    return rows, skipped


def write_snapshot(
    session: Session, rows: list[dict[str, Any]], filt: dict[str, Any], skipped: dict[str, int] | None = None
) -> SnapshotInfo:
    """Freeze rows into a content-addressed file and record it (idempotent on identical content)."""
    body = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows).encode("utf-8")
    digest = hashlib.sha256(body).hexdigest()
    existing = session.scalar(select(DatasetSnapshot).where(DatasetSnapshot.hash == digest))
    if existing is not None:
        return SnapshotInfo(
            existing.id,
            digest,
            existing.n_pairs,
            existing.path,
            False,
            skipped or {},
            row_unit(existing.filter),
        )
    folder = data_home() / "snapshots"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{digest}.jsonl"
    if not path.exists():  # each writer its own temporary file; the rename is atomic (same bytes either way)
        atomic_write_bytes(path, body, mode=0o444)
    vote_ids = list(  # an unpaired snapshot has up to two rows per vote
        dict.fromkeys(r["provenance"].get("vote_id") for r in rows if r.get("provenance", {}).get("vote_id"))
    )
    snap = DatasetSnapshot(
        hash=digest, filter=filt, n_pairs=len(rows), path=str(path), source_vote_ids=vote_ids
    )
    try:
        with (
            session.begin_nested()
        ):  # two processes freezing the same votes: the hash is unique, one row wins
            session.add(snap)
            session.flush()
    except IntegrityError:
        won = session.scalar(select(DatasetSnapshot).where(DatasetSnapshot.hash == digest))
        if won is None:
            raise
        return SnapshotInfo(won.id, digest, won.n_pairs, won.path, False, skipped or {}, row_unit(won.filter))
    return SnapshotInfo(snap.id, digest, len(rows), str(path), True, skipped or {}, row_unit(filt))


#: Why a vote or label made no pair, in words for a page (the keys stay the stored, machine-readable ones).
SKIP_REASONS = {
    "not_decisive": "not an A-or-B vote (tie, both good, both bad)",
    "diverged_history": "a later turn whose two sides had seen different earlier answers",
    "empty_answer": "an empty answer",
    "same_answer": "two identical answers",
    "outcome_tie": "a tie",
    "outcome_both_good": "both good",
    "outcome_both_bad": "both bad",
    "tie_without_score": "a plain tie with no score to label the answer",
    "unknown_outcome": "an outcome that labels no answer",
}


def skip_reason_text(skipped: dict[str, int]) -> str:
    """``{"diverged_history": 2, ...}`` as plain words: "2 a later turn whose ...; ..." (zero counts left out)."""
    return "; ".join(f"{n} × {SKIP_REASONS.get(k, k.replace('_', ' '))}" for k, n in skipped.items() if n)


def vote_pairs(
    session: Session,
    include_named: bool = False,
    include_revealed: bool = False,
    include_self_play: bool = True,
) -> tuple[list[dict[str, Any]], dict[str, int], int]:
    """The preference rows a snapshot of the current votes would freeze, the skipped counts and the number of
    votes read; writes nothing (the Train tab's check counts them before launch)."""
    records = battle_records(
        session,
        include_named=include_named,
        include_revealed=include_revealed,
        include_self_play=include_self_play,
    )
    rows, skipped = preference_pairs(records)
    return rows, skipped, len(records)


@dataclass
class Collected:
    """What the votes hold now: ended battles, their votes, and the pairs a snapshot of them would freeze."""

    battles: int  # ended battles, every mode (open and errored ones count nowhere)
    votes: int  # the votes in them, every mode
    read: int  # the votes a snapshot reads (by default anonymous and self-play ones, not revealed before the vote)
    pairs: int  # the preference pairs a snapshot freezes from them (``vote_pairs``, the freeze's own rule)
    skipped: dict[str, int]  # why the other votes it reads make no pair (``SKIP_REASONS``)

    @property
    def unread(self) -> int:
        """The votes a snapshot does not read: named mode, or a model named before the vote (by default)."""
        return max(self.votes - self.read, 0)


#: The counts last read, per database, filters and state of its ended votes. An ended battle's turns and
#: votes do not change, so the same state pairs the same. Pairing reads every answer: 5,000 battles took
#: 3.0 s here, the state 0.03 s. So a tab that re-reads on every open pays the pairing once per new vote.
_COLLECTED: dict[tuple[Any, ...], Collected] = {}


def collected(
    session: Session,
    include_named: bool = False,
    include_revealed: bool = False,
    include_self_play: bool = True,
) -> Collected:
    """The Data tab's counts. ``pairs`` is what ``snapshot_from_votes`` would freeze now, with the same filters."""
    ended = ended_counts(session)
    key = (str(session.get_bind().engine.url), include_named, include_revealed, include_self_play, *ended)
    if key not in _COLLECTED:
        rows, skipped, read = vote_pairs(session, include_named, include_revealed, include_self_play)
        if len(_COLLECTED) >= 64:
            _COLLECTED.clear()
        _COLLECTED[key] = Collected(ended.battles, ended.votes, read, len(rows), skipped)
    return replace(_COLLECTED[key], skipped=dict(_COLLECTED[key].skipped))


def vote_scores(session: Session, vote_ids: list[int]) -> dict[int, dict[str, dict[str, float]]]:
    """The rubric scores given with these votes: vote id -> side ("a" / "b") -> criterion -> value."""
    out: dict[int, dict[str, dict[str, float]]] = {}
    for chunk in range(0, len(vote_ids), 500):
        ids = vote_ids[chunk : chunk + 500]
        for sc in session.scalars(select(RubricScore).where(RubricScore.vote_id.in_(ids))):
            if sc.vote_id is not None and sc.side in ("a", "b"):
                out.setdefault(sc.vote_id, {}).setdefault(sc.side, {})[sc.criterion] = float(sc.value)
    return out


def vote_unpaired(
    session: Session,
    rule: ScoreRule | None = None,
    include_named: bool = False,
    include_revealed: bool = False,
    include_self_play: bool = True,
) -> tuple[list[dict[str, Any]], dict[str, int], int]:
    """The unpaired (KTO) rows a snapshot of the current votes would freeze (``annotation.unpaired``), the
    answers left out by reason and the number of votes read; writes nothing."""
    records = battle_records(
        session,
        include_named=include_named,
        include_revealed=include_revealed,
        include_self_play=include_self_play,
    )
    ids = [int(r["vote_id"]) for r in records if r.get("vote_id") is not None]
    made = unpaired_rows(records, vote_scores(session, ids) if rule else None, rule)
    return made.rows, made.skipped, len(records)


def snapshot_from_votes(
    session: Session,
    include_named: bool = False,
    include_revealed: bool = False,
    min_pairs: int = 1,
    user_id: int | None = None,
    include_self_play: bool = True,
    unpaired: bool = False,
    rule: ScoreRule | None = None,
) -> SnapshotInfo:
    """Freeze the votes of ended battles: anonymous ones, self-play ones (unless ``include_self_play`` is off),
    named ones and ones flagged ``revealed_before_vote`` when asked. Decisive votes as preference pairs, or
    (``unpaired``, for KTO) every judged answer as a desirable / undesirable row, labelled by ``rule``'s scores
    where given. The snapshot's filter records, per objective, the votes it could use and why others were left
    out (``annotation.unpaired.coverage``)."""
    require_role(session, user_id, "researcher")
    records = battle_records(
        session,
        include_named=include_named,
        include_revealed=include_revealed,
        include_self_play=include_self_play,
    )
    pairs, pair_skipped = preference_pairs(records)
    ids = [int(r["vote_id"]) for r in records if r.get("vote_id") is not None]
    single = unpaired_rows(records, vote_scores(session, ids) if rule else None, rule)
    rows, skipped = (single.rows, single.skipped) if unpaired else (pairs, pair_skipped)
    what = "unpaired row(s)" if unpaired else "preference pair(s)"
    if len(rows) < min_pairs:
        why = skip_reason_text(skipped)
        raise SnapshotError(
            f"only {len(rows)} {what} from {len(records)} vote(s)"
            + (f" (left out: {why})" if why else "")
            + f"; at least {min_pairs} needed: "
            + ("vote on more battles" if unpaired else "vote A or B on more battles")
            + " (ended by Reveal or New round)"
        )
    filt: dict[str, Any] = {
        "source": "arena_votes",
        "include_named": include_named,
        "include_revealed": include_revealed,
        "include_self_play": include_self_play,
        "objectives": coverage(records, pair_skipped, len(pairs), single),
    }
    if unpaired:
        filt["layout"] = "unpaired"
        if rule is not None:
            filt["score_rule"] = {
                "criterion": rule.criterion,
                "threshold": rule.threshold,
                "scale": list(rule.scale),
            }
    return write_snapshot(session, rows, filt, skipped)


def load_snapshot(
    path: str | Path, expected_hash: str | None = None, provenance: bool = False
) -> list[dict[str, Any]]:
    """Read a snapshot back, verifying its hash when given; only the TRL columns are kept per row (plus
    ``provenance``, who wrote each answer, when asked)."""
    p = Path(path)
    if not p.exists():
        raise SnapshotError(f"snapshot file {p} is missing")
    body = p.read_bytes()
    if expected_hash and hashlib.sha256(body).hexdigest() != expected_hash:
        raise SnapshotError(
            f"snapshot file {p} does not match its hash {expected_hash[:12]}: it was modified"
        )
    records, errors = records_from_bytes(body)
    if errors:
        raise SnapshotError(errors[0].format(p.name))
    rows = []
    for rec in records:
        r, lineno = rec.value, rec.line
        if not isinstance(r, dict):
            raise SnapshotError(f"{p.name}:{lineno}: expected a JSON object")
        unpaired = is_unpaired(r)
        answers = ("completion",) if unpaired else ("chosen", "rejected")
        for key in ("prompt", *answers):
            if not r.get(key):
                raise SnapshotError(f"{p.name}:{lineno}: field {key!r} is empty")
        if any(not r[key][-1]["content"].strip() for key in answers):
            raise SnapshotError(f"{p.name}:{lineno}: an answer is empty")
        if unpaired and not isinstance(r["label"], bool):
            raise SnapshotError(f"{p.name}:{lineno}: field 'label' must be true or false")
        keys: tuple[str, ...] = ("prompt", *answers, *(("label",) if unpaired else ()))
        if provenance:
            keys = (*keys, "provenance")
        rows.append({k: r.get(k) or {} if k == "provenance" else r[k] for k in keys})
    return rows


def get_snapshot(session: Session, ident: int | str) -> DatasetSnapshot:
    col = DatasetSnapshot.id if isinstance(ident, int) else DatasetSnapshot.hash
    snap = session.scalar(select(DatasetSnapshot).where(col == ident))
    if snap is None and isinstance(ident, str):
        snap = session.scalar(select(DatasetSnapshot).where(DatasetSnapshot.hash.startswith(ident)))
    if snap is None:
        raise SnapshotError(f"no snapshot {ident!r}")
    return snap


def list_snapshots(session: Session) -> list[dict[str, Any]]:
    return [
        {
            "id": s.id,
            "hash": s.hash,
            "n_pairs": s.n_pairs,
            "unit": row_unit(s.filter),
            "rows": counted(s.n_pairs, row_unit(s.filter)),
            "path": s.path,
            "created_at": s.created_at,
        }
        for s in session.scalars(select(DatasetSnapshot).order_by(DatasetSnapshot.id.desc()))
    ]
