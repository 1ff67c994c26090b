"""Fair comparisons: parent and child answer the same held-out prompts under the same conditions.

``fair_pair`` decides how both sides run. The child runs as it plays. The parent runs on the child's
engine at the same precision.
- A child published as GGUF and its GGUF parent both run on llama.cpp at the parent's quantization. That
  is the engine the arena uses.
- A child left on the transformers engine faces its embedded GGUF parent's HF conversion. Those are the
  very weights its LoRA was trained on.
Both use the child's persona (system prompt, prefill) and decoding, and the same seeds. A child inherits
its parent's persona unless its job said ``inherit_persona: false``; ``Setup.persona_source`` says which.
When the two cannot share an engine, the setup says so in ``caveats``, and ``fair`` is false.

``held_out`` draws prompts (MT-Bench first turns) whose content hash appears nowhere in the training
snapshot's user turns. ``answer_all`` answers a prompt list through ``arena.engines.ask.ask_batch``, all
through the engine's gate.
- The transformers engine makes batched, seeded ``generate`` calls. So both sides meet identical seeds and
  batches.
- Engines that do not batch get one seeded request per prompt.
- A llama.cpp engine (the arena's, and a GGUF child's) decodes its requests together in one context.
Each answer records whether it hit the token cap.

``power`` says what a report's n could have detected, at 80% power and 5% two-sided. It gives a drift in
standard deviations of the per-prompt change, and a change in eval pass rate. ``items_for`` is its
inverse:
the items a wanted difference needs.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from vibestudio.arena.engines.ask import ask_batch
from vibestudio.arena.engines.base import Reply, Request, Sampling
from vibestudio.arena.prompts import mt_bench_first_turns
from vibestudio.arena.registry import BUILTIN_GGUF, BUILTIN_HF, ContestantInfo, engine_for, messages_for


def content_hash(text: str) -> str:
    """Hash of a prompt's content: case, quotes and whitespace do not matter."""
    norm = re.sub(r"\s+", " ", (text or "").replace("\u2019", "'").casefold()).strip()
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()


def snapshot_prompt_hashes(rows: list[dict[str, Any]]) -> set[str]:
    """Content hashes of every user turn in a snapshot's rows (conversational or plain prompts)."""
    out = set()
    for row in rows or []:
        prompt = row.get("prompt")
        if isinstance(prompt, str):
            out.add(content_hash(prompt))
            continue
        for msg in prompt or []:
            if isinstance(msg, dict) and msg.get("role") == "user":
                out.add(content_hash(str(msg.get("content", ""))))
    return out


@dataclass
class HeldOut:
    prompts: list[str]
    pool: int  # candidate prompts before excluding the snapshot's
    excluded: int  # candidates whose content hash is in the snapshot
    requested: int


def held_out(n: int, snapshot_rows: list[dict[str, Any]] | None = None, seed: int = 0) -> HeldOut:
    """``n`` MT-Bench first turns (seeded order) whose content hash is not among the snapshot's user turns."""
    banned = snapshot_prompt_hashes(snapshot_rows or [])
    pool = mt_bench_first_turns()
    kept = [p for p in pool if content_hash(p) not in banned]
    random.Random(seed).shuffle(kept)
    return HeldOut(kept[:n], len(pool), len(pool) - len(kept), n)


@dataclass
class Setup:
    """How both sides answered (stored in the report)."""

    engine: str
    child_model: str
    parent_model: str
    parent_ran_as: str
    system_prompt: str
    prefill: str
    persona_source: str
    sampling: dict[str, Any]
    seed: int
    fair: bool = True
    caveats: list[str] = field(default_factory=list)
    power: dict[str, Any] = field(default_factory=dict)  # what differences its n could detect (``power``)
    #: answers an earlier report had decoded, per part and side: {"answers": {"parent": 80, "child": 0}, ...}
    reused: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def fair_pair(
    parent: ContestantInfo, child: ContestantInfo, max_tokens: int, seed: int
) -> tuple[ContestantInfo, ContestantInfo, Setup]:
    """Versions of parent and child that share engine, precision, persona, decoding and seeds."""
    caveats = []
    same_persona = (parent.system_prompt, parent.prefill) == (child.system_prompt, child.prefill)
    if same_persona:
        source = "inherited from the parent (both sides answered with it)"
    else:
        source = "the child's own (it differs from the parent's); both sides answered with the child's"
    sampling = dict(child.sampling)
    sampling["max_tokens"] = min(int(sampling.get("max_tokens", max_tokens)), max_tokens)
    p = replace(parent, system_prompt=child.system_prompt, prefill=child.prefill, sampling=sampling)
    c = replace(child, sampling=sampling)
    ran_as = f"{parent.engine} {parent.model_ref}" + (
        f" + {parent.adapter_ref}" if parent.adapter_ref else ""
    )
    if parent.engine != child.engine:
        if (
            parent.model_ref == BUILTIN_GGUF
            and child.engine == "transformers"
            and child.model_ref == BUILTIN_HF
        ):
            p = replace(p, engine="transformers", model_ref=BUILTIN_HF, adapter_ref=None, engine_config={})
            ran_as = f"transformers {BUILTIN_HF} (the fp32 HF conversion of {BUILTIN_GGUF}, as trained)"
        else:
            caveats.append(
                f"parent runs on {parent.engine}, child on {child.engine}: engine and precision differ, so "
                "differences may come from the engines, not the training"
            )
    setup = Setup(
        engine=c.engine,
        child_model=c.model_ref + (f" + {c.adapter_ref}" if c.adapter_ref else ""),
        parent_model=parent.model_ref,
        parent_ran_as=ran_as,
        system_prompt=child.system_prompt,
        prefill=child.prefill,
        persona_source=source,
        sampling=sampling,
        seed=seed,
        fair=not caveats,
        caveats=caveats,
    )
    return p, c, setup


Answer = Reply  # one answer: text (prefill included), tokens, whether the token cap cut it, seconds


def answer_all(info: ContestantInfo, prompts: list[str], seed: int, reuse: bool = True) -> list[Answer]:
    """Answers of ``info`` (persona and sampling as given) to every prompt, prompt ``i`` seeded ``seed + i``; the
    prefill is part of each answer (``answer_all_counted`` without the count of reused answers)."""
    return answer_all_counted(info, prompts, seed, reuse)[0]


def answer_all_counted(
    info: ContestantInfo, prompts: list[str], seed: int, reuse: bool = True
) -> tuple[list[Answer], int]:
    """``answer_all`` and how many of the answers an earlier report had already decoded
    (``training.report.answer_cache``: llama.cpp sides only; ``reuse=False`` decodes every one and keeps none,
    for a benchmark that times decoding). The rest go in one ``ask_batch``: batched
    ``generate`` calls on the transformers engine, sequences decoded together on llama.cpp, one gated request per
    prompt (in parallel up to the engine's concurrency) on any other."""
    from vibestudio.training.report import answer_cache

    base = dict(info.sampling)
    samplings = [{**base, "seed": seed + i} for i in range(len(prompts))]
    keys = answer_cache.answer_keys(info, prompts, samplings) if reuse else [None] * len(prompts)
    kept: list[Answer | None] = [answer_cache.load(k) if k else None for k in keys]
    todo = [i for i, a in enumerate(kept) if a is None]
    if todo:
        requests = [
            Request(messages_for(info, [], prompts[i]), Sampling.from_dict(samplings[i]), info.prefill)
            for i in todo
        ]
        for i, reply in zip(todo, ask_batch(engine_for(info), requests), strict=True):
            kept[i] = reply
            key = keys[i]
            if key:
                answer_cache.store(key, reply)
    return [a for a in kept if a is not None], len(prompts) - len(todo)


#: The power every report states its n against: a two-sided test at 5% that finds a true difference 80% of the time.
ALPHA, POWER = 0.05, 0.80
#: The share of eval items assumed to change between parent and child when the report has not counted it.
ASSUMED_DISCORDANT = 0.2
#: The change in eval pass rate a report detects by default, and the items that takes (``items_for(0.15)``; the job
#: config, the report job and ``vibestudio drift`` default to the same number, which a test checks): 70 of the 109
#: items, spread over the categories, about a third less decoding than all of them.
DEFAULT_EVAL_CHANGE = 0.15
DEFAULT_EVAL_ITEMS = 70


def _z_sum(alpha: float = ALPHA, power: float = POWER) -> float:
    from statistics import NormalDist

    z = NormalDist()
    return z.inv_cdf(1 - alpha / 2) + z.inv_cdf(power)


def detectable_shift(n: int, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The smallest paired shift, in standard deviations of the per-prompt differences (Cohen's d_z), that
    ``n`` paired answers detect with ``power`` at two-sided ``alpha``: (z_{1-a/2} + z_power) / sqrt(n)."""
    return None if n < 2 else _z_sum(alpha, power) / n**0.5


def detectable_rate(
    n: int, discordant: float = ASSUMED_DISCORDANT, alpha: float = ALPHA, power: float = POWER
) -> float | None:
    """The smallest change in pass rate that ``n`` paired eval items detect (McNemar, normal approximation) when
    a share ``discordant`` of the items pass on one side only: (z_{1-a/2} + z_power) * sqrt(discordant / n)."""
    if n < 2 or discordant <= 0:
        return None
    return min(1.0, _z_sum(alpha, power) * (discordant / n) ** 0.5)


def items_for(
    rate: float, discordant: float = ASSUMED_DISCORDANT, alpha: float = ALPHA, power: float = POWER
) -> int:
    """Eval items needed to detect a change of ``rate`` in pass rate (the inverse of ``detectable_rate``)."""
    import math

    return max(2, math.ceil(_z_sum(alpha, power) ** 2 * discordant / rate**2))


def prompts_for(shift: float, alpha: float = ALPHA, power: float = POWER) -> int:
    """Paired prompts needed to detect a drift of ``shift`` standard deviations (the inverse of
    ``detectable_shift``)."""
    import math

    return max(2, math.ceil((_z_sum(alpha, power) / shift) ** 2))


def chosen_counts(
    drift_prompts: int, eval_items: int, detect_drift_sd: float | None, detect_eval_change: float | None
) -> tuple[int, int]:
    """A report's (prompts, eval items): the counts as set, or the fewest that detect the stated drift and eval
    change (``prompts_for``, ``items_for``); a count of 0 (that part off) stays 0."""
    prompts = drift_prompts if detect_drift_sd is None or drift_prompts == 0 else prompts_for(detect_drift_sd)
    items = eval_items if detect_eval_change is None or eval_items == 0 else items_for(detect_eval_change)
    return prompts, items


def power(n_prompts: int, n_items: int, discordant: int | None = None) -> dict[str, Any]:
    """What a report with ``n_prompts`` paired answers and ``n_items`` paired eval items could have detected,
    with the sentence it says (``discordant``: the items that changed, when counted)."""
    share = discordant / n_items if discordant is not None and n_items else None
    shift = detectable_shift(n_prompts)
    rate = detectable_rate(n_items, share if share else ASSUMED_DISCORDANT)
    basis = (
        f"{discordant} of {n_items} items changed"
        if share
        else f"assuming {ASSUMED_DISCORDANT:.0%} of items change"
    )
    parts = []
    if shift is not None:
        parts.append(
            f"a drift of {shift:.2f} standard deviations of the per-prompt change with {n_prompts} prompts"
        )
    if rate is not None:
        parts.append(f"a change of {rate:.0%} in eval pass rate with {n_items} items ({basis})")
    return {
        "alpha": ALPHA,
        "power": POWER,
        "n_prompts": n_prompts,
        "n_items": n_items,
        "drift_sd": shift,
        "eval_rate": rate,
        "line": (
            f"With {POWER:.0%} power at {ALPHA:.0%} (two-sided) it could detect "
            + (" and ".join(parts) if parts else "nothing (too few answers)")
            + "; smaller differences may be there unseen."
        ),
    }
