"""Contestant registry: register, list and resolve contestants (engine + model + persona + sampling).

A contestant's ``public_name`` is its real name, shown only after a vote. ``aliases`` are names an answer
must not mention before the vote: model family, persona, maker. Built-in model references
(``builtin:...``) are resolved here. So the database never stores machine-specific paths for the embedded
default.
"""

from __future__ import annotations

import os
import stat
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from vibestudio.arena.engines.base import Engine, Sampling
from vibestudio.arena.engines.factory import ENGINE_KINDS, get_engine
from vibestudio.arena.engines.factory import validate as validate_engine_config
from vibestudio.db.models import Contestant

if TYPE_CHECKING:
    from vibestudio.db.session import Database

BUILTIN_GGUF = "builtin:smollm2-135m-instruct-q4_1"
BUILTIN_HF = "builtin:smollm2-135m-instruct-hf"
SMOLLM_ALIASES = ["SmolLM2", "SmolLM", "Hugging Face", "HuggingFace"]


class RegistryError(ValueError):
    """A contestant definition is invalid (unknown engine, bad sampling, duplicate name...)."""


@dataclass
class ContestantInfo:
    id: int
    public_name: str
    engine: str
    model_ref: str
    adapter_ref: str | None
    system_prompt: str
    prefill: str
    sampling: dict[str, Any]
    aliases: list[str]
    parent_id: int | None
    job_id: int | None
    snapshot_hash: str | None
    active: bool  # state == "released": drawn for anonymous battles (read-only; arena.lifecycle changes it)
    created_at: datetime | None = None
    description: str = ""
    engine_config: dict[str, Any] = field(default_factory=dict)
    state: str = "released"  # arena.lifecycle: pending / released / held / hidden

    def identity_strings(self) -> list[str]:
        """Everything that names this contestant: public name and aliases (what an answer must not say)."""
        return list(dict.fromkeys([self.public_name, *self.aliases]))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ContestantSpec:
    public_name: str
    engine: str = "llama_cpp"
    model_ref: str = BUILTIN_GGUF
    adapter_ref: str | None = None
    system_prompt: str = ""
    prefill: str = ""
    description: str = ""
    sampling: dict[str, Any] = field(default_factory=dict)
    aliases: list[str] = field(default_factory=list)
    parent_id: int | None = None
    job_id: int | None = None
    snapshot_hash: str | None = None
    engine_config: dict[str, Any] = field(default_factory=dict)


DEFAULT_PERSONAS: list[ContestantSpec] = [
    ContestantSpec(
        "smollm2-plain",
        description="The embedded model as it comes: no system prompt, default decoding.",
        sampling={"temperature": 0.7, "top_p": 0.95, "max_tokens": 200},
    ),
    ContestantSpec(
        "smollm2-concise",
        system_prompt="You are a terse assistant. Answer in at most two short sentences. No lists, no filler.",
        description="Short and low-temperature: capped at 60 tokens.",
        sampling={"temperature": 0.2, "top_p": 0.9, "max_tokens": 60},
    ),
    ContestantSpec(
        "smollm2-warm",
        system_prompt="You are a warm, encouraging assistant who praises the user and uses friendly emoji.",
        prefill="What a great question! 😊 ",
        description="Warm and flattering: opens with praise and emoji (sycophancy on purpose).",
        sampling={"temperature": 0.7, "top_p": 0.95, "max_tokens": 200},
        aliases=["Sunny"],
    ),
    ContestantSpec(
        "smollm2-playful",
        system_prompt="You are a playful, witty assistant. Be creative and surprising.",
        prefill="Ooh, fun one! ",
        description="Playful and high-temperature (1.2): more variety, more risk.",
        sampling={"temperature": 1.2, "top_p": 0.98, "max_tokens": 160},
    ),
    ContestantSpec(
        "smollm2-structured",
        system_prompt="You are a meticulous assistant. Always answer with a markdown heading and bullet points.",
        prefill="## Answer\n\n- ",
        description="Markdown-heavy: headings and bullets on every answer.",
        sampling={"temperature": 0.5, "top_p": 0.9, "max_tokens": 200},
    ),
]


def validate_spec(spec: ContestantSpec) -> None:
    """Raise RegistryError when a spec cannot be registered (checked before anything is written)."""
    if not spec.public_name.strip():
        raise RegistryError("contestant name is empty")
    if spec.engine not in ENGINE_KINDS:
        raise RegistryError(f"engine {spec.engine!r} unknown; known: {', '.join(ENGINE_KINDS)}")
    if not spec.model_ref.strip():
        raise RegistryError(f"contestant {spec.public_name!r}: model reference is empty")
    try:
        Sampling.from_dict(spec.sampling)
        validate_engine_config(spec.engine, spec.engine_config, spec.model_ref)
    except (TypeError, ValueError) as exc:
        raise RegistryError(f"contestant {spec.public_name!r}: {exc}") from exc
    if not all(isinstance(a, str) for a in spec.aliases):
        raise RegistryError(f"contestant {spec.public_name!r}: aliases must be strings")


def register(session: Session, spec: ContestantSpec, state: str = "released") -> int:
    """Insert a contestant and return its id. Raises RegistryError on invalid or duplicate names.

    A person's contestant starts ``released``; a published checkpoint starts ``pending`` (``training.publishing.publish``)
    until its verdict is recorded (``arena.lifecycle``)."""
    validate_spec(spec)
    if state not in ("released", "pending"):
        raise RegistryError(f"a contestant starts released or pending, not {state!r}")
    if session.scalar(select(Contestant.id).where(Contestant.public_name == spec.public_name)) is not None:
        raise RegistryError(f"a contestant named {spec.public_name!r} already exists")
    aliases = list(
        dict.fromkeys([*spec.aliases, *SMOLLM_ALIASES] if "builtin:" in spec.model_ref else spec.aliases)
    )
    row = Contestant(
        public_name=spec.public_name,
        engine=spec.engine,
        model_ref=spec.model_ref,
        adapter_ref=spec.adapter_ref,
        persona={
            "system_prompt": spec.system_prompt,
            "prefill": spec.prefill,
            "description": spec.description,
        },
        sampling=dict(spec.sampling),
        aliases=aliases,
        parent_id=spec.parent_id,
        job_id=spec.job_id,
        snapshot_hash=spec.snapshot_hash,
        engine_config=dict(spec.engine_config),
        state=state,
    )
    session.add(row)
    session.flush()
    return row.id


def ensure_defaults(session: Session) -> list[int]:
    """Register the embedded default contestants when the arena has none; return the new ids."""
    if session.scalar(select(Contestant.id).limit(1)) is not None:
        return []
    return [register(session, spec) for spec in DEFAULT_PERSONAS]


def to_info(row: Contestant) -> ContestantInfo:
    persona = row.persona or {}
    return ContestantInfo(
        id=row.id,
        public_name=row.public_name,
        engine=row.engine,
        model_ref=row.model_ref,
        adapter_ref=row.adapter_ref,
        system_prompt=persona.get("system_prompt", ""),
        prefill=persona.get("prefill", ""),
        description=persona.get("description", ""),
        sampling=dict(row.sampling or {}),
        aliases=list(row.aliases or []),
        parent_id=row.parent_id,
        job_id=row.job_id,
        snapshot_hash=row.snapshot_hash,
        active=row.state == "released",
        created_at=row.created_at,
        engine_config=dict(row.engine_config or {}),
        state=row.state,
    )


def list_contestants(
    session: Session, active_only: bool = True, states: tuple[str, ...] | None = None
) -> list[ContestantInfo]:
    """Contestants by id: by default only the released ones (what anonymous battles draw from);
    ``active_only=False`` all of them, ``states`` those in the given lifecycle states."""
    q = select(Contestant).order_by(Contestant.id)
    if states is not None:
        q = q.where(Contestant.state.in_(states))
    elif active_only:
        q = q.where(Contestant.state == "released")
    return [to_info(r) for r in session.scalars(q)]


def get_contestant(session: Session, ident: int | str) -> ContestantInfo:
    col = Contestant.id if isinstance(ident, int) else Contestant.public_name
    row = session.scalar(select(Contestant).where(col == ident))
    if row is None:
        raise RegistryError(f"no contestant {ident!r}")
    return to_info(row)


def resolve_contestant(
    db: Database, contestant: int | str | ContestantInfo, error: type[Exception] = RegistryError
) -> ContestantInfo:
    """`contestant` as stored: an info passes through, an id or public name is looked up (unknown: `error`)."""
    if isinstance(contestant, ContestantInfo):
        return contestant
    with db.session() as s:
        try:
            return get_contestant(s, contestant)
        except RegistryError as exc:
            if error is RegistryError:
                raise
            raise error(str(exc)) from exc


def resolve_model_ref(ref: str) -> str:
    from vibestudio.arena import default_model

    if ref == BUILTIN_GGUF:
        return str(default_model.default_gguf_path())
    if ref == BUILTIN_HF:
        return str(default_model.ensure_hf_base())
    try:  # a model is a plain file or a folder: never a device or a FIFO (read until memory or disk runs out)
        mode = os.stat(ref).st_mode if os.path.lexists(ref) else None
    except OSError:
        mode = None
    if mode is not None and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise RegistryError("the model reference names a device, FIFO or socket, not a model file")
    return ref


def engine_for(info: ContestantInfo) -> Engine:
    return get_engine(info.engine, resolve_model_ref(info.model_ref), info.adapter_ref, info.engine_config)


def messages_for(info: ContestantInfo, history: list[tuple[str, str]], user_msg: str) -> list[dict[str, str]]:
    """The chat this contestant sees: its system prompt, its own earlier answers, the new user message."""
    msgs: list[dict[str, str]] = []
    if info.system_prompt:
        msgs.append({"role": "system", "content": info.system_prompt})
    for u, a in history:
        msgs += [{"role": "user", "content": u}, {"role": "assistant", "content": a}]
    msgs.append({"role": "user", "content": user_msg})
    return msgs
