"""GPU readiness: DPO (LoRA and full), KTO, a reward model and GRPO through the studio's real job runner, on a
random model at a real shape, offline, with raw TRL timed in the same run.

Usage: python scripts/gpu_smoke.py [--shape 1.7b|tiny] [--tokenizer DIR] [--steps 30] [--jobs dpo-lora,...]
       [--launcher python|accelerate] [--no-raw] [--allow-cpu]
- The model is random (no weights are downloaded): SmolLM2-1.7B's shape (``--shape 1.7b``, the default), or a
  tiny Llama for a CPU check of the same path. The tokenizer is SmolLM2's, read from the embedded GGUF.
- Each job runs out of process, as the Train tab launches it, in bf16 on a GPU.
- Per job it prints: status, seconds per step (median after the first), peak memory (GPU: max allocated) and,
  for the jobs that publish, whether the new contestant answers.
- Raw TRL: the same DPO LoRA job as a plain TRL script in its own process, s/step and peak memory, and the ratio.
- It needs no network (HF_HUB_OFFLINE=1); carry the packages as wheels (docs/training.md, GPU readiness).
Without a GPU it refuses unless --allow-cpu.
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
    "kto": ("kto", {}),
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
        per_device_train_batch_size=BATCH,
        max_length=LENGTH,
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


#: SmolLM2-1.7B's config.json shape (the weights are random: nothing is downloaded).
SHAPE_17B = {
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 24,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "max_position_embeddings": 8192,
    "rope_theta": 130000,
    "tie_word_embeddings": True,
}
LENGTH = 512  # max_length of every job (prompt + answer)
BATCH = 8


def real_shape(tokenizer: str, out: Path) -> Path:
    """A random Llama at SmolLM2-1.7B's shape with the given tokenizer, saved in bf16 like a checkpoint."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(tokenizer)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        **SHAPE_17B,
    )
    torch.manual_seed(0)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def raw_dpo_lora(model_dir: str, snapshot: str, steps: int) -> None:
    """The baseline in its own process: plain TRL + PEFT DPO LoRA, as their docs write it; prints one JSON line
    with the median s/step after the first and the peak GPU memory."""
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import DPOConfig, DPOTrainer

    from vibestudio.common.files import read_json_lines

    rows = [rec.value for rec in read_json_lines(snapshot)[0]]
    data = Dataset.from_list([{k: r[k] for k in ("prompt", "chosen", "rejected")} for r in rows])
    tok = AutoTokenizer.from_pretrained(model_dir)
    cuda = torch.cuda.is_available()
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16 if cuda else torch.float32)
    times: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, *a, **k):  # type: ignore[no-untyped-def]
            self.t = time.perf_counter()

        def on_step_end(self, *a, **k):  # type: ignore[no-untyped-def]
            times.append(time.perf_counter() - self.t)

    args = DPOConfig(
        output_dir=tempfile.mkdtemp(prefix="raw-dpo-"),
        max_steps=steps,
        per_device_train_batch_size=BATCH,
        max_length=LENGTH,
        learning_rate=5e-5,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=not cuda,
        bf16=cuda,
    )
    lora = LoraConfig(
        r=16, lora_alpha=32, lora_dropout=0.05, target_modules="all-linear", task_type="CAUSAL_LM"
    )
    DPOTrainer(
        model=model,
        args=args,
        train_dataset=data,
        processing_class=tok,
        peft_config=lora,
        callbacks=[Clock()],
    ).train()
    peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else 0.0
    print(json.dumps({"s_per_step": _median(times[1:]), "peak_memory_gib": round(peak, 2)}))


def time_raw(model: Path, snapshot: str, steps: int) -> dict:
    import subprocess

    cmd = [sys.executable, __file__, "--raw", str(model), snapshot, "--steps", str(steps)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        return {"error": done.stderr[-300:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--raw":
        raw_dpo_lora(sys.argv[2], sys.argv[3], int(sys.argv[5]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", default="", help="a tokenizer folder (default: SmolLM2's from the GGUF)")
    ap.add_argument("--shape", default="1.7b", choices=("1.7b", "tiny"))
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--launcher", default="python")
    ap.add_argument("--jobs", default=",".join(JOBS), help="comma-separated: " + ", ".join(JOBS))
    ap.add_argument("--no-raw", action="store_true", help="skip the raw TRL baseline")
    ap.add_argument(
        "--allow-cpu", action="store_true", help="run without a GPU (a CPU check of the same path)"
    )
    args = ap.parse_args()
    unknown = set(args.jobs.split(",")) - set(JOBS)
    if unknown:
        raise SystemExit(f"unknown job(s): {', '.join(sorted(unknown))}; choose from {', '.join(JOBS)}")
    if not torch.cuda.is_available() and not args.allow_cpu:
        raise SystemExit("no GPU visible: run on a machine with one, or pass --allow-cpu for a CPU check")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    work = Path(tempfile.mkdtemp(prefix="vibestudio-gpu-"))
    os.environ["VIBESTUDIO_HOME"] = str(work / "home")
    started = time.monotonic()
    print(
        f"torch {torch.__version__}; cuda available: {torch.cuda.is_available()}"
        + (f" ({torch.cuda.get_device_name(0)})" if torch.cuda.is_available() else "")
    )
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests' model helpers
    from tests.helpers.models import ensure_tokenizer_dir, make_tiny_llama

    tokenizer = args.tokenizer or str(ensure_tokenizer_dir(work / "tokenizer"))
    if args.shape == "tiny":
        model = make_tiny_llama(tokenizer, work / "tiny", hidden=256, layers=4)
    else:
        model = real_shape(tokenizer, work / "smollm2-1.7b-shape")
    print(f"model: random, {args.shape} shape, at {model}")
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
    raw = None if args.no_raw else time_raw(model, snap.path, args.steps)
    print(f"{'job':<10} {'status':<10} {'s/step':>8} {'peak GiB':>9} {'wall s':>7}  answers / error")
    for r in results:
        print(
            f"{r['job']:<10} {r['status']:<10} {r['s_per_step'] or float('nan'):>8.3f} {r['peak_memory_gib']:>9.2f} "
            f"{r['wall_s']:>7.1f}  {r.get('answers', '')!r} {r['error']}"
        )
    studio = next((r for r in results if r["job"] == "dpo-lora"), None)
    if raw is not None:
        line = f"raw TRL dpo-lora: {raw}"
        if studio and studio["s_per_step"] and raw.get("s_per_step"):
            line += f"; studio / raw s/step: x{studio['s_per_step'] / raw['s_per_step']:.2f}"
        print(line)
    print(f"whole run: {time.monotonic() - started:.0f} s")
    print(json.dumps({"jobs": results, "raw_trl_dpo_lora": raw}))
    if any(r["status"] != "succeeded" for r in results):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
