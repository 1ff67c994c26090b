"""Studio DPO job vs a raw TRL script: same data, same config, same machine, same run; prints the ratio.

    python benchmarks/dpo_overhead.py                 # SmolLM2-135M (HF conversion of the shipped GGUF), LoRA
    python benchmarks/dpo_overhead.py --model tiny    # a tiny random Llama: measures pure overhead (seconds)

Both sides are timed as a user sees them, from "start" to "the trained adapter is on disk": the raw side is a
fresh ``python`` process running the ~30-line TRL script below; the studio side is ``launch_dpo`` -> the job's
status turning ``succeeded`` (job process start, database writes of every metric, checkpoint row, contestant
registration). The studio job runs with ``kl_prompts: 0, drift_prompts: 0`` (the raw script measures neither); the cost of
the extras is reported separately by the job's own metrics. Runs alternate raw / studio to share any noise.

It also reports "job end -> playable": ``publish_seconds`` (training over -> contestant registered, measured in
the job process) plus loading the new contestant in a fresh transformers engine and streaming its first token.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CONFIG = {"max_steps": 8, "per_device_train_batch_size": 4, "max_length": 256, "seed": 42, "beta": 0.1}


def raw_trl(model_dir: str, snapshot: str, out: str, steps: int) -> None:
    """The baseline: plain TRL + PEFT, the way its docs write it (run in its own process)."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import DPOConfig, DPOTrainer

    from vibestudio.common.files import read_json_lines

    rows = [rec.value for rec in read_json_lines(snapshot)[0]]
    data = Dataset.from_list([{k: r[k] for k in ("prompt", "chosen", "rejected")} for r in rows])
    tok = AutoTokenizer.from_pretrained(model_dir)
    cuda = torch.cuda.is_available()
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16 if cuda else torch.float32)
    args = DPOConfig(
        output_dir=out,
        max_steps=steps,
        per_device_train_batch_size=CONFIG["per_device_train_batch_size"],
        learning_rate=5e-5,
        max_length=CONFIG["max_length"],
        beta=CONFIG["beta"],
        seed=CONFIG["seed"],
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=not cuda,
        bf16=cuda,
        gradient_checkpointing=False,
    )
    lora = LoraConfig(
        r=16, lora_alpha=32, lora_dropout=0.05, target_modules="all-linear", task_type="CAUSAL_LM"
    )
    trainer = DPOTrainer(model=model, args=args, train_dataset=data, processing_class=tok, peft_config=lora)
    trainer.train()
    trainer.save_model(out)
    (Path(out) / "done_at").write_text(
        repr(time.time())
    )  # the result is on disk; interpreter teardown is not timed
    sys.stdout.flush()
    os._exit(0)  # as the studio's job process does


def synthetic_pairs(n: int) -> list[dict]:
    """Preference pairs on MT-Bench prompts: a friendly multi-sentence answer preferred over a curt one."""
    from vibestudio.common.files import read_json_lines

    questions = [
        rec.value["turns"][0] for rec in read_json_lines(ROOT / "arena/data/mt_bench_questions.jsonl")[0]
    ]
    rows = []
    for i in range(n):
        q = questions[i % len(questions)]
        good = (
            f"Here is a careful answer. {q[:120]} The key points are the context, the main idea and an "
            "example; I hope this helps you get started."
        )
        rows.append(
            {
                "prompt": [{"role": "user", "content": q}],
                "chosen": [{"role": "assistant", "content": good}],
                "rejected": [{"role": "assistant", "content": "Not sure."}],
                "provenance": {"source": "benchmark", "i": i},
            }
        )
    return rows


def tiny_model(folder: Path) -> Path:
    from tests.helpers.models import ensure_tokenizer_dir, make_tiny_llama

    return make_tiny_llama(ensure_tokenizer_dir(folder / "tok"), folder / "tiny-llama")


def child_cpu() -> float:
    """CPU seconds (user + system) of all finished, reaped child processes so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def time_raw(model_dir: str, snapshot: str, out: Path, steps: int) -> tuple[float, float]:
    c0, t0 = child_cpu(), time.time()
    cmd = [sys.executable, __file__, "--raw", model_dir, snapshot, str(out), "--steps", str(steps)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return float((out / "done_at").read_text()) - t0, child_cpu() - c0


def time_studio(db, parent: str, snap: str, steps: int) -> tuple[float, float, dict]:  # type: ignore[no-untyped-def]
    from vibestudio.training.jobs.runner import pid_alive, wait
    from vibestudio.training.jobs.service import launch_dpo

    c0, t0 = child_cpu(), time.perf_counter()
    job = launch_dpo(
        db,
        parent,
        snap,
        max_steps=steps,
        kl_prompts=0,
        drift_prompts=0,
        seed=CONFIG["seed"],
        beta=CONFIG["beta"],
        per_device_train_batch_size=CONFIG["per_device_train_batch_size"],
        max_length=CONFIG["max_length"],
    )
    view = wait(db, job, timeout=3600, poll=0.1)
    wall = time.perf_counter() - t0
    if view.status != "succeeded":
        raise SystemExit(f"studio job failed: {view.error}")
    deadline = time.monotonic() + 30
    while pid_alive(view.pid) and time.monotonic() < deadline:  # let the job process exit and be reaped
        time.sleep(0.05)
    return (
        wall,
        child_cpu() - c0,
        {
            "job": job,
            "contestant": view.contestant_id,
            **{k: view.last(k) for k in ("train_seconds", "publish_seconds", "peak_memory_gib")},
            "s_per_step": statistics.median(v for s, v in view.metrics["step_seconds"] if s > 2)
            if steps > 3
            else None,
        },
    )


def playable_seconds(db, contestant_id: int) -> float:  # type: ignore[no-untyped-def]
    """Fresh engine for the new contestant until its first streamed token."""
    from vibestudio.arena.engines.base import Sampling
    from vibestudio.arena.registry import engine_for, get_contestant

    with db.session() as s:
        info = get_contestant(s, contestant_id)
    t0 = time.perf_counter()
    stream = engine_for(info).stream_chat(
        [{"role": "user", "content": "Say hello."}], Sampling(max_tokens=4, seed=0)
    )
    deltas = iter(stream)
    next(deltas)
    first = time.perf_counter() - t0
    for _ in deltas:  # finish generating, so no generation thread outlives the interpreter
        pass
    return first


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=["smollm2", "tiny"], default="smollm2")
    ap.add_argument("--steps", type=int, default=CONFIG["max_steps"])
    ap.add_argument("--pairs", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--raw", nargs=3, metavar=("MODEL", "SNAPSHOT", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.raw:
        raw_trl(*args.raw, steps=args.steps)
        return

    work = Path(tempfile.mkdtemp(prefix="vibestudio-bench-"))
    os.environ.setdefault("VIBESTUDIO_HOME", str(work / "home"))
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from vibestudio.annotation.snapshots import write_snapshot
    from vibestudio.arena.registry import (
        BUILTIN_HF,
        ContestantSpec,
        ensure_defaults,
        register,
        resolve_model_ref,
    )
    from vibestudio.db.session import Database

    db = Database(f"sqlite:///{work / 'bench.sqlite'}")
    db.migrate()
    with db.session() as s:
        snap = write_snapshot(s, synthetic_pairs(args.pairs), {"source": "benchmark"})
        if args.model == "tiny":
            model_dir = str(tiny_model(work))
            register(s, ContestantSpec("bench-parent", engine="transformers", model_ref=model_dir))
            parent = "bench-parent"
        else:
            ensure_defaults(s)
            parent = "smollm2-plain"
    if args.model == "smollm2":
        model_dir = resolve_model_ref(BUILTIN_HF)  # convert once, outside both timings
    print(
        f"model {args.model} ({model_dir}), {args.pairs} pairs, {args.steps} LoRA DPO steps, batch "
        f"{CONFIG['per_device_train_batch_size']}, max_length {CONFIG['max_length']}; {os.cpu_count()} CPUs"
    )

    raws, studios, raw_cpu, studio_cpu, details = [], [], [], [], []
    for i in range(args.repeats):
        wall, cpu = time_raw(model_dir, snap.path, work / f"raw{i}", args.steps)
        raws.append(wall)
        raw_cpu.append(cpu)
        wall, cpu, info = time_studio(db, parent, snap.hash, args.steps)
        studios.append(wall)
        studio_cpu.append(cpu)
        details.append(info)
        print(
            f"  run {i + 1}: raw {raws[-1]:.1f} s ({raw_cpu[-1]:.1f} s CPU), studio {wall:.1f} s "
            f"({cpu:.1f} s CPU): {wall / raws[-1]:.3f}x wall, {cpu / raw_cpu[-1]:.3f}x CPU; {info}"
        )
    play = playable_seconds(db, details[-1]["contestant"])
    ratio = statistics.median(studios) / statistics.median(raws)
    cpu_ratio = statistics.median(studio_cpu) / statistics.median(raw_cpu)
    publish = details[-1]["publish_seconds"] or 0.0
    result = {
        "model": args.model,
        "steps": args.steps,
        "raw_seconds": raws,
        "studio_seconds": studios,
        "raw_cpu_seconds": raw_cpu,
        "studio_cpu_seconds": studio_cpu,
        "ratio": ratio,
        "cpu_ratio": cpu_ratio,
        "publish_seconds": publish,
        "engine_first_token_seconds": play,
        "job_end_to_playable_seconds": publish + play,
        "studio_s_per_step": details[-1]["s_per_step"],
        "peak_memory_gib": details[-1]["peak_memory_gib"],
    }
    print(
        f"studio / raw wall time: {ratio:.3f}x (goal <= 1.05x); CPU time: {cpu_ratio:.3f}x "
        "(CPU time is the steadier figure on a shared machine)"
    )
    print(
        f"job end -> playable: {publish + play:.2f} s (publish {publish:.2f} s + engine load and first token "
        f"{play:.2f} s; goal <= 10 s)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
