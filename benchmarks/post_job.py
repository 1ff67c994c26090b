"""The post-job step (checkpoint report: fair answers, drift, discovery, evals, verdict) vs the raw way of getting
the same answers, same run, same machine; prints the ratio.

    python benchmarks/post_job.py                    # SmolLM2-135M (HF conversion of the shipped GGUF), LoRA child
    python benchmarks/post_job.py --model tiny       # the tiny random Llama: the report's own overhead

The child is a fresh LoRA adapter (r 16, all-linear, random B so it is not the parent) on the same base, with the
``smollm2-warm`` persona inherited, as a DPO job would publish it. The studio side is ``drift_report`` with the
job defaults (80 held-out prompts x 64 tokens, every verifiable eval item x 96 tokens, both sides). The raw
baseline produces the same answers the way the arena does, one ``stream_chat`` request at a time per prompt on
the transformers engine, with no statistics; ``--raw-share 0.25`` times it on the first quarter of the prompts
and eval items and scales it per answer (the full baseline takes several times the report). Publishing itself
is timed by every job (``publish_seconds``, 0.1-0.2 s for a LoRA adapter; docs/training.md).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def make_child(base: str, out: Path) -> str:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    peft = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear"))
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in peft.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.002)
    peft.save_pretrained(str(out))
    return str(out)


def raw(info, prompts: list[str], max_tokens: int) -> float:  # type: ignore[no-untyped-def]
    from vibestudio.arena.engines.base import Sampling
    from vibestudio.arena.registry import engine_for, messages_for

    engine = engine_for(info)
    t0 = time.perf_counter()
    for i, p in enumerate(prompts):
        s = Sampling.from_dict({**info.sampling, "max_tokens": max_tokens, "seed": i})
        "".join(engine.stream_chat(messages_for(info, [], p), s, prefill=info.prefill))
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["smollm2", "tiny"], default="smollm2")
    ap.add_argument("--prompts", type=int, default=80)
    ap.add_argument("--eval-items", type=int, default=-1)
    ap.add_argument(
        "--raw-share",
        type=float,
        default=1.0,
        help="time the raw baseline on this share of the prompts and eval items (first ones) and scale it per "
        "answer; 1 = all of them (the one-request-at-a-time baseline is the slow side)",
    )
    args = ap.parse_args()

    from dataclasses import replace

    from tests.helpers.models import ensure_tokenizer_dir, make_tiny_llama
    from vibestudio.arena.default_model import ensure_hf_base
    from vibestudio.arena.registry import (
        BUILTIN_HF,
        DEFAULT_PERSONAS,
        ContestantSpec,
        get_contestant,
        register,
    )
    from vibestudio.db.session import Database
    from vibestudio.standings.evals import load_items
    from vibestudio.training.report.fair import fair_pair, held_out
    from vibestudio.training.report.steps import drift_report

    tmp = Path(tempfile.mkdtemp(prefix="postjob-"))
    db = Database(f"sqlite:///{tmp / 'bench.sqlite'}")
    db.migrate()
    warm = next(p for p in DEFAULT_PERSONAS if p.public_name == "smollm2-warm")
    if args.model == "smollm2":
        base_ref, base_dir = BUILTIN_HF, str(ensure_hf_base())
        parent_spec = replace(warm)  # llama.cpp GGUF, as the arena plays it
    else:
        base_dir = str(make_tiny_llama(ensure_tokenizer_dir(tmp / "tok"), tmp / "tiny"))
        base_ref = base_dir
        parent_spec = replace(warm, engine="transformers", model_ref=base_dir)
    adapter = make_child(base_dir, tmp / "adapter")
    with db.session() as s:
        parent_id = register(s, parent_spec)
        child_id = register(
            s,
            ContestantSpec(
                "warm-child",
                engine="transformers",
                model_ref=base_ref,
                adapter_ref=adapter,
                system_prompt=warm.system_prompt,
                prefill=warm.prefill,
                sampling=dict(warm.sampling),
                parent_id=parent_id,
            ),
        )
    t0 = time.perf_counter()
    report = drift_report(db, child_id, n_prompts=args.prompts, eval_items=args.eval_items)
    studio = time.perf_counter() - t0
    print(report.summary())
    print("timings:", {k: round(v, 1) for k, v in report.timings.items()})

    with db.session() as s:
        parent, child = get_contestant(s, parent_id), get_contestant(s, child_id)
    p, c, _ = fair_pair(parent, child, 64, 0)
    prompts = held_out(args.prompts).prompts
    _, items = load_items()
    items = items if args.eval_items < 0 else items[: args.eval_items]
    asks = [i.prompt for i in items]
    k_p = max(1, round(len(prompts) * args.raw_share))
    k_e = max(1, round(len(asks) * args.raw_share)) if asks else 0
    t_raw = (raw(p, prompts[:k_p], 64) + raw(c, prompts[:k_p], 64)) * len(prompts) / k_p
    if k_e:
        t_raw += (raw(p, asks[:k_e], 96) + raw(c, asks[:k_e], 96)) * len(asks) / k_e
    n = 2 * (len(prompts) + len(asks))
    print(f"studio report (answers + stats + evals + verdict): {studio:.1f} s for {n} answers")
    scaled = f", timed on {2 * (k_p + k_e)} answers and scaled per answer" if args.raw_share < 1 else ""
    print(f"raw one-request-at-a-time answers (no statistics): {t_raw:.1f} s{scaled}")
    print(f"ratio studio / raw: {studio / t_raw:.2f}x")


if __name__ == "__main__":
    main()
