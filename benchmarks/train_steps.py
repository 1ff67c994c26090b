"""Seconds per optimizer step for each job kind on the tiny model: studio job vs the same trainer as a raw TRL
script, same data, config, seed and machine, alternating; prints s/step per kind and the ratio.

    python benchmarks/train_steps.py                     # all kinds, 8 steps each
    python benchmarks/train_steps.py --kinds dpo-lora --save-steps 1    # what saving every step costs

Kinds: ``dpo-lora``, ``dpo-full``, ``reward`` (LoRA + score head), ``grpo`` (LoRA, 4 answers of at most 16 tokens
per prompt, a length reward). The studio side is ``training.jobs.service.launch`` -> the job's ``step_seconds`` metric
(written by the job's callback at the end of each step; it includes a checkpoint save when ``--save-steps`` is
set). The raw side is a fresh ``python`` process building the same TRL trainer the way TRL's docs write it, timed
at the end of each step by a callback. Steps 1-2 (warm-up) are left out of the medians. The load average is
printed with the figures: on a shared machine it moves them more than anything the studio does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

KINDS = {
    "dpo-lora": ("dpo", {"lora": True, "kl_prompts": 0}),
    "dpo-full": ("dpo", {"lora": False, "kl_prompts": 0}),
    "reward": ("reward", {"lora": True}),
    "grpo": ("grpo", {"lora": True, "num_generations": 4, "max_completion_length": 16}),
}
COMMON = {"per_device_train_batch_size": 4, "max_length": 256, "seed": 42, "drift_prompts": 0}


def raw_trl(kind: str, model_dir: str, snapshot: str, out: str, steps: int, save_steps: int) -> None:
    """The baseline: the TRL trainer for ``kind`` built directly (run in its own process); writes step times."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import (
        AutoModelForCausalLM,
        AutoModelForSequenceClassification,
        AutoTokenizer,
        TrainerCallback,
    )

    from vibestudio.common.files import read_json_lines

    trl_kind, extra = KINDS[kind]
    rows = [rec.value for rec in read_json_lines(snapshot)[0]]
    tok = AutoTokenizer.from_pretrained(model_dir)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    times: list[float] = []

    class StepTimes(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):  # type: ignore[no-untyped-def]
            times.append(time.perf_counter())

        def on_step_end(self, args, state, control, **kwargs):  # type: ignore[no-untyped-def]
            times.append(time.perf_counter())

    common = dict(
        output_dir=out,
        max_steps=steps,
        per_device_train_batch_size=COMMON["per_device_train_batch_size"],
        seed=COMMON["seed"],
        logging_steps=1,
        save_strategy="steps" if save_steps else "no",
        save_steps=save_steps or 500,
        save_total_limit=2,
        report_to=[],
        disable_tqdm=True,
        use_cpu=not torch.cuda.is_available(),
        bf16=False,
        gradient_checkpointing=False,
    )
    lora = LoraConfig(
        r=16, lora_alpha=32, lora_dropout=0.05, target_modules="all-linear", task_type="CAUSAL_LM"
    )
    pairs = Dataset.from_list([{k: r[k] for k in ("prompt", "chosen", "rejected")} for r in rows])
    if trl_kind == "dpo":
        from trl import DPOConfig, DPOTrainer

        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
        trainer = DPOTrainer(
            model=model,
            args=DPOConfig(**common, max_length=COMMON["max_length"], beta=0.1),
            train_dataset=pairs,
            processing_class=tok,
            peft_config=lora if extra["lora"] else None,
            callbacks=[StepTimes()],
        )
    elif trl_kind == "reward":
        from trl import RewardConfig, RewardTrainer

        model = AutoModelForSequenceClassification.from_pretrained(
            model_dir, num_labels=1, dtype=torch.float32
        )
        model.config.pad_token_id = tok.pad_token_id
        lora.task_type = "SEQ_CLS"
        trainer = RewardTrainer(
            model=model,
            args=RewardConfig(**common, max_length=COMMON["max_length"]),
            train_dataset=pairs,
            processing_class=tok,
            peft_config=lora,
            callbacks=[StepTimes()],
        )
    else:
        from trl import GRPOConfig, GRPOTrainer

        def length(completions, **_kw):  # type: ignore[no-untyped-def]
            return [-abs(len(c[-1]["content"].split()) - 30) / 30 for c in completions]

        prompts = Dataset.from_list([{"prompt": r["prompt"]} for r in rows])
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=[length],
            args=GRPOConfig(
                **common,
                num_generations=extra["num_generations"],
                max_completion_length=extra["max_completion_length"],
                beta=0.04,
            ),
            train_dataset=prompts,
            processing_class=tok,
            peft_config=lora,
            callbacks=[StepTimes()],
        )
    trainer.train()
    (Path(out) / "steps.json").write_text(json.dumps(times))
    sys.stdout.flush()
    os._exit(0)  # as the studio's job process does: interpreter teardown is not timed


def steady(seconds: list[float]) -> float:
    """Median s/step leaving out the first two steps (model warm-up, first allocations)."""
    return statistics.median(seconds[2:] if len(seconds) > 3 else seconds)


def time_raw(kind: str, model_dir: str, snapshot: str, out: Path, steps: int, save_steps: int) -> float:
    cmd = [sys.executable, __file__, "--raw", kind, model_dir, snapshot, str(out)]
    cmd += ["--steps", str(steps), "--save-steps", str(save_steps)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    marks = json.loads((out / "steps.json").read_text())  # train start, then the end of each step
    return steady([b - a for a, b in zip(marks, marks[1:], strict=False)])


def time_studio(db, parent: str, snap: str, kind: str, steps: int, save_steps: int) -> float:  # type: ignore[no-untyped-def]
    from vibestudio.training.jobs.runner import wait
    from vibestudio.training.jobs.service import launch

    trl_kind, extra = KINDS[kind]
    job = launch(db, trl_kind, parent, snap, max_steps=steps, save_steps=save_steps, **COMMON, **extra)
    view = wait(db, job, timeout=3600, poll=0.2)
    if view.status != "succeeded":
        raise SystemExit(f"studio {kind} job failed: {view.error}")
    return steady([v for _, v in view.metrics["step_seconds"]])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated: " + ", ".join(KINDS))
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--save-steps", type=int, default=0, help="save a checkpoint every N steps (0 = none)")
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--raw", nargs=4, metavar=("KIND", "MODEL", "SNAPSHOT", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.raw:
        raw_trl(*args.raw, steps=args.steps, save_steps=args.save_steps)
        return
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise SystemExit(f"--kinds: unknown {', '.join(unknown)} (known: {', '.join(KINDS)})")

    work = Path(tempfile.mkdtemp(prefix="vibestudio-bench-"))
    os.environ.setdefault("VIBESTUDIO_HOME", str(work / "home"))
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from tests.helpers.models import ensure_tokenizer_dir, make_tiny_llama
    from tests.helpers.training import pair_rows
    from vibestudio.annotation.snapshots import write_snapshot
    from vibestudio.arena.registry import ContestantSpec, register
    from vibestudio.db.session import Database

    db = Database(f"sqlite:///{work / 'bench.sqlite'}")
    db.migrate()
    model_dir = str(make_tiny_llama(ensure_tokenizer_dir(work / "tok"), work / "tiny-llama"))
    with db.session() as s:
        snap = write_snapshot(s, pair_rows(args.pairs), {"source": "benchmark"})
        register(s, ContestantSpec("bench-parent", engine="transformers", model_ref=model_dir))
    print(
        f"tiny model (hidden 64, 2 layers), {args.pairs} pairs, {args.steps} steps, batch 4, save every "
        f"{args.save_steps or '-'} steps; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start"
    )
    results = {}
    for kind in kinds:
        raw = time_raw(kind, model_dir, snap.path, work / f"raw-{kind}", args.steps, args.save_steps)
        studio = time_studio(db, "bench-parent", snap.hash, kind, args.steps, args.save_steps)
        load = os.getloadavg()[0]
        results[kind] = {"raw_s_per_step": raw, "studio_s_per_step": studio, "load_average": load}
        print(
            f"  {kind:9s} studio {studio:.3f} s/step, raw TRL {raw:.3f} s/step: {studio / raw:.2f}x "
            f"(load average {load:.1f})"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
