"""Which server files a signed-in user may name as a model or an adapter.

These are a persona's ``model`` and ``adapter``, a managed vLLM server's ``engine_config.serve.model`` and
a training job's ``base_model``.

A reference that is not a path passes as it is. That is a ``builtin:`` model, a hub id (``org/name``, when
no such path exists here), or the model name an HTTP engine serves.

A path is checked with ``common.paths`` under the folders allowed for models:
- the data home's ``models`` folder;
- the folders the operator lists in ``VIBESTUDIO_MODEL_DIRS``;
- the data home's ``jobs`` folder. A job's folder is another researcher's unpublished work. Only the job's
  owner and an admin may name it. Anyone may name a checkpoint of it published as a contestant.
A GGUF must be a plain file. A weights or adapter folder may hold only plain files and folders, with every
link inside its root. What is stored is the resolved path, so the contestant plays what was checked. The
operator (``user`` None: the CLI and Python API) names any path.

Imports common, db, accounts (``UserInfo``) and the registry's ``ContestantSpec``. Returns plain data;
raises ``PathRefused`` naming the field.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from vibestudio.accounts import UserInfo
from vibestudio.arena.registry import ContestantSpec
from vibestudio.common.paths import PathRefused, is_inside, model_folder, regular_file
from vibestudio.common.settings import get_settings
from vibestudio.db.models import Checkpoint, Job
from vibestudio.db.session import data_home

WHERE = (
    "the data home's models folder, a folder the operator lists in VIBESTUDIO_MODEL_DIRS, or your own jobs"
)
BUILTINS = ("builtin:smollm2-135m-instruct-q4_1", "builtin:smollm2-135m-instruct-hf")


def model_roots() -> list[Path]:
    """The folders model files may come from, in lookup order (a relative name is looked up in each)."""
    listed = [Path(p) for p in (get_settings().model_dirs or "").split(os.pathsep) if p.strip()]
    return [data_home() / "models", *listed, data_home() / "jobs"]


def looks_local(ref: str) -> bool:
    """Whether a model reference names a file here rather than a hub id or a served model's name: it is
    written as a path (``/``, ``.``, ``~``, a backslash, more than one ``/``) or such a path exists."""
    return ref.startswith(("/", ".", "~")) or "\\" in ref or ref.count("/") > 1 or os.path.lexists(ref)


def check_model_path(
    session: Session, value: str, field: str, user: UserInfo | None, needs: str | None = None
) -> str:
    """``value`` resolved under the model folders, and not in another researcher's job folder unless that
    checkpoint was published: a folder holding ``needs`` (e.g. ``config.json``), or with ``needs`` None a plain
    file (a GGUF). The operator's value is returned as it is."""
    if user is None:
        return value
    if needs is None:
        path = regular_file(value, field, model_roots(), None, WHERE)
    else:
        path = model_folder(value, field, model_roots(), WHERE, needs=needs)
    _not_someone_elses_job(session, path, field, user)
    return str(path)


def _not_someone_elses_job(session: Session, path: Path, field: str, user: UserInfo) -> None:
    jobs = (data_home() / "jobs").resolve()
    if not is_inside(path, jobs) or user.role == "admin":
        return
    if path == jobs:
        raise PathRefused(f"{field}: name one job's checkpoint, not the jobs folder")
    part = path.relative_to(jobs).parts[0]
    job = session.get(Job, int(part)) if part.isdigit() else None
    if job is not None and job.created_by == user.id:
        return
    if job is not None:
        for published in session.scalars(
            select(Checkpoint.path).where(Checkpoint.job_id == job.id, Checkpoint.contestant_id.is_not(None))
        ):
            if is_inside(path, Path(published).resolve()):
                return
    raise PathRefused(
        f"{field}: that job folder holds another researcher's unpublished checkpoint; only the job's owner or "
        "an admin may name it"
    )


def check_model_ref(
    session: Session, ref: str, field: str, user: UserInfo | None, engine: str, needs: str | None = None
) -> str:
    """A model reference for ``engine``: a builtin or a name passes, a path is checked (``check_model_path``).
    llama.cpp's reference is always a path (a GGUF file); the others take a hub id or a served name too."""
    if user is None or not isinstance(ref, str):
        return ref
    if ref.startswith("builtin:"):
        if ref not in BUILTINS:
            raise PathRefused(f"{field}: unknown builtin model (known: {', '.join(BUILTINS)})")
        return ref
    if engine == "llama_cpp" or looks_local(ref):
        return check_model_path(session, ref, field, user, needs=None if engine == "llama_cpp" else needs)
    return ref


def checked_spec(session: Session, spec: ContestantSpec, user: UserInfo | None) -> ContestantSpec:
    """``spec`` with its file fields naming only files ``user`` may use, stored resolved: ``model`` (llama.cpp: a
    GGUF; transformers: a checkpoint folder or hub id; vLLM with ``serve``: what the server loads), ``adapter``
    (a PEFT adapter folder) and ``engine_config.serve.model``. An HTTP engine's model and adapter are names its
    own server knows, never read here. PathRefused names the field."""
    if user is None:
        return spec
    config = dict(spec.engine_config or {})
    serve = config.get("serve")
    local = spec.engine in ("llama_cpp", "transformers") or (
        spec.engine == "vllm" and isinstance(serve, dict)
    )
    if not local:
        return spec
    model_ref = check_model_ref(session, spec.model_ref, "model", user, spec.engine, needs="config.json")
    if isinstance(serve, dict) and isinstance(serve.get("model"), str):
        served = check_model_ref(
            session, serve["model"], "engine_config.serve.model", user, "vllm", "config.json"
        )
        config["serve"] = {**serve, "model": served}
    adapter_ref = spec.adapter_ref
    if adapter_ref:
        adapter_ref = check_model_path(session, adapter_ref, "adapter", user, needs="adapter_config.json")
    return dataclasses.replace(spec, model_ref=model_ref, adapter_ref=adapter_ref, engine_config=config)
