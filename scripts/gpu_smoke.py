"""Accelerator smoke run: a DPO (LoRA) job on a tiny random model through the studio's real job runner.

Usage: python scripts/gpu_smoke.py --tokenizer DIR [--steps 30] [--launcher python|accelerate]
Builds a tiny Llama with the given tokenizer, freezes a small synthetic preference snapshot, launches the job
out of process, waits, and prints the device used, seconds per step, the job's final metrics and whether the
published contestant answers. Used to check the GPU path on machines that have one.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path

import torch

from annotation.snapshots import write_snapshot
from arena.engines.base import Sampling
from arena.models import make_tiny_llama
from arena.registry import ContestantSpec, engine_for, get_contestant, register
from db.session import Database
from training.runner import wait
from training.service import launch_dpo


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--launcher", default="python")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vibestudio-gpu-"))
    os.environ["VIBESTUDIO_HOME"] = str(work / "home")
    print(
        f"torch {torch.__version__}; cuda available: {torch.cuda.is_available()}"
        + (f" ({torch.cuda.get_device_name(0)})" if torch.cuda.is_available() else "")
    )
    model = make_tiny_llama(args.tokenizer, work / "tiny", hidden=256, layers=4)
    db = Database(f"sqlite:///{work / 'studio.sqlite'}")
    db.migrate()
    rng = random.Random(0)
    rows = [
        {
            "prompt": [{"role": "user", "content": f"What is {a} plus {b}?"}],
            "chosen": [{"role": "assistant", "content": f"{a + b}."}],
            "rejected": [
                {"role": "assistant", "content": f"Great question! It might be {a + b + 1}, maybe."}
            ],
        }
        for a, b in ((rng.randrange(50), rng.randrange(50)) for _ in range(64))
    ]
    with db.session() as s:
        register(
            s,
            ContestantSpec(
                "tiny-parent",
                engine="transformers",
                model_ref=str(model),
                sampling={"max_tokens": 16, "temperature": 0.7},
            ),
        )
        snap = write_snapshot(s, rows, {"source": "gpu_smoke"})
    t0 = time.monotonic()
    job = launch_dpo(
        db,
        "tiny-parent",
        snapshot=snap.hash,
        base_model=str(model),
        max_steps=args.steps,
        per_device_train_batch_size=8,
        launcher=args.launcher,
        kl_prompts=0,
    )
    view = wait(db, job, timeout=900)
    wall = time.monotonic() - t0
    print(f"job {job}: {view.status} in {wall:.1f} s wall; error: {(view.error or '')[:300]}")
    for name in (
        "loss",
        "rewards/accuracies",
        "rewards/margins",
        "train_runtime",
        "peak_memory_gib",
        "publish_seconds",
    ):
        if view.last(name) is not None:
            print(f"  {name}: {view.last(name):.4f}")
    runtime = view.last("train_runtime")
    if runtime:
        print(f"  seconds per step: {runtime / args.steps:.3f}")
    print("  log tail:", view.log_tail[-600:].replace("\n", " | "))
    if view.contestant_id:
        with db.session() as s:
            info = get_contestant(s, view.contestant_id)
        out = "".join(
            engine_for(info).stream_chat(
                [{"role": "user", "content": "What is 2 plus 2?"}], Sampling(max_tokens=8)
            )
        )
        print(f"  published {info.public_name}; it answers: {out!r}")


if __name__ == "__main__":
    main()
