"""Benchmark: a trained child's decode speed against its parent's, both sides of one battle streaming at once,
in the form publishing chooses, with that form's fidelity measured in the same run (its truth check).

The child is a SmolLM2-135M LoRA (r 16, all linear layers, random weights scaled so that the shift they make
is measurable, about a DPO job's: speed does not depend on what was learnt, fidelity depends on its size) on
the HF conversion of the embedded GGUF, as a DPO job makes one. It plays two ways, each in the same battle as
its parent (the embedded Q4_1 GGUF on llama.cpp), both streams started together as the arena starts them:

- ``after``: the form ``training.publishing.fidelity.choose`` picks with the built-in rules (what publishing registers):
  the fastest form that keeps the rules' floor of the trained shift;
- ``before``: the child on the transformers engine (base + LoRA, fp32), the trained computation itself.

Printed: every form measured (share of the trained shift kept, interval, size), each side's median decode
tokens/s over ``--reps`` battles, the ratio child / parent (the budget's floor), and ``truth: pass`` only when
the form timed is the one that keeps the training (else ``truth: FAIL`` and exit status 1): a ratio met by a
form that lost its training is a miss.

    python benchmarks/child_speed.py                 # 64 tokens, 3 battles each way
    python benchmarks/child_speed.py --tokens 128 --reps 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

PROMPTS = [
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Explain how a bicycle stays upright, for a ten-year-old.",
    "Describe a rainy afternoon in a busy city.",
    "Give three tips for learning a new language.",
    "Tell me about the history of paper.",
]


def make_child(folder: Path, scale: float = 0.1) -> tuple[str, str]:
    """(base ref, adapter folder) of a random SmolLM2 LoRA child (``lora_B`` scaled by ``scale``)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from vibestudio.arena.registry import BUILTIN_HF, resolve_model_ref

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(resolve_model_ref(BUILTIN_HF), dtype=torch.float32)
    cfg = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", init_lora_weights=False)
    peft = get_peft_model(model, cfg)
    with torch.no_grad():  # small random LoRA weights: a child that answers sensibly, but not as its parent
        for name, p in peft.named_parameters():
            if "lora_B" in name:
                p.mul_(scale)
    peft.save_pretrained(str(folder))
    return BUILTIN_HF, str(folder)


def battle(parent: Any, child: Any, prompt: str, tokens: int, seed: int) -> tuple[float, float]:
    """Both sides stream the same prompt at once (two threads, as a battle does); each side's decode tokens/s."""
    from vibestudio.arena.engines.base import Sampling

    sampling = Sampling(temperature=0.7, top_p=0.95, max_tokens=tokens, seed=seed)
    out: dict[str, float] = {}

    def run(side: str, engine: Any) -> None:
        stream = engine.stream_chat([{"role": "user", "content": prompt}], sampling)
        try:
            for _ in stream:
                pass
        finally:
            stream.close()
        out[side] = stream.stats.tokens_per_s or float("nan")

    threads = [threading.Thread(target=run, args=(s, e)) for s, e in (("parent", parent), ("child", child))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out["parent"], out["child"]


def measure(parent: Any, child: Any, tokens: int, reps: int) -> tuple[float, float]:
    ps, cs = [], []
    for i in range(reps):
        p, c = battle(parent, child, PROMPTS[i % len(PROMPTS)], tokens, seed=i)
        ps.append(p)
        cs.append(c)
    return statistics.median(ps), statistics.median(cs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--skip-before", action="store_true", help="Only the GGUF child (no transformers run).")
    args = ap.parse_args()
    os.environ.setdefault("VIBESTUDIO_HOME", tempfile.mkdtemp(prefix="child-speed-"))

    from vibestudio.arena.engines.factory import get_engine
    from vibestudio.arena.engines.hf import TransformersEngine
    from vibestudio.arena.engines.llamacpp import LlamaCppEngine
    from vibestudio.arena.registry import BUILTIN_GGUF, resolve_model_ref
    from vibestudio.training.publishing import fidelity
    from vibestudio.training.report.verdict import load_rules

    work = Path(tempfile.mkdtemp(prefix="child-"))
    base, adapter = make_child(work / "output")
    policy = load_rules().fidelity
    choice = fidelity.choose(BUILTIN_GGUF, base, adapter, work / "output", policy, say=lambda _m: None)
    for f in choice.fidelity.forms:
        size = f"{f.size_bytes / 1e6:.0f} MB" if f.size_bytes else "-"
        print(f"form {f.form:13} {fidelity.describe(asdict(f))}; {size}; {f.seconds:.1f} s")
    chosen = choice.fidelity.chosen_form
    print(f"publishing chooses: {choice.fidelity.chosen} ({choice.fidelity.seconds:.1f} s to measure)")
    parent = LlamaCppEngine(resolve_model_ref(BUILTIN_GGUF))
    measure(parent, parent, 8, 1)  # warm-up: both pools loaded and paged in
    rows = []
    if choice.engine == "llama_cpp":
        assert choice.model_ref is not None
        after: Any = get_engine("llama_cpp", resolve_model_ref(choice.model_ref), choice.adapter_ref)
    else:
        after = TransformersEngine(resolve_model_ref(base), adapter)
    rows.append(
        (f"after (as published: {choice.fidelity.chosen})", *measure(parent, after, args.tokens, args.reps))
    )
    del after
    if not args.skip_before:
        before = TransformersEngine(resolve_model_ref(base), adapter)
        rows.append(("before (child on transformers)", *measure(parent, before, args.tokens, args.reps)))
    print(f"{'':42} {'parent tok/s':>13} {'child tok/s':>12} {'child/parent':>13}")
    for label, p, c in rows:
        print(f"{label:42} {p:13.1f} {c:12.1f} {c / p:13.2f}")
    kept_ok = chosen is not None and chosen.passed and (chosen.kept is None or chosen.kept >= policy.floor)
    print(
        f"truth: {'pass' if kept_ok else 'FAIL'} (the timed form {fidelity.describe(asdict(chosen)) if chosen else 'unmeasured'};"
        f" floor {policy.floor:.0%})"
    )
    print(f"ratio: {rows[0][2] / rows[0][1]:.3f}")  # the performance lane's line
    if not kept_ok:
        raise SystemExit(1)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"total {time.perf_counter() - t0:.0f} s")
