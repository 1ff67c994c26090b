"""Memory and time estimates before launch. They come from the model's shape, the job config and, when there
is one, the measured speed of earlier jobs on the same base.

**Memory** is the sum of:
- weights: fp32 on CPU, bf16 on GPU;
- gradients and AdamW state for what trains (everything, or the LoRA matrices);
- a reference copy, when a full fine-tune needs one;
- activations kept for the backward pass. After Korthikanti et al. 2022, that is about 34·h + 5·a·s bytes
  per token per layer, at 2 bytes a value.
- the vocabulary-sized logits TRL turns into log-probs (several copies);
- a fixed framework overhead.
It is meant as an upper bound, good to tens of per cent. Sequences are counted at ``max_length``, while
real batches are padded only to their longest row.

**Time** is training FLOPs over a device throughput. A full fine-tune costs 6·N per token. LoRA costs 4·N,
since it still back-propagates through the frozen weights. A reference forward adds 2·N. Measured
``step_seconds`` of earlier jobs replace the FLOP model once there are some, scaled by tokens per step.
They must share the kind, base and LoRA setting.

The checkpoint report that follows every job is part of the time. Both sides answer ``drift_prompts``
held-out prompts and the eval items, at a generation speed per device (``REPORT_TOKENS_PER_S``). An
earlier report may have kept the parent's answers (``training.report.answer_cache``: a llama.cpp parent).
It must be against the same parent with the same report settings. Then the parent's half is not decoded
again, and the estimate counts half the answers.

**Calibration** (the estimate learns). Every job this studio already ran left its timings in the database:
started, ended, and ``drift_seconds`` (the report's own time). ``training.jobs.preflight.past_timings``
reads them, with what the formula would have said for each job's config. ``calibrate`` scales the
formula's training and report parts by the median ratio measured / formula. It takes the past jobs most
like this one: same kind, base model and LoRA setting; else the same kind; else the same base. A reward
model publishes no contestant, so it has no report to estimate. Without past jobs, the formula stands with
a stated uncertainty (``UNCALIBRATED``). For example, a 1-step job the formula put at 17 s took 155 s.
``past_error`` says how far off the estimate was on the last jobs. Each was estimated only from the jobs
before it, as the form shows it ("last 10 jobs: median error x1.3").

**Machine load.** The figures assume the machine as the formula (an idle one) or the measured jobs found
it. The estimate reads the load when it is made (``machine_load``: the 1-minute load average over the
CPUs). It says which it assumed. On a busy CPU machine it also gives widened figures. A job that wants
every core gets about ``cpus / (cpus + load)`` of them. So its steps take ``1 + load / cpus`` times as
long. A 2-CPU machine at load 4 gives x3. Seen: ~13.8 s/step estimated, 41 s/step taken beside other work.
"""

from __future__ import annotations

import json
import os
import statistics
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vibestudio.standings.words import counted
from vibestudio.training.jobs.config import JOB_KINDS, GRPOJobConfig, JobConfig, RewardJobConfig

GIB = 1024**3
FRAMEWORK_BYTES = int(0.8 * GIB)  # torch + transformers + TRL loaded, allocator slack
CPU_FLOPS_PER_CORE = 60e9  # effective fp32 training throughput per core (measured on the 2-core CI machine)
GPU_FLOPS = 100e12  # effective bf16 training throughput of one modern GPU on small models
START_SECONDS_CPU = (
    60.0  # job process start on CPU: torch + transformers + TRL imports, model load, save at the end
)
START_SECONDS_GPU = 40.0
#: Report answers per second of generation, both sides in turn (transformers fp32 on the 2-core machine ~17).
REPORT_TOKENS_PER_S = {"cpu": 17.0, "gpu": 300.0}
REPORT_START_SECONDS = 30.0  # parent and child loaded for the report
#: Publishing a child of a llama.cpp parent measures its deployed forms first (``training.publishing.fidelity``): the trained
#: model's continuations on the fidelity prompts, then about two forms made and scored (SmolLM2 on 2 CPU cores:
#: 106 s and 126 s beside other work). Calibration folds what it really took into the training part.
PUBLISH_FORMS_SECONDS = {"cpu": 45.0, "gpu": 15.0}
FIDELITY_TOKENS = 12 * 24  # the rules' default prompts x tokens
# The formula alone, before any job of this studio measured it: x8.6 and x9.4 seen on a tiny model's first job
# (scripts/estimate_error.py), x9 on SmolLM2 before start-up was counted.
UNCALIBRATED = 10.0
CALIBRATE_ON = 10  # the newest past jobs like this one that calibration reads
BUSY_SLOWDOWN = 1.25  # a machine whose load slows a job by this much or more is called busy

# SmolLM2-135M's shape, for estimates before its HF conversion exists on this machine.
SMOLLM2_135M = {
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "vocab_size": 49152,
    "tie_word_embeddings": True,
}


@dataclass
class Shape:
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int
    tied: bool
    params: int

    @classmethod
    def from_config(cls, cfg: dict[str, Any], params: int | None = None) -> Shape:
        h, i = (
            int(cfg.get("hidden_size", 768)),
            int(cfg.get("intermediate_size", 4 * cfg.get("hidden_size", 768))),
        )
        layers, heads = int(cfg.get("num_hidden_layers", 12)), int(cfg.get("num_attention_heads", 12))
        kv, vocab = int(cfg.get("num_key_value_heads", heads)), int(cfg.get("vocab_size", 32000))
        tied = bool(cfg.get("tie_word_embeddings", True))
        if params is None:
            kv_dim = h // heads * kv
            per_layer = 2 * h * h + 2 * h * kv_dim + 3 * h * i + 2 * h
            params = vocab * h * (1 if tied else 2) + layers * per_layer + h
        return cls(h, i, layers, heads, kv, vocab, tied, params)

    def lora_params(self, r: int) -> int:
        kv_dim = self.hidden // self.heads * self.kv_heads
        h, i = self.hidden, self.intermediate
        per_layer = r * ((h + h) * 2 + (h + kv_dim) * 2 + (h + i) * 3)
        return self.layers * per_layer


@dataclass(frozen=True)
class MachineLoad:
    """The machine's load when the estimate was made: the 1-minute load average and the CPUs it is spread over."""

    load: float
    cpus: int

    @property
    def slowdown(self) -> float:
        """How much longer a job that wants every CPU takes at this load than on an idle machine."""
        return 1.0 + max(self.load, 0.0) / max(self.cpus, 1)

    @property
    def busy(self) -> bool:
        return self.slowdown >= BUSY_SLOWDOWN

    def words(self) -> str:
        return f"load {self.load:.1f} on {counted(self.cpus, 'CPU')}"


def machine_load() -> MachineLoad | None:
    """The load now (``os.getloadavg``), or None where the system does not say."""
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):
        return None
    return MachineLoad(float(load), os.cpu_count() or 1)


@dataclass
class Estimate:
    device: str
    params: int
    trainable_params: int
    peak_bytes: int
    available_bytes: int | None
    seconds_per_step: float
    total_seconds: float
    basis: str  # "FLOP model", "measured on n earlier steps" or "calibrated on n past jobs like it"
    breakdown: dict[str, int] = field(default_factory=dict)
    train_seconds: float = 0.0  # job process start, model load and the steps (and publishing, below)
    publish_seconds: float = (
        0.0  # choosing the child's form (``training.publishing.fidelity``), part of train_seconds
    )
    report_seconds: float = 0.0  # the checkpoint report that follows (0: drift_prompts 0 and no evals)
    report_prompts: int = 0
    report_reuses_parent: bool = False  # an earlier report kept the parent's answers: about half the report
    uncertainty: str = ""  # how far off it may be, in words ("" when calibrated: ``error`` says it)
    error: PastError | None = None  # the estimate's error on the last jobs of this studio
    load: MachineLoad | None = None  # the machine's load when the estimate was made (None: not known)
    fit: Any = None  # the per-GPU fit (``training.jobs.fit.Fit``) when the job's GPUs are known
    report_note: str = ""  # what having no report does to the child (the pre-launch check's note), if any

    @property
    def fits(self) -> bool:
        return self.available_bytes is None or self.peak_bytes <= self.available_bytes

    @property
    def busy_factor(self) -> float:
        """How much longer the job may take at the load now (1.0: idle, unknown, its steps on a GPU, or figures
        measured on past jobs, which already ran under their own load: widening them counts the load twice)."""
        if self.load is None or not self.load.busy or self.device == "GPU" or self.basis != "FLOP model":
            return 1.0
        return self.load.slowdown

    def load_line(self) -> str:
        """Which machine load the figures assume, and the widened figures when the machine is busy now."""
        assumed = "an idle machine" if self.basis == "FLOP model" else "the load the measured jobs ran under"
        if self.load is None:
            return f"assumes {assumed} (the load now is not known)"
        if not self.load.busy:
            return f"assumes {assumed} ({self.load.words()} now: idle)"
        if self.device == "GPU":
            return f"assumes {assumed}; busy now ({self.load.words()}): the steps run on the GPU, start-up may be slower"
        if self.basis != "FLOP model":
            return f"assumes {assumed} ({self.load.words()} now; busier than they ran, it takes longer)"
        f = self.busy_factor
        return (
            f"assumes {assumed}, but the machine is busy now ({self.load.words()}): if it stays so, "
            f"x{f:.1f}: ~{self.seconds_per_step * f:.1f} s/step, ~{_duration(self.total_seconds * f)} in all"
        )

    def summary(self) -> str:
        avail = f" of {self.available_bytes / GIB:.1f} GiB available" if self.available_bytes else ""
        report = (
            f" (training ~{_duration(self.train_seconds)}"
            + (
                f" with publishing ~{_duration(self.publish_seconds)} (choosing the form that keeps the training)"
                if self.publish_seconds
                else ""
            )
            + f", then the checkpoint report on {self.report_prompts} "
            f"prompts ~{_duration(self.report_seconds)}"
            + (", the parent's answers kept from an earlier report" if self.report_reuses_parent else "")
            + ")"
            if self.report_seconds
            else f" ({self.report_note or 'no checkpoint report'})"
        )
        return (
            f"~{self.peak_bytes / GIB:.1f} GiB peak{avail} on {self.device}; ~{self.seconds_per_step:.1f} s/step, "
            f"~{_duration(self.total_seconds)} in all{report}, {self.basis}"
            + (f", {self.uncertainty}" if self.uncertainty else "")
            + f"; {self.load_line()}"
            + f"; {self.error.line() if self.error else 'no past jobs to check it against'}; "
            f"{self.trainable_params / 1e6:.2f}M of {self.params / 1e6:.0f}M parameters train"
            + (f"; per GPU: {self.fit.reason()}" if self.fit is not None else "")
        )


@dataclass
class PastError:
    """How far off the estimate was on past jobs: per job max(estimate/took, took/estimate) (1.0 = exact)."""

    n: int
    median: float
    worst: float
    jobs: list[dict[str, Any]] = field(default_factory=list)  # {"job", "estimate_s", "took_s", "error"}

    def line(self) -> str:
        return f"last {self.n} job{'s' if self.n != 1 else ''}: median error x{self.median:.1f} (worst x{self.worst:.1f})"


@dataclass
class Timing:
    """One past job's measured times beside what the formula alone says for its config."""

    job_id: int
    kind: str
    model_ref: str | None
    lora: bool
    formula_train: float
    formula_report: float
    took: float  # ended - started: the job process's whole run, its report included
    report: float | None  # the report's own seconds (``drift_seconds``), when it recorded them
    decoded: float = 1.0  # the share of the report's answers it decoded (the rest an earlier report had)
    parent: int | None = None  # the contestant the job trained from
    report_key: str = ""  # the report's settings (``report_key``): the same key, the same prompts and seeds
    parent_kept: bool = False  # the report kept the parent's answers for the next one (``answer_cache``)

    @property
    def train(self) -> float:
        return max(self.took - (self.report or 0.0), 1.0)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def safetensors_params(folder: Path) -> int | None:
    """Exact parameter count from the safetensors headers (no weights are read)."""
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        return None
    total = 0
    for f in files:
        with open(f, "rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(n))
        for name, meta in header.items():
            if name != "__metadata__":
                count = 1
                for d in meta["shape"]:
                    count *= d
                total += count
    return total


def model_shape(model_ref: str) -> Shape:
    """The shape of a base model reference without loading it (and without converting the builtin GGUF)."""
    from vibestudio.arena.registry import BUILTIN_HF

    folder: Path | None = None
    if model_ref == BUILTIN_HF:
        from vibestudio.arena.default_model import hf_base_dir

        folder = hf_base_dir() if (hf_base_dir() / "config.json").exists() else None
        if folder is None:
            return Shape.from_config(SMOLLM2_135M)
    elif not model_ref.startswith("builtin:"):
        folder = Path(model_ref).expanduser()
    if folder is None or not (folder / "config.json").exists():
        raise ValueError(f"cannot read the shape of {model_ref!r} (no config.json)")
    cfg = json.loads((folder / "config.json").read_text())
    cfg = cfg.get("text_config", cfg)
    return Shape.from_config(cfg, safetensors_params(folder))


def available_memory(gpu: bool) -> int | None:
    if gpu:
        try:
            import torch

            return int(torch.cuda.mem_get_info()[0])
        except Exception:
            return None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _gpu_visible(cfg: JobConfig) -> bool:
    if cfg.use_cpu:
        return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


def reference_forward(cfg: JobConfig) -> bool:
    """Whether the job runs a frozen reference model (DPO, KTO; GRPO with a KL penalty); ORPO, SimPO and reward
    models do not."""
    if isinstance(cfg, GRPOJobConfig):
        return cfg.beta > 0
    return JOB_KINDS[cfg.kind].reference


def tokens_per_step(cfg: JobConfig) -> tuple[int, int]:
    """(sequences, tokens per sequence) one optimizer step processes, counted at the configured maxima."""
    batch = cfg.per_device_train_batch_size * cfg.gradient_accumulation_steps
    if isinstance(cfg, GRPOJobConfig):
        return batch, 64 + cfg.max_completion_length
    if JOB_KINDS[cfg.kind].rows in ("pairs", "unpaired"):
        # pairs: chosen + rejected; unpaired (KTO): each answer and a mismatched one for its KL term
        return 2 * batch, cfg.max_length
    return batch, cfg.max_length


def estimate(
    cfg: JobConfig,
    model_ref: str,
    history: list[float] | None = None,
    history_tokens: int = 0,
    past: list[Timing] | None = None,
    parent: int | None = None,
    gguf_parent: bool = False,
    load: MachineLoad | None = None,
) -> Estimate:
    """Peak memory and time (training, publishing and its report) for ``cfg`` on base ``model_ref``; ``history``:
    measured s/step of similar jobs; ``past``: the timings of the jobs this studio ran (``past_timings``) to
    calibrate on; ``parent``: the contestant it trains from (a report against a parent whose answers an earlier
    report kept decodes about half as much); ``gguf_parent``: that parent plays a GGUF on llama.cpp, so publishing
    first measures which form of the child keeps its training (``training.publishing.fidelity``); ``load``: the
    machine's load to state (default: read now, ``machine_load``)."""
    shape = model_shape(model_ref)
    gpu = _gpu_visible(cfg)
    wbytes = 2 if gpu else 4
    n = shape.params
    trainable = shape.lora_params(cfg.lora_r) if cfg.lora else n
    with_ref = reference_forward(cfg)
    needs_ref = not cfg.lora and with_ref
    seqs, seq_len = tokens_per_step(cfg)
    micro_seqs = seqs // cfg.gradient_accumulation_steps
    tokens = micro_seqs * seq_len
    # Korthikanti et al.: s·b·h·(34 + 5·a·s/h) bytes per layer with 2-byte activations
    act_per_token = shape.layers * (34 * shape.hidden + 5 * shape.heads * seq_len) * wbytes // 2
    logits_copies = 0 if isinstance(cfg, RewardJobConfig) else 4
    breakdown = {
        "weights": n * wbytes,
        "reference": n * wbytes if needs_ref else 0,
        "gradients+optimizer": trainable * (4 + 8 + (4 if gpu else 0)),
        "activations": tokens * act_per_token,
        "logits": tokens * shape.vocab * 4 * logits_copies,
        "framework": 0 if gpu else FRAMEWORK_BYTES,  # host memory; the GPU figure is what tensors take
    }
    peak = int(sum(breakdown.values()) * 1.1)
    flops_per_token = (4 if cfg.lora else 6) * n + (
        2 * n if with_ref and not isinstance(cfg, GRPOJobConfig) else 0
    )
    flops = flops_per_token * seqs * seq_len
    if isinstance(cfg, GRPOJobConfig):
        flops += 2 * n * seqs * cfg.max_completion_length * 8  # token-by-token generation runs far below peak
    throughput = GPU_FLOPS if gpu else CPU_FLOPS_PER_CORE * _cores()
    # Small models on a GPU are bound by kernel launches, not FLOPs: measured on an H200 with SmolLM2's shape,
    # about 25 ms per layer per DPO step with LoRA and 15 ms without.
    floor = shape.layers * (0.025 if cfg.lora else 0.015) if gpu else 0.05
    per_step, basis = max(flops / throughput, floor), "FLOP model"
    uncertainty = f"uncalibrated: could be x{UNCALIBRATED:g} off either way"
    if history:
        scale = (seqs * seq_len) / history_tokens if history_tokens else 1.0
        per_step, basis = (
            statistics.median(history) * scale,
            f"measured on {counted(len(history), 'earlier step')}",
        )
        uncertainty = "steps measured, start-up and report from the formula"
    publish = 0.0
    if gguf_parent and cfg.publish and JOB_KINDS[cfg.kind].publishes:
        speed = REPORT_TOKENS_PER_S["gpu" if gpu else "cpu"]
        publish = PUBLISH_FORMS_SECONDS["gpu" if gpu else "cpu"] + FIDELITY_TOKENS / speed
    train = per_step * cfg.max_steps + (START_SECONDS_GPU if gpu else START_SECONDS_CPU) + publish
    share = expected_share(past or [], parent, report_key(cfg))
    report = at_share(report_seconds(cfg, gpu), share)
    if past:
        factors = calibrate(past, cfg.kind, model_ref, cfg.lora)
        if factors is not None:
            f_train, f_report, used = factors
            formula_train = formula_seconds(cfg, model_ref)[0]
            train, report = formula_train * f_train, report * f_report
            per_step = max((train - (START_SECONDS_GPU if gpu else START_SECONDS_CPU)) / cfg.max_steps, 0.0)
            basis, uncertainty = f"calibrated on {counted(used, 'past job')} like it", ""
            if not any(t.kind == cfg.kind for t in past):
                basis = f"calibrated on {counted(used, 'past job')} on this base (none of this kind yet)"
    return Estimate(
        device="GPU" if gpu else f"CPU ({_cores()} cores)",
        params=n,
        trainable_params=trainable,
        peak_bytes=peak,
        available_bytes=available_memory(gpu),
        seconds_per_step=per_step,
        total_seconds=train + report,
        basis=basis,
        breakdown=breakdown,
        train_seconds=train,
        publish_seconds=publish,
        report_seconds=report,
        report_prompts=cfg.report_counts()[0],
        report_reuses_parent=share < 1.0 and report > 0,
        uncertainty=uncertainty,
        error=past_error(past or []),
        load=load if load is not None else machine_load(),
    )


def report_seconds(cfg: JobConfig, gpu: bool) -> float:
    """The checkpoint report's time from its settings: both sides answer the held-out prompts and the eval items
    (each answer counted at its cap), plus two model loads. 0 when it is skipped (``drift_prompts: 0``), and when
    no contestant is published (a reward model, or ``publish: false``): no child, no report."""
    prompts, items = cfg.report_counts()
    if prompts <= 0 or not JOB_KINDS[cfg.kind].publishes or not cfg.publish:
        return 0.0
    items = min(items, _eval_set_size()) if items >= 0 else _eval_set_size()
    tokens = 2 * prompts * cfg.drift_max_tokens + 2 * items * cfg.eval_max_tokens
    speed = REPORT_TOKENS_PER_S["gpu" if gpu else "cpu"]
    return REPORT_START_SECONDS + tokens / speed


def report_key(cfg: JobConfig) -> str:
    """The report settings that decide which prompts and seeds both sides answer: two jobs with the same key and
    parent ask the parent the same questions (``training.report.answer_cache`` keeps its answers)."""
    prompts, items = cfg.report_counts()
    return json.dumps([prompts, items, cfg.drift_max_tokens, cfg.eval_max_tokens, cfg.seed])


def expected_share(past: list[Timing], parent: int | None, key: str) -> float:
    """The share of its answers a report is expected to decode: 0.5 when an earlier job from the same parent
    with the same report settings kept the parent's answers (the parent's half comes from the store), else 1."""
    if parent is None:
        return 1.0
    kept = any(t.parent == parent and t.report_key == key and t.parent_kept for t in past)
    return 0.5 if kept else 1.0


def at_share(report: float, share: float) -> float:
    """A report's formula seconds when it decodes only ``share`` of its answers (the model loads stay)."""
    start = min(REPORT_START_SECONDS, max(report, 0.0))
    return start + (report - start) * share


def _eval_set_size() -> int:
    try:
        from vibestudio.standings.evals import load_items

        return len(load_items()[1])
    except (OSError, ValueError):
        return 0


def formula_seconds(cfg: JobConfig, model_ref: str) -> tuple[float, float]:
    """(training, report) seconds by the formula alone, no measurement: what calibration scales."""
    est = estimate(cfg, model_ref)
    return est.train_seconds, est.report_seconds


def _alike(past: list[Timing], kind: str, model_ref: str | None, lora: bool) -> list[Timing]:
    """The past jobs most like this one: same kind, base and LoRA setting; else the same kind; else the same base
    (a first job of a new kind: on a small model the job process's start and model load, which the base and the machine
    set, weigh more than the kind's steps, and the formula already tells the kinds' steps apart)."""
    same = [t for t in past if t.kind == kind and t.model_ref == model_ref and t.lora == lora]
    return (
        same
        or [t for t in past if t.kind == kind]
        or [t for t in past if model_ref is not None and t.model_ref == model_ref]
    )


def calibrate(
    past: list[Timing], kind: str, model_ref: str | None, lora: bool
) -> tuple[float, float, int] | None:
    """(training factor, report factor, jobs used): the median measured / formula ratio of the past jobs most
    like this one (the newest ``CALIBRATE_ON``; a report's formula counts only the answers it decoded). None when
    there are none."""
    alike = _alike(past, kind, model_ref, lora)[-CALIBRATE_ON:]
    if not alike:
        return None
    f_train = statistics.median(t.train / max(t.formula_train, 1e-6) for t in alike)
    with_report = [t for t in alike if t.report is not None and t.formula_report > 0]
    f_report = (
        statistics.median((t.report or 0.0) / at_share(t.formula_report, t.decoded) for t in with_report)
        if with_report
        else f_train
    )
    return f_train, f_report, len(alike)


def predicted(t: Timing, before: list[Timing]) -> float:
    """What the estimate would have said for past job ``t`` knowing only the jobs ``before`` it."""
    factors = calibrate(before, t.kind, t.model_ref, t.lora)
    f_train, f_report = (factors[0], factors[1]) if factors else (1.0, 1.0)
    share = expected_share(before, t.parent, t.report_key)
    return t.formula_train * f_train + at_share(t.formula_report, share) * f_report


def past_error(past: list[Timing], last: int = 10) -> PastError | None:
    """The estimate's error on the ``last`` past jobs (oldest first in ``past``), each estimated from the jobs
    before it only: max(estimate/took, took/estimate) per job, the median and the worst."""
    rows = []
    for i in range(max(0, len(past) - last), len(past)):
        t = past[i]
        guess = predicted(t, past[:i])
        took = max(t.took, 1e-6)
        rows.append(
            {"job": t.job_id, "estimate_s": guess, "took_s": t.took, "error": max(guess / took, took / guess)}
        )
    if not rows:
        return None
    errors = [r["error"] for r in rows]
    return PastError(len(rows), statistics.median(errors), max(errors), rows)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def history_for(session: Any, cfg: JobConfig, model_ref: str, limit: int = 5) -> tuple[list[float], int]:
    """Steady-state ``step_seconds`` of the last few succeeded jobs of the same kind, base and LoRA setting,
    and the tokens per step those jobs processed (median), to scale by."""
    from sqlalchemy import select

    from vibestudio.db.models import Checkpoint, Job, JobMetric
    from vibestudio.training.jobs.config import ConfigError, config_from_dict
    from vibestudio.training.publishing.artifacts import read_manifest

    q = (
        select(Job.id, Job.config, Checkpoint.path)
        .join(Checkpoint, Checkpoint.job_id == Job.id)
        .where(Job.kind == cfg.kind, Job.status == "succeeded")
        .order_by(Job.id.desc())
        .limit(50)
    )
    seconds: list[float] = []
    tokens: list[int] = []
    jobs = 0
    for job_id, config, path in session.execute(q):
        manifest = read_manifest(path)
        if manifest.get("base_model_ref") != model_ref or bool(manifest.get("adapter")) != cfg.lora:
            continue
        try:
            past = config_from_dict(dict(config))
        except (ConfigError, TypeError):
            continue
        steps = (
            session.execute(
                select(JobMetric.value).where(
                    JobMetric.job_id == job_id, JobMetric.name == "step_seconds", JobMetric.step > 2
                )
            )
            .scalars()
            .all()
        )
        if not steps:
            continue
        seqs, seq_len = tokens_per_step(past)
        seconds += list(steps)
        tokens.append(seqs * seq_len)
        jobs += 1
        if jobs >= limit:
            break
    return seconds, int(statistics.median(tokens)) if tokens else 0
