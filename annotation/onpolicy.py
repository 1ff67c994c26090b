"""On-policy queues: answer a prompt set k times with the current policy, pair the answers, queue the pairs.

Variants are the policy under k different seeds (and temperatures, when given), or the policy against
another contestant. Every answer is stamped with:
- the policy version: a hash of what defines the contestant (engine, model, adapter, persona, lineage);
- its sampling parameters, token count and time.
The k answers to a prompt become every pair among them (k=2: one pair). Two identical answers make no
pair.

Generation runs in batch through the engine. Requests go out concurrently up to the engine's
``concurrency``. A vLLM or other OpenAI-compatible server batches them; llama.cpp serves its pool. Each
request goes through the engine's gate (``arena.engines.ask``). So queue generation waits its turn behind
the arena's battles.

The queue is written prompt by prompt in short transactions. So a crash loses at most the prompts in
flight. A second run with the same queue name resumes where the first stopped.
``progress(done, total, note)`` is called as answers finish. The CLI maps it to tqdm, the web page to its
progress bar. Only the first turn of each prompt is used.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import select

from vibestudio.accounts import require_role
from vibestudio.annotation.queues import NewItem, QueueError, add_item, create_queue, queue_row
from vibestudio.annotation.rubrics import get_rubric
from vibestudio.arena.engines.ask import ask
from vibestudio.arena.engines.base import EngineError, Sampling
from vibestudio.arena.registry import ContestantInfo, engine_for, get_contestant, messages_for
from vibestudio.db.models import Prompt, PromptSet, QueueItem
from vibestudio.db.session import Database

Progress = Callable[[int, int, str], None]


@dataclass
class OnPolicySpec:
    queue: str
    prompt_set: str
    policy: str | int
    k: int = 2
    opponent: str | int | None = None
    temperatures: list[float] = field(default_factory=list)
    seed: int = 0
    max_prompts: int | None = None
    max_tokens: int | None = None
    overlap: int = 1
    rubric: str | None = "default"
    workers: int | None = None


@dataclass
class GenerationResult:
    queue: str
    n_prompts: int
    n_answers: int
    n_items: int
    resumed: int
    identical: int
    errors: list[str]
    seconds: float
    tokens: int

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0


@dataclass
class _Variant:
    info: ContestantInfo
    sampling: Sampling
    index: int


def policy_version(info: ContestantInfo) -> str:
    """``name@hash``: the hash covers everything that changes what the contestant writes."""
    ident = {
        "engine": info.engine,
        "model_ref": info.model_ref,
        "adapter_ref": info.adapter_ref,
        "system_prompt": info.system_prompt,
        "prefill": info.prefill,
        "parent_id": info.parent_id,
        "job_id": info.job_id,
        "snapshot_hash": info.snapshot_hash,
        "engine_config": getattr(info, "engine_config", None) or {},
    }
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:12]
    return f"{info.public_name}@{digest}"


def plan_variants(
    spec: OnPolicySpec, policy: ContestantInfo, opponent: ContestantInfo | None
) -> list[_Variant]:
    def sampling_for(info: ContestantInfo, i: int) -> Sampling:
        base = Sampling.from_dict(info.sampling)
        if spec.max_tokens:
            base.max_tokens = spec.max_tokens
        if spec.temperatures:
            base.temperature = float(spec.temperatures[i % len(spec.temperatures)])
        base.seed = spec.seed + i
        return base

    if opponent is not None:
        return [
            _Variant(policy, sampling_for(policy, 0), 0),
            _Variant(opponent, sampling_for(opponent, 1), 1),
        ]
    if spec.k < 2:
        raise QueueError(f"k must be at least 2 answers per prompt, got {spec.k}")
    return [_Variant(policy, sampling_for(policy, i), i) for i in range(spec.k)]


def _answer(variant: _Variant, text: str) -> dict[str, Any]:
    info = variant.info
    reply = ask(engine_for(info), messages_for(info, [], text), variant.sampling, info.prefill)
    return {
        "text": reply.text,
        "stamp": {
            "contestant_id": info.id,
            "model": info.public_name,
            "policy_version": policy_version(info),
            "sampling": asdict(variant.sampling),
            "variant": variant.index,
            "tokens": reply.tokens,
            "truncated": reply.truncated,
            "seconds": round(reply.seconds, 3),
        },
    }


def _prompts(db: Database, spec: OnPolicySpec) -> tuple[int, list[tuple[int, str]]]:
    with db.session() as s:
        ps = s.scalar(select(PromptSet).where(PromptSet.name == spec.prompt_set))
        if ps is None:
            raise QueueError(f"no prompt set named {spec.prompt_set!r}")
        rows = s.execute(
            select(Prompt.id, Prompt.turns).where(Prompt.set_id == ps.id).order_by(Prompt.id)
        ).all()
    prompts = [(pid, turns[0]) for pid, turns in rows if turns]
    if spec.max_prompts:
        prompts = prompts[: spec.max_prompts]
    if not prompts:
        raise QueueError(f"prompt set {spec.prompt_set!r} has no prompts")
    return ps.id, prompts


def _open_queue(
    db: Database, spec: OnPolicySpec, set_id: int, policy: ContestantInfo, variants: list[_Variant]
):
    config = {
        "prompt_set": spec.prompt_set,
        "policy": policy.public_name,
        "policy_version": policy_version(policy),
        "variants": [
            {
                "model": v.info.public_name,
                "policy_version": policy_version(v.info),
                "sampling": asdict(v.sampling),
            }
            for v in variants
        ],
        "max_prompts": spec.max_prompts,
    }
    with db.session() as s:
        try:
            q = queue_row(s, spec.queue)
        except QueueError:
            q = None
        if q is not None:
            if q.kind != "on_policy" or (q.config or {}).get("variants") != config["variants"]:
                raise QueueError(
                    f"queue {spec.queue!r} exists with other settings; choose another name to start a new queue"
                )
            q.status = "generating"
            done = set(s.scalars(select(QueueItem.prompt_id).where(QueueItem.queue_id == spec.queue)))
            return done | set((q.config or {}).get("prompts_without_pairs", []))
        rubric = get_rubric(spec.rubric) if spec.rubric else None
        create_queue(
            s,
            spec.queue,
            "on_policy",
            rubric,
            spec.overlap,
            set_id,
            policy.id,
            config,
            source=f"on-policy: {policy.public_name} on {spec.prompt_set}",
            status="generating",
        )
    return set()


def _store_prompt(
    db: Database, spec: OnPolicySpec, pid: int, text: str, answers: list[dict], policy_id: int
) -> tuple[int, int]:
    made = identical = 0
    with db.session() as s:
        for a, b in itertools.combinations(answers, 2):
            if a["text"].strip() == b["text"].strip():
                identical += 1
                continue
            add_item(
                s,
                spec.queue,
                NewItem(
                    prompt_messages=[{"role": "user", "content": text}],
                    answers=[a["text"], b["text"]],
                    stamps=[a["stamp"], b["stamp"]],
                    prompt_id=pid,
                    policy_contestant_id=policy_id,
                ),
            )
            made += 1
        if not made:
            q = queue_row(s, spec.queue)
            q.config = {
                **q.config,
                "prompts_without_pairs": [*q.config.get("prompts_without_pairs", []), pid],
            }
    return made, identical


def generate_queue(
    db: Database,
    spec: OnPolicySpec,
    progress: Progress | None = None,
    user_id: int | None = None,
    rubric_paths: bool = False,
) -> GenerationResult:
    """Create (or resume) an on-policy queue; returns counts, errors and throughput. The rubric is named
    (user folder, then shipped); a YAML path only when ``rubric_paths`` (the operator's CLI), so a web
    request cannot make the server read a file of its choosing."""
    require_role(db, user_id, "researcher")
    if (
        spec.rubric
        and not rubric_paths
        and ("/" in spec.rubric or "\\" in spec.rubric or spec.rubric.endswith((".yaml", ".yml")))
    ):
        raise QueueError("a queue's rubric is given by its name (see the rubric list), not by a file path")
    t0 = time.perf_counter()
    with db.session() as s:
        policy = get_contestant(s, spec.policy)
        opponent = get_contestant(s, spec.opponent) if spec.opponent is not None else None
    variants = plan_variants(spec, policy, opponent)
    set_id, prompts = _prompts(db, spec)
    done = _open_queue(db, spec, set_id, policy, variants)
    todo = [(pid, text) for pid, text in prompts if pid not in done]
    total = len(todo) * len(variants)
    workers = spec.workers or max(1, min(getattr(engine_for(policy), "concurrency", 2) or 2, 16))
    results: dict[int, list[dict | None]] = {pid: [None] * len(variants) for pid, _ in todo}
    failed: set[int] = set()
    errors: list[str] = []
    n_items = identical = tokens = finished = 0
    if progress:
        progress(0, total, "generating")
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(_answer, v, text): (pid, v.index) for pid, text in todo for v in variants}
        texts = dict(todo)
        for fut in as_completed(futures):
            pid, idx = futures[fut]
            finished += 1
            try:
                results[pid][idx] = fut.result()
                tokens += results[pid][idx]["stamp"]["tokens"]  # type: ignore[index]
            except EngineError as exc:
                failed.add(pid)
                errors.append(f"prompt {pid}: {exc}")
            if progress:
                progress(finished, total, f"{finished}/{total} answers")
            slots = results[pid]
            if pid not in failed and all(r is not None for r in slots):
                made, same = _store_prompt(db, spec, pid, texts[pid], slots, policy.id)  # type: ignore[arg-type]
                n_items += made
                identical += same
    with db.session() as s:
        queue_row(s, spec.queue).status = "ready"
    return GenerationResult(
        queue=spec.queue,
        n_prompts=len(todo) - len(failed),
        n_answers=sum(1 for rs in results.values() for r in rs if r is not None),
        n_items=n_items,
        resumed=len(prompts) - len(todo),
        identical=identical,
        errors=errors,
        seconds=time.perf_counter() - t0,
        tokens=tokens,
    )
