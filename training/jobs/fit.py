"""Will a training job fit on its GPUs? Memory per GPU from the model's size and the job's setup.

It reads the model size from ``config.json`` (``estimate.Shape``); no weights are loaded.
Figures are in GB (10^9 bytes), as GPUs and papers state them.

The accounting, per parameter (Φ) and per GPU (N GPUs):
- full fine-tune, mixed precision with AdamW: 2 (16-bit weights) + 2 (gradients) + 12 (fp32 master copy, momentum,
  variance) = 16 bytes. That is the ZeRO paper's "16Ψ" (Rajbhandari et al. 2020, K = 12).
  fp32 training also takes 16: 4 + 4 + 8.
- LoRA: the frozen base at 2 bytes (bf16) or 4 (fp32); each adapter parameter at 16.
  Adapters: r·(d_in + d_out) per adapted matrix; "all-linear" adapts the 7 matrices of each layer.
- QLoRA (Dettmers et al. 2023): the base's linear layers in 4-bit NF4 with double quantization.
  That is 4.127 bits a parameter; embeddings and the head stay bf16.
- ZeRO stage 1 shards the optimizer state over N; stage 2 also the gradients; stage 3 also the weights
  (a LoRA job's frozen base too).
  FSDP's full shard counts as stage 3.
- a full-fine-tune DPO or KTO keeps a frozen 16-bit reference copy (sharded only at stage 3).
  LoRA disables the adapters for the reference, so it costs nothing.
- activations per micro-batch of s tokens: 34·h·s bytes per layer.
  Korthikanti et al. 2022, 16-bit, with flash or SDPA attention, so no a·s² scores are kept.
  With gradient checkpointing: 2·h·s per layer (the layer inputs), plus one layer's 34·h·s.
- logits: s·V·4 bytes, times 4 copies TRL's log-softmax makes (none for a reward model).
- 1 GB for the CUDA context and allocator slack.
Activations are not sharded by ZeRO. A refusal names the figure, the GPUs, and the setups that would fit.

``PUBLISHED`` holds published figures for 1B-, 7-8B- and 70B-class bases with their sources.
``tests/training/test_fit.py`` holds the estimate to them; ``scripts/fit_table.py`` prints the table in the docs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from vibestudio.training.jobs.config import JobConfig, RewardJobConfig
from vibestudio.training.jobs.estimate import Shape, model_shape, reference_forward, tokens_per_step

GB = 1e9
OVERHEAD = 1.0 * GB  # CUDA context + allocator slack
NF4_BYTES = 4.127 / 8  # QLoRA: 4-bit NF4 + double-quantized constants (paper: 0.127 bits a parameter)
LOGIT_COPIES = 4
METHODS = ("full", "lora", "qlora")
GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class Gpus:
    """The GPUs a job will run on: how many, how much memory each, and where that came from."""

    count: int
    memory: float  # bytes per GPU
    source: str  # "torch.cuda (NVIDIA H100 80GB HBM3)" or "the config's gpu_memory_gb"

    def words(self) -> str:
        return f"{self.count}x{self.memory / GB:.0f} GB ({self.source})"


@dataclass(frozen=True)
class Setup:
    """What decides memory besides the model: method, precision, tokens, ZeRO stage, GPUs."""

    method: str = "lora"  # full, lora, qlora
    bf16: bool = True
    seqs: int = 1  # sequences in one micro-batch (DPO: chosen + rejected)
    seq_len: int = 512
    zero: int = 0
    gpus: int = 1
    lora_r: int = 16
    reference: bool = False  # a frozen reference copy (full-fine-tune DPO / KTO)
    logits: bool = True  # TRL's log-probs over the vocabulary (not a reward model)
    checkpointing: bool = False

    def words(self) -> str:
        what = {"full": "full fine-tuning", "lora": f"LoRA r{self.lora_r}", "qlora": f"QLoRA r{self.lora_r}"}
        precision = "bf16" if self.bf16 else "fp32"
        return f"{what[self.method]} in {precision} with ZeRO-{self.zero} on {self.gpus} GPU{'s' if self.gpus > 1 else ''}"


def embedding_params(shape: Shape) -> int:
    return shape.vocab * shape.hidden * (1 if shape.tied else 2)


def per_gpu(shape: Shape, setup: Setup) -> dict[str, float]:
    """Bytes per GPU, by part (see the module text for each formula)."""
    n, w = shape.params, 2 if setup.bf16 else 4
    shard = max(setup.gpus, 1)
    trainable = n if setup.method == "full" else shape.lora_params(setup.lora_r)
    if setup.method == "qlora":
        embed = embedding_params(shape)
        base = (n - embed) * NF4_BYTES + embed * 2
    elif setup.method == "lora":
        base = n * w
    else:
        base = n * 2 if setup.bf16 else n * 4  # the 16-bit working copy (fp32: the weights themselves)
    grads = float(trainable * (2 if setup.bf16 else 4))
    optim = float(trainable * (12 if setup.bf16 else 8))  # fp32 master + m + v; fp32: m + v
    base = base / shard if setup.zero >= 3 else base  # stage 3 shards frozen weights too
    grads = grads / shard if setup.zero >= 2 else grads
    optim = optim / shard if setup.zero >= 1 else optim
    reference = (
        n * 2 / (shard if setup.zero >= 3 else 1) if setup.reference and setup.method == "full" else 0.0
    )
    tokens = setup.seqs * setup.seq_len
    per_layer = 34 * shape.hidden * tokens
    if setup.checkpointing:
        activations = shape.layers * 2 * shape.hidden * tokens + per_layer
    else:
        activations = shape.layers * per_layer
    logits = tokens * shape.vocab * 4 * LOGIT_COPIES if setup.logits else 0
    return {
        "weights": float(base),
        "gradients": float(grads),
        "optimizer": float(optim),
        "reference": float(reference),
        "activations": float(activations),
        "logits": float(logits),
        "overhead": OVERHEAD,
    }


def model_states(shape: Shape, setup: Setup) -> float:
    """Weights, gradients and optimizer state per GPU: what the ZeRO paper counts."""
    parts = per_gpu(shape, setup)
    return parts["weights"] + parts["gradients"] + parts["optimizer"]


def needed(shape: Shape, setup: Setup) -> float:
    return sum(per_gpu(shape, setup).values())


@dataclass(frozen=True)
class Fit:
    """Whether ``setup`` fits ``gpus``: the figure, the reason in words, and setups that would fit."""

    setup: Setup
    gpus: Gpus
    needed: float
    params: int
    breakdown: dict[str, float]
    alternatives: tuple[str, ...] = ()

    @property
    def fits(self) -> bool:
        return self.needed <= self.gpus.memory

    def reason(self) -> str:
        parts = ", ".join(f"{k} {v / GB:.1f}" for k, v in self.breakdown.items() if v)
        head = (
            f"{self.setup.words()} of a {self.params / 1e9:.1f}B model needs ~{self.needed / GB:.0f} GB per GPU "
            f"({parts} GB); the GPUs: {self.gpus.words()}"
        )
        if self.fits:
            return head
        return head + (
            "; would fit: " + "; ".join(self.alternatives) if self.alternatives else "; nothing tried fits"
        )


def smallest_count(shape: Shape, setup: Setup, memory: float) -> int | None:
    """The fewest GPUs (of ``GPU_COUNTS``) on which ``setup`` fits GPUs of ``memory`` bytes."""
    for count in GPU_COUNTS:
        if needed(shape, replace(setup, gpus=count)) <= memory:
            return count
    return None


def alternatives(shape: Shape, setup: Setup, gpus: Gpus) -> tuple[str, ...]:
    """Setups near ``setup`` that fit GPUs like these: the lightest change of method (and gradient checkpointing)
    that fits these GPUs, and for a full fine-tune the fewest GPUs on which ZeRO-3 fits."""
    out: list[str] = []
    here = replace(setup, gpus=gpus.count)
    tries = [
        replace(here, method=m, reference=here.reference and m == "full", checkpointing=c)
        for m in METHODS[METHODS.index(setup.method) :]
        for c in dict.fromkeys((setup.checkpointing, True))
    ]
    for option in tries[1:]:
        if needed(shape, option) <= gpus.memory:
            extra = (
                ", gradient_checkpointing: true" if option.checkpointing and not setup.checkpointing else ""
            )
            out.append(f"{option.words()}{extra} (~{needed(shape, option) / GB:.0f} GB)")
            break
    if setup.method == "full":
        for checkpointing in dict.fromkeys((setup.checkpointing, True)):
            sharded = replace(setup, zero=3, checkpointing=checkpointing)
            count = smallest_count(shape, sharded, gpus.memory)
            if count is not None:
                sharded = replace(sharded, gpus=count)
                extra = ", gradient_checkpointing: true" if checkpointing and not setup.checkpointing else ""
                out.append(f"{sharded.words()}{extra} (~{needed(shape, sharded) / GB:.0f} GB each)")
                break
    return tuple(out)


def check(shape: Shape, setup: Setup, gpus: Gpus) -> Fit:
    setup = replace(setup, gpus=gpus.count)
    fit = Fit(setup, gpus, needed(shape, setup), shape.params, per_gpu(shape, setup))
    return fit if fit.fits else replace(fit, alternatives=alternatives(shape, setup, gpus))


# ---- published figures ---------------------------------------------------------------------------------

#: Shapes of the bases the published figures are about (their config.json values).
SHAPES: dict[str, dict[str, Any]] = {
    "Llama-3.2-1B": {
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "tie_word_embeddings": True,
    },
    "Llama-3.1-8B": {
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "tie_word_embeddings": False,
    },
    "Llama-3.1-70B": {
        "hidden_size": 8192,
        "intermediate_size": 28672,
        "num_hidden_layers": 80,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "tie_word_embeddings": False,
    },
    "LLaMA-65B": {
        "hidden_size": 8192,
        "intermediate_size": 22016,
        "num_hidden_layers": 80,
        "num_attention_heads": 64,
        "num_key_value_heads": 64,
        "vocab_size": 32000,
        "tie_word_embeddings": False,
    },
}

ZERO = "ZeRO paper (Rajbhandari et al. 2020, arXiv:1910.02054), model states"
HF = "Hugging Face, 'Llama 3.1 - 405B, 70B & 8B' blog (2024), training memory table"
QLORA = "QLoRA paper (Dettmers et al. 2023, arXiv:2305.14314)"


@dataclass(frozen=True)
class Published:
    """One published figure: the model, the setup, the GB, where it was published, and how it compares."""

    model: str  # a key of SHAPES, or "<n>B params" for a per-parameter figure
    setup: Setup
    gb: float
    source: str
    compare: str = "states"  # states (weights + gradients + optimizer), total (ours), at_least, under
    note: str = ""
    tolerance: float = 0.03  # for "states": how far ours may be, as a share of the published figure

    def shape(self) -> Shape:
        if self.model in SHAPES:
            return Shape.from_config(SHAPES[self.model])
        billions = float(self.model.split("B")[0])
        return replace(Shape.from_config(SHAPES["Llama-3.1-8B"]), params=int(billions * 1e9))

    def ours(self) -> float:
        shape = self.shape()
        if self.compare == "states":
            return model_states(shape, self.setup) / GB
        return needed(shape, self.setup) / GB  # at_least / under: our whole figure


FULL = Setup(method="full", seq_len=512)
#: HF's blog does not state its batch and length; these are the figures' usual setup (1 x 512, checkpointing).
HF_SETUP = Setup(seq_len=512, checkpointing=True)
PUBLISHED = (
    Published("1.5B params", replace(FULL, gpus=1), 24.0, ZERO, "states", "GPT-2 1.5B: 'at least 24 GB'"),
    Published("7.5B params", replace(FULL, gpus=1), 120.0, ZERO, "states", "Figure 1, baseline"),
    Published("7.5B params", replace(FULL, gpus=64, zero=1), 31.4, ZERO, "states", "Figure 1, P_os, N_d=64"),
    Published(
        "7.5B params", replace(FULL, gpus=64, zero=2), 16.6, ZERO, "states", "Figure 1, P_os+g, N_d=64"
    ),
    Published(
        "7.5B params", replace(FULL, gpus=64, zero=3), 1.9, ZERO, "states", "Figure 1, P_os+g+p, N_d=64"
    ),
    Published("Llama-3.1-8B", HF_SETUP, 16.0, HF, "states", "LoRA", 0.15),
    Published("Llama-3.1-8B", replace(HF_SETUP, method="qlora"), 6.0, HF, "states", "Q-LoRA", 0.15),
    Published("Llama-3.1-70B", HF_SETUP, 160.0, HF, "states", "LoRA", 0.15),
    Published("Llama-3.1-70B", replace(HF_SETUP, method="qlora"), 48.0, HF, "states", "Q-LoRA", 0.15),
    Published(
        "Llama-3.1-8B",
        replace(HF_SETUP, method="full"),
        60.0,
        HF,
        "states",
        "full; the blog does not say its accounting (7.5 bytes a parameter), not held to the tolerance",
    ),
    Published(
        "LLaMA-65B",
        replace(FULL, gpus=1),
        780.0,
        QLORA,
        "at_least",
        "16-bit full fine-tune: 'more than 780GB'",
    ),
    Published(
        "LLaMA-65B",
        replace(HF_SETUP, method="qlora", lora_r=64),
        48.0,
        QLORA,
        "under",
        "QLoRA r64 on 'a single 48GB GPU' (batch 1, checkpointing)",
    ),
)


def agrees(row: Published) -> bool | None:
    """Whether our figure matches ``row`` within its tolerance (None: a row shown, not held to it)."""
    ours = row.ours()
    if row.compare == "at_least":
        return ours >= row.gb
    if row.compare == "under":
        return ours < row.gb
    if "not held" in row.note:
        return None
    return abs(ours - row.gb) <= row.tolerance * row.gb


def table() -> str:
    """The fit table as Markdown: model x setup -> our GB beside the published GB and its source."""
    lines = [
        "| base | setup | ours: model states (GB) | ours: total (GB) | published (GB) | compared | source |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in PUBLISHED:
        ok = agrees(row)
        shape = row.shape()
        states, total = model_states(shape, row.setup) / GB, needed(shape, row.setup) / GB
        held = {"states": f"states ±{row.tolerance:.0%}", "at_least": "total above", "under": "total below"}
        within = "shown only" if ok is None else ("yes" if ok else "NO") + f" ({held[row.compare]})"
        kind = {"at_least": "more than ", "under": "under "}.get(row.compare, "")
        lines.append(
            f"| {row.model} | {row.setup.words()}, {row.setup.seqs}x{row.setup.seq_len} tokens"
            f"{', checkpointing' if row.setup.checkpointing else ''} | {states:.1f} | {total:.1f} | "
            f"{kind}{row.gb:g} ({row.note}) | {within} | {row.source} |"
        )
    return "\n".join(lines)


# ---- a job's GPUs and setup ------------------------------------------------------------------------------


def gpus_for(cfg: JobConfig) -> Gpus | None:
    """The GPUs ``cfg`` runs on: torch.cuda's when this machine has them, else the config's ``gpu_memory_gb``
    (for a job a GPU worker will run), else None (no GPU: the host-memory check stands). Count: num_processes."""
    count = max(cfg.num_processes, 1)
    if not cfg.use_cpu:
        try:
            import torch

            if torch.cuda.is_available():
                props = torch.cuda.get_device_properties(0)
                seen = torch.cuda.device_count()
                return Gpus(count, float(props.total_memory), f"torch.cuda: {props.name}, {seen} visible")
        except Exception:  # a broken CUDA install reads as no GPU here
            pass
    if cfg.gpu_memory_gb:
        return Gpus(count, float(cfg.gpu_memory_gb) * GB, "the config's gpu_memory_gb")
    return None


def zero_stage(cfg: JobConfig) -> int:
    """The ZeRO stage of the job's accelerate config: DeepSpeed's ``zero_stage``; FSDP's full shard is 3."""
    if cfg.launcher != "accelerate" or not cfg.accelerate_config:
        return 0
    from vibestudio.training.jobs.launcher import read_launch_config

    launch = read_launch_config(cfg.accelerate_config)
    if launch.get("distributed_type") == "FSDP":
        strategy = str((launch.get("fsdp_config") or {}).get("fsdp_sharding_strategy", "FULL_SHARD"))
        return {"FULL_SHARD": 3, "1": 3, "HYBRID_SHARD": 3, "4": 3, "SHARD_GRAD_OP": 2, "2": 2}.get(
            strategy, 0
        )
    return int((launch.get("deepspeed_config") or {}).get("zero_stage", 0))


def setup_for(cfg: JobConfig, seqs: int, seq_len: int, reference: bool, logits: bool) -> Setup:
    """The memory setup of job config ``cfg`` (``seqs`` x ``seq_len``: one micro-batch, from the estimate)."""
    method = ("qlora" if cfg.qlora else "lora") if cfg.lora else "full"
    return Setup(
        method=method,
        bf16=True,
        seqs=seqs,
        seq_len=seq_len,
        zero=zero_stage(cfg),
        gpus=max(cfg.num_processes, 1),
        lora_r=cfg.lora_r,
        reference=reference,
        logits=logits,
        checkpointing=cfg.gradient_checkpointing,
    )


def qlora_ready(cfg: JobConfig) -> None:
    """QLoRA needs LoRA, bitsandbytes and a CUDA GPU where the job runs; ValueError saying which is missing."""
    if not cfg.qlora:
        return
    import importlib.util

    if importlib.util.find_spec("bitsandbytes") is None:
        raise ValueError(
            "QLoRA loads the base in 4 bits with bitsandbytes, which is not installed: pip install bitsandbytes"
        )
    try:
        import torch

        cuda = bool(torch.cuda.is_available()) and not cfg.use_cpu
    except Exception:
        cuda = False
    if not cuda:
        raise ValueError("QLoRA's 4-bit base needs a CUDA GPU where the job runs; none is visible here")


def job_fit(cfg: JobConfig, model_ref: str) -> Fit | None:
    """The per-GPU fit of job ``cfg`` on base ``model_ref`` (its shape from config.json), or None without
    known GPUs. One micro-batch: the estimate's sequences per step over gradient_accumulation_steps."""
    gpus = gpus_for(cfg)
    if gpus is None:
        return None
    seqs, seq_len = tokens_per_step(cfg)
    micro = max(seqs // cfg.gradient_accumulation_steps, 1)
    setup = setup_for(cfg, micro, seq_len, reference_forward(cfg), not isinstance(cfg, RewardJobConfig))
    return check(model_shape(model_ref), setup, gpus)
