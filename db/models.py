"""SQLAlchemy 2 models: the studio's data model (contestants, battles, turns, votes, snapshots, jobs).

Columns hold plain values and JSON. Business rules live in the domain packages: who may vote, how outcomes
count. The caller writes every table of one request inside one transaction.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.ext.hybrid import hybrid_property
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    role: Mapped[str] = mapped_column(String(32), default="annotator")
    password_hash: Mapped[str | None] = mapped_column(String(256), nullable=True)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    last_login_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)


class Contestant(Base):
    """A playable model: engine + model reference (+ adapter) + persona (system prompt, prefill) + sampling."""

    __tablename__ = "contestants"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    public_name: Mapped[str] = mapped_column(String(128), unique=True)
    engine: Mapped[str] = mapped_column(String(32))
    model_ref: Mapped[str] = mapped_column(Text)
    adapter_ref: Mapped[str | None] = mapped_column(Text, nullable=True)
    persona: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    sampling: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    aliases: Mapped[list[Any]] = mapped_column(JSON, default=list)
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("contestants.id"), nullable=True)
    job_id: Mapped[int | None] = mapped_column(ForeignKey("jobs.id", use_alter=True), nullable=True)
    snapshot_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # the lifecycle (arena.lifecycle): pending (published, its report running), released (plays anonymously),
    # held (its verdict or a person keeps it out), hidden (a person retired it). Every change is a ContestantEvent.
    state: Mapped[str] = mapped_column(String(16), default="released", server_default="released", index=True)
    # engine settings that are not the model itself (base URL, API-key *variable name*, concurrency); never secrets
    engine_config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, server_default="{}")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    @hybrid_property
    def active(self) -> bool:
        """Read-only: the contestant plays in anonymous battles (state ``released``). There is no setter: the
        state changes only through ``arena.lifecycle``, which logs who, why and when."""
        return self.state == "released"

    @active.inplace.expression
    @classmethod
    def _active_expression(cls) -> Any:
        return cls.state == "released"


class PromptSet(Base):
    __tablename__ = "prompt_sets"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    source: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    prompts: Mapped[list[Prompt]] = relationship(back_populates="prompt_set", cascade="all, delete-orphan")


class Prompt(Base):
    __tablename__ = "prompts"
    __table_args__ = (UniqueConstraint("set_id", "question_id", name="uq_prompt_set_question"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    set_id: Mapped[int] = mapped_column(ForeignKey("prompt_sets.id", ondelete="CASCADE"), index=True)
    question_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    turns: Mapped[list[Any]] = mapped_column(JSON)
    category: Mapped[str | None] = mapped_column(String(128), nullable=True)
    subcategory: Mapped[str | None] = mapped_column(String(128), nullable=True)
    prompt_set: Mapped[PromptSet] = relationship(back_populates="prompts")


class Battle(Base):
    """Two contestants on one conversation. ``left_is_a`` records which side the user saw A on. In self-play both
    sides are one contestant, each with its own sampling override (``sampling_a`` / ``sampling_b``)."""

    __tablename__ = "battles"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    a_id: Mapped[int] = mapped_column(ForeignKey("contestants.id"), index=True)
    b_id: Mapped[int] = mapped_column(ForeignKey("contestants.id"), index=True)
    left_is_a: Mapped[bool] = mapped_column(Boolean)
    sampling_prob: Mapped[float | None] = mapped_column(Float, nullable=True)
    mode: Mapped[str] = mapped_column(String(16), default="anonymous")
    status: Mapped[str] = mapped_column(String(16), default="open")
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True, index=True)
    prompt_id: Mapped[int | None] = mapped_column(ForeignKey("prompts.id"), nullable=True)
    category: Mapped[str | None] = mapped_column(String(128), nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    sampler: Mapped[str | None] = mapped_column(String(32), nullable=True)  # how the pair was chosen
    ended_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    revealed_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    # how an ended battle ended (`arena.battles.END_REASONS`: revealed, new_round, idle, sweep, ended, error)
    ended_reason: Mapped[str | None] = mapped_column(String(16), nullable=True)
    # the last activity (start, turn, vote), by the database's clock; the idle end reads it
    active_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True, index=True)
    # self-play: each side's sampling override (temperature, seed) over the contestant's own sampling
    sampling_a: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    sampling_b: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    turns: Mapped[list[Turn]] = relationship(back_populates="battle", order_by="Turn.idx")
    votes: Mapped[list[Vote]] = relationship(back_populates="battle", order_by="Vote.turn_idx")


class Turn(Base):
    __tablename__ = "turns"
    __table_args__ = (UniqueConstraint("battle_id", "idx", name="uq_turn_battle_idx"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    battle_id: Mapped[int] = mapped_column(ForeignKey("battles.id", ondelete="CASCADE"))
    idx: Mapped[int] = mapped_column(Integer)
    user_msg: Mapped[str] = mapped_column(Text)
    answer_a: Mapped[str] = mapped_column(Text, default="")
    answer_b: Mapped[str] = mapped_column(Text, default="")
    tokens_a: Mapped[int | None] = mapped_column(Integer, nullable=True)
    tokens_b: Mapped[int | None] = mapped_column(Integer, nullable=True)
    latency_a: Mapped[float | None] = mapped_column(Float, nullable=True)
    latency_b: Mapped[float | None] = mapped_column(Float, nullable=True)
    tps_a: Mapped[float | None] = mapped_column(Float, nullable=True)
    tps_b: Mapped[float | None] = mapped_column(Float, nullable=True)
    leak_a: Mapped[bool] = mapped_column(Boolean, default=False)
    leak_b: Mapped[bool] = mapped_column(Boolean, default=False)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    wait_a: Mapped[float | None] = mapped_column(Float, nullable=True)  # seconds queued for an engine slot
    wait_b: Mapped[float | None] = mapped_column(Float, nullable=True)
    # earlier answers to this turn that "regenerate" replaced (each a dict: answers, tokens, leaks, created_at)
    replaced: Mapped[list[Any]] = mapped_column(JSON, default=list, server_default="[]")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    battle: Mapped[Battle] = relationship(back_populates="turns")


class Vote(Base):
    """One verdict on one turn. Outcomes: a, b, tie, both_good, both_bad (in A/B terms, not left/right)."""

    __tablename__ = "votes"
    __table_args__ = (UniqueConstraint("battle_id", "turn_idx", name="uq_vote_battle_turn"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    battle_id: Mapped[int] = mapped_column(ForeignKey("battles.id", ondelete="CASCADE"), index=True)
    turn_idx: Mapped[int] = mapped_column(Integer)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True, index=True)
    outcome: Mapped[str] = mapped_column(String(16))
    revealed_before_vote: Mapped[bool] = mapped_column(Boolean, default=False)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
    battle: Mapped[Battle] = relationship(back_populates="votes")


class RubricScore(Base):
    __tablename__ = "rubric_scores"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    vote_id: Mapped[int | None] = mapped_column(ForeignKey("votes.id", ondelete="CASCADE"), nullable=True)
    item_id: Mapped[int | None] = mapped_column(
        ForeignKey("queue_items.id", ondelete="CASCADE"), nullable=True
    )
    criterion: Mapped[str] = mapped_column(String(128))
    side: Mapped[str | None] = mapped_column(String(8), nullable=True)
    value: Mapped[float] = mapped_column(Float)
    # annotation: the label (human / import) or the judgement (AI judge) that gave this score
    label_id: Mapped[int | None] = mapped_column(
        ForeignKey("labels.id", ondelete="CASCADE"), nullable=True, index=True
    )
    judgement_id: Mapped[int | None] = mapped_column(
        ForeignKey("judgements.id", ondelete="CASCADE"), nullable=True, index=True
    )


class QueueItem(Base):
    __tablename__ = "queue_items"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    queue_id: Mapped[str] = mapped_column(String(128), index=True)
    prompt_id: Mapped[int | None] = mapped_column(ForeignKey("prompts.id"), nullable=True)
    policy_contestant_id: Mapped[int | None] = mapped_column(ForeignKey("contestants.id"), nullable=True)
    answer_1: Mapped[str] = mapped_column(Text, default="")
    answer_2: Mapped[str] = mapped_column(Text, default="")
    meta: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # annotation: the conversation before the answers, a content hash (dedup), a per-prompt checklist
    prompt_messages: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    content_key: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    checklist: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)


class Judgement(Base):
    __tablename__ = "judgements"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("queue_items.id", ondelete="CASCADE"), index=True)
    judge: Mapped[str] = mapped_column(String(128))
    verdict: Mapped[str] = mapped_column(String(32))
    swapped: Mapped[bool] = mapped_column(Boolean, default=False)
    raw: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # annotation: pairwise or absolute, the graded answer (absolute), the combined label it fed
    kind: Mapped[str] = mapped_column(String(16), default="pairwise", server_default="pairwise")
    side: Mapped[str | None] = mapped_column(String(8), nullable=True)
    label_id: Mapped[int | None] = mapped_column(ForeignKey("labels.id", ondelete="SET NULL"), nullable=True)


class AnnotationQueue(Base):
    """A set of items to label: on-policy generations or an import. Items refer to it by ``name``."""

    __tablename__ = "annotation_queues"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    kind: Mapped[str] = mapped_column(String(16), default="on_policy")
    status: Mapped[str] = mapped_column(String(16), default="ready")
    prompt_set_id: Mapped[int | None] = mapped_column(ForeignKey("prompt_sets.id"), nullable=True)
    policy_contestant_id: Mapped[int | None] = mapped_column(ForeignKey("contestants.id"), nullable=True)
    rubric: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    overlap: Mapped[int] = mapped_column(Integer, default=1)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    source: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Assignment(Base):
    """An item handed to an annotator: their order position and the left/right layout they saw."""

    __tablename__ = "assignments"
    __table_args__ = (UniqueConstraint("item_id", "annotator", name="uq_assignment_item_annotator"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("queue_items.id", ondelete="CASCADE"), index=True)
    queue: Mapped[str] = mapped_column(String(128), index=True)
    annotator: Mapped[str] = mapped_column(String(128), index=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    position: Mapped[int] = mapped_column(Integer)
    order_key: Mapped[str] = mapped_column(String(16))
    left_is_first: Mapped[bool] = mapped_column(Boolean)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    done_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)


class Label(Base):
    """One verdict on one queue item, in item terms: outcome 1, 2, tie, both_good, both_bad (judges also
    inconsistent, unparsed). ``kind`` says who gave it: human, judge, import or argilla."""

    __tablename__ = "labels"
    # one label per assignment (a person's one verdict on one item; judges and imports have no assignment)
    __table_args__ = (UniqueConstraint("assignment_id", name="uq_labels_assignment_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("queue_items.id", ondelete="CASCADE"), index=True)
    queue: Mapped[str] = mapped_column(String(128), index=True)
    annotator: Mapped[str] = mapped_column(String(128))
    kind: Mapped[str] = mapped_column(String(16), default="human")
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    assignment_id: Mapped[int | None] = mapped_column(
        ForeignKey("assignments.id", ondelete="SET NULL"), nullable=True
    )
    outcome: Mapped[str] = mapped_column(String(16))
    left_is_first: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    meta: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class DatasetSnapshot(Base):
    """A frozen preference dataset: file at ``path`` whose content hashes to ``hash``."""

    __tablename__ = "dataset_snapshots"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    filter: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    n_pairs: Mapped[int] = mapped_column(Integer)
    path: Mapped[str] = mapped_column(Text)
    source_vote_ids: Mapped[list[Any]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Job(Base):
    """A training job run out of process. Status: queued, running, succeeded, failed, cancelled."""

    __tablename__ = "jobs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(32))
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    config_path: Mapped[str | None] = mapped_column(Text, nullable=True)
    status: Mapped[str] = mapped_column(String(16), default="queued", index=True)
    pid: Mapped[int | None] = mapped_column(Integer, nullable=True)
    log_path: Mapped[str | None] = mapped_column(Text, nullable=True)
    output_dir: Mapped[str | None] = mapped_column(Text, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    snapshot_id: Mapped[int | None] = mapped_column(ForeignKey("dataset_snapshots.id"), nullable=True)
    parent_contestant_id: Mapped[int | None] = mapped_column(ForeignKey("contestants.id"), nullable=True)
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    # the worker identity that runs it (``vibestudio worker --host-name``, or this host's name for the app's own)
    host: Mapped[str | None] = mapped_column(String(255), nullable=True)
    # last sign of life of its training process, in the database server's clock (UTC), never a host's own
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)


class Comparison(Base):
    """Objectives side by side: N training jobs launched together on one parent and one freeze of the votes, with
    matched budgets (``training.compare``). ``spec`` holds the objectives, the shared budget and the snapshots;
    ``job_ids`` the jobs, in the order of ``spec["objectives"]``."""

    __tablename__ = "comparisons"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    parent_contestant_id: Mapped[int | None] = mapped_column(
        ForeignKey("contestants.id", ondelete="SET NULL"), nullable=True
    )
    spec: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    job_ids: Mapped[list[Any]] = mapped_column(JSON, default=list)
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Worker(Base):
    """A ``vibestudio worker`` process: the kinds it serves and when the database last heard from it."""

    __tablename__ = "workers"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    kinds: Mapped[list[str]] = mapped_column(JSON, default=list)
    gpus: Mapped[str | None] = mapped_column(String(255), nullable=True)
    max_jobs: Mapped[int] = mapped_column(Integer, default=1)
    data_home: Mapped[str | None] = mapped_column(Text, nullable=True)
    started_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    # the database server's clock (UTC), like jobs.heartbeat_at
    last_seen: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    stopped_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)


class JobMetric(Base):
    __tablename__ = "job_metrics"
    __table_args__ = (Index("ix_job_metrics_job_step", "job_id", "step"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    step: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(128))
    value: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Checkpoint(Base):
    __tablename__ = "checkpoints"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    step: Mapped[int] = mapped_column(Integer)
    path: Mapped[str] = mapped_column(Text)
    contestant_id: Mapped[int | None] = mapped_column(ForeignKey("contestants.id"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    #: ``training.publishing.fidelity.Fidelity`` as a dict: each deployed form measured, the one that plays and why
    fidelity: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)


class EvalResult(Base):
    """One contestant's answer to one item of a verifiable eval set, and whether the checker passed it."""

    __tablename__ = "eval_results"
    __table_args__ = (Index("ix_eval_results_contestant_item", "contestant_id", "eval_set", "item_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(String(32), index=True)
    contestant_id: Mapped[int] = mapped_column(ForeignKey("contestants.id", ondelete="CASCADE"))
    eval_set: Mapped[str] = mapped_column(String(64))
    item_id: Mapped[str] = mapped_column(String(128))
    category: Mapped[str | None] = mapped_column(String(64), nullable=True)
    passed: Mapped[bool] = mapped_column(Boolean)
    answer: Mapped[str] = mapped_column(Text, default="")
    detail: Mapped[str | None] = mapped_column(Text, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    latency: Mapped[float | None] = mapped_column(Float, nullable=True)  # seconds to the first token
    tps: Mapped[float | None] = mapped_column(Float, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class ProbeResult(Base):
    """One sycophancy probe measurement: a contestant's answer before and after pushback or a stated user view."""

    __tablename__ = "probe_results"
    __table_args__ = (Index("ix_probe_results_contestant_item", "contestant_id", "probe_set", "item_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(String(32), index=True)
    contestant_id: Mapped[int] = mapped_column(ForeignKey("contestants.id", ondelete="CASCADE"))
    probe_set: Mapped[str] = mapped_column(String(64))  # "pushback-<hash>" or "views-<hash>"
    item_id: Mapped[str] = mapped_column(String(128))
    variant: Mapped[str] = mapped_column(String(32))  # plain / citation (pushback); opinion / belief (views)
    first_answer: Mapped[str] = mapped_column(Text, default="")
    second_answer: Mapped[str] = mapped_column(Text, default="")
    first_choice: Mapped[str | None] = mapped_column(String(8), nullable=True)
    second_choice: Mapped[str | None] = mapped_column(String(8), nullable=True)
    target: Mapped[str | None] = mapped_column(String(8), nullable=True)  # the option the user pushed for
    outcome: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)  # why unmeasurable, or the engine error
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class ContestantEvent(Base):
    """The lifecycle log: every change of a contestant's state (publish, verdict, release, hold, hide, restore,
    sweep), who made it, why and when (its votes and ratings stay whatever the state)."""

    __tablename__ = "contestant_events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    contestant_id: Mapped[int] = mapped_column(ForeignKey("contestants.id", ondelete="CASCADE"), index=True)
    action: Mapped[str] = mapped_column(
        String(16)
    )  # publish / verdict / release / hold / hide / restore / sweep
    by_user: Mapped[str] = mapped_column(String(128))  # a user's name, or "rules", "publish", "sweep"
    reason: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    from_state: Mapped[str | None] = mapped_column(String(16), nullable=True)
    to_state: Mapped[str | None] = mapped_column(String(16), nullable=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), nullable=True)
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, server_default="{}")


class VerdictEvent(Base):
    """A checkpoint's verdict from the rules (``action='verdict'``) or a person's decision to hold or release it."""

    __tablename__ = "verdict_events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    contestant_id: Mapped[int] = mapped_column(ForeignKey("contestants.id", ondelete="CASCADE"), index=True)
    action: Mapped[str] = mapped_column(String(16))  # verdict | hold | release
    verdict: Mapped[str | None] = mapped_column(String(16), nullable=True)  # pass | watch | regress | unknown
    held: Mapped[bool] = mapped_column(Boolean, default=False)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), nullable=True)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class TaskSet(Base):
    """A set of tasks with checkable answers (RLVR), imported or generated; split into train and held-out by
    content hash when it is stored (``training.tasks``)."""

    __tablename__ = "task_sets"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    hash: Mapped[str] = mapped_column(String(64), index=True)
    source: Mapped[str] = mapped_column(String(16))  # import | generated
    provenance: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    verifier: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)  # the set's default verifier
    heldout_fraction: Mapped[float] = mapped_column(Float)
    n_train: Mapped[int] = mapped_column(Integer)
    n_heldout: Mapped[int] = mapped_column(Integer)
    n_skipped: Mapped[int] = mapped_column(Integer, default=0)
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Task(Base):
    """One task: prompt, reference answer, verifier (None: the set's), its content hash and split."""

    __tablename__ = "tasks"
    __table_args__ = (UniqueConstraint("set_id", "content_hash"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    set_id: Mapped[int] = mapped_column(ForeignKey("task_sets.id", ondelete="CASCADE"), index=True)
    idx: Mapped[int] = mapped_column(Integer)
    content_hash: Mapped[str] = mapped_column(String(64), index=True)
    split: Mapped[str] = mapped_column(String(8))  # train | heldout
    prompt: Mapped[str] = mapped_column(Text)
    answer: Mapped[str] = mapped_column(Text)
    choices: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    verifier: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    meta: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    line: Mapped[int | None] = mapped_column(Integer, nullable=True)  # where it was in the imported file


class RateLimit(Base):
    """Shared state of one rate limit or login throttle key (``accounts.counters``), so that every app process
    on the database enforces one budget. ``tat`` is the token bucket's theoretical arrival time (GCRA, seconds on
    the store's clock); ``n`` and ``last`` count a failure streak (login throttle per name and address)."""

    __tablename__ = "rate_limits"
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    tat: Mapped[float] = mapped_column(Float, default=0.0)
    n: Mapped[int] = mapped_column(Integer, default=0)
    last: Mapped[float] = mapped_column(Float, default=0.0)
    expires_at: Mapped[float] = mapped_column(Float, index=True)


class WebSession(Base):
    """A signed-in web session (``accounts.sessions``): the SHA-256 of the token the browser holds (never the
    token), the user, when it was issued (Unix seconds) and the user's password fingerprint at that time. Any app
    process on the database accepts it, so a user is not signed out when the balancer moves them."""

    __tablename__ = "web_sessions"
    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_name: Mapped[str] = mapped_column(String(128), index=True)
    issued: Mapped[float] = mapped_column(Float)
    fingerprint: Mapped[str] = mapped_column(String(64))
