"""What a running job knows, and the model loading every trainer shares.

A job knows its config, checked inputs, folders and metric writer. The shared loading covers the base
checkpoint (+ the parent's adapter), tokenizer, LoRA config and device arguments.

Trainer modules (``training.objectives.dpo`` ...) take a JobContext and return a TrainResult. They never
touch job status or the arena registry; the job process and ``training.publishing.publish`` do.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vibestudio.db.session import data_home
from vibestudio.training.jobs.config import JobConfig
from vibestudio.training.jobs.metrics import MetricWriter, make_callback
from vibestudio.training.jobs.preflight import Checked
from vibestudio.training.jobs.trackers import trainer_args
from vibestudio.training.publishing.artifacts import write_manifest


@dataclass
class JobContext:
    job_id: int | None
    cfg: JobConfig
    checked: Checked
    job_dir: Path
    metrics: MetricWriter
    resume: bool = False

    @property
    def output_dir(self) -> Path:
        return self.job_dir / "output"

    @property
    def checkpoints_dir(self) -> Path:
        return self.job_dir / "checkpoints"

    def base_path(self) -> str:
        from vibestudio.arena.registry import resolve_model_ref

        return resolve_model_ref(self.checked.base.model_ref)

    def last_checkpoint(self) -> str | None:
        """The newest complete ``checkpoint-<step>`` folder from an earlier attempt (for resume)."""
        found = sorted(
            (p for p in self.checkpoints_dir.glob("checkpoint-*") if (p / "trainer_state.json").exists()),
            key=lambda p: int(p.name.split("-")[-1]),
        )
        return str(found[-1]) if found else None


@dataclass
class TrainResult:
    output_dir: Path
    adapter: bool  # True: a PEFT adapter over the base; False: a full checkpoint
    step: int
    train_seconds: float
    ended_at: float  # time.perf_counter() when training (not saving) ended
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class LoadedModel:
    model: Any
    tokenizer: Any
    peft_config: Any | None  # a fresh LoraConfig for the trainer to apply, or None
    # an explicit reference model: only when the parent's adapter was merged for a full fine-tune
    ref_model: Any | None


def on_cpu(cfg: JobConfig) -> bool:
    import torch

    return bool(cfg.use_cpu) if cfg.use_cpu is not None else not torch.cuda.is_available()


def device_args(cfg: JobConfig) -> dict[str, Any]:
    """TrainingArguments that depend on the device (CPU: use_cpu, no bf16, no checkpointing; GPU: bf16 when
    supported, gradient checkpointing when the config asks)."""
    import torch

    cpu = on_cpu(cfg)
    bf16 = (not cpu) and torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    checkpointing = bool(cfg.gradient_checkpointing) and not cpu
    return {"use_cpu": cpu, "bf16": bf16, "fp16": False, "gradient_checkpointing": checkpointing}


def common_args(ctx: JobContext) -> dict[str, Any]:
    """TrainingArguments every job kind shares, taken from the config."""
    cfg = ctx.cfg
    return {
        "output_dir": str(ctx.checkpoints_dir),
        "max_steps": cfg.max_steps,
        "per_device_train_batch_size": cfg.per_device_train_batch_size,
        "gradient_accumulation_steps": cfg.gradient_accumulation_steps,
        "learning_rate": cfg.effective_learning_rate(),
        "lr_scheduler_type": cfg.lr_scheduler_type,
        "warmup_steps": cfg.warmup_ratio,  # a float below 1 is a ratio of max_steps
        "logging_steps": cfg.logging_steps,
        "save_strategy": "steps" if cfg.save_steps else "no",
        "save_steps": cfg.save_steps or 500,
        "save_total_limit": 2,
        "seed": cfg.seed,
        **trainer_args(cfg.report_to, ctx.job_id, data_home()),
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
        **device_args(cfg),
    }


def load_model(
    ctx: JobContext, lora_task: str = "CAUSAL_LM", model_cls: Any = None, **model_kwargs: Any
) -> LoadedModel:
    """Load the base (and the parent's adapter); decide what the trainer adapts and what the reference is."""
    import torch
    from peft import LoraConfig, PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cfg = ctx.cfg
    path = ctx.base_path()
    tok = AutoTokenizer.from_pretrained(path)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    cls = model_cls or AutoModelForCausalLM
    # GPU: a frozen LoRA base in bf16 (adapters stay fp32); a full fine-tune keeps fp32 master weights and
    # trains under bf16 autocast (pure-bf16 AdamW loses small updates). CPU: fp32.
    dtype = torch.bfloat16 if cfg.lora and not on_cpu(cfg) else torch.float32
    if cfg.qlora:  # QLoRA: the frozen base in 4-bit NF4 with double quantization (Dettmers et al. 2023)
        from transformers import BitsAndBytesConfig

        model_kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch.bfloat16,
        )
    model = cls.from_pretrained(path, dtype=dtype, **model_kwargs)
    if getattr(model.config, "pad_token_id", None) is None:
        model.config.pad_token_id = tok.pad_token_id
    adapter = ctx.checked.base.adapter_ref
    peft_config, ref_model = None, None
    if adapter and cfg.lora:
        # Keep training the parent's adapter; TRL copies it as the frozen reference ("ref" adapter).
        model = PeftModel.from_pretrained(model, adapter, is_trainable=True)
    elif adapter:
        model = PeftModel.from_pretrained(model, adapter).merge_and_unload()
        ref_model = copy.deepcopy(model).eval()
    elif cfg.lora:
        targets: Any = cfg.lora_target_modules
        if targets != "all-linear":
            targets = [t.strip() for t in targets.split(",") if t.strip()]
        peft_config = LoraConfig(
            r=cfg.lora_r,
            lora_alpha=cfg.lora_alpha,
            lora_dropout=cfg.lora_dropout,
            target_modules=targets,
            task_type=lora_task,
        )
    return LoadedModel(model, tok, peft_config, ref_model)


def run_trainer(ctx: JobContext, trainer, final_eval: Any = None) -> TrainResult:  # type: ignore[no-untyped-def]
    """Train (resuming when an earlier attempt left a checkpoint), run the final evaluation, save; timed."""
    import time

    quiet(trainer)
    acc, args = trainer.accelerator, trainer.args
    per_device = args.per_device_train_batch_size * args.gradient_accumulation_steps
    print(
        f"[rank {acc.process_index} of {acc.num_processes}] per-device batch {per_device}, "
        f"global batch {per_device * acc.num_processes}",
        flush=True,
    )
    t0 = time.perf_counter()
    trainer.train(resume_from_checkpoint=ctx.last_checkpoint() if ctx.resume else None)
    trained = time.perf_counter()
    step = trainer.state.global_step
    print(
        f"[rank {acc.process_index} of {acc.num_processes}] trained {step} steps",
        flush=True,
    )
    if final_eval is not None and trainer.accelerator.is_main_process:
        final_eval(step)
    ended = time.perf_counter()  # training and its final evaluation are over; saving + publishing start here
    ctx.metrics.log(
        step,
        {
            "train_seconds": trained - t0,
            "final_eval_seconds": ended - trained,
            "peak_memory_gib": peak_memory_gib(),
        },
    )
    return save_result(trainer, ctx, step, trained - t0, ended)


def peak_memory_gib() -> float:
    """Peak accelerator memory when training ran on one, else the process's peak resident memory."""
    import torch

    if torch.cuda.is_available() and torch.cuda.max_memory_allocated() > 0:
        return torch.cuda.max_memory_allocated() / 1024**3
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # KiB on Linux
    except ImportError:
        return 0.0


def quiet(trainer) -> None:  # type: ignore[no-untyped-def]
    """Drop transformers' raw log-dict printer: our callback prints one compact line per log instead."""
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)


def save_result(trainer, ctx: JobContext, step: int, seconds: float, ended: float) -> TrainResult:  # type: ignore[no-untyped-def]
    """Save the adapter (only the trained one, not TRL's frozen "ref" copy) or the full model, + tokenizer."""
    from peft import PeftModel

    out = ctx.output_dir
    model = trainer.accelerator.unwrap_model(trainer.model)
    adapter = isinstance(model, PeftModel)
    trainer.accelerator.wait_for_everyone()
    if not trainer.accelerator.is_main_process:
        return TrainResult(out, adapter, step, seconds, ended)
    out.mkdir(parents=True, exist_ok=True)
    if adapter:
        model.save_pretrained(out, selected_adapters=["default"])
    else:
        model.save_pretrained(out)
    trainer.processing_class.save_pretrained(out)
    write_manifest(
        out,
        kind=ctx.cfg.kind,
        job_id=ctx.job_id,
        step=step,
        adapter=adapter,
        base_model_ref=ctx.checked.base.model_ref,
        base_path=ctx.base_path(),
        parent_adapter=ctx.checked.base.adapter_ref,
        snapshot_hash=ctx.checked.snapshot_hash,
    )
    return TrainResult(out, adapter, step, seconds, ended)


def fit(
    ctx: JobContext,
    trainer_cls: Any,
    args: Any,
    rows: list[dict[str, Any]],
    loaded: Any,
    end: Any = None,
    **extra: Any,
) -> TrainResult:
    """One TRL trainer of ``trainer_cls`` over ``rows`` with the loaded model, its tokenizer, LoRA and the metrics
    callback, run to the end (``run_trainer``): what DPO-family objectives and the reward model share.
    ``end(trainer, step)``, when given, is the final evaluation: it runs once training ends."""
    from datasets import Dataset

    trainer = trainer_cls(
        model=loaded.model,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=loaded.tokenizer,
        peft_config=loaded.peft_config,
        callbacks=[make_callback(ctx.metrics)],
        **extra,
    )
    return run_trainer(ctx, trainer, None if end is None else lambda step: end(trainer, step))
