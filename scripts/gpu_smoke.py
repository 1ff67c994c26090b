"""Accelerator smoke run: DPO (LoRA and full, bf16 on a GPU), a reward model and GRPO on a tiny random model,
each through the studio's real job runner.

Usage: python scripts/gpu_smoke.py --tokenizer DIR [--steps 30] [--jobs dpo-lora,dpo-full,reward,grpo]
       [--launcher python|accelerate] [--allow-cpu]
Builds a tiny Llama with the given tokenizer, freezes a small synthetic preference snapshot, launches each job
out of process, waits, and prints per job: status, seconds per step (median of the steps after the first),
peak memory (GPU: max allocated; CPU: peak RSS) and, for the jobs that publish, whether the new contestant
answers. Without a GPU it refuses unless --allow-cpu (then it is a CPU check of the same path, with few steps).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import torch

from vibestudio.annotation.snapshots import write_snapshot
from vibestudio.arena.engines.base import Sampling
from vibestudio.arena.registry import ContestantSpec, engine_for, get_contestant, register
from vibestudio.db.session import Database
from vibestudio.training.jobs.runner import wait
from vibestudio.training.jobs.service import launch

JOBS = {
    "dpo-lora": ("dpo", {"lora": True, "kl_prompts": 0}),
    "dpo-full": ("dpo", {"lora": False, "kl_prompts": 0}),
    "reward": ("reward", {}),
    "grpo": (
        "grpo",
        {
            "rewards": [
                {"type": "length", "max": 8},
                {"type": "format", "format": "no_emoji", "weight": 0.5},
            ],
            "num_generations": 4,
            "max_completion_length": 16,
        },
    ),
}


def _median(values: list[float]) -> float | None:
    values = sorted(values)
    return values[len(values) // 2] if values else None


def run_one(db: Database, label: str, snap: str, model: Path, steps: int, launcher: str) -> dict:
    kind, extra = JOBS[label]
    t0 = time.monotonic()
    job = launch(
        db,
        kind,
        "tiny-parent",
        snap,
        base_model=str(model),
        max_steps=steps,
        per_device_train_batch_size=8,
        launcher=launcher,
        drift_prompts=0,
        output_name=f"smoke-{label}",
        **({"publish": False} if kind == "reward" else {}),
        **extra,
    )
    view = wait(db, job, timeout=900)
    step_s = _median([v for s, v in view.metrics.get("step_seconds", []) if s > 1])
    row = {
        "job": label,
        "status": view.status,
        "wall_s": round(time.monotonic() - t0, 1),
        "s_per_step": round(step_s, 4) if step_s else None,
        "peak_memory_gib": round(view.last("peak_memory_gib") or 0, 2),
        "error": (view.error or "")[:300],
    }
    if view.contestant_id:
        with db.session() as s:
            info = get_contestant(s, view.contestant_id)
        out = "".join(
            engine_for(info).stream_chat(
                [{"role": "user", "content": "What is 2 plus 2?"}], Sampling(max_tokens=8)
            )
        )
        row["answers"] = out
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--launcher", default="python")
    ap.add_argument("--jobs", default=",".join(JOBS), help="comma-separated: " + ", ".join(JOBS))
    ap.add_argument(
        "--allow-cpu", action="store_true", help="run without a GPU (a CPU check of the same path)"
    )
    args = ap.parse_args()
    unknown = set(args.jobs.split(",")) - set(JOBS)
    if unknown:
        raise SystemExit(f"unknown job(s): {', '.join(sorted(unknown))}; choose from {', '.join(JOBS)}")
    if not torch.cuda.is_available() and not args.allow_cpu:
        raise SystemExit("no GPU visible: run on a machine with one, or pass --allow-cpu for a CPU check")
    work = Path(tempfile.mkdtemp(prefix="vibestudio-gpu-"))
    os.environ["VIBESTUDIO_HOME"] = str(work / "home")
    print(
        f"torch {torch.__version__}; cuda available: {torch.cuda.is_available()}"
        + (f" ({torch.cuda.get_device_name(0)})" if torch.cuda.is_available() else "")
    )
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests' tiny-model factory
    from tests.helpers.models import make_tiny_llama

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
    results = [
        run_one(db, label, snap.hash, model, args.steps, args.launcher) for label in args.jobs.split(",")
    ]
    print(f"{'job':<10} {'status':<10} {'s/step':>8} {'peak GiB':>9} {'wall s':>7}  answers / error")
    for r in results:
        print(
            f"{r['job']:<10} {r['status']:<10} {r['s_per_step'] or float('nan'):>8.3f} {r['peak_memory_gib']:>9.2f} "
            f"{r['wall_s']:>7.1f}  {r.get('answers', '')!r} {r['error']}"
        )
    print(json.dumps(results))
    if any(r["status"] != "succeeded" for r in results):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
