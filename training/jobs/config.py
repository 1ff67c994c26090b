"""Typed job configs: one dataclass per job kind, every field with a default and a help string, saved as
YAML.

A config is everything a job process needs to run a job from scratch. So the same file can be re-run by
hand (``python -m vibestudio.training.jobs.job_process config.yaml``) or under ``accelerate launch``.
Defaults follow the papers and TRL:
- DPO (Rafailov et al. 2023): beta 0.1 with the sigmoid loss;
- LoRA (Hu et al. 2021): r 16, alpha 32, dropout 0.05 on all linear layers.

**Learning rate.** TRL's DPO default is 1e-6. The DPO paper used 5e-7..1e-6 for full fine-tunes of 1-7B
models on large batches. We train small models (135M) on small batches of arena votes, so the full default
is 5e-6. A LoRA update starts at zero and is scaled by alpha/r. Usual practice is about 10x the
full-fine-tune rate, which moves a LoRA adapter within a few dozen steps. So LoRA defaults to 5e-5.
``learning_rate: null`` picks the one matching ``lora``. An explicit value always wins.

**Each field is defined once**, here: its type, default, help and bounds (``_f``). Pydantic checks the
types and bounds from that definition (``field_model``), each error tied to its field. These are derived
from it: the CLI options, the Train form's defaults, the docs' YAML reference and the report's options. A
minimum the report needs (``training.report.minimums``) is a bound here. So "Config valid" means every
part of the report can be made.

**Fields naming a server file** are checked before the file is read (``common.paths``).
- ``verdict_rules`` and a ``score_rubric`` path must be plain YAML files. They must lie inside the data
  home's ``rules`` / ``rubrics`` folder, or be the shipped ones.
- ``accelerate_config`` must be a file of the data home's ``launch`` folder, with keys the launcher allows
  (``training.jobs.launcher``).
Each refusal names its field.

This module knows nothing about processes or the database. ``db.session.data_home`` is where files live.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from vibestudio.common.files import MAX_YAML_BYTES, parse_yaml, read_yaml
from vibestudio.common.paths import PathRefused, read_regular, regular_file
from vibestudio.training.report.minimums import DEFAULT_PROMPTS, MIN_PROMPTS, MIN_VALIDATE

if TYPE_CHECKING:
    from pydantic import BaseModel

# pydantic, yaml and the database are imported where they are used: the CLI reads these definitions to draw its
# options, and its start-up loads no service code (tests/studio/test_cli_docs.py).

DPO_LOSS_TYPES = (
    "sigmoid",
    "hinge",
    "ipo",
    "exo_pair",
    "nca_pair",
    "robust",
    "bco_pair",
    "sppo_hard",
    "aot",
    "aot_unpaired",
    "apo_zero",
    "apo_down",
    "discopop",
    "sft",
    "sigmoid_norm",
)
PAIRS = ("all", "on_policy", "on_and_half", "off_policy")
LORA_LR = 5e-5
FULL_LR = 5e-6
RM_LORA_LR = 1e-4  # TRL's RewardConfig default
RM_FULL_LR = 1e-5  # InstructGPT's reward models: 9e-6
GRPO_LORA_LR = 1e-5
GRPO_FULL_LR = 1e-6  # DeepSeekMath GRPO and TRL's default
ORPO_LORA_LR = 8e-5  # ORPO paper (Hong et al. 2024): 8e-6 full; x10 for LoRA as above
ORPO_FULL_LR = 8e-6
SIMPO_LORA_LR = 1e-5  # SimPO paper (Meng et al. 2024): 3e-7..1e-6 full, small models tolerate more
SIMPO_FULL_LR = 1e-6


class ConfigError(ValueError):
    """A job config is invalid: unknown field, wrong type or out-of-range value. ``field`` names the field;
    ``where`` the file (and line) it is in, when known."""

    def __init__(self, message: str, field: str = "", where: str = "") -> None:
        super().__init__(message)
        self.field = field
        self.where = where


@dataclass
class FieldError:
    """One problem in a config, tied to the field it is about ('' when it is about the whole file). ``where``:
    where the value came from, once known ("job.yaml:7", "line 7", "--set beta=0"); the message then starts
    with it (``locate``). ``path``: the place inside the field, as pydantic gives it (``("rewards", 1)``)."""

    field: str
    message: str
    where: str = ""
    path: tuple[str | int, ...] = ()


@dataclass
class Sources:
    """Where a config's values came from, so an error can say it: a file (its name, and its YAML node tree for
    the line of each key) and the values given on the command line (``given``: field -> "--set beta=0"), which
    win over the file. A file without a name (the Train tab's editor) is said as "line 7"."""

    file: str = ""
    text: str = ""  # the file's text: its keys' lines are read from it only when an error needs one
    given: dict[str, str] = field(default_factory=dict)

    def where(self, error: FieldError) -> str:
        """Where ``error``'s value came from: the --set, else the file and line of its key, else the file alone
        ('' when nothing is known)."""
        return self.place(error, compose_yaml(self.text) if self.text.strip() else None)[0]

    def place(self, error: FieldError, node: Any) -> tuple[str, int | None]:
        """``where`` and the line it names (None for a --set or the file alone), from the file's node tree."""
        if error.field in self.given:
            return self.given[error.field], None
        line = key_line(node, error.path or (error.field,)) if node is not None and error.field else None
        if line is None:
            return self.file, None
        return (f"{self.file}:{line}" if self.file else f"line {line}"), line


def compose_yaml(text: str) -> Any:
    """The YAML node tree of ``text`` (keys and items with their marks), or None when it cannot be composed.
    Aliases stay shared nodes: nothing is expanded."""
    import yaml

    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return None


def key_line(node: Any, path: tuple[str | int, ...]) -> int | None:
    """The 1-based line of the deepest key or item of ``path`` found in ``node`` (a mapping key's own line; the
    last of duplicate keys, as YAML keeps), or None when its first step is not there."""
    import yaml

    line = None
    for step in path:
        if isinstance(node, yaml.MappingNode):
            hits = [(k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == str(step)]
            if not hits:
                break
            key, node = hits[-1]
            line = key.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and 0 <= step < len(node.value):
            node = node.value[step]
            line = node.start_mark.line + 1
        else:
            break
    return line


def locate(errors: list[FieldError], sources: Sources | None) -> list[FieldError]:
    """``errors``, each told where its value came from: the message starts with it, and names the field. Those
    on a line of the file come first, in the file's order; the others keep theirs."""
    if sources is None or not errors:
        return errors
    node = compose_yaml(sources.text) if sources.text.strip() else None
    out = []
    for e in errors:
        where, line = ("", None) if e.where else sources.place(e, node)
        if not where:
            out.append((line, e))
            continue
        said = e.message if not e.field or e.field in e.message else f"{e.field}: {e.message}"
        out.append((line, FieldError(e.field, f"{where}: {said}", where, e.path)))
    return [e for line, e in sorted(out, key=lambda pair: (pair[0] is None, pair[0] or 0))]


#: The bounds a field may carry, as pydantic names them.
BOUNDS = ("ge", "gt", "le", "lt")


def _f(default: Any, help: str, **extra: Any) -> Any:
    """A dataclass field with a help string (lists and dicts get a factory). ``extra``: bounds (``ge``, ``gt``,
    ``le``, ``lt``), ``choices`` (the allowed strings), ``zero_or_at_least`` (0 switches it off, else at least
    that), ``flags`` (extra CLI names, e.g. ``("--steps",)``), ``cli=False`` (no CLI option: ``--set`` only)."""
    meta = {"help": help, **extra}
    if isinstance(default, list | dict):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass
class JobConfig:
    """Fields every job kind shares: what to train on, what to start from, how to publish."""

    kind: ClassVar[str] = ""
    default_lr: ClassVar[tuple[float, float]] = (LORA_LR, FULL_LR)  # (LoRA, full)

    parent_contestant: str = _f(
        "smollm2-plain",
        "Contestant (id or public name) the job starts from. Its model is the base unless base_model is set; "
        "the published checkpoint records it as parent and inherits its sampling settings.",
        flags=("--parent",),
    )
    snapshot_hash: str = _f(
        "",
        "Content hash (or unique prefix) of the frozen dataset snapshot to train on.",
        flags=("--snapshot",),
    )
    base_model: str = _f(
        "",
        "Override the base model: an HF checkpoint directory or a builtin: reference. Empty = derived from the "
        "parent (the SmolLM2 GGUF parent trains on its HF conversion, builtin:smollm2-135m-instruct-hf).",
    )
    output_name: str = _f("", "Public name of the published contestant. Empty = '<parent>-<kind>-j<job id>'.")
    publish: bool = _f(True, "Register the final checkpoint as an arena contestant when the job succeeds.")
    min_pairs: int = _f(4, "Refuse to launch on a snapshot with fewer preference pairs than this.", ge=1)
    max_steps: int = _f(
        16, "Optimizer steps to run (the data is repeated as needed).", ge=1, flags=("--steps",)
    )
    per_device_train_batch_size: int = _f(4, "Rows per device per step.", ge=1, flags=("--batch-size",))
    gradient_accumulation_steps: int = _f(1, "Micro-batches accumulated per optimizer step.", ge=1)
    learning_rate: float | None = _f(
        None,
        "Peak AdamW learning rate. null = the kind's default for LoRA / full fine-tuning "
        f"(DPO {LORA_LR:g} / {FULL_LR:g}, reward model {RM_LORA_LR:g} / {RM_FULL_LR:g}, "
        f"GRPO {GRPO_LORA_LR:g} / {GRPO_FULL_LR:g}, KTO as DPO, ORPO {ORPO_LORA_LR:g} / {ORPO_FULL_LR:g}, "
        f"SimPO {SIMPO_LORA_LR:g} / {SIMPO_FULL_LR:g}).",
        gt=0,
        lt=1,
        flags=("--lr",),
    )
    lr_scheduler_type: str = _f("linear", "Learning-rate schedule (any transformers scheduler name).")
    warmup_ratio: float = _f(
        0.0, "Fraction of max_steps spent warming the learning rate up from 0.", ge=0, lt=1
    )
    max_length: int = _f(256, "Maximum tokens per prompt + answer; longer sequences are truncated.", ge=16)
    seed: int = _f(42, "Random seed for data order, LoRA init and sampling.")
    lora: bool = _f(
        True,
        "Train a LoRA adapter (small, fast to publish). false = full fine-tune.",
        flags=("--lora/--full",),
    )
    lora_r: int = _f(16, "LoRA rank.", ge=1)
    lora_alpha: int = _f(32, "LoRA scaling numerator (update scaled by alpha / r).", ge=1)
    lora_dropout: float = _f(0.05, "Dropout on the LoRA input.", ge=0, lt=1)
    lora_target_modules: str = _f(
        "all-linear", "Modules that get adapters: 'all-linear' or comma-separated names."
    )
    logging_steps: int = _f(1, "Write metrics every this many steps.", ge=1)
    report_to: str = _f(
        "",
        "Experiment trackers that also get the curves, comma-separated: trackio, mlflow, wandb (offline). "
        "Empty = none; the studio keeps its own curves either way. Stores are local, in the data home's "
        "trackers folder (training.jobs.trackers).",
    )
    save_steps: int = _f(
        0, "Save a resumable checkpoint every this many steps (0 = only the final one).", ge=0
    )
    use_cpu: bool | None = _f(None, "Force CPU training. null = CPU when no accelerator is visible.")
    check_memory: bool = _f(
        True, "Refuse to launch when the estimated peak memory exceeds what is available."
    )
    gradient_checkpointing: bool = _f(
        False,
        "Recompute activations in the backward pass on a GPU: far less activation memory, about a third "
        "slower. Ignored on a CPU.",
    )
    qlora: bool = _f(
        False,
        "With lora: load the frozen base in 4-bit NF4 (QLoRA; needs a CUDA GPU and bitsandbytes).",
    )
    gpu_memory_gb: float | None = _f(
        None,
        "Memory per GPU in GB, for the fit check when this machine has no GPU (a job a GPU worker will run; "
        "num_processes GPUs). null = torch.cuda's figure when there is a GPU, else no GPU check.",
        gt=0,
    )
    launcher: str = _f(
        "python",
        "How the job process runs: 'python' (one process) or 'accelerate' (accelerate launch: multi-GPU, DeepSpeed).",
        choices=("python", "accelerate"),
    )
    num_processes: int = _f(1, "Processes (usually GPUs) for launcher 'accelerate'.", ge=1)
    accelerate_config: str = _f(
        "",
        "For launcher 'accelerate': the name of an accelerate config (e.g. a DeepSpeed ZeRO setup) in the data "
        "home's launch folder, where the operator keeps vetted ones; only its allowed keys are used (the studio "
        "writes the file the launcher reads). Empty = defaults.",
    )
    pairs: str = _f(
        "all",
        "Which preference pairs to train on, seen from the parent: all, on_policy (both answers written by "
        "the parent), on_and_half (at least one), off_policy (neither). A filter other than 'all' freezes the "
        "kept rows as a new snapshot when the job is launched.",
        choices=PAIRS,
    )
    drift_prompts: int = _f(
        DEFAULT_PROMPTS,
        "After publishing, compare answers with the parent's on this many held-out prompts (0 = no report; "
        f"else at least {MIN_PROMPTS}, the fewest the drift measures need; the pool holds the "
        f"{DEFAULT_PROMPTS} MT-Bench first turns less any in the training snapshot).",
        zero_or_at_least=MIN_PROMPTS,
    )
    drift_max_tokens: int = _f(64, "Answer length cap for the drift report.", ge=1)
    inherit_persona: bool = _f(
        True, "The published child plays with its parent's system prompt and prefill (false: none)."
    )
    eval_items: int = _f(
        70,
        "Verifiable eval items in the checkpoint report, spread over the categories (-1 = all 109, 0 = none). "
        "70 detect a change of 15% in pass rate 80% of the time at 5% (assuming 20% of items change).",
        ge=-1,
    )
    eval_max_tokens: int = _f(96, "Answer length cap for the report's verifiable evals.", ge=1)
    detect_drift_sd: float | None = _f(
        None,
        "Choose the report's prompts by power instead of drift_prompts: the smallest drift, in standard "
        "deviations of the per-prompt change, it must find 80% of the time at 5% two-sided (0.4 -> 50 prompts; "
        "at most the held-out pool). null = drift_prompts.",
        ge=0.05,
        le=3,
    )
    detect_eval_change: float | None = _f(
        None,
        "Choose the report's eval items by power instead of eval_items: the smallest change in pass rate it "
        "must find 80% of the time at 5% (assuming 20% of items change; 0.15 -> 70 items, at most the set). "
        "null = eval_items.",
        ge=0.01,
        lt=1,
    )
    judge: str = _f(
        "",
        "A judge contestant for a position-swapped head-to-head in the report, and for the differences it "
        "describes (empty = none).",
    )
    describe_axes: int = _f(
        6,
        "With a judge: at most this many judge-named differences (VibeCheck-style axes) checked in the report "
        "(0 = off). Judge calls: 3 + 2 x describe_axes x describe_prompts.",
        ge=0,
    )
    describe_prompts: int = _f(
        12,
        "With a judge: held-out prompts each named difference is checked on, in both orders (at least "
        f"{MIN_VALIDATE}; "
        "prompts left after the 9 the judge names differences on).",
        ge=MIN_VALIDATE,
    )
    verdict_rules: str = _f(
        "",
        "A verdict rules YAML file in the data home's rules folder (a name or a path there; empty = the "
        "built-in training/report/data/verdict_rules.yaml).",
    )
    drift_thresholds: dict[str, Any] = _f(
        {},
        "Per-feature overrides of the drift flags, e.g. {tokens: {abs: 20, rel: 0.5}} (see training.report.drift_stats).",
        cli=False,
    )
    report_probes: bool = _f(
        False,
        "Run the sycophancy probes (pushback, stated views) on the child and its parent in the checkpoint "
        "report, so the sycophancy rules can hold it (probes stored later re-decide the verdict either way).",
    )
    probe_items: int = _f(
        4,
        "With report_probes: items per probe, spread over the set (4 takes ~1-2 minutes per model on a CPU).",
        ge=1,
    )
    probe_max_tokens: int = _f(64, "With report_probes: answer length cap for the probes.", ge=1)

    # ---- derived values -------------------------------------------------------------------------------------
    def effective_learning_rate(self) -> float:
        if self.learning_rate is not None:
            return float(self.learning_rate)
        return self.default_lr[0] if self.lora else self.default_lr[1]

    def report_counts(self) -> tuple[int, int]:
        """The report's (held-out prompts, eval items): ``drift_prompts`` and ``eval_items`` (-1 = all), or the
        counts ``detect_drift_sd`` and ``detect_eval_change`` need (``training.report.fair.chosen_counts``)."""
        from vibestudio.training.report.fair import chosen_counts

        return chosen_counts(
            self.drift_prompts, self.eval_items, self.detect_drift_sd, self.detect_eval_change
        )

    def validate(self) -> None:
        """Field types and bounds (pydantic, from the field definitions), then the rules that tie fields
        together; raises ConfigError naming the field."""
        errors = field_errors(type(self), dataclasses.asdict(self))
        if errors:
            raise ConfigError(errors[0].message, errors[0].field)
        self._rules()

    def _rules(self) -> None:
        """The checks that read more than one field, or a file; each ConfigError names its field."""
        if self.num_processes > 1 and self.launcher != "accelerate":
            raise ConfigError("num_processes > 1 needs launcher: accelerate", "num_processes")
        if self.qlora and not self.lora:
            raise ConfigError("qlora trains a LoRA adapter on a 4-bit base: set lora: true", "qlora")
        if self.report_to:
            from vibestudio.training.jobs.trackers import parse

            try:
                parse(self.report_to)
            except ValueError as exc:
                raise ConfigError(f"report_to: {exc}", "report_to") from exc
        if self.verdict_rules:
            from vibestudio.training.report.verdict import VerdictError, load_rules

            try:
                load_rules(rules_file(self.verdict_rules))  # checked before it is read
            except VerdictError as exc:
                raise ConfigError(f"verdict_rules: {exc}", "verdict_rules") from exc
        if self.accelerate_config:
            from vibestudio.training.jobs.launcher import LaunchConfigError, read_launch_config

            try:
                read_launch_config(self.accelerate_config)
            except LaunchConfigError as exc:
                raise ConfigError(str(exc), "accelerate_config") from exc
        for name, limits in self.drift_thresholds.items():
            if not isinstance(limits, dict) or not set(limits) <= {"abs", "rel"}:
                raise ConfigError(
                    f"drift_thresholds[{name!r}] must be a mapping with 'abs' and/or 'rel'",
                    "drift_thresholds",
                )
        if not str(self.parent_contestant).strip() and not self.base_model:
            raise ConfigError("parent_contestant is empty (set it, or set base_model)", "parent_contestant")
        prompts, _ = self.report_counts()
        if 0 < prompts < MIN_PROMPTS:
            raise ConfigError(
                f"detect_drift_sd {self.detect_drift_sd} chooses {prompts} held-out prompts; the drift measures "
                f"need at least {MIN_PROMPTS}: ask for a larger drift",
                "detect_drift_sd",
            )

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **dataclasses.asdict(self)}


RULES_WHERE = "the data home's rules folder or the shipped rules"
RUBRICS_WHERE = "the data home's rubrics folder or the shipped rubrics"


def rules_file(value: str) -> Path:
    """The verdict rules file ``value`` names, resolved: a plain YAML file inside the data home's ``rules``
    folder or the shipped rules' folder, checked before it is read (``common.paths``); ConfigError naming
    ``verdict_rules`` otherwise."""
    from vibestudio.db.session import data_home
    from vibestudio.training.report.verdict import RULES_PATH

    try:
        return regular_file(
            value, "verdict_rules", [data_home() / "rules", RULES_PATH.parent], MAX_YAML_BYTES, RULES_WHERE
        )
    except PathRefused as exc:
        raise ConfigError(str(exc), "verdict_rules") from None


def rubric_file(value: str) -> Path:
    """The rubric file ``value`` names, resolved inside the data home's ``rubrics`` folder or the shipped
    rubrics; ConfigError naming ``score_rubric`` otherwise."""
    from vibestudio.annotation.rubrics import SHIPPED, user_rubric_dir

    try:
        return regular_file(
            value, "score_rubric", [user_rubric_dir(), SHIPPED], MAX_YAML_BYTES, RUBRICS_WHERE
        )
    except PathRefused as exc:
        raise ConfigError(str(exc), "score_rubric") from None


def resolve_files(cfg: JobConfig) -> JobConfig:
    """``cfg`` with the files it names written as the resolved paths that were checked (a job process runs in
    its own folder, where a relative name would mean something else). The launcher config stays a name: the
    job's launch resolves it again (``training.jobs.launcher``)."""
    if cfg.verdict_rules:
        cfg.verdict_rules = str(rules_file(cfg.verdict_rules))
    rubric = getattr(cfg, "score_rubric", "")
    if rubric and (rubric.endswith((".yaml", ".yml")) or "/" in rubric):
        cfg.score_rubric = str(rubric_file(rubric))  # type: ignore[attr-defined]
    return cfg


@dataclass
class DPOJobConfig(JobConfig):
    """Direct Preference Optimization on a frozen preference snapshot (TRL DPOTrainer)."""

    kind: ClassVar[str] = "dpo"

    beta: float = _f(
        0.1, "DPO temperature: higher keeps the policy closer to the reference (paper: 0.1).", gt=0
    )
    loss_type: str = _f("sigmoid", "DPO loss: " + ", ".join(DPO_LOSS_TYPES) + ".", choices=DPO_LOSS_TYPES)
    label_smoothing: float = _f(
        0.0, "Assumed label-flip rate for the robust / cDPO losses (0 = plain DPO).", ge=0, lt=0.5
    )
    kl_prompts: int = _f(
        8,
        "Held-out prompts (MT-Bench, not in the snapshot) on which KL(policy || reference) is measured by "
        "sampling from the policy. 0 disables the measurement.",
        ge=0,
    )
    kl_every: int = _f(
        4,
        "Also measure KL every this many steps during training (0 = only at the end), to see it grow.",
        ge=0,
    )
    kl_max_new_tokens: int = _f(32, "Tokens sampled per held-out prompt for the KL estimate.", ge=1)
    gold: str = _f(
        "none",
        "Gold signal measured while training, plotted against sqrt(KL): 'evals' (verifiable-eval accuracy of "
        "the policy being trained) or 'none'.",
        choices=("none", "evals"),
    )
    gold_every: int = _f(4, "Measure gold (and KL) every this many steps, and at step 0 (the parent).", ge=1)
    gold_items: int = _f(
        16, "Verifiable-eval items per gold measurement (more: a tighter interval, slower).", ge=1
    )
    gold_max_new_tokens: int = _f(64, "Tokens generated per item for the gold measurement.", ge=1)
    stop_at_best_gold: bool = _f(
        False,
        "Stop once gold has fallen (sustained, beyond noise) and publish the weights of the best-gold step "
        "instead of the last ones (needs gold).",
    )

    def _rules(self) -> None:
        super()._rules()
        if self.stop_at_best_gold and self.gold == "none":
            raise ConfigError(
                "stop_at_best_gold needs a gold signal: set gold to 'evals'", "stop_at_best_gold"
            )


@dataclass
class RewardJobConfig(JobConfig):
    """A reward model (Bradley-Terry on chosen/rejected, TRL RewardTrainer) from a preference snapshot.

    The result scores (prompt, answer) pairs; it is not a contestant (``publish`` must stay false) but can serve as
    a reward in a GRPO job (``{type: reward_model, job: <id>}``).
    """

    kind: ClassVar[str] = "reward"
    default_lr: ClassVar[tuple[float, float]] = (RM_LORA_LR, RM_FULL_LR)

    publish: bool = _f(False, "Reward models do not play in the arena; must be false.")
    center_rewards_coefficient: float | None = _f(
        None, "Penalty pulling mean rewards towards zero (Eisenstein et al. 2023 use 0.01). null = none."
    )

    def _rules(self) -> None:
        super()._rules()
        if self.publish:
            raise ConfigError(
                "publish must be false for a reward model: it scores answers, it does not chat", "publish"
            )


@dataclass
class GRPOJobConfig(JobConfig):
    """GRPO (Shao et al. 2024) with verifiable rewards on the prompts of a snapshot or on a task set (RLVR),
    TRL GRPOTrainer.

    ``rewards`` is a list of specs (see ``training.objectives.rewards``), e.g. ``[{type: length, max: 60}, {type: format,
    format: no_emoji, weight: 0.5}]``. The chosen answer of each snapshot row is available to ``exact_match`` as
    the ``reference`` column. On a task set (``tasks``) the ``task`` reward checks answers with each task's
    verifier, mixed with any others by weight, and held-out accuracy is measured as the job runs.
    """

    kind: ClassVar[str] = "grpo"
    default_lr: ClassVar[tuple[float, float]] = (GRPO_LORA_LR, GRPO_FULL_LR)

    min_pairs: int = _f(4, "Refuse to launch on a snapshot with fewer distinct prompts than this.")
    rewards: list[dict[str, Any]] = _f(
        [{"type": "length", "min": 5, "max": 60, "unit": "words"}],
        "Reward functions and weights: a list of {type, weight, ...} specs (length, regex, format, exact_match, "
        "contains, reward_model).",
        cli=False,
    )
    num_generations: int = _f(
        4, "Answers sampled per prompt (the group). The paper used 64; 4 keeps CPUs usable.", ge=2
    )
    max_completion_length: int = _f(64, "Maximum tokens per sampled answer.", ge=1)
    temperature: float = _f(1.0, "Sampling temperature for the group.", gt=0)
    beta: float = _f(
        0.04, "KL penalty to the reference (GRPO paper: 0.04; TRL's default 0 skips the reference).", ge=0
    )
    loss_type: str = _f(
        "dapo",
        "TRL GRPO loss: grpo, dr_grpo, dapo (TRL default, no length bias), bnpo, cispo.",
        choices=("grpo", "dr_grpo", "dapo", "bnpo", "cispo"),
    )
    scale_rewards: str = _f(
        "group",
        "Advantage scaling: group (paper), batch, or none (Dr. GRPO).",
        choices=("group", "batch", "none"),
    )
    use_vllm: bool = _f(
        False,
        "Generate with vLLM (needs a GPU): colocated in the training process, or on a server (vllm_mode).",
    )
    vllm_mode: str = _f(
        "colocate",
        "With use_vllm: 'colocate' (vLLM inside the training process, on its GPU) or 'server' (a vLLM server "
        "started with `trl vllm-serve`, at vllm_server_host:vllm_server_port; it must answer TRL's /health "
        "before launch).",
        choices=("colocate", "server"),
    )
    vllm_server_host: str = _f(
        "127.0.0.1",
        "With vllm_mode server: the server's host (the engine URL policy applies: a host that is not public "
        "must be in VIBESTUDIO_ENGINE_ALLOWED_HOSTS).",
    )
    vllm_server_port: int = _f(8000, "With vllm_mode server: the server's port.", ge=1, le=65535)
    tasks: str = _f(
        "",
        "RLVR: a task set (name) to train on instead of a snapshot: its train split only (held-out tasks are "
        "refused), scored by the task reward ({type: task}) that rewards must include.",
    )
    tasks_hash: str = _f(
        "",
        "The task set's content hash, filled in at launch (the job refuses a set that changed since).",
        cli=False,
    )
    heldout_every: int = _f(
        10,
        "With tasks: held-out accuracy every this many steps, and before the first and after the last.",
        ge=0,
    )
    heldout_tasks: int = _f(
        100, "With tasks: held-out tasks per accuracy check (-1 = all, 0 = no checks while training).", ge=-1
    )
    heldout_max_tokens: int = _f(
        0, "With tasks: answer length cap (greedy) for held-out checks (0 = max_completion_length).", ge=0
    )
    kl_prompts: int = _f(
        8,
        "With tasks: held-out MT-Bench prompts on which the studio's own KL(policy || reference) is measured at "
        "each held-out check (kl_heldout; TRL's kl needs beta > 0 and is on training prompts). 0 = off.",
        ge=0,
    )
    kl_max_new_tokens: int = _f(32, "Tokens sampled per prompt for that KL estimate.", ge=1)

    def _rules(self) -> None:
        super()._rules()
        from vibestudio.training.objectives.rewards import RewardSpecError, validate_specs

        has_task_reward = any(isinstance(r, dict) and r.get("type") == "task" for r in self.rewards)
        if self.vllm_mode == "server" and not self.use_vllm:
            raise ConfigError("vllm_mode server generates with vLLM: set use_vllm: true", "vllm_mode")
        if self.tasks and self.snapshot_hash:
            raise ConfigError(
                "tasks and snapshot_hash are both set: a GRPO job trains on one or the other", "tasks"
            )
        if self.tasks and not has_task_reward:
            raise ConfigError(
                "rewards: a job on a task set needs the task reward, e.g. [{type: task}]", "rewards"
            )
        if has_task_reward and not self.tasks:
            raise ConfigError("rewards: the task reward needs a task set (tasks: NAME)", "rewards")
        try:
            validate_specs(self.rewards)
        except RewardSpecError as exc:
            raise ConfigError(f"rewards: {exc}", "rewards") from exc
        batch = self.per_device_train_batch_size * self.gradient_accumulation_steps
        if batch % self.num_generations:
            raise ConfigError(
                f"per_device_train_batch_size x gradient_accumulation_steps ({batch}) must be a multiple of "
                f"num_generations ({self.num_generations})",
                "per_device_train_batch_size",
            )


@dataclass
class EndKLConfig(JobConfig):
    """DPO's kin (KTO, ORPO, SimPO): KL(child || parent) on held-out prompts, measured once when training ends
    (``training.objectives.kl``) so objectives compare on how far each moved. The parent is the base with the new LoRA
    adapter off, or KTO's frozen copy in a full fine-tune; a reference-free full fine-tune (ORPO, SimPO) keeps no
    copy of the parent (that is its memory saving), and a LoRA continued from a parent's adapter has the
    grandparent under it, so those log why KL was not measured instead."""

    kl_prompts: int = _f(
        8,
        "Held-out prompts (MT-Bench, not in the snapshot) on which KL(child || parent) is measured at the end "
        "by sampling from the child. 0 disables the measurement.",
        ge=0,
    )
    kl_max_new_tokens: int = _f(32, "Tokens sampled per held-out prompt for the KL estimate.", ge=1)


@dataclass
class KTOJobConfig(EndKLConfig):
    """KTO (Ethayarajh et al. 2024) on unpaired desirable / undesirable answers (TRL KTOTrainer).

    Rows come from the arena's own votes (``annotation.unpaired``): a decisive vote gives its winner as desirable
    and its loser as undesirable, *both good* two desirable answers, *both bad* two undesirable ones; with
    ``score_criterion`` set, an answer scored on that rubric criterion is desirable when its score is at least
    ``desirable_threshold`` (a plain tie counts through its scores only). A paired snapshot also works: each
    pair gives one row of each class.
    """

    kind: ClassVar[str] = "kto"

    min_pairs: int = _f(
        4, "Refuse to launch with fewer unpaired rows (desirable + undesirable) than this.", ge=1
    )
    beta: float = _f(
        0.1, "KTO temperature: higher keeps the policy closer to the reference (paper: 0.1).", gt=0
    )
    loss_type: str = _f(
        "kto", "TRL KTO loss: kto or apo_zero_unpaired.", choices=("kto", "apo_zero_unpaired")
    )
    desirable_weight: float = _f(
        1.0,
        "Weight of the desirable losses; with more undesirable than desirable rows the paper asks for "
        "weight x desirable between 1 and 1.33 x undesirable (the check before launch shows the range).",
        gt=0,
    )
    undesirable_weight: float = _f(
        1.0, "Weight of the undesirable losses (the other side of that balance).", gt=0
    )
    score_criterion: str = _f(
        "",
        "A rubric criterion whose scores label answers desirable / undesirable (empty = the votes alone).",
    )
    desirable_threshold: float | None = _f(
        None,
        "With score_criterion: a score at or above this is desirable, below undesirable; it must lie within "
        "the criterion's scale (e.g. 1..5). null = the middle of the scale.",
    )
    score_rubric: str = _f(
        "",
        "The rubric that defines score_criterion's scale: its name, or a file in the data home's rubrics folder "
        "(empty = the default rubric).",
    )

    def _rules(self) -> None:
        super()._rules()
        if self.pairs != "all":
            raise ConfigError("pairs must be 'all' for KTO: its rows are single answers, not pairs", "pairs")
        self.score_rule()  # raises naming the field (desirable_threshold or score_criterion)

    def score_rule(self) -> Any:
        """The ``annotation.unpaired.ScoreRule`` that labels scored answers (None: the votes alone; the
        threshold defaults to the middle of the criterion's scale); ConfigError naming the field."""
        from vibestudio.annotation.unpaired import score_rule

        rubric = self.score_rubric
        if rubric and (rubric.endswith((".yaml", ".yml")) or "/" in rubric):
            rubric = str(rubric_file(rubric))  # a path: checked before it is read
        try:
            return score_rule(self.score_criterion, self.desirable_threshold, rubric)
        except ValueError as exc:
            named = "desirable_threshold" if self.desirable_threshold is not None else "score_criterion"
            raise ConfigError(str(exc), named) from exc


@dataclass
class ORPOJobConfig(EndKLConfig):
    """ORPO (Hong et al. 2024): supervised loss on the chosen answer plus an odds-ratio penalty on the rejected
    one, reference-free (TRL ORPOTrainer), on the same preference snapshots as DPO."""

    kind: ClassVar[str] = "orpo"
    default_lr: ClassVar[tuple[float, float]] = (ORPO_LORA_LR, ORPO_FULL_LR)

    beta: float = _f(0.1, "Weight of the odds-ratio term (the paper's lambda, 0.1).", gt=0)


@dataclass
class SimPOJobConfig(EndKLConfig):
    """SimPO (Meng et al. 2024): a length-normalised margin between chosen and rejected log-probabilities,
    reference-free (TRL CPOTrainer with loss_type simpo and cpo_alpha 0), on the same snapshots as DPO."""

    kind: ClassVar[str] = "simpo"
    default_lr: ClassVar[tuple[float, float]] = (SIMPO_LORA_LR, SIMPO_FULL_LR)

    beta: float = _f(2.0, "Reward scale (the paper's beta: 2.0-2.5).", gt=0)
    simpo_gamma: float = _f(
        0.5, "Target reward margin gamma (the paper: gamma / beta about 0.5 .. 1.5).", ge=0
    )


@dataclass(frozen=True)
class JobKind:
    """A job kind, registered once: its config class, and the trainer the job process runs ("module:function",
    imported only in the job process, since trainers import torch and TRL). ``rows``: what it trains on ("pairs":
    chosen / rejected, "unpaired": single answers labelled desirable or not, "prompts": prompts only);
    ``reference``: whether it keeps a frozen reference model; ``label``: its name on the Train tab;
    ``publishes``: whether its checkpoint can play in the arena."""

    config: type[JobConfig]
    trainer: str
    label: str = ""
    rows: str = "pairs"
    reference: bool = True
    publishes: bool = True


JOB_KINDS: dict[str, JobKind] = {
    "dpo": JobKind(DPOJobConfig, "vibestudio.training.objectives.dpo:run_dpo", "DPO"),
    "kto": JobKind(KTOJobConfig, "vibestudio.training.objectives.dpo_kin:run_kto", "KTO", rows="unpaired"),
    "orpo": JobKind(
        ORPOJobConfig, "vibestudio.training.objectives.dpo_kin:run_orpo", "ORPO", reference=False
    ),
    "simpo": JobKind(
        SimPOJobConfig, "vibestudio.training.objectives.dpo_kin:run_simpo", "SimPO", reference=False
    ),
    "reward": JobKind(
        RewardJobConfig,
        "vibestudio.training.objectives.reward_model:run_reward",
        "Reward model",
        reference=False,
        publishes=False,
    ),
    "grpo": JobKind(GRPOJobConfig, "vibestudio.training.objectives.grpo:run_grpo", "GRPO", rows="prompts"),
}
CONFIG_KINDS: dict[str, type[JobConfig]] = {kind: k.config for kind, k in JOB_KINDS.items()}


def default_of(f: dataclasses.Field[Any]) -> Any:
    """A field's default (a fresh copy for lists and dicts)."""
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def help_table(cls: type[JobConfig]) -> list[tuple[str, Any, str]]:
    """(name, default, help) for every field: what a UI form or ``--help`` shows."""
    return [(f.name, default_of(f), f.metadata.get("help", "")) for f in dataclasses.fields(cls)]


def default(kind: str, name: str) -> Any:
    """The default of field ``name`` for a ``kind`` job (the Train form's starting values read these)."""
    return next(default_of(f) for f in dataclasses.fields(CONFIG_KINDS[kind]) if f.name == name)


def bounds_text(meta: Any) -> str:
    """A field's bounds in words, e.g. "at least 1", "in [0, 1)", "0 or at least 20" ('' when it has none)."""
    rules = {k: meta[k] for k in BOUNDS if k in meta}
    if "zero_or_at_least" in meta:
        return f"0 or at least {meta['zero_or_at_least']}"
    low = ("[", rules["ge"]) if "ge" in rules else ("(", rules["gt"]) if "gt" in rules else None
    high = ("]", rules["le"]) if "le" in rules else (")", rules["lt"]) if "lt" in rules else None
    if low and high:
        return f"in {low[0]}{low[1]}, {high[1]}{high[0]}"
    if low:
        return f"at least {low[1]}" if low[0] == "[" else f"> {low[1]}"
    if high:
        return f"at most {high[1]}" if high[0] == "]" else f"< {high[1]}"
    if "choices" in meta:
        return "one of " + ", ".join(meta["choices"])
    return ""


def _no_bool(value: Any) -> Any:
    """Numbers are numbers: YAML's true/false is not 1/0 here."""
    if isinstance(value, bool):
        raise ValueError("expected a number, got true/false")
    return value


def _zero_or_at_least(least: int) -> Any:
    def check(value: int) -> int:
        if value != 0 and value < least:
            raise ValueError(f"must be 0 or at least {least}")
        return value

    return check


def _field_type(annotation: Any, meta: Any) -> Any:
    """The pydantic type for a field: strict booleans, no booleans as numbers, choices as a Literal."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _field_type(args[0], meta) | None
    from pydantic import AfterValidator, BeforeValidator, StrictBool

    if annotation is bool:
        return StrictBool
    if annotation in (int, float):
        checks: list[Any] = [BeforeValidator(_no_bool)]
        if "zero_or_at_least" in meta:
            checks.append(AfterValidator(_zero_or_at_least(meta["zero_or_at_least"])))
        return Annotated[annotation, *checks]
    if annotation is str and "choices" in meta:
        return Literal[tuple(meta["choices"])]
    return annotation


_MODELS: dict[str, type[BaseModel]] = {}


def field_model(cls: type[JobConfig]) -> type[BaseModel]:
    """The pydantic model of ``cls``'s fields, built once from their definitions: types, defaults, help, bounds."""
    key = f"{cls.__module__}.{cls.__qualname__}"
    if key not in _MODELS:
        _MODELS[key] = _build_model(cls)
    return _MODELS[key]


def _build_model(cls: type[JobConfig]) -> type[BaseModel]:
    from pydantic import ConfigDict, Field, create_model

    hints = typing.get_type_hints(cls)
    spec: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        bounds = {k: f.metadata[k] for k in BOUNDS if k in f.metadata}
        info = Field(default=default_of(f), description=f.metadata.get("help", ""), **bounds)
        spec[f.name] = (_field_type(hints[f.name], f.metadata), info)
    config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)
    model: type[BaseModel] = create_model(f"{cls.__name__}Fields", __config__=config, **spec)
    return model


def _error_message(kind: str, cls: type[JobConfig], error: Any) -> FieldError:
    """One pydantic error as the studio says it, tied to its field."""
    name = str(error["loc"][0]) if error["loc"] else ""
    found = _said(kind, cls, error, name)
    found.path = tuple(error["loc"])
    return found


def _said(kind: str, cls: type[JobConfig], error: Any, name: str) -> FieldError:
    got = error.get("input")
    metas: dict[str, Any] = {f.name: f.metadata for f in dataclasses.fields(cls)}
    if error["type"] == "extra_forbidden":
        return FieldError(name, unknown_field(kind, name, list(metas)))
    meta = metas.get(name, {})
    if error["type"] == "literal_error":
        return FieldError(name, f"{name} {got!r} unknown; choose one of {', '.join(meta['choices'])}")
    if error["type"] in ("greater_than", "greater_than_equal", "less_than", "less_than_equal") or (
        error["type"] == "value_error" and "zero_or_at_least" in meta and not isinstance(got, bool)
    ):
        return FieldError(name, f"{name} must be {bounds_text(meta)} (got {got!r})")
    if error["type"] == "bool_type":
        return FieldError(name, f"{kind} config field {name!r}: expected true/false, got {got!r}")
    said = str(error["msg"]).removeprefix("Value error, ")
    return FieldError(name, f"{kind} config field {name!r}: {said[:1].lower()}{said[1:]} (got {got!r})")


def unknown_field(kind: str, name: str, known: list[str]) -> str:
    """An unknown field in words: the close known one when there is one (with where every field is listed),
    else every known field."""
    import difflib

    close = difflib.get_close_matches(name, known, n=1)
    if close:
        return (
            f"unknown field {name!r} for a {kind} job; did you mean {close[0]!r}? (every field: "
            f"`vibestudio train {kind} --help`, docs/job-config.md)"
        )
    return f"unknown field {name!r} for a {kind} job (known: {', '.join(known)})"


def field_errors(cls: type[JobConfig], data: dict[str, Any]) -> list[FieldError]:
    """Every unknown field, wrong type and value out of bounds in ``data``, each tied to its field."""
    return _read(cls, data)[1]


def _read(cls: type[JobConfig], data: dict[str, Any]) -> tuple[dict[str, Any], list[FieldError]]:
    """``data``'s values as pydantic read them (``1`` for a float is ``1.0``, ``1e-9`` text is a number), or
    every problem, each tied to its field."""
    from pydantic import ValidationError

    try:
        model = field_model(cls).model_validate(data)
    except ValidationError as exc:
        return {}, [_error_message(cls.kind, cls, e) for e in exc.errors(include_url=False)]
    return {k: getattr(model, k) for k in data}, []


def config_from_dict(data: dict[str, Any], kind: str | None = None) -> JobConfig:
    """Build and validate a config; unknown fields and wrong types raise ConfigError naming the field."""
    cfg, errors = config_errors(data, kind)
    if cfg is None:
        first = errors[0]
        raise ConfigError("; ".join(e.message for e in errors), first.field)
    return cfg


def config_errors(data: Any, kind: str | None = None) -> tuple[JobConfig | None, list[FieldError]]:
    """Check a config mapping field by field: every unknown field and every ill-typed or out-of-bounds value
    is reported (not just the first), then the rules between fields. (config, []) when valid, else (None, errors)."""
    if not isinstance(data, dict):
        return None, [FieldError("", "expected a mapping of field: value")]
    data = dict(data)
    kind = data.pop("kind", None) or kind
    if kind not in CONFIG_KINDS:
        return None, [
            FieldError("kind", f"unknown job kind {kind!r}; known: {', '.join(sorted(CONFIG_KINDS))}")
        ]
    cls = CONFIG_KINDS[kind]
    values, errors = _read(cls, data)
    if errors:
        return None, errors
    cfg = cls(**values)
    try:
        cfg._rules()
    except ConfigError as exc:
        return None, [FieldError(exc.field, str(exc))]
    return cfg, []


def parse_config_text(text: str, kind: str | None = None) -> tuple[JobConfig | None, list[FieldError]]:
    """A config from YAML text (the Train tab's editor, a file): YAML syntax errors carry their line, and so
    does each bad field ("line 7: beta must be > 0")."""
    data, error = parse_yaml(text) if text and text.strip() else ({}, None)
    if error is not None:
        line, said = yaml_syntax(text) if error.line else (None, "")
        if line is not None:
            return None, [FieldError("", f"line {line}: not valid YAML: {said}", f"line {line}")]
        return None, [FieldError("", f"line {error.line}: {error.message}" if error.line else error.message)]
    cfg, errors = config_errors(data if data is not None else {}, kind)
    return cfg, locate(errors, Sources(text=text)) if errors else errors


def make_config(kind: str, **overrides: Any) -> JobConfig:
    """A validated config of ``kind`` with the given fields changed."""
    return config_from_dict(overrides, kind)


def config_yaml(cfg: JobConfig) -> str:
    """The YAML a job saves and runs (field order as declared)."""
    import yaml

    return yaml.safe_dump(cfg.to_dict(), sort_keys=False)


def save_config(cfg: JobConfig, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(config_yaml(cfg), encoding="utf-8")
    return p


def read_config_file(path: str | Path) -> tuple[dict[str, Any], Sources]:
    """A config file's mapping (YAML, or JSON, which YAML reads) and its sources, for errors that name the file
    and the line of each key; ConfigError naming the file (and the line of a syntax error) otherwise."""
    p = Path(path)
    data, error = read_yaml(p)
    if error is not None and error.line is not None:  # a syntax error: where its construct began
        line, said = yaml_syntax(_file_text(p))
        if line is not None:
            raise ConfigError(f"{p}:{line}: not valid YAML: {said}", where=f"{p}:{line}")
    if error is not None:
        raise ConfigError(error.format(str(p)), where=error.where(str(p)))
    data = data or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a mapping of field: value", where=str(p))
    return data, Sources(str(p), _file_text(p))


def _file_text(p: Path) -> str:
    """A config file's text, read as ``read_yaml`` reads it (a plain file, bounded), for its lines only; '' when
    it changed since (the errors then name the file alone)."""
    try:
        return read_regular(p, MAX_YAML_BYTES).decode("utf-8-sig", errors="replace")
    except (PathRefused, OSError):
        return ""


#: PyYAML's contexts whose mark is an opening that was never closed.
_OPENED = ("while parsing a flow sequence", "while parsing a flow mapping", "while scanning a quoted scalar")
_OPENER_WORDS = {"[": "'['", "{": "'{'", '"': "double quote", "'": "single quote"}


def yaml_syntax(text: str, one_line: bool = False) -> tuple[int | None, str]:
    """Why ``text`` is not valid YAML, on one line, and the 1-based line to name: where an unclosed bracket or
    quote opened (PyYAML's context mark), with where PyYAML noticed (its problem mark); else where it noticed.
    ``one_line``: a value given on the command line, said by columns. (None, '') when it parses."""
    import yaml

    try:
        yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        return _marked(exc, text, one_line)
    except yaml.YAMLError as exc:
        return None, " ".join(str(exc).split())
    except RecursionError:
        return None, "nested too deeply"
    return None, ""


def _marked(exc: Any, text: str, one_line: bool) -> tuple[int | None, str]:
    """A PyYAML error with marks in words (see ``yaml_syntax``)."""
    problem_mark, context_mark = exc.problem_mark, exc.context_mark
    context = " ".join(str(exc.context or "").split())
    problem = " ".join(str(exc.problem or context or "syntax error").split())
    if (
        context and exc.problem and not context.startswith("while")
    ):  # "expected a single document ... but found"
        problem, context = f"{context} {problem}", ""
    opened = None
    if context in _OPENED and context_mark is not None:
        opened = context_mark
    elif context == "while parsing a flow node" and "<stream end>" in problem and problem_mark is not None:
        opened = _open_bracket(text, problem_mark.index)

    def at(mark: Any) -> str:
        return f"column {mark.column + 1}" if one_line else f"line {mark.line + 1}, column {mark.column + 1}"

    if opened is not None and problem_mark is not None:
        char = opened.buffer[opened.pointer] if opened.buffer and opened.pointer < len(opened.buffer) else ""
        what = _OPENER_WORDS.get(char, repr(char))
        here = f"at column {opened.column + 1}" if one_line else "opened here"
        return opened.line + 1, f"the {what} {here} is not closed (noticed at {at(problem_mark)}: {problem})"
    mark = problem_mark or context_mark
    if mark is None:
        return None, problem
    began = ""
    if context and context_mark is not None and context_mark.line != mark.line:
        began = f"; {context} that began at line {context_mark.line + 1}"
    return mark.line + 1, f"{problem} (column {mark.column + 1}{began})"


def _open_bracket(text: str, before: int) -> Any:
    """The mark of the innermost flow bracket still open at character ``before`` of ``text`` (None: none)."""
    import yaml

    opened: list[Any] = []
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if token.start_mark.index >= before:
                break
            if isinstance(token, yaml.FlowSequenceStartToken | yaml.FlowMappingStartToken):
                opened.append(token.start_mark)
            elif isinstance(token, yaml.FlowSequenceEndToken | yaml.FlowMappingEndToken) and opened:
                opened.pop()
    except yaml.YAMLError:
        pass
    return opened[-1] if opened else None


def load_config(path: str | Path, kind: str | None = None) -> JobConfig:
    """The config in a file; ConfigError naming the file, the line and the field of every problem."""
    data, sources = read_config_file(path)
    cfg, errors = config_errors(data, kind)
    if cfg is None:
        errors = locate(errors, sources)
        raise ConfigError("; ".join(e.message for e in errors), errors[0].field)
    return cfg


def _cell(value: Any) -> str:
    """A default as the YAML reference writes it (YAML's own spelling, in backticks)."""
    import yaml

    text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip().removesuffix("...").strip()
    return f"`{text}`" if text else "`''`"


def reference_markdown() -> str:
    """The YAML reference of every job kind's fields: default, bounds and help, from the field definitions
    (``python -m vibestudio.studio.cli.docs`` writes it into docs/job-config.md)."""
    shared = {f.name for f in dataclasses.fields(JobConfig)}
    out = ["## Fields every kind shares", ""]
    out += _table([f for f in dataclasses.fields(DPOJobConfig) if f.name in shared])
    for kind, spec in JOB_KINDS.items():
        cls = spec.config
        own = [f for f in dataclasses.fields(cls) if f.name not in shared or _differs(f)]
        out += ["", f"## `kind: {kind}` ({spec.label})", "", (cls.__doc__ or "").split("\n\n")[0].strip(), ""]
        out += _table(own) if own else ["No fields of its own."]
    return "\n".join(out) + "\n"


def _differs(f: dataclasses.Field[Any]) -> bool:
    """A shared field a kind redefines (another default or help)."""
    base = next(b for b in dataclasses.fields(JobConfig) if b.name == f.name)
    return default_of(base) != default_of(f) or base.metadata != f.metadata


def _table(fields: list[dataclasses.Field[Any]]) -> list[str]:
    rows = ["| field | default | allowed | what it does |", "|---|---|---|---|"]
    for f in fields:
        help_text = str(f.metadata.get("help", "")).replace("|", "\\|").replace("<", "&lt;")
        rows.append(f"| `{f.name}` | {_cell(default_of(f))} | {bounds_text(f.metadata)} | {help_text} |")
    return rows
