"""Exports for deployment: a contestant's weights in a form another runtime loads, with how much of its
training that form keeps.

``export`` is the Python API behind ``vibestudio models export`` and the Models page. It resolves a
contestant's weights (``weights_of``). It writes one of two deployable forms:
- ``gguf``: the file it plays with on llama.cpp. A child that plays its parent's file with a run-time LoRA
  gets both files. Otherwise it is a conversion of its HF weights on the embedded tokenizer's template.
- ``merged``: an HF checkpoint with the LoRA merged in.
Its ``source`` says where the weights came from. For a published checkpoint it gives the fidelity of the
form written (``training.publishing.fidelity``). So a user downloads what was trained, and knows it.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vibestudio.common.filelocks import unique_tmp
from vibestudio.training.publishing.gguf_export import ConversionError, convert, load_check, load_merged

if TYPE_CHECKING:
    from vibestudio.db.session import Database

EXPORT_FORMATS = ("gguf", "merged")


@dataclass
class Exported:
    """What ``export`` wrote: the contestant, the format, the path (a file for gguf, a folder for merged)."""

    name: str
    format: str
    path: Path
    seconds: float
    source: str  # where the weights came from, in words


def weights_of(db: Database, name: int | str) -> tuple[str, str | None, str]:
    """(model ref, adapter ref, words) of the HF weights a contestant was made from: its own on the transformers
    engine; the checkpoint it was published from when it plays a converted GGUF; the HF conversion of the
    embedded GGUF. Raises ConversionError when it has no HF weights here (an HTTP model, a foreign GGUF)."""
    from sqlalchemy import select

    from vibestudio.arena.registry import BUILTIN_GGUF, BUILTIN_HF, get_contestant
    from vibestudio.db.models import Checkpoint, Job
    from vibestudio.training.jobs.preflight import choose_base, find_parent

    with db.session() as s:
        info = get_contestant(s, name)
        if info.engine == "transformers":
            return (
                info.model_ref,
                info.adapter_ref,
                f"{info.model_ref}" + (f" + LoRA {info.adapter_ref}" if info.adapter_ref else ""),
            )
        # a checkpoint first: a child playing its parent's GGUF with a run-time adapter names the parent's file
        ckpt = s.scalar(select(Checkpoint).where(Checkpoint.contestant_id == info.id).limit(1))
        if info.engine == "llama_cpp" and info.model_ref == BUILTIN_GGUF and ckpt is None:
            return BUILTIN_HF, None, f"{BUILTIN_HF} (the HF conversion of the embedded GGUF)"
        if info.engine == "llama_cpp" and ckpt is not None:
            job = s.get(Job, ckpt.job_id)
            cfg = dict(job.config or {}) if job else {}
            folder = Path(ckpt.path)
            if not (folder / "adapter_config.json").exists():
                return str(folder), None, f"checkpoint {folder.name} of job {ckpt.job_id}"
            parent = find_parent(s, cfg["parent_contestant"]) if cfg.get("parent_contestant") else None
            base = choose_base(parent, cfg.get("base_model") or "")
            return base.model_ref, str(folder), f"{base.model_ref} + LoRA of job {ckpt.job_id}"
    raise ConversionError(
        f"{name!r} runs on {info.engine} with no HF checkpoint here; nothing to export"
        + (" as merged weights (export --format gguf copies its file)" if info.engine == "llama_cpp" else "")
    )


def export(
    db: Database, name: int | str, fmt: str, out_dir: Path | str, user_id: int | None = None
) -> Exported:
    """Write contestant ``name`` for deployment into ``out_dir``: ``gguf`` (``<name>.gguf``: the file it plays
    with on llama.cpp; ``<name>-gguf/`` with ``model.gguf`` and ``adapter.gguf`` for a child that plays its parent's
    file with a run-time LoRA; else its HF weights converted at F16 on the embedded tokenizer's template; the
    source says how much of the training the played form kept) or ``merged``
    (``<name>/``: an HF checkpoint with any LoRA merged in, tokenizer included). Researchers and up (``None``
    is the local operator). Nothing is left at the final name unless it was written whole (and, for GGUF,
    load-checked); an existing one is never written over."""
    from vibestudio.accounts import require_role
    from vibestudio.arena.default_model import default_gguf_path
    from vibestudio.arena.registry import get_contestant, resolve_model_ref

    require_role(db, user_id, "researcher")
    t0 = time.perf_counter()
    if fmt not in EXPORT_FORMATS:
        raise ConversionError(f"format {fmt!r} unknown; known: {', '.join(EXPORT_FORMATS)}")
    out = Path(out_dir).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    with db.session() as s:
        info = get_contestant(s, name)
    safe = (
        "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in info.public_name).strip(".") or "model"
    )
    if fmt == "gguf":
        target = out / f"{safe}.gguf"
        if target.exists():
            raise ConversionError(f"{target} exists; choose another folder")
        if info.engine == "llama_cpp" and info.adapter_ref:
            return _export_with_adapter(info, out / f"{safe}-gguf", t0, _fidelity_words(db, info.id))
        if info.engine == "llama_cpp":
            src = Path(resolve_model_ref(info.model_ref))
            tmp = unique_tmp(target)
            try:
                shutil.copyfile(src, tmp)
                load_check(tmp)
                tmp.rename(target)
            finally:
                tmp.unlink(missing_ok=True)
            return Exported(
                info.public_name,
                fmt,
                target,
                time.perf_counter() - t0,
                f"its GGUF {src.name}{_fidelity_words(db, info.id)}",
            )
        model_ref, adapter_ref, words = weights_of(db, name)
        convert(model_ref, adapter_ref, default_gguf_path(), target, ftype=1)
        return Exported(
            info.public_name,
            fmt,
            target,
            time.perf_counter() - t0,
            f"{words}, as F16 (a conversion of the trained weights; its fidelity was not measured)",
        )
    model_ref, adapter_ref, words = weights_of(db, name)
    target = out / safe
    if target.exists():
        raise ConversionError(f"{target} exists; choose another folder")
    tok, model = load_merged(model_ref, adapter_ref)
    tmp = unique_tmp(target)
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Exported(
        info.public_name, fmt, target, time.perf_counter() - t0, f"{words} (the trained weights themselves)"
    )


def _fidelity_words(db: Database, contestant_id: int) -> str:
    """'; kept 98% [..] of the trained shift (..)' for a published checkpoint, from its fidelity record."""
    from vibestudio.training.publishing import fidelity

    is_child, record, _ = fidelity.record_for(db, contestant_id)
    return f"; {fidelity.summary(record)}" if is_child else ""


def _export_with_adapter(info: Any, target: Path, t0: float, words: str) -> Exported:
    """A run-time-adapter child exported as it plays: a folder with the parent's GGUF and the child's llama.cpp
    LoRA adapter (``llama-cli -m model.gguf --lora adapter.gguf``), both load-checked together."""
    from vibestudio.arena.registry import resolve_model_ref
    from vibestudio.training.publishing.gguf_adapter import adapter_check

    if target.exists():
        raise ConversionError(f"{target} exists; choose another folder")
    tmp = unique_tmp(target)
    try:
        tmp.mkdir(parents=True)
        shutil.copyfile(resolve_model_ref(info.model_ref), tmp / "model.gguf")
        shutil.copyfile(info.adapter_ref, tmp / "adapter.gguf")
        adapter_check(tmp / "model.gguf", tmp / "adapter.gguf")
        tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Exported(
        info.public_name,
        "gguf",
        target,
        time.perf_counter() - t0,
        "its parent's GGUF (model.gguf) and its LoRA as a llama.cpp adapter (adapter.gguf), applied at run time "
        f"as it plays (llama.cpp: -m model.gguf --lora adapter.gguf){words}",
    )
